import { PrismaPg } from "@prisma/adapter-pg";
import type { GetPrismaClientConfig } from "@prisma/client/runtime/client";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { PrismaClient } from "../../src/generated/prisma/client.js";
import { compiledOffThread, compileQueryCompiler, readCompilerBase64 } from "../../src/platform/db/query-compiler.js";

// Prisma's query compiler is compiled off the main thread, before the first query (query-compiler.ts).
describe("Prisma's query compiler", () => {
  it("is read from its module's file as text, not imported as a 4.6 MB module", async () => {
    const base64 = await readCompilerBase64();
    // A Prisma upgrade that changed the file's shape would leave the slow import in place: this says so.
    expect(base64).toBeDefined();
    const module = "@prisma/client/runtime/query_compiler_fast_bg.postgresql.wasm-base64.mjs";
    const { wasm } = await import(module);
    expect(base64).toBe(wasm);
  });

  it("is compiled once per process, into the module Prisma's runtime instantiates", async () => {
    const compiled = await compileQueryCompiler();
    expect(compileQueryCompiler()).toBe(compileQueryCompiler());
    expect(WebAssembly.Module.exports(compiled).map((e) => e.name)).toContain("__wbindgen_start");
  });

  it("is what the client loads: Prisma calls the configOverride that hands it over", () => {
    let seen: GetPrismaClientConfig | undefined;
    const pool = new pg.Pool({ connectionString: "postgresql://nobody@127.0.0.1:1/none" });
    new PrismaClient({
      adapter: new PrismaPg(pool),
      ...({
        __internal: {
          configOverride: (config: GetPrismaClientConfig) => {
            seen = compiledOffThread.__internal.configOverride(config);
            return seen;
          },
        },
      } as object),
    });
    expect(seen?.compilerWasm?.getQueryCompilerWasmModule).toBe(compileQueryCompiler);
    void pool.end();
  });
});
