import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isRunning } from "../../src/platform/db/data-dir-lock.js";

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
 * Ports drawn by randomPort(), one file each naming the process that holds it, in a directory that
 * every test process on the machine shares (the workers of a run, and the runs of other checkouts).
 */
const reservations = path.join(tmpdir(), "gateway-test-ports");
const reservedHere: string[] = [];

let swept = false;

/** Takes `port` for this process unless a live test process holds it. */
function reserve(port: number): boolean {
  const file = path.join(reservations, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      if (reservedHere.length === 0) {
        process.on("exit", () => {
          for (const held of reservedHere) rmSync(held, { force: true });
        });
      }
      reservedHere.push(file);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      let holder: number;
      try {
        holder = Number(readFileSync(file, "utf8").trim() || Number.NaN);
      } catch {
        continue; // Released meanwhile: try to take it again.
      }
      // Held by a process that is gone (killed before its exit handler ran): free again. A file
      // without a pid yet is being written by its holder.
      if (!Number.isInteger(holder) || holder === process.pid || isRunning(holder)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

/**
 * A port from 20000 up to the OS's own range (random; the servers bind 127.0.0.1), for a test that
 * needs to know a port before the server starts or to start on the same port again. It is this
 * process's until it exits: no other test process on the machine draws it meanwhile. Without
 * that, servers of tests running at once (two workers, or two checkouts' runs) could draw the same
 * port: a second server failed to start on it (HAProxy, PgBouncer and haproxy.test's replicas
 * do not try another), and a server stopped for an outage could find its port taken by the other
 * when it started again on it, or the service reached the other's server in between.
 */
export function randomPort(): number {
  mkdirSync(reservations, { recursive: true });
  if (!swept) {
    // Workers are often ended by a signal, before their exit handler: their ports are free again.
    swept = true;
    for (const port of readdirSync(reservations)) {
      const file = path.join(reservations, port);
      try {
        const holder = Number(readFileSync(file, "utf8").trim());
        if (Number.isInteger(holder) && holder > 0 && !isRunning(holder)) rmSync(file, { force: true });
      } catch {
        // Removed by another process meanwhile.
      }
    }
  }
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * Math.max(1_000, ephemeralPortsFrom - 20_000));
    if (reserve(port)) return port;
  }
}

/**
 * A port on 127.0.0.1 that the OS says is free now. Only for something that cannot listen on port 0
 * itself: between this answer and its own bind, any process may take the port.
 */
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

/** The inodes of the sockets process `pid` holds (from /proc/<pid>/fd), or undefined once it exited. */
function socketInodesOf(pid: number): Set<string> | undefined {
  try {
    return new Set(
      readdirSync(`/proc/${pid}/fd`)
        .map((fd) => {
          try {
            return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
          } catch {
            return undefined; // closed meanwhile
          }
        })
        .filter((inode) => inode !== undefined),
    );
  } catch {
    return undefined;
  }
}

/**
 * The TCP port process `pid` listens on, from /proc (Linux): the inodes of its sockets looked up
 * among the listening sockets of /proc/<pid>/net/tcp. Undefined while it listens on none.
 */
export function listeningPortOf(pid: number): number | undefined {
  const inodes = socketInodesOf(pid);
  if (!inodes?.size) return undefined;
  for (const table of ["tcp", "tcp6"]) {
    let rows: string[];
    try {
      rows = readFileSync(`/proc/${pid}/net/${table}`, "utf8").trim().split("\n").slice(1);
    } catch {
      continue;
    }
    for (const row of rows) {
      // sl local_address rem_address st ... inode: state 0A is LISTEN.
      const [, local, , state, , , , , , inode] = row.trim().split(/\s+/);
      if (state === "0A" && inode && inodes.has(inode)) return Number.parseInt(local?.split(":")[1] ?? "", 16);
    }
  }
  return undefined;
}

/**
 * listeningPortOf for a poll: the socket table (every socket of the machine, a few ms of CPU to
 * read) is read only when the process holds a socket it did not hold at the last poll, and once a
 * second besides (a socket seen between its creation and its listen).
 */
function listeningPortPoller(pid: number): () => number | undefined {
  let known = "";
  let readAt = 0;
  return () => {
    const inodes = [...(socketInodesOf(pid) ?? [])].sort().join(",");
    if (inodes === known && Date.now() - readAt < 1_000) return undefined;
    known = inodes;
    readAt = Date.now();
    return listeningPortOf(pid);
  };
}

export type ServerProcess = {
  child: ChildProcess;
  /** The port it listens on; before it listens, only when it was given one (reading it sooner throws). */
  port: number;
  /** http://127.0.0.1:port (the same rule as `port`) */
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
  /** Waits until it listens, and answers its port (one given, or the one the OS chose). */
  bound: () => Promise<number>;
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
 * The built server (`dist/server.js`, see buildServer) as a child process on `port`, with `env`
 * over the inherited environment. Without `port` it listens on port 0, a free port the OS chooses
 * as it binds, read back once it listens (a port chosen before the start can be taken by any
 * process in between: a second server started on a port that was free collided once). `until`: "ready" waits for GET /ready to answer 200,
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
  let port = options.port;
  let output = "";
  const child = spawn(process.execPath, [...(options.nodeFlags ?? testNodeFlags), options.script ?? "dist/server.js"], {
    cwd: root,
    env: { ...process.env, PORT: String(port ?? 0), HOST: "127.0.0.1", ...env },
  });
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  const knownPort = () => {
    if (port === undefined)
      throw new Error("the server's port is known once it listens: await its bound(), listening() or ready() first");
    return port;
  };
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
  const boundPort = listeningPortPoller(child.pid as number);
  const bound = async (ms?: number) => {
    if (port === undefined) {
      await waitFor(
        () => {
          port = boundPort();
          if (port === undefined) stillRunning("listened");
          return port !== undefined;
        },
        "the server to listen",
        ms,
      );
    }
    return knownPort();
  };
  const ready = async (ms?: number) => {
    await bound(ms);
    await waitFor(
      () => {
        stillRunning("was ready");
        return fetch(`http://127.0.0.1:${knownPort()}/ready`).then(
          (r) => r.ok,
          () => false,
        );
      },
      "the server to be ready",
      ms,
    );
  };
  const listening = async () => {
    await waitFor(() => {
      if (output.includes('"msg":"listening"')) return true;
      stillRunning("listened");
      return false;
    }, "the server to listen");
    await bound();
  };
  const server: ServerProcess = {
    child,
    get port() {
      return knownPort();
    },
    get url() {
      return `http://127.0.0.1:${knownPort()}`;
    },
    output: () => output,
    exited,
    waitFor,
    ready,
    listening,
    bound,
  };
  try {
    if (options.until === "ready") await ready();
    else if (options.until !== "spawned") await listening();
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return server;
}
