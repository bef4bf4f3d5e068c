import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { listeningPortOf, randomPort, reachable } from "./server-process.js";

/**
 * Real servers of a test's own, in a temporary directory: a PostgreSQL cluster (initdb/pg_ctl) and
 * a redis-server, each of which a test can stop, freeze (SIGSTOP), resume and start again. The
 * built service itself starts through server-process.ts (on port 0).
 *
 * They cannot listen on port 0 and be started again on the same port, so each takes a random port
 * below the OS's ephemeral range (randomPort): no connection of any process and no `listen(0)` can
 * hold one there, as they could a port `freePort()` found free before the server bound it, and no
 * other test process draws it while this one lives (randomPort reserves it), even while the server
 * is stopped for an outage. A process that is not a test's is the one collision left: the start
 * then fails on it and tries another.
 */

/** `start(port)` on random ports until one is not in use (at most five tries). */
async function onAPortOfItsOwn<T>(start: (port: number) => Promise<T> | T): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(randomPort());
    } catch (error) {
      if (attempt >= 5 || !/address already in use/i.test(String((error as Error).message))) throw error;
    }
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const pgBin = "/usr/lib/postgresql/15/bin";
const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL binary, as the `postgres` user when we are root (PostgreSQL refuses root). */
function pgCommand(binary: string, args: string[]) {
  const command = asRoot ? "runuser" : path.join(pgBin, binary);
  const fullArgs = asRoot ? ["-u", "postgres", "--", path.join(pgBin, binary), ...args] : args;
  return execFileSync(command, fullArgs, { stdio: "pipe", timeout: 60_000 }).toString();
}

function hasCommand(file: string) {
  return existsSync(file) || process.env.PATH?.split(":").some((dir) => existsSync(path.join(dir, file)));
}

/** Why the servers of this module cannot run here, or null when they can. */
export function serversMissing(): string | null {
  if (!existsSync(path.join(pgBin, "initdb")) || !existsSync(path.join(pgBin, "pg_ctl"))) return `no initdb/pg_ctl in ${pgBin}`;
  if (!hasCommand("redis-server")) return "no redis-server on PATH";
  if (asRoot) {
    try {
      execFileSync("id", ["postgres"], { stdio: "pipe" });
    } catch {
      return "running as root without a postgres user to run PostgreSQL as";
    }
  }
  return null;
}

/** Every process of a server: the one given and its children (PostgreSQL forks one per connection). */
function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)])
      .toString()
      .split("\n")
      .map((line) => Number(line.trim()))
      .filter((n) => n > 0);
  } catch {
    // No children.
  }
  return [pid, ...children.flatMap(processTree)];
}

export type PostgresServer = {
  url: (database?: string) => string;
  port: number;
  start(): void;
  /** Fast shutdown: connections are closed, new ones refused. */
  stop(): void;
  /** SIGSTOP the server and every backend: connections stay open, nothing answers. */
  freeze(): void;
  resume(): void;
  destroy(): void;
};

/** A temporary directory the `postgres` user owns when we are root. */
function postgresOwnedDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString());
    chownSync(dir, uid, gid);
  }
  return dir;
}

export async function startPostgres(): Promise<PostgresServer> {
  const dir = postgresOwnedDir("gateway-pg-");
  const data = path.join(dir, "data");
  pgCommand("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
  return onAPortOfItsOwn((port) => postgresServer(dir, data, port));
}

/**
 * A streaming replica of `primary` (initdb's defaults allow it: wal_level replica, replication
 * from 127.0.0.1 trusted): `pg_basebackup -R` with a fast checkpoint (the default, spread, takes
 * minutes), started on a port of its own.
 */
export async function startStandby(primary: PostgresServer): Promise<PostgresServer> {
  const dir = postgresOwnedDir("gateway-standby-");
  const data = path.join(dir, "data");
  pgCommand("pg_basebackup", [
    "-h",
    "127.0.0.1",
    "-p",
    String(primary.port),
    "-U",
    "postgres",
    "-D",
    data,
    "-R",
    "-X",
    "stream",
    "-c",
    "fast",
  ]);
  return onAPortOfItsOwn((port) => postgresServer(dir, data, port));
}

function postgresServer(dir: string, data: string, port: number): PostgresServer {
  let frozen: number[] = [];
  const server: PostgresServer = {
    port,
    url: (database = "postgres") => `postgresql://postgres@127.0.0.1:${port}/${database}`,
    start() {
      try {
        pgCommand("pg_ctl", [
          "-D",
          data,
          "-l",
          path.join(dir, "log"),
          "-w",
          "-o",
          `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`,
          "start",
        ]);
      } catch (error) {
        // pg_ctl says only that the server did not start; its log says why.
        const log = existsSync(path.join(dir, "log")) ? readFileSync(path.join(dir, "log"), "utf8") : "";
        throw new Error(`PostgreSQL did not start on port ${port}: ${(error as Error).message}\n${log}`);
      }
    },
    stop() {
      pgCommand("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
    },
    freeze() {
      const postmaster = Number(
        execFileSync("head", ["-1", path.join(data, "postmaster.pid")])
          .toString()
          .trim(),
      );
      frozen = processTree(postmaster);
      for (const pid of frozen) process.kill(pid, "SIGSTOP");
    },
    resume() {
      for (const pid of frozen) {
        try {
          process.kill(pid, "SIGCONT");
        } catch {
          // Gone.
        }
      }
      frozen = [];
    },
    destroy() {
      server.resume();
      try {
        pgCommand("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } catch {
        // Not running.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  server.start();
  return server;
}

export type RedisServer = {
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  freeze(): void;
  resume(): void;
  destroy(): Promise<void>;
};

export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(path.join(tmpdir(), "gateway-redis-"));
  let port = 0;
  let child: ChildProcess | undefined;
  const server: RedisServer = {
    get url() {
      return `redis://127.0.0.1:${port}`;
    },
    async start() {
      const started = spawn("redis-server", [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        dir,
      ]);
      child = started;
      let output = "";
      started.stdout?.on("data", (chunk) => {
        output += chunk;
      });
      // Listening, and the listener is this process's: another server on the port would answer too.
      const deadline = Date.now() + 10_000;
      while (listeningPortOf(started.pid as number) !== port) {
        if (started.exitCode !== null) throw new Error(`redis-server exited (${started.exitCode}):\n${output}`);
        if (Date.now() > deadline) throw new Error(`redis-server did not start:\n${output}`);
        await sleep(50);
      }
    },
    async stop() {
      const running = child;
      if (!running || running.exitCode !== null) return;
      running.kill("SIGCONT");
      const exited = new Promise((resolve) => running.on("exit", resolve));
      running.kill("SIGTERM");
      await exited;
    },
    freeze() {
      child?.kill("SIGSTOP");
    },
    resume() {
      child?.kill("SIGCONT");
    },
    async destroy() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await onAPortOfItsOwn((chosen) => {
    port = chosen;
    return server.start();
  });
  return server;
}

const pgbouncerBin = "/usr/sbin/pgbouncer";

/** Why PgBouncer and a streaming replica cannot run here, or null when they can. */
export function pgbouncerMissing(): string | null {
  if (!existsSync(pgbouncerBin)) return `no ${pgbouncerBin} (apt-get install pgbouncer; .ci/run installs it)`;
  if (!existsSync(path.join(pgBin, "pg_basebackup"))) return `no pg_basebackup in ${pgBin}`;
  return serversMissing();
}

export type PgBouncer = {
  port: number;
  url: (database: string) => string;
  /** Runs a command of PgBouncer's admin console (SHOW POOLS, ...). */
  admin: (command: string) => Promise<Record<string, unknown>[]>;
  destroy(): void;
};

/**
 * PgBouncer (Debian's package) with `settings` (its [pgbouncer] section, e.g. the documented
 * one), on a free port of 127.0.0.1 with trust authentication and files of its own.
 * `databases`: its [databases] lines, name to connection string.
 */
export async function startPgBouncer(databases: Record<string, string>, settings: Record<string, string>): Promise<PgBouncer> {
  const dir = postgresOwnedDir("gateway-pgbouncer-");
  const port = randomPort();
  const ini = path.join(dir, "pgbouncer.ini");
  writeFileSync(path.join(dir, "userlist.txt"), '"postgres" ""\n');
  writeFileSync(
    ini,
    [
      "[databases]",
      ...Object.entries(databases).map(([name, connection]) => `${name} = ${connection}`),
      "[pgbouncer]",
      ...Object.entries({
        ...settings,
        listen_addr: "127.0.0.1",
        listen_port: String(port),
        unix_socket_dir: dir,
        auth_type: "trust",
        auth_file: path.join(dir, "userlist.txt"),
        admin_users: "postgres",
        logfile: path.join(dir, "pgbouncer.log"),
        pidfile: path.join(dir, "pgbouncer.pid"),
      }).map(([name, value]) => `${name} = ${value}`),
      "",
    ].join("\n"),
  );
  const command = asRoot ? "runuser" : pgbouncerBin;
  execFileSync(command, asRoot ? ["-u", "postgres", "--", pgbouncerBin, "-d", ini] : ["-d", ini], { stdio: "pipe" });
  const deadline = Date.now() + 10_000;
  while (!(await reachable(port))) {
    if (Date.now() > deadline) throw new Error("pgbouncer did not start");
    await sleep(50);
  }
  const url = (database: string) => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  return {
    port,
    url,
    async admin(sql) {
      const { default: pg } = await import("pg");
      const client = new pg.Client({ connectionString: url("pgbouncer") });
      await client.connect();
      try {
        return (await client.query(sql)).rows;
      } finally {
        await client.end();
      }
    },
    destroy() {
      try {
        const pid = Number(readFileSync(path.join(dir, "pgbouncer.pid"), "utf8").trim());
        process.kill(pid, "SIGINT");
      } catch {
        // Not running.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
