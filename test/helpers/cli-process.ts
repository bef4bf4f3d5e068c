import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, expect } from "vitest";
import { runCli as runCliHere } from "../../src/cli/run.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import { freshDataDir } from "./data-dir.js";
import { testNodeFlags } from "./server-process.js";
import { openOwnDatabase, usePostgres } from "./test-app.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

export type CliRun = { code: number | null; stdout: string; stderr: string };

let bundle: Promise<{ main: string }> | undefined;

/**
 * The operator CLI (src/cli/main.ts) bundled once per worker, run as a real `node` process: for what
 * only a process shows (its exit code, stdout and stderr apart, the data directory's lock held by
 * one process and released when it exits). Anything else runs faster through `cliInProcess`.
 */
export async function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const child = await spawnCli(args, env);
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The bundled CLI started as `runCli` starts it, for a test that stops it itself (a command killed midway). */
export async function spawnCli(args: string[], env: NodeJS.ProcessEnv, stdio: "pipe" | "ignore" = "pipe"): Promise<ChildProcess> {
  bundle ??= (async () => {
    mkdirSync(path.join(root, "dist"), { recursive: true });
    // Named after the run (vitest's process, this worker's parent): its global teardown removes it,
    // since a worker is stopped without running its exit handlers.
    const dir = mkdtempSync(path.join(root, "dist", `.cli-${process.ppid}-`));
    await build({
      entryPoints: { cli: path.join(root, "src/cli/main.ts") },
      outdir: dir,
      bundle: true,
      splitting: true,
      platform: "node",
      format: "esm",
      target: "node22.15",
      packages: "external",
      logLevel: "warning",
    });
    return { main: path.join(dir, "cli.js") };
  })();
  const { main } = await bundle;
  return spawn(process.execPath, [...testNodeFlags, main, ...args], { cwd: root, env, stdio: ["ignore", stdio, stdio] });
}

/**
 * The CLI in this process: the runCli that src/cli/main.ts runs, with `env` as its environment and
 * what it writes collected: the same code, exit code and output as the process without starting
 * one. A CLI process cost about 0.9 s of CPU (Node's start, the bundle, PGlite compiled again) and
 * wall time several times that on a loaded machine; in the worker, which has loaded all that
 * already, a command on the embedded database costs about 0.4 s (PGlite starting on the directory).
 */
export async function cliInProcess(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await runCliHere(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env,
  });
  return { code, stdout, stderr };
}

const { DATABASE_URL: _serverDatabase, ...inheritedEnv } = process.env;

/**
 * A database of the test's own that both the CLI (a process) and an app in the test reach: a copy
 * of the migrated data directory (the CLI first, then `open()`: one process at a time holds it), or
 * on PostgreSQL a database of its own.
 */
export async function sharedWithCli(): Promise<{ env: NodeJS.ProcessEnv; open(): Promise<Database>; close(): Promise<void> }> {
  if (usePostgres) {
    const own = await openOwnDatabase();
    return {
      env: { ...inheritedEnv, LOG_LEVEL: "silent", DATABASE_URL: own.url },
      open: async () => own.database,
      close: () => own.close(),
    };
  }
  const dataDir = freshDataDir("cli-documents-");
  let database: Database | undefined;
  return {
    env: { ...inheritedEnv, LOG_LEVEL: "silent", DATA_DIR: dataDir },
    async open() {
      database ??= await openDatabase({ kind: "embedded", dataDir });
      return database;
    },
    async close() {
      await database?.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A CLI test file's set-up, registered as the file's hooks: the database the CLI shares with the
 * file (sharedWithCli), a folder for the files the CLI reads, `run` (the CLI in process), `file`
 * (writes one there: a string as it is, anything else as JSON) and `jsonOf` (a successful `--json` answer).
 */
export function cliTestFiles(prefix: string) {
  let shared: Awaited<ReturnType<typeof sharedWithCli>> | undefined;
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  beforeAll(async () => {
    shared = await sharedWithCli();
  });
  afterAll(async () => {
    await shared?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const sharedNow = () => {
    if (!shared) throw new Error("the shared database is opened in beforeAll");
    return shared;
  };
  return {
    dir,
    shared: sharedNow,
    run: (...args: string[]) => cliInProcess(args, sharedNow().env),
    file(name: string, content: unknown): string {
      const target = path.join(dir, name);
      writeFileSync(target, typeof content === "string" ? content : JSON.stringify(content));
      return target;
    },
    jsonOf(result: CliRun) {
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      return JSON.parse(result.stdout);
    },
  };
}
