// npm run bench: the service in production mode against the floor (bench/floor.mjs), on PostgreSQL
// and on PGlite, at 32 and 128 connections, runs alternating service and floor; prints a table,
// the issue's targets as PASS/FAIL, writes bench/results.json and bench/profile-summary.txt.
// A measurement, not a test: it exits 0 whatever the figures. How to run and read it: bench/README.md;
// the results of past runs: bench/results/.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import { postgresCpuMs, postgresCpuSince, processCpuMs, systemBusyMs } from "./cpu.mjs";
import { freePort } from "./free-port.mjs";
import { buildGuardsBundle, GUARD_STEPS, guardTable, priceGuards } from "./guards.mjs";
import { runListPageBench } from "./list-page.mjs";
import { benchNotifications } from "./notifications.mjs";
import {
  ensurePeer,
  noTask,
  noVendors,
  PEER_VENDOR_PAGE_DIFFERENCES,
  PEER_VERSION,
  peerJwtProcess,
  peerProcess,
  peerTaskRequest,
  peerToken,
  peerVendorPageRequest,
  sameTask,
  setUpTenancy,
  setUpVendorFunctions,
  setUpVendorTenancy,
  vendorPageDifference,
} from "./peer.mjs";
import { benchPgBouncer, pgbouncerBenchMissing } from "./pgbouncer.mjs";
import { formatSummary, summarizeProfile } from "./profile.mjs";
import { createVendorPage, vendorPageRequest } from "./vendor-page.mjs";

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(benchDir, "..");

// ------------------------------------------------------------------------------------------------
// Settings

const env = process.env;
const settings = {
  durationS: Number(env.BENCH_DURATION ?? 5),
  warmupS: Number(env.BENCH_WARMUP ?? 2),
  rounds: Number(env.BENCH_ROUNDS ?? 2),
  connections: (env.BENCH_CONNECTIONS ?? "32,128").split(",").map(Number),
  databases: env.BENCH_ONLY ? env.BENCH_ONLY.split(",") : ["postgres", "pglite"],
  scenarios: env.BENCH_SCENARIOS ? env.BENCH_SCENARIOS.split(",") : null,
  postgresUrl: env.BENCH_POSTGRES_URL ?? env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
  profile: env.BENCH_PROFILE !== "0",
  waitQuietS: Number(env.BENCH_WAIT_QUIET ?? 0),
  profileDurationS: Number(env.BENCH_PROFILE_DURATION ?? Math.max(6, Number(env.BENCH_DURATION ?? 5))),
  profileScenario: env.BENCH_PROFILE_SCENARIO ?? "rest-task",
  /** BENCH_AGAINST_ENV="NAME=value,...": the A/B baseline's environment over the service's (a setting against itself). */
  againstEnv: Object.fromEntries(
    (env.BENCH_AGAINST_ENV ?? "")
      .split(",")
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
  ),
  // A/B mode: another build of the service (e.g. a copy of an earlier dist/) takes the floor's place.
  against: env.BENCH_AGAINST ? path.resolve(env.BENCH_AGAINST) : null,
  // The peer (PostGraphile) and the framework ceiling run beside service and floor on PostgreSQL;
  // off by default in A/B mode, where only the two builds matter. BENCH_PEER=0 / 1 decides.
  peer: env.BENCH_PEER ? env.BENCH_PEER !== "0" : !env.BENCH_AGAINST,
  // The price of each per-request step (bench/guards.mjs), on PostgreSQL after the scenarios: on
  // unless BENCH_GUARDS=0 (and in A/B mode); a list of step ids prices only those.
  guards: env.BENCH_GUARDS ? env.BENCH_GUARDS !== "0" : !env.BENCH_AGAINST,
  guardSteps: env.BENCH_GUARDS && !["0", "1"].includes(env.BENCH_GUARDS) ? env.BENCH_GUARDS.split(",") : null,
  // In process (app.fetch, one request at a time, fine-grained rotation: robust on a busy machine),
  // or over HTTP (two processes under load at once).
  guardsMode: env.BENCH_GUARDS_MODE === "http" ? "http" : "inprocess",
  guardRounds: Number(env.BENCH_GUARD_ROUNDS ?? 5),
  guardDurationS: Number(env.BENCH_GUARD_DURATION ?? 2),
  guardBlocks: Number(env.BENCH_GUARD_BLOCKS ?? 60),
  guardRequests: Number(env.BENCH_GUARD_REQUESTS ?? 10),
};
for (const id of settings.guardSteps ?? []) {
  if (!GUARD_STEPS.some((s) => s.id === id)) {
    console.error(`BENCH_GUARDS: unknown step ${id} (known: ${GUARD_STEPS.map((s) => s.id).join(", ")})`);
    process.exit(2);
  }
}
/** Peer and framework ceiling are measured at this connection count only (the targets' one). */
const PEER_CONNECTIONS = 32;

// A scenario with `peer: true` is also measured against PostGraphile's get task by id and against
// the framework ceiling (bench/framework.mjs), in the same alternation. One with `peerPage: true`
// against PostGraphile answering the same page (bench/peer.mjs: through SQL functions it is given),
// in the same alternation too, without the framework ceiling (it answers a constant task only).
const scenarioList = [
  { id: "rest-task", label: "REST get task", peer: true },
  { id: "graphql-task", label: "GraphQL get task", peer: true },
  { id: "create-comment", label: "REST create comment" },
  { id: "stats", label: "task item stats" },
  { id: "comments-page", label: "50 comments + authors + attachments" },
  { id: "vendor-page", label: "vendor page in one request (GraphQL)", peerPage: true },
];
for (const id of settings.scenarios ?? []) {
  if (!scenarioList.some((s) => s.id === id)) {
    console.error(`BENCH_SCENARIOS: unknown scenario ${id} (known: ${scenarioList.map((s) => s.id).join(", ")})`);
    process.exit(2);
  }
}
const activeScenarios = scenarioList.filter((s) => !settings.scenarios || settings.scenarios.includes(s.id));

const GRAPHQL_TASK = "query($id: ID!) { task(taskId: $id) { id title status description taskTemplateId createdAt updatedAt } }";

/** The request each scenario sends; `deterministic` bodies are checked on every response. */
function requests(seed) {
  const key = { "x-api-key": seed.apiKey };
  const json = { ...key, "content-type": "application/json" };
  return {
    "rest-task": { method: "GET", path: `/v1/tasks/${seed.taskIds[0]}`, headers: key, deterministic: true },
    "graphql-task": {
      method: "POST",
      path: "/graphql",
      headers: json,
      body: JSON.stringify({ query: GRAPHQL_TASK, variables: { id: seed.taskIds[0] } }),
      deterministic: true,
    },
    // On another task than the page's, so the page keeps its 50 comments with attachments.
    "create-comment": {
      method: "POST",
      path: "/v1/comments",
      headers: json,
      body: JSON.stringify({
        content: "Benchmark comment",
        entityId: seed.taskIds[1],
        entityType: "task",
        userId: seed.userIds[0],
      }),
      deterministic: false,
    },
    stats: {
      method: "GET",
      path: `/v1/task-management/stats?entityId=${seed.vendorIds[0]}&entityType=vendor`,
      headers: key,
      deterministic: true,
    },
    "comments-page": {
      method: "GET",
      path: `/v1/comments?entityId=${seed.taskIds[0]}&entityType=task&limit=50`,
      headers: key,
      deterministic: true,
    },
    // Its vendors are made once the service runs (createVendorPage).
    "vendor-page": vendorPageRequest(seed, []),
  };
}

// ------------------------------------------------------------------------------------------------
// Processes

const children = new Set();
const cleanups = [];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line) => process.stdout.write(`${line}\n`);

function databaseEnv(database) {
  const base = { ...env };
  for (const name of ["DATABASE_URL", "DATA_DIR", "REDIS_URL", "PORT", "HOST", "NODE_OPTIONS"]) delete base[name];
  return database.kind === "postgres" ? { ...base, DATABASE_URL: database.url } : { ...base, DATA_DIR: database.dataDir };
}

/** Starts a server process; resolves once /ready answers 200 and an authenticated request 200. */
async function startProcess({ name, args, env: processEnv, logFile, probe, cwd = root, readyPath = "/ready" }) {
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
  return { name, child, pid: child.pid, base, port, exited, coldStart: { readyMs, firstRequestMs, rssAtStartMb } };
}

async function stopProcess(proc) {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill("SIGTERM");
  const timer = setTimeout(() => proc.child.kill("SIGKILL"), 20_000);
  await proc.exited;
  clearTimeout(timer);
}

function tail(file, lines = 20) {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/** Resident memory of a process, from /proc/<pid>/status (Linux). */
function memoryMb(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
    return { rssMb: kb("VmRSS") / 1024, peakRssMb: kb("VmHWM") / 1024 };
  } catch {
    return { rssMb: null, peakRssMb: null };
  }
}

// CPU accounting (bench/cpu.mjs), to tell the cost per request and how busy the rest of the machine was.
function cpuSnapshot(pid) {
  return {
    wall: performance.now(),
    system: systemBusyMs(),
    target: processCpuMs(pid),
    self: process.cpuUsage(),
    postgres: postgresCpuMs(),
  };
}
function cpuDelta(before, pid) {
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
async function machineBusyCores(ms = 1000) {
  const wall = performance.now();
  const system = systemBusyMs();
  const self = process.cpuUsage();
  await sleep(ms);
  const used = process.cpuUsage(self);
  return Math.max(0, systemBusyMs() - system - (used.user + used.system) / 1000) / (performance.now() - wall);
}

/** Reports how busy the machine is before a section; with BENCH_WAIT_QUIET=s, waits up to s seconds for quiet. */
async function checkQuiet(label) {
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
const startFlags = (() => {
  const start = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).scripts.start;
  return /\bnode\s+((?:--?\S+\s+)*)dist\/server\.js/.exec(start)?.[1].split(/\s+/).filter(Boolean) ?? [];
})();

/** Node flags of the service; BENCH_NODE_FLAGS adds more (e.g. "--max-semi-space-size=32") to try them. */
function serviceArgs(extra = [], bundle = "dist/server.js") {
  const flags = (process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  return [...startFlags, ...flags, ...extra, bundle];
}

function serviceEnv(database) {
  return {
    ...databaseEnv(database),
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "1000000000",
    SEED_DEMO_DATA: "false",
    SHUTDOWN_GRACE_MS: "2000",
  };
}

function floorEnv(database) {
  return { ...databaseEnv(database), NODE_ENV: "production", FLOOR_DB: database.kind === "postgres" ? "postgres" : "pglite" };
}

// ------------------------------------------------------------------------------------------------
// Data

function seedDatabase(database) {
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

/** 50 comments on the first task, authors taking turns, each with one attachment; through the API. */
async function createPageComments(base, seed) {
  for (let i = 0; i < 50; i++) {
    const response = await fetch(`${base}/v1/comments`, {
      method: "POST",
      headers: { "x-api-key": seed.apiKey, "content-type": "application/json" },
      body: JSON.stringify({
        content: `Evidence note ${i + 1}: reviewed the control and attached the export.`,
        entityId: seed.taskIds[0],
        entityType: "task",
        userId: seed.userIds[i % seed.userIds.length],
        attachments: [
          {
            fileName: `evidence-${i + 1}.txt`,
            fileType: "text/plain",
            fileData: Buffer.from(`evidence ${i + 1}\n`).toString("base64"),
          },
        ],
      }),
    });
    const text = await response.text();
    if (response.status !== 201) throw new Error(`creating the page's comments: ${response.status} ${text}`);
  }
}

/** One request per scenario: the body each target answers, to check that service and floor agree. */
async function sampleResponses(base, reqs) {
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
function normalize(body) {
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
async function sqlProbe(database, proc, request, n) {
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

// ------------------------------------------------------------------------------------------------
// Load

async function load(proc, request, connections, durationS, expectBody) {
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

const median = (xs) => {
  const v = xs.filter((x) => typeof x === "number" && !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};

function aggregate(runs) {
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

function ratios(service, floor) {
  const r = (a, b) => (a !== null && b ? a / b : null);
  return {
    rps: r(service.rps, floor.rps),
    p50: r(service.p50, floor.p50),
    p99: r(service.p99, floor.p99),
    rssMb: r(service.rssMb, floor.rssMb),
    cpuMsPerRequest: r(service.cpuMsPerRequest, floor.cpuMsPerRequest),
  };
}

const fmtRun = (r) =>
  `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(1).padStart(6)} ms  p99 ${r.p99.toFixed(1).padStart(6)} ms  ` +
  `err ${r.errors}/${r.non2xx}/${r.mismatches}  rss ${r.rssMb?.toFixed(0)} MB  cpu ${r.cpuMsPerRequest?.toFixed(2)} ms/req  ` +
  `(cores: server ${r.cpu.targetCores.toFixed(2)}, db ${r.cpu.postgresCores.toFixed(2)}, load gen ${r.cpu.loadGeneratorCores.toFixed(2)}, other ${r.cpu.otherCores.toFixed(2)})`;

// ------------------------------------------------------------------------------------------------
// One database

async function benchDatabase(kind, workDir) {
  const label = kind === "postgres" ? "PostgreSQL" : "PGlite";
  const out = { kind, label, scenarios: {}, coldStart: {}, starts: [], responses: {} };
  const database = { kind };
  let adminClient = null;
  if (kind === "postgres") {
    adminClient = new pg.Client({ connectionString: settings.postgresUrl });
    // A server stopped or a database dropped while the client is connected must not end the bench.
    adminClient.on("error", () => {});
    try {
      await adminClient.connect();
    } catch (error) {
      log(`\n${label}: not reachable at ${settings.postgresUrl} (${error.message}); skipped.`);
      return { ...out, skipped: `not reachable: ${error.message}` };
    }
    const name = `bench_${process.pid}_${randomBytes(4).toString("hex")}`;
    await adminClient.query(`CREATE DATABASE "${name}"`);
    // The secured peer's tenant role (roles are cluster-wide: dropped once the database is gone).
    database.tenantRole = `${name}_tenant`;
    // Tenant roles of earlier runs whose database is gone (a run killed before its cleanup).
    const stale = await adminClient.query(
      `SELECT rolname FROM pg_roles r WHERE rolname ~ '^bench_[0-9]+_[0-9a-f]+_tenant$'
         AND NOT EXISTS (SELECT 1 FROM pg_database d WHERE d.datname || '_tenant' = r.rolname)`,
    );
    for (const { rolname } of stale.rows) await adminClient.query(`DROP ROLE IF EXISTS "${rolname}"`).catch(() => {});
    const url = new URL(settings.postgresUrl);
    url.pathname = `/${name}`;
    database.url = url.toString();
    database.name = name;
    database.admin = adminClient;
    cleanups.push(async () => {
      await adminClient.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch((e) => log(`drop ${name}: ${e.message}`));
      await adminClient
        .query(`DROP ROLE IF EXISTS "${database.tenantRole}"`)
        .catch((e) => log(`drop role ${database.tenantRole}: ${e.message}`));
      await adminClient.end().catch(() => {});
    });
    out.database = name;
  } else {
    database.dataDir = mkdtempSync(path.join(tmpdir(), "bench-pglite-"));
    cleanups.push(async () => rmSync(database.dataDir, { recursive: true, force: true }));
    out.database = database.dataDir;
  }

  log(`\n=== ${label} (${out.database}) ===`);
  out.busyCoresBefore = await checkQuiet(label);
  let t = performance.now();
  const seed = seedDatabase(database);
  log(`seeded through the CLI in ${((performance.now() - t) / 1000).toFixed(1)} s (organization ${seed.organizationId})`);
  const reqs = requests(seed);
  const probe = reqs["rest-task"];
  const logFile = path.join(workDir, `${kind}.log`);

  const startService = async (extraArgs = []) => {
    const proc = await startProcess({ name: "service", args: serviceArgs(extraArgs), env: serviceEnv(database), logFile, probe });
    out.starts.push({ target: "service", ...proc.coldStart });
    return proc;
  };
  const startFloor = async () => {
    const proc = settings.against
      ? await startProcess({
          name: "baseline",
          args: serviceArgs([], settings.against),
          env: { ...serviceEnv(database), ...settings.againstEnv },
          logFile,
          probe,
        })
      : await startProcess({ name: "floor", args: ["bench/floor.mjs"], env: floorEnv(database), logFile, probe });
    out.starts.push({ target: "floor", ...proc.coldStart });
    return proc;
  };

  // Cold start: spawn to /ready 200, then to the first authenticated 200.
  let service = await startService();
  out.coldStart.service = service.coldStart;
  log(
    `service cold start: /ready ${service.coldStart.readyMs.toFixed(0)} ms, first authenticated 200 ${service.coldStart.firstRequestMs.toFixed(0)} ms, ` +
      `RSS ${service.coldStart.rssAtStartMb?.toFixed(0)} MB`,
  );
  t = performance.now();
  await createPageComments(service.base, seed);
  log(`created 50 comments with attachments in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  let vendorIds = null;
  if (reqs["vendor-page"] && activeScenarios.some((s) => s.id === "vendor-page")) {
    vendorIds = await createVendorPage(service.base, seed);
    reqs["vendor-page"] = vendorPageRequest(seed, vendorIds);
  }
  out.responses.service = await sampleResponses(service.base, reqs);

  let floor = null;
  if (kind === "pglite") {
    // One process at a time on an embedded database: stop the service before the floor opens it.
    await stopProcess(service);
    service = null;
  }
  floor = await startFloor();
  out.coldStart.floor = floor.coldStart;
  log(
    `floor cold start: /ready ${floor.coldStart.readyMs.toFixed(0)} ms, first authenticated 200 ${floor.coldStart.firstRequestMs.toFixed(0)} ms, ` +
      `RSS ${floor.coldStart.rssAtStartMb?.toFixed(0)} MB`,
  );
  out.responses.floor = await sampleResponses(floor.base, reqs);
  out.responsesMatch = {};
  for (const s of activeScenarios) {
    const a = out.responses.service[s.id];
    const b = out.responses.floor[s.id];
    const same = a.status === b.status && a.normalized === b.normalized;
    out.responsesMatch[s.id] = same;
    log(
      `  ${s.label}: service ${a.status} ${a.body.length} B, floor ${b.status} ${b.body.length} B — ${same ? "same JSON" : "DIFFERENT"}`,
    );
    if (!same) log(`    service: ${a.body.slice(0, 300)}\n    floor:   ${b.body.slice(0, 300)}`);
  }
  // The peer and the framework ceiling, on PostgreSQL, for the scenarios marked `peer`; the peer
  // alone for those marked `peerPage`.
  let peer = null;
  let peerJwt = null;
  let framework = null;
  const peerRequest = peerTaskRequest(seed.taskIds[0]);
  let peerJwtRequest = null;
  const peerTask = activeScenarios.some((s) => s.peer);
  const peerPage = Boolean(vendorIds) && activeScenarios.some((s) => s.peerPage);
  /** The peer's vendor page: anonymous, and with the token of the seeded organization. */
  let peerVendorRequest = null;
  let peerJwtVendorRequest = null;
  if (kind === "postgres" && settings.peer && (peerTask || peerPage)) {
    out.peer = { version: PEER_VERSION, install: ensurePeer(log) };
    // PostGraphile reads the schema once at start: the vendor page's functions come first.
    if (peerPage) await withClient(database, setUpVendorFunctions);
    const how = peerProcess(database.url);
    peer = await startProcess({ name: "PostGraphile", ...how, logFile, probe: peerRequest, readyPath: null });
    out.coldStart.peer = peer.coldStart;
    log(
      `${out.peer.install} cold start: first answer ${peer.coldStart.firstRequestMs.toFixed(0)} ms, RSS ${peer.coldStart.rssAtStartMb?.toFixed(0)} MB`,
    );
    const response = await fetch(peer.base + peerRequest.path, peerRequest);
    out.responses.peer = { status: response.status, body: await response.text() };
    // The service's task to compare with is REST get task's answer (as in startPeerJwt).
    if (out.responses.service["rest-task"]) {
      out.peer.sameTask = sameTask(out.responses.service["rest-task"].body, out.responses.peer.body);
      log(
        `  PostGraphile taskByRowId: ${out.responses.peer.status} ${out.responses.peer.body.length} B — ${out.peer.sameTask ? "the same task" : "DIFFERENT"}`,
      );
      if (!out.peer.sameTask) log(`    PostGraphile: ${out.responses.peer.body.slice(0, 300)}`);
    }
    if (peerPage) {
      peerVendorRequest = peerVendorPageRequest(vendorIds);
      const page = await fetch(peer.base + peerVendorRequest.path, peerVendorRequest);
      out.responses.peerVendorPage = { status: page.status, body: await page.text() };
      const difference = vendorPageDifference(out.responses.service["vendor-page"].body, out.responses.peerVendorPage.body);
      out.peer.vendorPage = { sameAnswer: difference === null, differences: PEER_VENDOR_PAGE_DIFFERENCES };
      log(
        `  PostGraphile vendorsByIds (vendor page): ${page.status} ${out.responses.peerVendorPage.body.length} B — ${difference === null ? "the same vendors, statistics and comments" : `DIFFERENT: ${difference}`}`,
      );
      if (difference !== null) throw new Error("PostGraphile's vendor page is not the service's (see above)");
    }
    ({ peerJwt, peerJwtRequest, peerJwtVendorRequest } = await startPeerJwt(database, seed, out, logFile, vendorIds));
    if (peerTask) framework = await startFramework(reqs, out.responses.service, logFile);
  }

  if (kind === "postgres") {
    // SQL per request, from PostgreSQL's statistics (sequential requests, before any load).
    out.sql = {};
    if (peer && peerTask) {
      out.sql.peer = await sqlProbe(database, peer, peerRequest, 100);
      log(
        `  SQL per request, PostGraphile taskByRowId: ${out.sql.peer.xactsPerRequest.toFixed(2)} transactions, ${out.sql.peer.scansPerRequest.toFixed(2)} table scans`,
      );
    }
    if (peerJwt && peerTask) {
      out.sql.peerJwt = await sqlProbe(database, peerJwt, peerJwtRequest, 100);
      log(
        `  SQL per request, PostGraphile with JWT + RLS: ${out.sql.peerJwt.xactsPerRequest.toFixed(2)} transactions, ${out.sql.peerJwt.scansPerRequest.toFixed(2)} table scans`,
      );
    }
    if (peer && peerVendorRequest) {
      out.sql.peerVendorPage = await sqlProbe(database, peer, peerVendorRequest, 100);
      log(
        `  SQL per request, PostGraphile vendor page: ${out.sql.peerVendorPage.xactsPerRequest.toFixed(2)} transactions, ${out.sql.peerVendorPage.scansPerRequest.toFixed(2)} table scans`,
      );
    }
    if (peerJwt && peerJwtVendorRequest) {
      out.sql.peerJwtVendorPage = await sqlProbe(database, peerJwt, peerJwtVendorRequest, 100);
      log(
        `  SQL per request, PostGraphile vendor page with JWT + RLS: ${out.sql.peerJwtVendorPage.xactsPerRequest.toFixed(2)} transactions, ${out.sql.peerJwtVendorPage.scansPerRequest.toFixed(2)} table scans`,
      );
    }
    for (const s of activeScenarios) {
      out.sql[s.id] = {
        service: await sqlProbe(database, service, reqs[s.id], 100),
        floor: await sqlProbe(database, floor, reqs[s.id], 100),
      };
      const fmt = (p) =>
        `${p.xactsPerRequest.toFixed(2)} transactions, ${p.scansPerRequest.toFixed(2)} table scans${p.failed ? ` (${p.failed} failed)` : ""}`;
      log(`  SQL per request, ${s.label}: service ${fmt(out.sql[s.id].service)}; floor ${fmt(out.sql[s.id].floor)}`);
    }
  }
  const expected = (target, id) => {
    if (target === "peer") return id === "vendor-page" ? out.responses.peerVendorPage.body : out.responses.peer.body;
    if (target === "peerJwt") return id === "vendor-page" ? out.responses.peerJwtVendorPage.body : out.responses.peerJwt.body;
    if (target === "framework") return undefined;
    return reqs[id].deterministic ? out.responses[target][id].body : undefined;
  };

  const record = (id, connections, target, run) => {
    out.scenarios[id] ??= {};
    out.scenarios[id][connections] ??= { service: [], floor: [] };
    out.scenarios[id][connections][target] ??= [];
    out.scenarios[id][connections][target].push(run);
  };
  /** Who else runs in a scenario's alternation: the peer and the framework ceiling, when up. */
  const extras = (s) =>
    s.peer
      ? [
          peer && ["peer", peer, peerRequest],
          peerJwt && ["peerJwt", peerJwt, peerJwtRequest],
          framework && ["framework", framework, reqs[s.id]],
        ].filter(Boolean)
      : s.peerPage
        ? [
            peerVendorRequest && ["peer", peer, peerVendorRequest],
            peerJwtVendorRequest && ["peerJwt", peerJwt, peerJwtVendorRequest],
          ].filter(Boolean)
        : [];

  if (kind === "postgres") {
    // Both processes up; alternate service and floor run by run.
    for (const s of activeScenarios) {
      await load(service, reqs[s.id], 32, settings.warmupS, undefined);
      await load(floor, reqs[s.id], 32, settings.warmupS, undefined);
      for (const [, proc, request] of extras(s)) await load(proc, request, 32, settings.warmupS, undefined);
      for (const connections of settings.connections) {
        for (let round = 1; round <= settings.rounds; round++) {
          // ABBA order (service first in odd rounds, last in even ones): a trend during the run
          // (JIT warm-up, caches, the machine) favours no side.
          const lineup = [
            ["service", service, reqs[s.id]],
            ["floor", floor, reqs[s.id]],
            ...(connections === PEER_CONNECTIONS ? extras(s) : []),
          ];
          const runs = {};
          for (const [target, proc, request] of round % 2 ? lineup : lineup.toReversed()) {
            const run = await load(proc, request, connections, settings.durationS, expected(target, s.id));
            record(s.id, connections, target, run);
            runs[target] = run;
            log(`  ${s.id.padEnd(14)} c${String(connections).padEnd(4)} ${target.padEnd(9)} #${round}  ${fmtRun(run)}`);
            await sleep(300);
          }
          if (lineup.length > 2) {
            const of = (target) => (runs[target] ? `${ratioPct(runs.service.rps / runs[target].rps)} of ${target}` : null);
            log(
              `  ${"".padEnd(14)} round #${round}: service at ${["peerJwt", "peer", "floor", "framework"].map(of).filter(Boolean).join(", ")}`,
            );
          }
        }
      }
    }
    out.finalMemory = { service: memoryMb(service.pid), floor: memoryMb(floor.pid) };
    if (peer) out.finalMemory.peer = memoryMb(peer.pid);
    if (peerJwt) out.finalMemory.peerJwt = memoryMb(peerJwt.pid);
    await stopProcess(framework);
    await stopProcess(peerJwt);
    await stopProcess(peer);
    await stopProcess(floor);
    await stopProcess(service);
    if (settings.profile && !settings.against && activeScenarios.some((s) => s.id === settings.profileScenario)) {
      out.profile = await profileRun(settings.profileScenario, reqs[settings.profileScenario], workDir, startService);
    }
    const guardScenarios = activeScenarios.filter((s) => s.peer);
    if (settings.guards && !settings.against && guardScenarios.length) {
      const scenarios = guardScenarios.map((s) => ({
        id: s.id,
        label: s.label,
        request: reqs[s.id],
        expectBody: out.responses.service[s.id].body,
      }));
      out.guards = { mode: settings.guardsMode, scenarios: scenarios.map(({ id, label }) => ({ id, label })) };
      if (settings.guardsMode === "inprocess") {
        log(
          `\nThe price of each per-request step (bench/guards.mjs, in process): ${guardScenarios.map((s) => s.id).join(", ")}, ` +
            `${settings.guardBlocks} blocks of ${settings.guardRequests} requests one at a time per side, alternating (ABBA)`,
        );
        out.guards.rows = await priceGuardsInProcess(database, scenarios, workDir);
      } else {
        log(
          `\nThe price of each per-request step (bench/guards.mjs, over HTTP): ${guardScenarios.map((s) => s.id).join(", ")}, 32 connections, ` +
            `${settings.guardRounds} rounds of ${settings.guardDurationS} s, both processes under load at once (16 connections each), each pair started afresh`,
        );
        out.guards.rows = await priceGuards({
          bundle: guardsBundle.server,
          start: ({ bundle, without, name }) =>
            startProcess({
              name,
              args: serviceArgs([], bundle),
              env: { ...serviceEnv(database), BENCH_WITHOUT: without },
              logFile,
              probe,
            }),
          stop: stopProcess,
          log,
          cpuMsOf: processCpuMs,
          // Cores busy with anything but the two servers, PostgreSQL and the load generator, over a round.
          busyCores: (pids) => {
            const servers = () => pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
            const before = {
              system: systemBusyMs(),
              wall: performance.now(),
              self: process.cpuUsage(),
              postgres: postgresCpuMs(),
              servers: servers(),
            };
            return () => {
              const self = process.cpuUsage(before.self);
              const ownMs = (self.user + self.system) / 1000 + postgresCpuSince(before.postgres) + servers() - before.servers;
              return Math.max(0, systemBusyMs() - before.system - ownMs) / (performance.now() - before.wall);
            };
          },
          scenarios,
          steps: settings.guardSteps,
          rounds: settings.guardRounds,
          durationS: settings.guardDurationS,
          warmupS: settings.warmupS,
          connections: PEER_CONNECTIONS,
        });
      }
    }
  } else {
    // One process at a time: alternate whole phases, ABBA (service, floor, floor, service, ...).
    await stopProcess(floor);
    floor = null;
    for (let round = 1; round <= settings.rounds; round++) {
      for (const target of round % 2 ? ["service", "floor"] : ["floor", "service"]) {
        const proc = target === "service" ? await startService() : await startFloor();
        for (const s of activeScenarios) await load(proc, reqs[s.id], 32, Math.min(settings.warmupS, 1.5), undefined);
        for (const s of activeScenarios) {
          for (const connections of settings.connections) {
            const run = await load(proc, reqs[s.id], connections, settings.durationS, expected(target, s.id));
            record(s.id, connections, target, run);
            log(`  ${s.id.padEnd(14)} c${String(connections).padEnd(4)} ${target.padEnd(7)} #${round}  ${fmtRun(run)}`);
            await sleep(300);
          }
        }
        out.finalMemory ??= {};
        out.finalMemory[target] = memoryMb(proc.pid);
        await stopProcess(proc);
      }
    }
  }

  for (const s of activeScenarios) {
    for (const connections of settings.connections) {
      const cell = out.scenarios[s.id]?.[connections];
      if (!cell) continue;
      cell.serviceMedian = aggregate(cell.service);
      cell.floorMedian = aggregate(cell.floor);
      cell.ratio = ratios(cell.serviceMedian, cell.floorMedian);
      if (cell.peer) {
        cell.peerMedian = aggregate(cell.peer);
        cell.ratioToPeer = ratios(cell.serviceMedian, cell.peerMedian);
      }
      if (cell.peerJwt) {
        cell.peerJwtMedian = aggregate(cell.peerJwt);
        cell.ratioToPeerJwt = ratios(cell.serviceMedian, cell.peerJwtMedian);
      }
      if (cell.framework) cell.frameworkMedian = aggregate(cell.framework);
    }
  }
  // The framework ceiling's share of the floor, as the summary prints it.
  for (const s of activeScenarios) {
    const cell = out.scenarios[s.id]?.[PEER_CONNECTIONS];
    if (!cell?.frameworkMedian) continue;
    out.framework ??= {};
    out.framework[s.id] = {
      framework: cell.frameworkMedian.rps,
      floor: cell.floorMedian.rps,
      ratio: cell.frameworkMedian.rps / cell.floorMedian.rps,
    };
  }
  const serviceRss = Object.values(out.scenarios).flatMap((byConn) =>
    Object.values(byConn).flatMap((c) => c.service.map((r) => r.rssMb)),
  );
  out.serviceRssMaxMb = serviceRss.length ? Math.max(...serviceRss) : null;
  return out;
}

/**
 * The in-process pricing (bench/guards-inprocess.mjs) in a process of its own, started with the
 * service's Node flags and environment; its rows in the shape of the HTTP pricing's.
 */
async function priceGuardsInProcess(database, scenarios, workDir) {
  const input = path.join(workDir, "guards-input.json");
  const output = path.join(workDir, "guards-output.json");
  const steps = GUARD_STEPS.filter((s) => !settings.guardSteps || settings.guardSteps.includes(s.id));
  writeFileSync(
    input,
    JSON.stringify({
      app: guardsBundle.app,
      steps: steps.map((s) => s.id),
      scenarios: scenarios.map((s) => ({ id: s.id, ...s.request, expectBody: s.expectBody })),
      blocks: settings.guardBlocks,
      requestsPerSlot: settings.guardRequests,
      warmupRequests: 300,
    }),
  );
  const child = spawn(process.execPath, [...serviceArgs([], path.join(benchDir, "guards-inprocess.mjs")), input, output], {
    cwd: root,
    env: serviceEnv(database),
    stdio: ["ignore", "inherit", "inherit"],
  });
  children.add(child);
  const code = await new Promise((resolve) => child.once("exit", resolve));
  children.delete(child);
  if (code !== 0) throw new Error(`the in-process pricing exited with ${code}`);
  const byTransport = JSON.parse(readFileSync(output, "utf8"));
  const label = (id) =>
    id === "none"
      ? "A/A: nothing off (the noise)"
      : id === "all"
        ? "every step of the list off at once (a bound)"
        : GUARD_STEPS.find((s) => s.id === id).label;
  return ["none", ...steps.map((s) => s.id), "all"].map((id) => ({
    id,
    label: label(id),
    transports: Object.fromEntries(scenarios.map((s) => [s.id, byTransport[s.id][id]])),
  }));
}

/** Runs `work(client)` with a client of its own on the bench's database (as its owner). */
async function withClient(database, work) {
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

/**
 * PostGraphile as a multi-tenant deployment runs it (bench/peer.mjs): the tenant role and the
 * row-level-security policy, then the peer with the lazy-jwt preset. Checked before any load: a
 * token of the task's organization gets the service's task, a token of another organization null.
 * With `vendorIds` (the vendor page is measured), the tenancy of the tables the page reads too, and
 * the same checks of the page: the service's answer for the organization's token, no vendor for
 * another organization's.
 */
async function startPeerJwt(database, seed, out, logFile, vendorIds) {
  await withClient(database, async (client) => {
    await setUpTenancy(client, database.tenantRole);
    if (vendorIds) await setUpVendorTenancy(client, database.tenantRole);
  });
  const secret = randomBytes(32).toString("base64url");
  const token = await peerToken(secret, { role: database.tenantRole, organizationId: seed.organizationId });
  const peerJwtRequest = peerTaskRequest(seed.taskIds[0], token);
  const peerJwt = await startProcess({
    name: "PostGraphile (JWT + RLS)",
    ...peerJwtProcess(database.url, secret),
    logFile,
    probe: peerJwtRequest,
    readyPath: null,
  });
  out.coldStart.peerJwt = peerJwt.coldStart;
  const ask = async (request) => {
    const response = await fetch(peerJwt.base + request.path, request);
    return { status: response.status, body: await response.text() };
  };
  out.responses.peerJwt = await ask(peerJwtRequest);
  const otherToken = await peerToken(secret, { role: database.tenantRole, organizationId: `${seed.organizationId}_other` });
  const other = await ask(peerTaskRequest(seed.taskIds[0], otherToken));
  // The service's task is there to compare with when a get-task scenario runs (the peer's probe is its get task either way).
  const serviceTask = out.responses.service["rest-task"]?.body;
  out.peerJwt = {
    role: database.tenantRole,
    sameTask: serviceTask ? sameTask(serviceTask, out.responses.peerJwt.body) : null,
    otherOrganizationGetsNull: other.status === 200 && noTask(other.body),
  };
  log(
    `PostGraphile with JWT + RLS (lazy-jwt, role ${database.tenantRole}) cold start: first answer ${peerJwt.coldStart.firstRequestMs.toFixed(0)} ms; ` +
      `its organization's token: ${out.peerJwt.sameTask ? "the same task" : out.peerJwt.sameTask === null ? `${out.responses.peerJwt.status} (no get-task scenario to compare with)` : "DIFFERENT"}; ` +
      `another organization's token: ${out.peerJwt.otherOrganizationGetsNull ? "null (row-level security holds)" : `NOT null: ${other.status} ${other.body.slice(0, 200)}`}`,
  );
  if (out.peerJwt.sameTask === false) log(`    PostGraphile (JWT): ${out.responses.peerJwt.body.slice(0, 300)}`);
  if (!out.peerJwt.otherOrganizationGetsNull) throw new Error("the secured peer showed a task to another organization's token");
  if (!vendorIds) return { peerJwt, peerJwtRequest, peerJwtVendorRequest: null };

  const peerJwtVendorRequest = peerVendorPageRequest(vendorIds, token);
  out.responses.peerJwtVendorPage = await ask(peerJwtVendorRequest);
  const difference = vendorPageDifference(out.responses.service["vendor-page"].body, out.responses.peerJwtVendorPage.body);
  const otherPage = await ask(peerVendorPageRequest(vendorIds, otherToken));
  out.peerJwt.vendorPage = {
    sameAnswer: difference === null,
    otherOrganizationGetsNoVendor: otherPage.status === 200 && noVendors(otherPage.body),
    differences: PEER_VENDOR_PAGE_DIFFERENCES,
  };
  log(
    `  vendor page with JWT + RLS: its organization's token: ${difference === null ? "the same vendors, statistics and comments" : `DIFFERENT: ${difference}`}; ` +
      `another organization's token: ${out.peerJwt.vendorPage.otherOrganizationGetsNoVendor ? "no vendor (row-level security holds)" : `VENDORS: ${otherPage.status} ${otherPage.body.slice(0, 200)}`}`,
  );
  if (difference !== null) throw new Error("the secured peer's vendor page is not the service's (see above)");
  if (!out.peerJwt.vendorPage.otherOrganizationGetsNoVendor)
    throw new Error("the secured peer showed vendors to another organization's token");
  return { peerJwt, peerJwtRequest, peerJwtVendorRequest };
}

/**
 * graphql-yoga + Sofa alone (bench/framework.mjs: a constant task, no database, no auth): the most
 * any service on this stack could reach here. It runs in the alternation of the `peer` scenarios.
 */
async function startFramework(reqs, serviceResponses, logFile) {
  const task = JSON.parse(serviceResponses["rest-task"]?.body ?? "{}");
  const proc = await startProcess({
    name: "framework",
    args: ["bench/framework.mjs"],
    env: { ...process.env, NODE_ENV: "production", FRAMEWORK_TASK: JSON.stringify(task) },
    logFile,
    probe: reqs["rest-task"],
  });
  log("framework ceiling up: graphql-yoga + Sofa answering a constant task (no database, no auth), in the same alternation");
  return proc;
}

/** The service once more under node --cpu-prof, one scenario (BENCH_PROFILE_SCENARIO, REST get task when unset) at 32 connections; summary of the load window. */
async function profileRun(scenario, request, workDir, startService) {
  const dir = path.join(workDir, "profile");
  mkdirSync(dir, { recursive: true });
  log(`\nCPU profile: ${scenario}, 32 connections, ${settings.profileDurationS} s (service under --cpu-prof)`);
  const proc = await startService(["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-name", "service.cpuprofile"]);
  await load(proc, request, 32, settings.warmupS, undefined);
  const startUs = Number(process.hrtime.bigint() / 1000n);
  const run = await load(proc, request, 32, settings.profileDurationS, undefined);
  const endUs = Number(process.hrtime.bigint() / 1000n);
  log(`  profiled run: ${fmtRun(run)}`);
  await stopProcess(proc);
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) {
    log("  no .cpuprofile was written");
    return { run, error: "no profile written" };
  }
  const profile = JSON.parse(readFileSync(path.join(dir, file), "utf8"));
  const profileEndUs = profile.endTime;
  const overlaps = startUs < profileEndUs && endUs > profile.startTime;
  const summary = summarizeProfile(profile, overlaps ? { startUs, endUs } : undefined);
  const keep = path.join(benchDir, "profiles");
  mkdirSync(keep, { recursive: true });
  const kept = `${scenario}-postgres.cpuprofile`;
  copyFileSync(path.join(dir, file), path.join(keep, kept));
  const title =
    `CPU profile of the service, PostgreSQL, ${scenario} (${request.method} ${request.path}), 32 connections, ${settings.profileDurationS} s ` +
    `(${new Date().toISOString()})\n` +
    `Profiled run: ${run.rps.toFixed(0)} req/s, p50 ${run.p50.toFixed(1)} ms, p99 ${run.p99.toFixed(1)} ms ` +
    `(the profiler itself costs some throughput); other processes used ${run.cpu.otherCores.toFixed(2)} of ${cpus().length} cores meanwhile. ` +
    "The profiler samples wall-clock time: when the machine is oversubscribed, time spent waiting for a CPU is counted in whatever ran last, " +
    `typically the socket-write system calls that wake another process.\n${overlaps ? "Only the samples of the load window are counted." : "Whole profile (the load window could not be located)."}\n` +
    `Raw profile: bench/profiles/${kept} (open in Chrome DevTools > Performance, or speedscope).\n`;
  const text = formatSummary(summary, title);
  writeFileSync(path.join(benchDir, "profile-summary.txt"), text);
  return { run, window: overlaps, summary };
}

// ------------------------------------------------------------------------------------------------
// Report

const num = (x, digits = 0) => (x === null || x === undefined || Number.isNaN(x) ? "-" : x.toFixed(digits));
const ratioPct = (x) => (x === null || x === undefined ? "-" : `${(100 * x).toFixed(0)}%`);
const ratioX = (x) => (x === null || x === undefined ? "-" : `x${x.toFixed(2)}`);

function table(results) {
  const lines = [];
  const header = [
    ["scenario", 36, "l"],
    ["conn", 4],
    ["svc req/s", 9],
    ["floor", 7],
    ["ratio", 6],
    ["svc p50", 8],
    ["floor", 6],
    ["ratio", 6],
    ["svc p99", 8],
    ["floor", 6],
    ["ratio", 6],
    ["err svc/floor", 14],
    ["svc RSS", 8],
    ["floor", 6],
    ["ratio", 6],
    ["CPU ms/req", 10],
    ["floor", 6],
    ["ratio", 6],
  ];
  const row = (cells) =>
    cells.map((c, i) => (header[i][2] === "l" ? String(c).padEnd(header[i][1]) : String(c).padStart(header[i][1]))).join(" ");
  for (const db of results.databases) {
    if (db.skipped) {
      lines.push(`${db.label}: skipped (${db.skipped})`);
      continue;
    }
    lines.push("");
    lines.push(
      `${db.label} — medians of ${settings.rounds} runs of ${settings.durationS} s each side; latency in ms; RSS in MB after the load; ` +
        "CPU ms/req: CPU time of the server process per request; ratio = service / floor (req/s: higher is better; the rest: lower is better)",
    );
    lines.push(row(header.map((h) => h[0])));
    for (const s of activeScenarios) {
      for (const connections of settings.connections) {
        const cell = db.scenarios[s.id]?.[connections];
        if (!cell) continue;
        const a = cell.serviceMedian;
        const b = cell.floorMedian;
        const errs = (x) => `${x.errors + x.non2xx + x.mismatches}`;
        // service, floor, ratio of one measure
        const triple = (key, digits, ratio) => [num(a[key], digits), num(b[key], digits), ratio(cell.ratio[key])];
        lines.push(
          row([
            s.label,
            connections,
            ...triple("rps", 0, ratioPct),
            ...triple("p50", 1, ratioX),
            ...triple("p99", 1, ratioX),
            `${errs(a)}/${errs(b)}`,
            ...triple("rssMb", 0, ratioX),
            ...triple("cpuMsPerRequest", 2, ratioX),
          ]),
        );
      }
    }
    const cs = db.coldStart;
    lines.push(
      `cold start (spawn → /ready 200 → first authenticated 200): service ${num(cs.service?.readyMs)} / ${num(cs.service?.firstRequestMs)} ms, ` +
        `floor ${num(cs.floor?.readyMs)} / ${num(cs.floor?.firstRequestMs)} ms, ratio ${ratioX(cs.service && cs.floor ? cs.service.firstRequestMs / cs.floor.firstRequestMs : null)}` +
        `; RSS after start: service ${num(cs.service?.rssAtStartMb)} MB, floor ${num(cs.floor?.rssAtStartMb)} MB; ` +
        `largest service RSS after a run ${num(db.serviceRssMaxMb)} MB`,
    );
    const allRuns = Object.values(db.scenarios).flatMap((byConn) =>
      Object.values(byConn).flatMap((c) => [...c.service, ...c.floor]),
    );
    const other = allRuns.map((r) => r.cpu.otherCores);
    if (other.length) {
      lines.push(
        `noise: other processes (not service, floor, PostgreSQL or the load generator) used ${median(other).toFixed(2)} cores ` +
          `(median of runs), ${Math.max(...other).toFixed(2)} at most, of ${cpus().length}` +
          (Math.max(...other) > 0.25 ? " — the machine was not quiet; compare ratios rather than absolute figures" : ""),
      );
    }
    if (db.sql) {
      lines.push(
        "SQL per request (PostgreSQL statistics, 100 sequential requests): transactions / table scans, service vs floor",
      );
      for (const s of activeScenarios) {
        const q = db.sql[s.id];
        if (!q) continue;
        const tables = (p) =>
          Object.entries(p.tables)
            .map(([t, n]) => `${t} ${n}`)
            .join(", ");
        lines.push(
          `  ${s.label.padEnd(36)} service ${q.service.xactsPerRequest.toFixed(2)} / ${q.service.scansPerRequest.toFixed(2)} (${tables(q.service)})` +
            `  floor ${q.floor.xactsPerRequest.toFixed(2)} / ${q.floor.scansPerRequest.toFixed(2)} (${tables(q.floor)})`,
        );
      }
    }
    const differ = Object.entries(db.responsesMatch ?? {}).filter(([, same]) => !same);
    lines.push(
      differ.length
        ? `responses DIFFER between service and floor: ${differ.map(([id]) => id).join(", ")}`
        : "service and floor answer the same JSON for every scenario",
    );
  }
  return lines.join("\n");
}

/** Service, PostGraphile (secured and anonymous), floor and framework ceiling side by side, for the `peer` and `peerPage` scenarios. */
function peerTable(results) {
  const db = results.databases.find((d) => d.kind === "postgres" && !d.skipped);
  const rows = activeScenarios.map((s) => [s, db?.scenarios[s.id]?.[PEER_CONNECTIONS]]).filter(([, c]) => c?.peerMedian);
  if (!rows.length) return null;
  const header = [
    ["scenario", Math.max(17, ...rows.map(([s]) => s.label.length)), "l"],
    ["svc req/s", 9],
    ["PG+JWT", 7],
    ["svc/JWT", 7],
    ["PG anon", 7],
    ["svc/PG", 7],
    ["floor", 6],
    ["svc/floor", 9],
    ["fw", 6],
    ["svc/fw", 6],
    ["p99 svc", 7],
    ["JWT", 5],
    ["PG", 5],
    ["CPU ms/req svc", 14],
    ["JWT", 5],
    ["PG", 5],
    ["floor", 5],
    ["fw", 5],
    ["DB CPU svc", 10],
    ["JWT", 5],
    ["PG", 5],
    ["err svc/JWT/PG", 14],
  ];
  const row = (cells) =>
    cells.map((c, i) => (header[i][2] === "l" ? String(c).padEnd(header[i][1]) : String(c).padStart(header[i][1]))).join(" ");
  const lines = [
    `PostgreSQL, ${PEER_CONNECTIONS} connections, the same alternation: the service against PostGraphile ${PEER_VERSION} ` +
      "as deployed for tenants (PG+JWT: lazy-jwt preset, an HS256 token per request, role + organization claims as settings, " +
      "row-level security) and anonymous (PG anon: no authentication, the ceiling), both GraphQL: taskByRowId with the same seven fields " +
      "for get task, vendorsByIds through SQL functions for the vendor page (what differs: below); " +
      "the floor; the framework ceiling (fw: yoga + Sofa, constant task; get task only). CPU ms/req of the server process; DB CPU: PostgreSQL's per request",
    row(header.map((h) => h[0])),
  ];
  const errs = (x) => (x ? `${x.errors + x.non2xx + x.mismatches}` : "-");
  for (const [s, c] of rows) {
    const a = c.serviceMedian;
    const fw = c.frameworkMedian;
    const jwt = c.peerJwtMedian;
    lines.push(
      row([
        s.label,
        num(a.rps),
        num(jwt?.rps),
        ratioPct(c.ratioToPeerJwt?.rps),
        num(c.peerMedian.rps),
        ratioPct(c.ratioToPeer.rps),
        num(c.floorMedian.rps),
        ratioPct(c.ratio.rps),
        num(fw?.rps),
        fw ? ratioPct(a.rps / fw.rps) : "-",
        num(a.p99, 1),
        num(jwt?.p99, 1),
        num(c.peerMedian.p99, 1),
        num(a.cpuMsPerRequest, 2),
        num(jwt?.cpuMsPerRequest, 2),
        num(c.peerMedian.cpuMsPerRequest, 2),
        num(c.floorMedian.cpuMsPerRequest, 2),
        num(fw?.cpuMsPerRequest, 2),
        num(a.dbCpuMsPerRequest, 2),
        num(jwt?.dbCpuMsPerRequest, 2),
        num(c.peerMedian.dbCpuMsPerRequest, 2),
        `${errs(a)}/${errs(jwt)}/${errs(c.peerMedian)}`,
      ]),
    );
  }
  const cs = db.coldStart.peer;
  if (cs)
    lines.push(
      `PostGraphile cold start to its first answer ${num(cs.firstRequestMs)} ms; RSS after start ${num(cs.rssAtStartMb)} MB` +
        (db.coldStart.peerJwt
          ? `; with JWT + RLS ${num(db.coldStart.peerJwt.firstRequestMs)} ms, ${num(db.coldStart.peerJwt.rssAtStartMb)} MB`
          : ""),
    );
  const sql = (p) => `${p.xactsPerRequest.toFixed(2)} transactions, ${p.scansPerRequest.toFixed(2)} table scans`;
  if (db.sql?.peer)
    lines.push(
      `PostGraphile SQL per request: anonymous ${sql(db.sql.peer)}${db.sql.peerJwt ? `; with JWT + RLS ${sql(db.sql.peerJwt)}` : ""}`,
    );
  if (db.sql?.peerVendorPage)
    lines.push(
      `PostGraphile SQL per request, vendor page: anonymous ${sql(db.sql.peerVendorPage)}` +
        `${db.sql.peerJwtVendorPage ? `; with JWT + RLS ${sql(db.sql.peerJwtVendorPage)}` : ""}; service ${sql(db.sql["vendor-page"].service)}`,
    );
  if (db.peer?.sameTask === false) lines.push("PostGraphile's answer was NOT the service's task: its figures do not compare");
  if (db.peerJwt && db.peerJwt.sameTask !== null)
    lines.push(
      `PostGraphile with JWT + RLS: its organization's token ${db.peerJwt.sameTask ? "gets the service's task" : "does NOT get the service's task"}, ` +
        `another organization's token ${db.peerJwt.otherOrganizationGetsNull ? "gets null" : "does NOT get null"}`,
    );
  const page = db.peerJwt?.vendorPage ?? db.peer?.vendorPage;
  if (page) {
    lines.push(
      `Vendor page: PostGraphile's answer is the service's (the same vendors in order, statistics, 5 newest comments with their authors' names)` +
        (db.peerJwt?.vendorPage
          ? `; with JWT + RLS another organization's token ${db.peerJwt.vendorPage.otherOrganizationGetsNoVendor ? "gets no vendor" : "DOES get vendors"}`
          : ""),
    );
    lines.push(`  what PostGraphile answers differently: ${page.differences}`);
  }
  return lines.join("\n");
}

function targets(results) {
  const pgDb = results.databases.find((d) => d.kind === "postgres" && !d.skipped);
  const cell = (db, id) => db?.scenarios[id]?.[32];
  const list = [];
  const add = (name, measured, pass, note = "") =>
    list.push({ name, measured, result: pass === null ? "SKIP" : pass ? "PASS" : "FAIL", note });
  // Issue 28: against PostGraphile as deployed for tenants, and against the anonymous ceiling.
  const peerTarget = (id, label, which, min) => {
    const c = cell(pgDb, id);
    const peerCell = which === "peerJwt" ? c?.peerJwtMedian : c?.peerMedian;
    const ratio = which === "peerJwt" ? c?.ratioToPeerJwt : c?.ratioToPeer;
    add(
      `${label} ≥ ${Number.isInteger(min) ? min.toFixed(1) : min}× PostGraphile ${which === "peerJwt" ? "with JWT + RLS" : "anonymous"}`,
      peerCell ? `${ratio.rps.toFixed(2)}× (${num(c.serviceMedian.rps)} vs ${num(peerCell.rps)} req/s)` : "not run",
      peerCell ? ratio.rps >= min : null,
    );
  };
  for (const [id, label] of [
    ["graphql-task", "PostgreSQL, 32 conn: GraphQL get task"],
    ["rest-task", "PostgreSQL, 32 conn: REST get task"],
  ]) {
    peerTarget(id, label, "peerJwt", 1.5);
    peerTarget(id, label, "peer", 0.75);
  }
  // The vendor page, against PostGraphile answering the same page less what it cannot express
  // without plugins (named with the figure: the SQL functions it is given).
  peerTarget("vendor-page", "PostgreSQL, 32 conn: vendor page (GraphQL)", "peerJwt", 1.0);
  if (pgDb?.peerJwt?.vendorPage) list.at(-1).note = `PostGraphile: ${pgDb.peerJwt.vendorPage.differences}`;
  const rest = cell(pgDb, "rest-task")?.serviceMedian;
  const graphql = cell(pgDb, "graphql-task")?.serviceMedian;
  add(
    "PostgreSQL, 32 conn: REST get task at most GraphQL's CPU per request",
    rest && graphql ? `${num(rest.cpuMsPerRequest, 2)} vs ${num(graphql.cpuMsPerRequest, 2)} ms` : "not run",
    rest && graphql ? rest.cpuMsPerRequest <= graphql.cpuMsPerRequest : null,
  );
  for (const s of activeScenarios.filter((x) => x.peer)) {
    const c = cell(pgDb, s.id);
    add(
      `PostgreSQL, 32 conn: ${s.label} p99 < 50 ms`,
      c ? `${num(c.serviceMedian.p99, 1)} ms` : "not run",
      c ? c.serviceMedian.p99 < 50 : null,
    );
  }
  const cc = cell(pgDb, "create-comment");
  add(
    "PostgreSQL, 32 conn: create comment ≥ 400 req/s, no errors",
    cc ? `${num(cc.serviceMedian.rps)} req/s, ${cc.serviceMedian.errors} errors, ${cc.serviceMedian.non2xx} non-2xx` : "not run",
    cc ? cc.serviceMedian.rps >= 400 && cc.serviceMedian.errors === 0 && cc.serviceMedian.non2xx === 0 : null,
  );
  const cs = pgDb?.coldStart?.service;
  add(
    "PostgreSQL: cold start to first answered request < 2 s",
    cs ? `${num(cs.firstRequestMs)} ms` : "not run",
    cs ? cs.firstRequestMs < 2000 : null,
  );
  add(
    "PostgreSQL: service RSS < 250 MB after the load",
    pgDb?.serviceRssMaxMb ? `${num(pgDb.serviceRssMaxMb)} MB (max over all runs)` : "not run",
    pgDb?.serviceRssMaxMb ? pgDb.serviceRssMaxMb < 250 : null,
  );
  const errorFree = [];
  for (const db of results.databases) {
    for (const [id, byConn] of Object.entries(db.scenarios ?? {})) {
      for (const [connections, c] of Object.entries(byConn)) {
        const a = c.serviceMedian;
        if (a && a.errors + a.non2xx + a.mismatches > 0)
          errorFree.push(
            `${db.label} ${id} c${connections}: ${a.errors} errors, ${a.non2xx} non-2xx, ${a.mismatches} wrong bodies`,
          );
      }
    }
  }
  return { list, errors: errorFree };
}

// ------------------------------------------------------------------------------------------------
// Main

async function cleanup() {
  for (const child of children) child.kill("SIGKILL");
  while (cleanups.length) await cleanups.pop()();
}

process.on("SIGINT", async () => {
  log("\ninterrupted: stopping processes and removing the throwaway databases");
  await cleanup();
  process.exit(130);
});

/** The bench-only bundle whose steps can be switched off (bench/guards.mjs), when guards are priced. */
let guardsBundle = null;

async function main() {
  const workDir = mkdtempSync(path.join(tmpdir(), "bench-run-"));
  cleanups.push(async () => rmSync(workDir, { recursive: true, force: true }));
  const startedAt = new Date();
  log(
    `npm run bench: ${cpus().length} CPUs, Node ${process.version} (service flags as in npm start: ${startFlags.join(" ") || "none"}); ${settings.rounds} rounds x ${settings.durationS} s per side, ` +
      `connections ${settings.connections.join(", ")}, databases ${settings.databases.join(", ")}, scenarios ${activeScenarios.map((s) => s.id).join(", ")}`,
  );
  let t = performance.now();
  const build = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
  if (build.status !== 0) throw new Error("build failed");
  log(`built dist/server.js in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  if (settings.guards && !settings.against && settings.databases.includes("postgres")) {
    guardsBundle = await buildGuardsBundle(root);
    log(
      `built the bench-only bundles with switchable steps: ${path.relative(root, guardsBundle.server)}, ${path.relative(root, guardsBundle.app)}`,
    );
  }

  const results = {
    startedAt: startedAt.toISOString(),
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    settings,
    databases: [],
  };
  for (const kind of ["postgres", "pglite"]) {
    if (!settings.databases.includes(kind)) continue;
    t = performance.now();
    const db = await benchDatabase(kind, workDir);
    db.elapsedS = (performance.now() - t) / 1000;
    // Raw bodies are long; keep only their comparison in results.json.
    if (db.responses) {
      for (const target of Object.keys(db.responses)) {
        for (const id of Object.keys(db.responses[target])) delete db.responses[target][id].normalized;
      }
    }
    results.databases.push(db);
  }
  // Issue 27: two replicas behind PgBouncer with reads on a replica (bench/pgbouncer.mjs); BENCH_PGBOUNCER=0 skips it.
  if (env.BENCH_PGBOUNCER !== "0" && !settings.against) {
    const missing = pgbouncerBenchMissing();
    if (missing) log(`pgbouncer scenario skipped: ${missing}`);
    else results.pgbouncer = await benchPgBouncer({ durationS: settings.durationS, log });
  }
  // Issue 29: notifying and e-mail (bench/notifications.mjs); BENCH_NOTIFICATIONS=0 skips it.
  if (env.BENCH_NOTIFICATIONS !== "0" && !settings.against && settings.databases.includes("postgres")) {
    results.notifications = await benchNotifications({
      durationS: settings.durationS,
      rounds: settings.rounds,
      postgresUrl: settings.postgresUrl,
      log,
    });
  }
  // Issue 24's list scenario (bench/list-page.mjs): its own database of 100,000 tasks; BENCH_LIST_PAGE=0 skips it.
  if (env.BENCH_LIST_PAGE !== "0" && settings.databases.includes("postgres")) results.listPage = await runListPageBench(log);
  results.elapsedS = (Date.now() - startedAt.getTime()) / 1000;

  const report = targets(results);
  results.targets = report.list;
  const profile = results.databases.find((d) => d.profile)?.profile;
  if (profile?.summary) profile.summary.functions = profile.summary.functions.slice(0, 40);
  const resultsFile = settings.against ? "results-against.json" : "results.json";
  writeFileSync(path.join(benchDir, resultsFile), `${JSON.stringify(results, null, 2)}\n`);
  if (settings.against) log(`\nA/B mode: the "floor" columns are ${settings.against}, not bench/floor.mjs.`);

  log(`\n${"=".repeat(100)}`);
  log(table(results));
  if (!settings.against) {
    const against = peerTable(results);
    if (against) log(`\n${against}`);
    log("\nTargets (issue 28; PostgreSQL at 32 connections unless named):");
    for (const target of report.list) {
      log(`  ${target.result.padEnd(4)}  ${target.name.padEnd(70)} ${target.measured}`);
      if (target.note) log(`        ${target.note}`);
    }
  }
  const framework = results.databases.find((d) => d.framework)?.framework;
  if (framework) {
    log("\nFramework ceiling (PostgreSQL phase, 32 conn): graphql-yoga + Sofa answering a constant task, no database, no auth");
    for (const [id, f] of Object.entries(framework)) {
      const service = results.databases.find((d) => d.kind === "postgres")?.scenarios[id]?.[32]?.serviceMedian?.rps;
      log(
        `  ${id.padEnd(14)} framework ${num(f.framework)} req/s = ${(f.ratio * 100).toFixed(0)}% of the floor (${num(f.floor)} req/s)` +
          (service ? `; the service reaches ${((service / f.framework) * 100).toFixed(0)}% of the framework alone` : ""),
      );
    }
  }
  const guards = results.databases.find((d) => d.guards)?.guards;
  if (guards) {
    log(
      guards.mode === "inprocess"
        ? "\nThe price of each per-request step (PostgreSQL, in process, one request at a time; CPU ms per request, every step on → this one off, " +
            "medians of the differences of alternating blocks [95 % interval]; same bundle, same run; the A/A row is the noise):"
        : "\nThe price of each per-request step (PostgreSQL, over HTTP, 16 + 16 connections at once; CPU ms of the server process per request, " +
            "every step on → this one off, medians of the rounds; same bundle, same run; the A/A row is the noise):",
    );
    log(guardTable(guards.rows, guards.scenarios));
  }
  if (report.errors.length) log(`\nService errors under load:\n  ${report.errors.join("\n  ")}`);
  if (profile?.summary) {
    log("\nWhere the service's time goes (REST get task, PostgreSQL; full summary in bench/profile-summary.txt):");
    for (const g of profile.summary.groups)
      if (g.selfPctOfBusy !== null) log(`  ${g.group.padEnd(78)} ${g.selfPctOfBusy.toFixed(1).padStart(5)}% self`);
  }
  if (results.pgbouncer) log(`\n${results.pgbouncer.text}`);
  if (results.notifications) log(`\n${results.notifications.text}`);
  log(`\nbench/${resultsFile} written; ${results.elapsedS.toFixed(0)} s in all.`);
}

try {
  await main();
} catch (error) {
  // A broken harness is not a measurement: that one exits 1. Missed targets still exit 0.
  log(`\nbench failed: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
process.exit();
