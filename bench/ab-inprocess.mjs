// A/B of two builds of the service in one process (issue 28, items 3 to 5): the CPU per request of
// this worktree's code against another git revision's, on the same database, requests one at a
// time, in short blocks that alternate between the two apps (every order in turn), so that whatever the machine
// does hits both alike. Over HTTP (BENCH_AGAINST) two processes drift apart by more than most levers
// save on a busy machine; in one process they cannot. An A/A pair (two apps of the base) runs in the
// same alternation: what is left of the noise.
//
//   node bench/ab-inprocess.mjs [base revision, default HEAD]
//
// Settings (environment): AB_BLOCKS (200), AB_REQUESTS (10 per block), AB_SCENARIOS
// (rest-task,graphql-task; also rest-tasks, graphql-tasks: the list page's query over a page of 50,
// stats, vendor-page, comments-page, rest-comments, rest-comment), AB_POSTGRES_URL
// (TEST_POSTGRES_URL, else the local server).
// Builds both into .exp/ab/ (git-ignored), makes a throwaway PostgreSQL database, seeds it with the
// CLI, checks that both builds answer every scenario with the same status, headers and bytes, and
// prints the median difference of CPU per request with its 95 % interval. It is started with the
// Node flags of `npm start`, as the service is.
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { baseAndHeadBundles } from "./app-bundle.mjs";
import { systemBusyMs } from "./cpu.mjs";
import { withClient } from "./harness.mjs";
import { addListPageTasks, listPageRequest } from "./scenarios/list-page-tasks.mjs";
import { createVendorPage, vendorPageRequest } from "./scenarios/vendor-page.mjs";
import { startFlagsOf } from "./settings.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
const startFlags = startFlagsOf();

// Started with the service's Node flags: re-run this file under them once.
if (!env.AB_CHILD) {
  const result = spawnSync(process.execPath, [...startFlags, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...env, AB_CHILD: "1" },
  });
  process.exit(result.status ?? 1);
}

const baseRef = process.argv[2] ?? "HEAD";
const blocks = Number(env.AB_BLOCKS ?? 200);
const perBlock = Number(env.AB_REQUESTS ?? 10);
const scenarioIds = (env.AB_SCENARIOS ?? "rest-task,graphql-task").split(",");
const postgresUrl = env.AB_POSTGRES_URL ?? env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const log = (line) => process.stdout.write(`${line}\n`);

const abDir = path.join(root, ".exp", "ab");
const baseRev = execFileSync("git", ["rev-parse", "--short", baseRef], { cwd: root, encoding: "utf8" }).trim();
const dirty = execFileSync("git", ["status", "--porcelain", "src"], { cwd: root, encoding: "utf8" }).trim() !== "";
const headRev = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
// A of the base revision, B of this tree (app-bundle.mjs).
const bundles = await baseAndHeadBundles(root, abDir, baseRef);

// A throwaway database, seeded through the CLI as the bench does.
const admin = new pg.Client({ connectionString: postgresUrl });
// A server stopped or a database dropped while the client is connected must not end the bench.
admin.on("error", () => {});
await admin.connect();
const dbName = `ab_${process.pid}_${randomBytes(4).toString("hex")}`;
await admin.query(`CREATE DATABASE "${dbName}"`);
const dbUrl = new URL(postgresUrl);
dbUrl.pathname = `/${dbName}`;
const cleanup = async () => {
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => {});
  await admin.end().catch(() => {});
};
process.once("SIGINT", () => cleanup().then(() => process.exit(130)));

try {
  Object.assign(env, {
    DATABASE_URL: dbUrl.toString(),
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "1000000000",
    SEED_DEMO_DATA: "false",
  });
  const seedRun = spawnSync("npm", ["run", "--silent", "cli", "--", "seed", "--json"], { cwd: root, env, encoding: "utf8" });
  if (seedRun.status !== 0) throw new Error(`seed failed:\n${seedRun.stderr}`);
  const seed = JSON.parse(
    seedRun.stdout
      .trim()
      .split("\n")
      .findLast((l) => l.startsWith("{")),
  );

  const pino = (await import("pino")).default;
  const logger = pino({ level: "warn" });
  const apps = {};
  for (const [side, file] of Object.entries(bundles)) {
    const mod = await import(pathToFileURL(file).href);
    const config = mod.loadConfig();
    // Each app on a pool of its own, with the build's own database settings.
    const open = () =>
      mod.openDatabase({
        kind: "postgres",
        url: config.databaseUrl,
        poolSize: config.databasePoolSize,
        connectTimeoutMs: config.databaseConnectTimeoutMs,
        statementTimeoutMs: config.databaseStatementTimeoutMs,
        preparedStatements: config.databasePreparedStatements,
      });
    const database = await open();
    apps[side] = { side, app: mod.createApp({ database, config, logger }), database };
    // The A/A pair: a second app of the base.
    if (side === "A") {
      const database2 = await open();
      apps.A2 = { side: "A2", app: mod.createApp({ database: database2, config, logger }), database: database2 };
    }
  }

  const key = { "x-api-key": seed.apiKey };
  // The graph's screens (issue 34): 50 vendors with stats and comments, made through this tree's API
  // (a base older than a migration may not write on this database).
  const graphScenarios = ["vendor-page", "comments-page", "rest-comments"];
  let vendorIds = seed.vendorIds;
  if (scenarioIds.some((id) => graphScenarios.includes(id))) {
    const server = createServer(apps.B.app.yoga);
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    vendorIds = await createVendorPage(`http://127.0.0.1:${server.address().port}`, seed);
    server.close();
  }
  // The list page's query (bench/list-page.mjs) over a page of 50: 60 tasks of the organization,
  // written by SQL (the list page's own bench fills 100,000 the same way).
  if (scenarioIds.includes("graphql-tasks")) {
    await withClient({ url: dbUrl.toString() }, (db) => addListPageTasks(db, seed.organizationId, "ab"));
  }
  const vendorPage = vendorPageRequest(seed, vendorIds);
  const COMMENTS_PAGE =
    "query($id: ID!) { vendor(id: $id) { comments(limit: 5) { totalCount items { id content createdAt author { name } attachments { id name } } } } }";
  const GRAPHQL_TASK = "query($id: ID!) { task(taskId: $id) { id title status description taskTemplateId createdAt updatedAt } }";
  const scenarios = {
    "rest-task": { method: "GET", path: `/v1/tasks/${seed.taskIds[0]}`, headers: key },
    "graphql-task": {
      method: "POST",
      path: "/graphql",
      headers: { ...key, "content-type": "application/json" },
      body: JSON.stringify({ query: GRAPHQL_TASK, variables: { id: seed.taskIds[0] } }),
    },
    "vendor-page": { method: "POST", path: "/graphql", headers: vendorPage.headers, body: vendorPage.body },
    "comments-page": {
      method: "POST",
      path: "/graphql",
      headers: { ...key, "content-type": "application/json" },
      body: JSON.stringify({ query: COMMENTS_PAGE, variables: { id: vendorIds[0] } }),
    },
    "rest-comments": { method: "GET", path: `/v1/comments?entityId=${vendorIds[0]}&entityType=vendor`, headers: key },
    "rest-tasks": { method: "GET", path: "/v1/tasks?limit=20", headers: key },
    "graphql-tasks": listPageRequest(seed),
    stats: { method: "GET", path: `/v1/task-management/stats?entityId=${seed.vendorIds[0]}&entityType=vendor`, headers: key },
    // A write (issue 47): each answer is a new comment, so answers are compared without their id and time.
    "rest-comment": {
      method: "POST",
      path: "/v1/comments",
      headers: { ...key, "content-type": "application/json" },
      body: JSON.stringify({
        content: "A comment of ordinary length, on a task.",
        entityId: seed.taskIds[0],
        entityType: "task",
        userId: seed.userIds[0],
      }),
      status: 201,
    },
  };
  /** What is compared of an answer: a write's new id and time are its own. */
  const comparable = (s, text) => (s.status === 201 ? text.replace(/"(cmt_[0-9a-f]+|\d{4}-\d\d-\d\dT[\d:.]+Z)"/g, '"…"') : text);

  const call = async ({ app }, s) => {
    const { Request } = app.yoga.fetchAPI;
    const response = await app.yoga.fetch(
      new Request(`http://127.0.0.1${s.path}`, { method: s.method, headers: s.headers, body: s.body }),
      {},
    );
    return { response, text: await response.text() };
  };
  const headersOf = (response) =>
    JSON.stringify(
      [...response.headers]
        // The rate limit's remaining count moves with every request.
        .filter(([name]) => name !== "x-request-id" && name !== "date" && !name.startsWith("ratelimit"))
        .sort(),
    );

  // Same status, headers and bytes from both builds, or no figures (the profiled scenario's too:
  // its answers are checked against them).
  for (const id of new Set([...scenarioIds, ...(env.AB_PROFILE ? [env.AB_PROFILE] : [])])) {
    const s = scenarios[id];
    if (!s) throw new Error(`unknown scenario ${id}`);
    const a = await call(apps.A, s);
    const b = await call(apps.B, s);
    if (a.response.status !== (s.status ?? 200)) throw new Error(`${id}: the base answered ${a.response.status}: ${a.text}`);
    if (
      comparable(s, a.text) !== comparable(s, b.text) ||
      headersOf(a.response) !== headersOf(b.response) ||
      a.response.status !== b.response.status
    ) {
      throw new Error(
        `${id}: the builds answer differently:\nA ${a.response.status} ${headersOf(a.response)}\n${a.text}\nB ${b.response.status} ${headersOf(b.response)}\n${b.text}`,
      );
    }
    s.expectBody = comparable(s, a.text);
  }

  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  async function slot(side, s, n) {
    let errors = 0;
    const before = cpuMs();
    for (let i = 0; i < n; i++) {
      const { response, text } = await call(side, s);
      if (response.status !== (s.status ?? 200) || comparable(s, text) !== s.expectBody) errors++;
    }
    return { ms: (cpuMs() - before) / n, errors };
  }
  const median = (xs) => {
    const v = xs.toSorted((x, y) => x - y);
    const mid = Math.floor(v.length / 2);
    return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  };
  const summary = (on, off) => {
    const diffs = on.map((x, i) => x - off[i]).sort((x, y) => x - y);
    const k = Math.max(0, Math.floor(diffs.length / 2 - 0.98 * Math.sqrt(diffs.length)));
    const saved = median(diffs);
    return { before: median(on), after: median(off), saved, low: diffs[k], high: diffs[diffs.length - 1 - k] };
  };

  // AB_PROFILE=<scenario>: a CPU profile of this worktree's build alone under that scenario, no A/B.
  if (env.AB_PROFILE) {
    const { Session } = await import("node:inspector/promises");
    const s = scenarios[env.AB_PROFILE];
    const n = Number(env.AB_PROFILE_REQUESTS ?? 5000);
    await slot(apps.B, s, 500);
    const session = new Session();
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 100 });
    await session.post("Profiler.start");
    const r = await slot(apps.B, s, n);
    const { profile } = await session.post("Profiler.stop");
    const file = path.join(abDir, `${env.AB_PROFILE}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    log(`${env.AB_PROFILE}: ${r.ms.toFixed(3)} CPU ms/req over ${n} requests (errors ${r.errors}); profile ${file}`);
    log(`summary: node bench/profile.mjs ${path.relative(root, file)}`);
    for (const side of Object.values(apps)) await side.database.close?.();
    await cleanup();
    process.exit(0);
  }

  log(
    `A/B in process: A = ${baseRef} (${baseRev}), B = this worktree (${headRev}${dirty ? " + uncommitted changes" : ""}); ` +
      `Node ${process.version} ${startFlags.join(" ")}; ${blocks} blocks of ${perBlock} requests per side, the three in every order in turn; A/A alongside`,
  );
  const ORDERS = [
    ["A", "A2", "B"],
    ["B", "A2", "A"],
    ["A2", "B", "A"],
    ["A", "B", "A2"],
    ["B", "A", "A2"],
    ["A2", "A", "B"],
  ];
  const out = {};
  for (const id of scenarioIds) {
    const s = scenarios[id];
    for (const side of [apps.A, apps.A2, apps.B]) await slot(side, s, 300);
    const ms = { A: [], A2: [], B: [] };
    let errors = 0;
    const wall = performance.now();
    const busy = systemBusyMs();
    const own = cpuMs();
    for (let block = 0; block < blocks; block++) {
      // Every order of the three in turn, so that no side keeps a place in the block.
      const order = ORDERS[block % ORDERS.length];
      for (const side of order) {
        const r = await slot(apps[side], s, perBlock);
        ms[side].push(r.ms);
        errors += r.errors;
      }
    }
    const otherCores = (systemBusyMs() - busy - (cpuMs() - own)) / (performance.now() - wall);
    const ab = summary(ms.A, ms.B);
    const aa = summary(ms.A, ms.A2);
    out[id] = { ab, aa, otherCores, errors };
    const fmt = (r) =>
      `${r.before.toFixed(3)} -> ${r.after.toFixed(3)} ms/req: saved ${r.saved >= 0 ? "+" : ""}${r.saved.toFixed(3)} [${r.low.toFixed(3)}, ${r.high.toFixed(3)}] (${((100 * r.saved) / r.before).toFixed(1)} %)`;
    log(`  ${id.padEnd(13)} A/B ${fmt(ab)}`);
    log(`  ${"".padEnd(13)} A/A ${fmt(aa)}; errors ${errors}; other cores ${otherCores.toFixed(2)}`);
  }
  writeFileSync(
    path.join(abDir, "last.json"),
    JSON.stringify({ baseRef, baseRev, headRev, dirty, blocks, perBlock, out }, null, 2),
  );
  for (const side of Object.values(apps)) await side.database.close?.();
} finally {
  await cleanup();
}
process.exit(0);
