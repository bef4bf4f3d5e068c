// The "behind PgBouncer, reads on a replica" scenario (issue 27): two service replicas behind
// PgBouncer in transaction mode, reads on a streaming replica, against one service on the primary
// alone. Get task (REST) and the vendor page (GraphQL): throughput and p99 of each, and the server
// connections PgBouncer holds (SHOW POOLS) against replicas x pool size without it.
// Runs inside `npm run bench` (BENCH_PGBOUNCER=0 skips it) or alone: `node bench/pgbouncer.mjs`.
// It starts its own PostgreSQL primary, a pg_basebackup -R standby and Debian's pgbouncer.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import { freePort } from "./free-port.mjs";
import { createVendorPage, vendorPageRequest } from "./scenarios/vendor-page.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const pgBin = "/usr/lib/postgresql/15/bin";
const pgbouncerBin = "/usr/sbin/pgbouncer";
const asRoot = process.getuid?.() === 0;
const POOL_SIZE = 10;
const REPLICAS = 2;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function pgbouncerBenchMissing() {
  if (!existsSync(pgbouncerBin)) return `no ${pgbouncerBin}`;
  if (!existsSync(path.join(pgBin, "pg_basebackup"))) return `no ${pgBin}/pg_basebackup`;
  return null;
}

function asPostgres(file, args) {
  return execFileSync(asRoot ? "runuser" : file, asRoot ? ["-u", "postgres", "--", file, ...args] : args, {
    stdio: "pipe",
    timeout: 120_000,
  }).toString();
}

function ownedDir(prefix) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  if (asRoot) chownSync(dir, Number(execFileSync("id", ["-u", "postgres"])), Number(execFileSync("id", ["-g", "postgres"])));
  return dir;
}

async function startCluster(dir, port) {
  const data = path.join(dir, "data");
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`;
  asPostgres(path.join(pgBin, "pg_ctl"), ["-D", data, "-l", path.join(dir, "log"), "-w", "-o", opts, "start"]);
  return { dir, data, port, url: (db) => `postgresql://postgres@127.0.0.1:${port}/${db}` };
}

async function topology(cleanups) {
  const primaryDir = ownedDir("bench-pg-primary-");
  asPostgres(path.join(pgBin, "initdb"), ["-D", path.join(primaryDir, "data"), "-A", "trust", "-U", "postgres", "-E", "UTF8"]);
  const primary = await startCluster(primaryDir, await freePort());
  cleanups.push(() => stopCluster(primary));
  const admin = new pg.Client({ connectionString: primary.url("postgres") });
  // A server stopped or a database dropped while the client is connected must not end the bench.
  admin.on("error", () => {});
  await admin.connect();
  await admin.query("CREATE DATABASE app");
  await admin.end();
  const standbyDir = ownedDir("bench-pg-standby-");
  const standbyData = path.join(standbyDir, "data");
  asPostgres(path.join(pgBin, "pg_basebackup"), [
    ...["-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres", "-D", standbyData],
    ...["-R", "-X", "stream", "-c", "fast"],
  ]);
  const standby = await startCluster(standbyDir, await freePort());
  cleanups.push(() => stopCluster(standby));

  const bouncerDir = ownedDir("bench-pgbouncer-");
  const port = await freePort();
  writeFileSync(path.join(bouncerDir, "userlist.txt"), '"postgres" ""\n');
  const ini = path.join(bouncerDir, "pgbouncer.ini");
  writeFileSync(
    ini,
    [
      "[databases]",
      `app = host=127.0.0.1 port=${primary.port} dbname=app`,
      `app_replica = host=127.0.0.1 port=${standby.port} dbname=app`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      `unix_socket_dir = ${bouncerDir}`,
      "auth_type = trust",
      `auth_file = ${path.join(bouncerDir, "userlist.txt")}`,
      "pool_mode = transaction",
      `default_pool_size = ${POOL_SIZE}`,
      "max_client_conn = 1000",
      "admin_users = postgres",
      `logfile = ${path.join(bouncerDir, "pgbouncer.log")}`,
      `pidfile = ${path.join(bouncerDir, "pgbouncer.pid")}`,
      "",
    ].join("\n"),
  );
  asPostgres(pgbouncerBin, ["-d", ini]);
  cleanups.push(() => {
    try {
      process.kill(Number(execFileSync("cat", [path.join(bouncerDir, "pgbouncer.pid")]).toString()), "SIGINT");
    } catch {}
    rmSync(bouncerDir, { recursive: true, force: true });
  });
  const bouncer = { port, url: (db) => `postgresql://postgres@127.0.0.1:${port}/${db}` };
  for (let i = 0; i < 100; i++) {
    try {
      await showPools(bouncer);
      break;
    } catch {
      await sleep(50);
    }
  }
  return { primary, standby, bouncer };
}

function stopCluster(cluster) {
  try {
    asPostgres(path.join(pgBin, "pg_ctl"), ["-D", cluster.data, "-m", "immediate", "-w", "stop"]);
  } catch {}
  rmSync(cluster.dir, { recursive: true, force: true });
}

async function showPools(bouncer) {
  const client = new pg.Client({ connectionString: bouncer.url("pgbouncer") });
  // A server stopped or a database dropped while the client is connected must not end the bench.
  client.on("error", () => {});
  await client.connect();
  try {
    return (await client.query("SHOW POOLS")).rows;
  } finally {
    await client.end();
  }
}

const serverConnections = (pools, database) =>
  pools
    .filter((p) => p.database === database)
    .reduce(
      (sum, p) => sum + ["sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"].reduce((s, k) => s + Number(p[k] ?? 0), 0),
      0,
    );

async function startService(env, logFile, cleanups) {
  const port = await freePort();
  const out = openSync(logFile, "a");
  const base = { ...process.env };
  for (const name of ["DATABASE_URL", "DATABASE_DIRECT_URL", "DATABASE_READ_URLS", "DATA_DIR", "REDIS_URL", "NODE_OPTIONS"])
    delete base[name];
  const child = spawn(process.execPath, ["dist/server.js"], {
    cwd: root,
    // The rate limit is the service's default otherwise: the load would measure 429s (as the main bench, lift it).
    env: {
      ...base,
      RATE_LIMIT_PER_MINUTE: "1000000000",
      ...env,
      PORT: String(port),
      HOST: "127.0.0.1",
      NODE_ENV: "production",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", out, out],
  });
  cleanups.push(() => child.kill("SIGKILL"));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`service exited during start; see ${logFile}`);
    if (i > 1200) throw new Error(`service not ready in 60 s; see ${logFile}`);
    const ok = await fetch(`${url}/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await sleep(50);
  }
  return { child, url };
}

/** Load spread over `services` (a share of the connections each), with SHOW POOLS sampled meanwhile. */
async function measure(services, request, connections, durationS, bouncer) {
  let peak = { app: 0, app_replica: 0 };
  let sampling = Boolean(bouncer);
  const sampler = (async () => {
    while (sampling) {
      const pools = await showPools(bouncer).catch(() => []);
      peak = {
        app: Math.max(peak.app, serverConnections(pools, "app")),
        app_replica: Math.max(peak.app_replica, serverConnections(pools, "app_replica")),
      };
      await sleep(200);
    }
  })();
  const results = await Promise.all(
    services.map((s) =>
      autocannon({
        url: s.url + request.path,
        method: request.method,
        headers: request.headers,
        body: request.body,
        connections: Math.max(1, Math.round(connections / services.length)),
        duration: durationS,
        timeout: 10,
      }),
    ),
  );
  sampling = false;
  await sampler;
  return {
    rps: results.reduce((sum, r) => sum + r.requests.average, 0),
    // The slower side's p99: a bound on the combined p99, not the exact figure.
    p99: Math.max(...results.map((r) => r.latency.p99)),
    errors: results.reduce((sum, r) => sum + r.errors + r.timeouts + r.non2xx, 0),
    serverConnections: bouncer ? peak : null,
  };
}

/** Runs the scenario; returns its results and a table to print. */
export async function benchPgBouncer({ durationS = 5, connections = 32, log = console.log } = {}) {
  const cleanups = [];
  const workDir = mkdtempSync(path.join(tmpdir(), "bench-pgbouncer-run-"));
  cleanups.push(() => rmSync(workDir, { recursive: true, force: true }));
  try {
    const { primary, bouncer } = await topology(cleanups);
    log(
      `pgbouncer scenario: primary :${primary.port}, standby, PgBouncer :${bouncer.port} (transaction mode, pool ${POOL_SIZE})`,
    );
    const seeded = spawnSync("npm", ["run", "--silent", "cli", "--", "seed", "--json"], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: primary.url("app") },
      encoding: "utf8",
    });
    if (seeded.status !== 0) throw new Error(`seed failed: ${seeded.stderr}`);
    const seed = JSON.parse(
      seeded.stdout
        .trim()
        .split("\n")
        .findLast((l) => l.startsWith("{")),
    );
    const logFile = path.join(workDir, "services.log");
    const alone = await startService(
      { DATABASE_URL: primary.url("app"), DATABASE_POOL_SIZE: String(POOL_SIZE) },
      logFile,
      cleanups,
    );
    const vendorIds = await createVendorPage(alone.url, seed);
    const requests = {
      "get task": { method: "GET", path: `/v1/tasks/${seed.taskIds[0]}`, headers: { "x-api-key": seed.apiKey } },
      "vendor page": vendorPageRequest(seed, vendorIds),
    };
    const pooled = [];
    for (let i = 0; i < REPLICAS; i++) {
      pooled.push(
        await startService(
          {
            DATABASE_URL: bouncer.url("app"),
            DATABASE_DIRECT_URL: primary.url("app"),
            DATABASE_READ_URLS: bouncer.url("app_replica"),
            DATABASE_POOL_SIZE: String(POOL_SIZE),
          },
          logFile,
          cleanups,
        ),
      );
    }
    // The seed key wrote the vendor page: its reads stay on the primary for the read-your-writes window.
    await sleep(2_000);
    const results = {};
    for (const [name, request] of Object.entries(requests)) {
      for (const target of [alone, ...pooled]) await measure([target], request, 4, 1, null);
      results[name] = {
        primary: await measure([alone], request, connections, durationS, null),
        pgbouncer: await measure(pooled, request, connections, durationS, bouncer),
      };
    }
    const readsOnReplica = (
      await Promise.all(
        pooled.map(
          async (s) =>
            (await (await fetch(`${s.url}/metrics`)).text()).match(/^db_read_replica_reads_total\{[^}]*\} (\d+)/m)?.[1],
        ),
      )
    ).reduce((sum, n) => sum + Number(n ?? 0), 0);
    const lines = [
      `Behind PgBouncer (transaction mode) with reads on a streaming replica, ${connections} connections, ${durationS} s each:`,
      "  scenario      one service on the primary       2 replicas, PgBouncer, replica reads   server connections (SHOW POOLS peak)",
      ...Object.entries(results).map(
        ([name, r]) =>
          `  ${name.padEnd(12)}  ${`${r.primary.rps.toFixed(0)} req/s, p99 ${r.primary.p99} ms, ${r.primary.errors} errors`.padEnd(32)} ` +
          `${`${r.pgbouncer.rps.toFixed(0)} req/s, p99 ${r.pgbouncer.p99} ms, ${r.pgbouncer.errors} errors`.padEnd(38)} ` +
          `primary ${r.pgbouncer.serverConnections.app} + replica ${r.pgbouncer.serverConnections.app_replica}`,
      ),
      `  Without PgBouncer: ${REPLICAS} replicas x pool ${POOL_SIZE} x (primary + replica) = ${REPLICAS * POOL_SIZE * 2} server connections at most; reads served by the replica: ${readsOnReplica}.`,
      "  On a 2-core machine the service replicas, PostgreSQL, its standby, PgBouncer and the load generator share",
      "  the same cores: these figures show connections and correctness, not how the setup scales.",
    ];
    return { results, readsOnReplica, text: lines.join("\n") };
  } finally {
    while (cleanups.length) await cleanups.pop()();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const missing = pgbouncerBenchMissing();
  if (missing) {
    console.error(`cannot run: ${missing}`);
    process.exit(2);
  }
  const build = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
  if (build.status !== 0) process.exit(1);
  const { text } = await benchPgBouncer({ durationS: Number(process.env.BENCH_DURATION ?? 5) });
  console.log(text);
  process.exit(0);
}

/** As a part of `npm run bench` (bench/suites.mjs): after the scenarios, on its own servers. */
export const suite = {
  id: "pgbouncer",
  resultKey: "pgbouncer",
  skip: "BENCH_PGBOUNCER",
  runs: (settings) => !settings.against,
  missing: () => pgbouncerBenchMissing(),
  run: (settings, log) => benchPgBouncer({ durationS: settings.durationS, log }),
};
