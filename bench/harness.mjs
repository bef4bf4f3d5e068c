// The harness of `npm run bench`: processes (started, stopped, their memory and CPU), the data
// (seed, sample answers, SQL per request) and the load (autocannon runs and their medians). The
// runner (bench/run.mjs) and the scenarios (bench/scenarios/) build on it.
import { spawn, spawnSync } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import { postgresCpuMs, postgresCpuSince, processCpuMs, systemBusyMs } from "./cpu.mjs";
import { freePort } from "./free-port.mjs";
import { activeScenarios } from "./scenarios/index.mjs";
import { log, median, settings, sleep, startFlagsOf } from "./settings.mjs";

export const benchDir = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(benchDir, "..");
const env = process.env;

// ------------------------------------------------------------------------------------------------
// Processes

export const children = new Set();
/** Children stopped on purpose (stopProcess, the run's cleanup): their exit is not news. */
export const stopped = new WeakSet();
export const cleanups = [];

export function databaseEnv(database) {
  const base = { ...env };
  for (const name of ["DATABASE_URL", "DATA_DIR", "REDIS_URL", "PORT", "HOST", "NODE_OPTIONS"]) delete base[name];
  return database.kind === "postgres" ? { ...base, DATABASE_URL: database.url } : { ...base, DATA_DIR: database.dataDir };
}

/** Starts a server process; resolves once /ready answers 200 and an authenticated request 200. */
export async function startProcess({ name, args, env: processEnv, logFile, probe, cwd = root, readyPath = "/ready" }) {
  const port = await freePort();
  const out = openSync(logFile, "a");
  const started = performance.now();
  const child = spawn(process.execPath, typeof args === "function" ? args(port) : args, {
    cwd,
    env: { ...processEnv, PORT: String(port), HOST: "127.0.0.1" },
    stdio: ["ignore", out, out],
  });
  children.add(child);
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  exited.then(() => children.delete(child));
  let dead = null;
  exited.then((r) => {
    dead = r;
  });
  const base = `http://127.0.0.1:${port}`;
  let readyMs = null;
  while (readyMs === null) {
    if (dead) throw new Error(`${name} exited during start (${JSON.stringify(dead)}); see ${logFile}:\n${tail(logFile)}`);
    if (performance.now() - started > 60_000) throw new Error(`${name} did not become ready in 60 s; see ${logFile}`);
    try {
      // Without a readiness endpoint (PostGraphile), the probe itself tells when it is up.
      const response = readyPath
        ? await fetch(base + readyPath)
        : await fetch(base + probe.path, { method: probe.method, headers: probe.headers, body: probe.body });
      await response.arrayBuffer();
      if (response.status === 200) readyMs = performance.now() - started;
    } catch {}
    if (readyMs === null) await sleep(10);
  }
  const response = await fetch(base + probe.path, { method: probe.method, headers: probe.headers, body: probe.body });
  await response.arrayBuffer();
  const firstRequestMs = performance.now() - started;
  if (response.status !== 200) throw new Error(`${name}: first authenticated request answered ${response.status}`);
  const rssAtStartMb = memoryMb(child.pid).rssMb;
  const proc = {
    name,
    child,
    pid: child.pid,
    base,
    port,
    exited,
    coldStart: { readyMs, firstRequestMs, rssAtStartMb },
  };
  // A process that ends before it is stopped: said at once, with its log's end (the run's directory
  // is removed when the run ends), so that its rounds' errors have a cause.
  exited.then((r) => {
    if (!stopped.has(child))
      process.stdout.write(`\n${name} exited during the run (${JSON.stringify(r)}); the end of its log:\n${tail(logFile, 40)}\n`);
  });
  return proc;
}

export async function stopProcess(proc) {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  stopped.add(proc.child);
  proc.child.kill("SIGTERM");
  const timer = setTimeout(() => proc.child.kill("SIGKILL"), 20_000);
  await proc.exited;
  clearTimeout(timer);
}

export function tail(file, lines = 20) {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/** Resident memory of a process, from /proc/<pid>/status (Linux). */
export function memoryMb(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
    return { rssMb: kb("VmRSS") / 1024, peakRssMb: kb("VmHWM") / 1024 };
  } catch {
    return { rssMb: null, peakRssMb: null };
  }
}

// CPU accounting (bench/cpu.mjs), to tell the cost per request and how busy the rest of the machine was.
export function cpuSnapshot(pid) {
  return {
    wall: performance.now(),
    system: systemBusyMs(),
    target: processCpuMs(pid),
    self: process.cpuUsage(),
    postgres: postgresCpuMs(),
  };
}
export function cpuDelta(before, pid) {
  const after = cpuSnapshot(pid);
  const wallMs = after.wall - before.wall;
  const self = process.cpuUsage(before.self);
  const selfMs = (self.user + self.system) / 1000;
  const postgresMs = postgresCpuSince(before.postgres, after.postgres);
  const targetMs = after.target - before.target;
  const busyMs = after.system - before.system;
  return {
    wallMs,
    targetCores: targetMs / wallMs,
    loadGeneratorCores: selfMs / wallMs,
    postgresCores: postgresMs / wallMs,
    otherCores: Math.max(0, busyMs - targetMs - selfMs - postgresMs) / wallMs,
    targetMs,
    postgresMs,
  };
}

/** Cores busy with anything but this process over `ms`. */
export async function machineBusyCores(ms = 1000) {
  const wall = performance.now();
  const system = systemBusyMs();
  const self = process.cpuUsage();
  await sleep(ms);
  const used = process.cpuUsage(self);
  return Math.max(0, systemBusyMs() - system - (used.user + used.system) / 1000) / (performance.now() - wall);
}

/** Reports how busy the machine is before a section; with BENCH_WAIT_QUIET=s, waits up to s seconds for quiet. */
export async function checkQuiet(label) {
  const deadline = performance.now() + settings.waitQuietS * 1000;
  let busy = await machineBusyCores();
  while (busy > 0.25 && performance.now() < deadline) {
    log(`  waiting for a quiet machine before ${label}: ${busy.toFixed(2)} cores busy`);
    busy = await machineBusyCores(5000);
  }
  log(
    `machine before ${label}: ${busy.toFixed(2)} of ${cpus().length} cores busy with other processes${busy > 0.25 ? " (not quiet)" : ""}`,
  );
  return busy;
}

/** The Node flags `npm start` gives the service (package.json): the bench starts it the same way. */
export const startFlags = startFlagsOf();

/** Node flags of the service; BENCH_NODE_FLAGS adds more (e.g. "--max-semi-space-size=32") to try them. */
export function serviceArgs(extra = [], bundle = "dist/server.js") {
  const flags = (process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  return [...startFlags, ...flags, ...extra, bundle];
}

export function serviceEnv(database) {
  return {
    ...databaseEnv(database),
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "1000000000",
    SEED_DEMO_DATA: "false",
    SHUTDOWN_GRACE_MS: "2000",
  };
}

export function floorEnv(database) {
  return { ...databaseEnv(database), NODE_ENV: "production", FLOOR_DB: database.kind === "postgres" ? "postgres" : "pglite" };
}

// ------------------------------------------------------------------------------------------------
// Data

export function seedDatabase(database) {
  const result = spawnSync("npm", ["run", "--silent", "cli", "--", "seed", "--json"], {
    cwd: root,
    env: databaseEnv(database),
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`seed failed (${result.status}):\n${result.stderr}`);
  const line = result.stdout
    .trim()
    .split("\n")
    .findLast((l) => l.startsWith("{"));
  return JSON.parse(line);
}

/** One request per scenario: the body each target answers, to check that service and floor agree. */
export async function sampleResponses(base, reqs) {
  const out = {};
  for (const s of activeScenarios) {
    const r = reqs[s.id];
    const response = await fetch(base + r.path, { method: r.method, headers: r.headers, body: r.body });
    const body = await response.text();
    out[s.id] = { status: response.status, body, normalized: normalize(body) };
  }
  return out;
}

/** A created comment's id and time differ on every call; everything else must be equal. */
export function normalize(body) {
  try {
    return JSON.stringify(JSON.parse(body), (k, v) => (k === "id" && /^cmt_/.test(v) ? "cmt_*" : k === "createdAt" ? "*" : v));
  } catch {
    return body;
  }
}

/**
 * SQL per request from PostgreSQL's own statistics: transactions and table scans (sequential +
 * index) over `n` sequential requests. A backend flushes its statistics lazily (up to 10 s late)
 * but always when it exits, so the database's connections are closed before each reading; both
 * pools reconnect on the next query (the service's is built to survive dropped connections).
 */
export async function sqlProbe(database, proc, request, n) {
  const flush = async () => {
    await database.admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [database.name]);
    for (let i = 0; i < 100; i++) {
      const { rows } = await database.admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1", [
        database.name,
      ]);
      if (rows[0].n === 0) return;
      await sleep(20);
    }
  };
  const read = async () => {
    await flush();
    const x = await database.admin.query("SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1", [
      database.name,
    ]);
    // A short-lived connection: its own transaction is flushed when it closes, counted once below.
    const client = new pg.Client({ connectionString: database.url });
    // A server stopped or a database dropped while the client is connected must not end the bench.
    client.on("error", () => {});
    await client.connect();
    const t = await client.query(
      `SELECT relname, coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS scans FROM pg_stat_user_tables WHERE relname <> '_prisma_migrations'`,
    );
    await client.end();
    return { xacts: Number(x.rows[0].n), tables: Object.fromEntries(t.rows.map((r) => [r.relname, Number(r.scans)])) };
  };
  const before = await read();
  let failed = 0;
  for (let i = 0; i < n; i++) {
    const response = await fetch(proc.base + request.path, {
      method: request.method,
      headers: request.headers,
      body: request.body,
    });
    await response.arrayBuffer();
    if (response.status >= 300) failed++;
  }
  const after = await read();
  const tables = {};
  for (const [name, scans] of Object.entries(after.tables)) {
    const d = (scans - (before.tables[name] ?? 0)) / n;
    if (d > 0) tables[name] = Math.round(d * 100) / 100;
  }
  return {
    requests: n,
    failed,
    xactsPerRequest: (after.xacts - before.xacts - 1) / n,
    scansPerRequest: Object.values(tables).reduce((a, b) => a + b, 0),
    tables,
  };
}

/** Runs `work(client)` with a client of its own on the bench's database (as its owner). */
export async function withClient(database, work) {
  const client = new pg.Client({ connectionString: database.url });
  // A server stopped or a database dropped while the client is connected must not end the bench.
  client.on("error", () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

// ------------------------------------------------------------------------------------------------
// Load

export async function load(proc, request, connections, durationS, expectBody) {
  const before = cpuSnapshot(proc.pid);
  const result = await autocannon({
    url: proc.base + request.path,
    method: request.method,
    headers: request.headers,
    body: request.body,
    connections,
    duration: durationS,
    timeout: 10,
    ...(expectBody ? { expectBody } : {}),
  });
  const cpu = cpuDelta(before, proc.pid);
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    mismatches: result.mismatches ?? 0,
    ...memoryMb(proc.pid),
    // CPU time of the server process per request, and of the database server per request.
    cpuMsPerRequest: result.requests.total ? cpu.targetMs / result.requests.total : null,
    dbCpuMsPerRequest: result.requests.total && cpu.postgresMs ? cpu.postgresMs / result.requests.total : null,
    cpu,
  };
}

export function aggregate(runs) {
  const sum = (k) => runs.reduce((s, r) => s + (r[k] ?? 0), 0);
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    errors: sum("errors"),
    non2xx: sum("non2xx"),
    mismatches: sum("mismatches"),
    rssMb: Math.max(...runs.map((r) => r.rssMb ?? 0)),
    cpuMsPerRequest: median(runs.map((r) => r.cpuMsPerRequest)),
    dbCpuMsPerRequest: median(runs.map((r) => r.dbCpuMsPerRequest)),
    otherCores: median(runs.map((r) => r.cpu.otherCores)),
  };
}

export function ratios(service, floor) {
  const r = (a, b) => (a !== null && b ? a / b : null);
  return {
    rps: r(service.rps, floor.rps),
    p50: r(service.p50, floor.p50),
    p99: r(service.p99, floor.p99),
    rssMb: r(service.rssMb, floor.rssMb),
    cpuMsPerRequest: r(service.cpuMsPerRequest, floor.cpuMsPerRequest),
  };
}

export const fmtRun = (r) =>
  `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(1).padStart(6)} ms  p99 ${r.p99.toFixed(1).padStart(6)} ms  ` +
  `err ${r.errors}/${r.non2xx}/${r.mismatches}  rss ${r.rssMb?.toFixed(0)} MB  cpu ${r.cpuMsPerRequest?.toFixed(2)} ms/req  ` +
  `(cores: server ${r.cpu.targetCores.toFixed(2)}, db ${r.cpu.postgresCores.toFixed(2)}, load gen ${r.cpu.loadGeneratorCores.toFixed(2)}, other ${r.cpu.otherCores.toFixed(2)})`;
