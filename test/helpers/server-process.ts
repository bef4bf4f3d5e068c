import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

let built = false;

/**
 * Bundles `dist/server.js` as `npm start` does, once per test worker. The bundle is written beside
 * and renamed into place, so a server another worker is starting never reads half a file.
 */
export function buildServer(): void {
  if (built) return;
  mkdirSync(path.join(root, "dist"), { recursive: true });
  const outdir = mkdtempSync(path.join(root, "dist", ".build-"));
  try {
    execFileSync(process.execPath, ["scripts/build.mjs", `--outdir=${outdir}`], { cwd: root });
    // The bundle before the launcher that imports it.
    for (const file of ["service.js.map", "service.js", "server.js"]) {
      renameSync(path.join(outdir, file), path.join(root, "dist", file));
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
  built = true;
}

/** Whether something accepts connections on 127.0.0.1:`port` (PostgreSQL, Redis). */
export function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => {
      socket.end();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}

/**
 * The first port the OS hands out for outgoing connections and `listen(0)` (Linux; 32768 elsewhere).
 * A port of a test's choosing must lie below it: above, any connection of any process (a pool's,
 * a load generator's) may hold it, and the server then fails to listen on it.
 */
const ephemeralPortsFrom = (() => {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
})();

/**
 * A free-looking port from 20000 up to the OS's own range (random; the servers bind 127.0.0.1), for
 * a test that needs to know a port before the server starts or to start on the same port again.
 * Tests add small offsets to it, so it stays 10 short of that range.
 */
export const randomPort = () => 20_000 + Math.floor(Math.random() * Math.max(1_000, ephemeralPortsFrom - 20_010));

/** A port on 127.0.0.1 that the OS says is free now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export type ServerProcess = {
  child: ChildProcess;
  port: number;
  /** http://127.0.0.1:port */
  url: string;
  /** Everything it printed so far, stdout and stderr. */
  output: () => string;
  /** Its exit code once it exits (null when a signal ended it). */
  exited: Promise<number | null>;
  /** Polls until `check` holds, failing with the output after `ms` (default 60 s: a loaded 2-core machine starts slowly). */
  waitFor: (check: () => boolean | Promise<boolean>, what: string, ms?: number) => Promise<void>;
  /** Waits until GET /ready answers 200, failing at once if the server exits, or after `ms` (default 60 s). */
  ready: (ms?: number) => Promise<void>;
  /** Waits for its "listening" log line. */
  listening: () => Promise<void>;
};

/**
 * Node flags of the processes the tests start by default (servers here, the CLI in
 * test/cli/cli.test.ts). `--liftoff-only`: V8 compiles WebAssembly (PGlite's PostgreSQL, Prisma's
 * query compiler) with its baseline compiler only. Without it, a short-lived process spends most
 * of its start optimizing PGlite's hot start-up functions: a server on a migrated data directory
 * takes 6.2 s of CPU and 960 MB of RSS to be ready instead of 3.5 s and 400 MB, a CLI command
 * 4.5 s instead of 1.8 s. It changes how fast the code runs, not what it does.
 */
export const testNodeFlags = ["--liftoff-only"];

/**
 * The built server (`dist/server.js`, see buildServer) as a child process on `port` (default: a
 * free one from the OS), with `env` over the inherited environment. `until`: "ready" waits for GET /ready to answer 200,
 * "listening" for its "listening" log line, "spawned" returns at once. `nodeFlags` (default
 * `testNodeFlags`): flags of the node process, e.g. `[]` to run as `npm start` does.
 */
export async function startServer(
  env: Record<string, string>,
  options: {
    port?: number;
    until?: "ready" | "listening" | "spawned";
    nodeFlags?: string[];
    /** Another bundle than dist/server.js (e.g. a next version with one more migration); built by the caller. */
    script?: string;
  } = {},
): Promise<ServerProcess> {
  buildServer();
  const port = options.port ?? (await freePort());
  let output = "";
  const child = spawn(process.execPath, [...(options.nodeFlags ?? testNodeFlags), options.script ?? "dist/server.js"], {
    cwd: root,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", ...env },
  });
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  const url = `http://127.0.0.1:${port}`;
  const waitFor = async (check: () => boolean | Promise<boolean>, what: string, ms = 60_000) => {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  /** Throws, with the output, once the process has ended: waiting for it to do `what` is over. */
  const stillRunning = (what: string) => {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the server exited (${child.exitCode ?? child.signalCode}) before it ${what}:\n${output}`);
  };
  const ready = (ms?: number) =>
    waitFor(
      () => {
        stillRunning("was ready");
        return fetch(`${url}/ready`).then(
          (r) => r.ok,
          () => false,
        );
      },
      "the server to be ready",
      ms,
    );
  const listening = () =>
    waitFor(() => {
      if (output.includes('"msg":"listening"')) return true;
      stillRunning("listened");
      return false;
    }, "the server to listen");
  const server = { child, port, url, output: () => output, exited, waitFor, ready, listening };
  try {
    if (options.until === "ready") await ready();
    else if (options.until !== "spawned") await listening();
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return server;
}
