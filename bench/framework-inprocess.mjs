// The framework page and readiness (issue 56, item 9) of two builds in one process, on one
// PostgreSQL database with framework-page's data: requests one at a time, in blocks alternating
// between the builds (A = a git revision, B = this worktree), so that a shared machine's noise
// hits both alike. Per request: the wall time (the service and PostgreSQL one after the other),
// the service's CPU, PostgreSQL's CPU (of this database's connections) and the table scans PostgreSQL counted (pg_stat_user_tables).
//
//   node bench/framework-inprocess.mjs [base revision, default HEAD]
//
// Settings (environment): FW_BLOCKS (20), FW_REQUESTS (10 per block and scenario), FW_DB_URL (a
// database made by an earlier run, with FW_SEED its seed file; without them a new database is
// made, seeded and filled through B's API, about a minute, and kept: the run prints both),
// FW_POSTGRES_URL (the server, default the local one), FW_PROFILE=page|readiness (a CPU profile of
// B alone under that scenario instead of the A/B; with FW_HEAP=1 a sampling heap profile, what it
// allocates by function), FW_CONCURRENCY (1; with n > 1, n requests at
// once on one pool per build, and "wall" is the elapsed time per request: 1 / throughput).
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { baseAndHeadBundles, throwawayDatabase } from "./app-bundle.mjs";
import { postgresCpuMs } from "./cpu.mjs";
import { allocationProfile, samplesOf } from "./heap-sampling.mjs";
import { createFrameworkPage, FRAMEWORK_PAGE_QUERY, frameworkRequest } from "./scenarios/framework-page.mjs";
import { FRAMEWORK_READINESS_QUERY } from "./scenarios/framework-readiness.mjs";
import { startFlagsOf } from "./settings.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
if (!env.FW_CHILD) {
  const result = spawnSync(process.execPath, [...startFlagsOf(), fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...env, FW_CHILD: "1" },
  });
  process.exit(result.status ?? 1);
}
const log = (line) => process.stdout.write(`${line}\n`);
const baseRef = process.argv[2] ?? "HEAD";
const blocks = Number(env.FW_BLOCKS ?? 20);
const perBlock = Number(env.FW_REQUESTS ?? 10);

const dir = path.join(root, ".exp", "fw");
const bundles = await baseAndHeadBundles(root, dir, baseRef);

let seed;
if (env.FW_DB_URL) {
  Object.assign(env, {
    DATABASE_URL: env.FW_DB_URL,
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "1000000000",
    SEED_DEMO_DATA: "false",
  });
  seed = JSON.parse(readFileSync(env.FW_SEED ?? path.join(dir, "seed.json"), "utf8"));
} else {
  const database = await throwawayDatabase(env.FW_POSTGRES_URL);
  seed = database.seed(root);
  writeFileSync(path.join(dir, "seed.json"), JSON.stringify(seed));
  log(`database ${database.url} (kept), seed ${path.join(dir, "seed.json")}`);
}

const pino = (await import("pino")).default;
const logger = pino({ level: "warn" });
const apps = {};
for (const [side, file] of Object.entries(bundles)) {
  const mod = await import(pathToFileURL(file).href);
  const config = mod.loadConfig();
  const database = await mod.openDatabase({
    kind: "postgres",
    url: config.databaseUrl,
    poolSize: config.databasePoolSize,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    preparedStatements: config.databasePreparedStatements,
  });
  apps[side] = { side, app: mod.createApp({ database, config, logger }), database };
}

const statsDb = new pg.Client({ connectionString: env.DATABASE_URL });
await statsDb.connect();
let frameworkId = env.FW_FRAMEWORK_ID;
if (!frameworkId) {
  const [row] = (
    await statsDb.query(
      `SELECT a."frameworkId" FROM "FrameworkAdoption" a JOIN "Framework" f ON f."id" = a."frameworkId" WHERE f."key" = 'nist-sp-800-53-rev5' AND a."organizationId" = $1`,
      [seed.organizationId],
    )
  ).rows;
  frameworkId = row?.frameworkId;
}
if (!frameworkId) {
  const server = createServer(apps.B.app.yoga);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  ({ frameworkId } = await createFrameworkPage(`http://127.0.0.1:${server.address().port}`, seed, log, () =>
    statsDb.query("ANALYZE"),
  ));
  server.close();
}

const scenarios = {
  page: frameworkRequest(seed, frameworkId, FRAMEWORK_PAGE_QUERY),
  readiness: frameworkRequest(seed, frameworkId, FRAMEWORK_READINESS_QUERY),
};
const call = async ({ app }, s) => {
  const { Request } = app.yoga.fetchAPI;
  const response = await app.yoga.fetch(
    new Request(`http://127.0.0.1${s.path}`, { method: s.method, headers: s.headers, body: s.body }),
    {},
  );
  return { status: response.status, text: await response.text() };
};
for (const [id, s] of Object.entries(scenarios)) {
  const a = await call(apps.A, s);
  const b = await call(apps.B, s);
  if (a.status !== 200 || a.text.includes('"errors"')) throw new Error(`${id}: A answered ${a.status} ${a.text.slice(0, 500)}`);
  if (a.text !== b.text) {
    writeFileSync(path.join(dir, `${id}-a.json`), a.text);
    writeFileSync(path.join(dir, `${id}-b.json`), b.text);
    throw new Error(`${id}: the builds answer differently (${dir}/${id}-a.json, -b.json)`);
  }
  s.expect = a.text;
  log(`${id}: ${a.text.length} B, the same from both builds`);
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
// PostgreSQL's CPU for this database's connections alone (the server may serve others too).
let backends = new Set();
const refreshBackends = async () => {
  const { rows } = await statsDb.query(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
  );
  backends = new Set(rows.map((r) => String(r.pid)));
};
const pgCpu = () => [...postgresCpuMs()].reduce((sum, [pid, ms]) => (backends.has(pid) ? sum + ms : sum), 0);
const median = (xs) => {
  const v = xs.toSorted((x, y) => x - y);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};
const concurrency = Number(env.FW_CONCURRENCY ?? 1);
async function slot(side, s, n) {
  if (concurrency > 1) {
    // n requests on each of `concurrency` workers at once: the answer is the time per request (1 / throughput).
    const started = performance.now();
    const cpu = cpuMs();
    const db = pgCpu();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = 0; i < n; i++) {
          const { status, text } = await call(side, s);
          if (status !== 200 || text !== s.expect) throw new Error(`${side.side}: a different answer ${status}`);
        }
      }),
    );
    const total = n * concurrency;
    return { wall: (performance.now() - started) / total, cpu: (cpuMs() - cpu) / total, db: (pgCpu() - db) / total };
  }
  const walls = [];
  const cpu = cpuMs();
  const db = pgCpu();
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const { status, text } = await call(side, s);
    walls.push(performance.now() - started);
    if (status !== 200 || text !== s.expect) throw new Error(`${side.side}: a different answer ${status} ${text.slice(0, 300)}`);
  }
  return { wall: median(walls), cpu: (cpuMs() - cpu) / n, db: (pgCpu() - db) / n };
}

if (env.FW_PROFILE && env.FW_HEAP) {
  // What the scenario allocates (collected or not), by function: a sampling heap profile of B.
  const s = scenarios[env.FW_PROFILE];
  await slot(apps.B, s, 50);
  const n = Number(env.FW_PROFILE_REQUESTS ?? 300);
  const { profile } = await allocationProfile(() => slot(apps.B, s, n));
  const file = path.join(dir, `${env.FW_PROFILE}.heapprofile`);
  writeFileSync(file, JSON.stringify(profile));
  const byFunction = new Map();
  let total = 0;
  for (const { key, size } of samplesOf(profile)) {
    byFunction.set(key, (byFunction.get(key) ?? 0) + size);
    total += size;
  }
  log(`${env.FW_PROFILE}: ${(total / 1024 / n).toFixed(0)} KB allocated a request; ${path.relative(root, file)}`);
  for (const [key, size] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    log(`  ${(size / 1024 / n).toFixed(1).padStart(8)} KB  ${((100 * size) / total).toFixed(1).padStart(5)} %  ${key}`);
  }
  process.exit(0);
}

if (env.FW_PROFILE) {
  const { Session } = await import("node:inspector/promises");
  const s = scenarios[env.FW_PROFILE];
  await slot(apps.B, s, 50);
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
  const n = Number(env.FW_PROFILE_REQUESTS ?? 300);
  const r = await slot(apps.B, s, n);
  const { profile } = await session.post("Profiler.stop");
  const file = path.join(dir, `${env.FW_PROFILE}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  log(
    `${env.FW_PROFILE}: wall ${r.wall.toFixed(2)} ms, CPU ${r.cpu.toFixed(2)} ms/req; node bench/profile.mjs ${path.relative(root, file)}`,
  );
  process.exit(0);
}

/** Table scans (sequential and by index) PostgreSQL counted for n requests of one side alone. */
async function scans(side, s, n) {
  const read = async () => {
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    await statsDb.query("SELECT pg_stat_clear_snapshot()");
    const { rows } = await statsDb.query(
      `SELECT COALESCE(sum(seq_scan), 0) + COALESCE(sum(idx_scan), 0) AS n FROM pg_stat_user_tables`,
    );
    return Number(rows[0].n);
  };
  const before = await read();
  for (let i = 0; i < n; i++) await call(side, s);
  return ((await read()) - before) / n;
}

log(
  `A = ${baseRef} (${execFileSync("git", ["rev-parse", "--short", baseRef], { cwd: root, encoding: "utf8" }).trim()}), B = this worktree; ` +
    `${blocks} blocks of ${perBlock} requests per side and scenario, AB then BA in turn; Node ${process.version}`,
);
for (const [id, s] of Object.entries(scenarios)) {
  for (const side of [apps.A, apps.B]) await slot(side, s, 20);
  await refreshBackends();
  const out = { A: [], B: [] };
  for (let block = 0; block < blocks; block++) {
    for (const side of block % 2 ? ["B", "A"] : ["A", "B"]) out[side].push(await slot(apps[side], s, perBlock));
  }
  const scanA = await scans(apps.A, s, 10);
  const scanB = await scans(apps.B, s, 10);
  const m = (side, k) => median(out[side].map((r) => r[k])).toFixed(2);
  log(
    `${id.padEnd(10)} A: wall ${m("A", "wall")} ms, service CPU ${m("A", "cpu")} ms, postgres CPU ${m("A", "db")} ms, ${scanA.toFixed(0)} scans`,
  );
  log(
    `${"".padEnd(10)} B: wall ${m("B", "wall")} ms, service CPU ${m("B", "cpu")} ms, postgres CPU ${m("B", "db")} ms, ${scanB.toFixed(0)} scans`,
  );
}
for (const side of Object.values(apps)) await side.database.close?.();
await statsDb.end();
process.exit(0);
