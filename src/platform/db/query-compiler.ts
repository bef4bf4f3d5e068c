import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { GetPrismaClientConfig } from "@prisma/client/runtime/client";

/** The module of the generated client that holds Prisma's query compiler as one string of base64. */
const COMPILER_BASE64 = "@prisma/client/runtime/query_compiler_fast_bg.postgresql.wasm-base64.mjs";
const PREFIX = 'const wasm = "';

/**
 * The compiler's base64, read from its module's file as text. The file is one string literal
 * (`const wasm = "<base64>"; export { wasm }`): read off the main thread, it costs that thread a
 * few milliseconds, where importing it as a module has V8 parse 4.6 MB there (0.1 s at every
 * start). Undefined when the file is not in that shape (a Prisma upgrade): the caller imports it.
 */
export async function readCompilerBase64(): Promise<string | undefined> {
  const text = await readFile(createRequire(import.meta.url).resolve(COMPILER_BASE64), "latin1");
  const end = text.indexOf('"', PREFIX.length);
  return text.startsWith(PREFIX) && end > PREFIX.length ? text.slice(PREFIX.length, end) : undefined;
}

let compiling: Promise<WebAssembly.Module> | undefined;

/**
 * Prisma's query compiler (3.4 MB of WebAssembly), compiled once per process by
 * `WebAssembly.compile`, which V8 runs on its background threads, instead of the generated
 * client's `new WebAssembly.Module` on the main thread at the first query (with the module's
 * import, 0.15 to 0.25 s of every start). openDatabase calls it before it opens the database, so
 * that the compile overlaps the database's start (PGlite's, or PostgreSQL's connections and
 * migrations) instead of following it.
 */
export function compileQueryCompiler(): Promise<WebAssembly.Module> {
  compiling ??= (async () => {
    const base64 = (await readCompilerBase64()) ?? (await import(COMPILER_BASE64)).wasm;
    return WebAssembly.compile(Buffer.from(base64, "base64"));
  })();
  return compiling;
}

/**
 * PrismaClient's option that makes it take its query compiler from compileQueryCompiler. Prisma's
 * `__internal.configOverride` is the one place where its client lets the compiler's loading be
 * replaced; the generated client's options type leaves it out, hence the cast where it is used.
 * test/unit/query-compiler.test.ts fails if a Prisma upgrade stops calling it.
 */
export const compiledOffThread = {
  __internal: {
    configOverride: (config: GetPrismaClientConfig): GetPrismaClientConfig =>
      config.compilerWasm
        ? { ...config, compilerWasm: { ...config.compilerWasm, getQueryCompilerWasmModule: compileQueryCompiler } }
        : config,
  },
};
