// Where the vendor page's bytes go (issue 34): a sampling heap profile of the service's app under
// the vendor page, in process, counting every allocation (also those the next collection frees,
// which is most of a request's), summed by package and by function. Started with the Node flags
// of `npm start`, on a throwaway PostgreSQL database seeded by the CLI; the page's data is made
// through the API as the bench makes it.
//   npx node bench/heap-profile.mjs                    # this tree
//   HEAP_ENV=GRAPHQL_JIT=true npx node bench/heap-profile.mjs   # with a setting
// HEAP_REQUESTS (300) requests are profiled after HEAP_WARMUP (100); the raw profile is written to
// .exp/heap/<scenario>.heapprofile (open it in Chrome DevTools > Memory). HEAP_SCENARIO=list-page
// profiles the list page's query instead (bench/list-page.mjs: 50 tasks and their totalCount, of 60
// written by SQL: bench/scenarios/list-page-tasks.mjs); HEAP_SCENARIO=graphql-task, GraphQL get task
// (what a request costs besides its data).
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { appBundle } from "./app-bundle.mjs";
import { withClient } from "./harness.mjs";
import { allocationProfile, samplesOf } from "./heap-sampling.mjs";
import graphqlTask from "./scenarios/graphql-task.mjs";
import { addListPageTasks, listPageRequest } from "./scenarios/list-page-tasks.mjs";
import { createVendorPage, vendorPageRequest } from "./scenarios/vendor-page.mjs";
import { startFlagsOf } from "./settings.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
const startFlags = startFlagsOf();
if (!env.HEAP_CHILD) {
  const result = spawnSync(process.execPath, [...startFlags, fileURLToPath(import.meta.url)], {
    stdio: "inherit",
    env: { ...env, HEAP_CHILD: "1" },
  });
  process.exit(result.status ?? 1);
}

const requests = Number(env.HEAP_REQUESTS ?? 300);
const warmup = Number(env.HEAP_WARMUP ?? 100);
const postgresUrl = env.BENCH_POSTGRES_URL ?? env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const outDir = path.join(root, ".exp", "heap");
mkdirSync(outDir, { recursive: true });

// The app without its HTTP server, bundled as bench/ab-inprocess.mjs bundles it.
const appFile = await appBundle(root, outDir);

const admin = new pg.Client({ connectionString: postgresUrl });
admin.on("error", () => {});
await admin.connect();
const dbName = `heap_${process.pid}_${randomBytes(4).toString("hex")}`;
await admin.query(`CREATE DATABASE "${dbName}"`);
const url = new URL(postgresUrl);
url.pathname = `/${dbName}`;
let server;
try {
  for (const pair of (env.HEAP_ENV ?? "").split(",").filter(Boolean)) {
    env[pair.slice(0, pair.indexOf("="))] = pair.slice(pair.indexOf("=") + 1);
  }
  Object.assign(env, {
    DATABASE_URL: url.toString(),
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "1000000000",
    SEED_DEMO_DATA: "false",
  });
  const seeded = spawnSync("npm", ["run", "--silent", "cli", "--", "seed", "--json"], { cwd: root, env, encoding: "utf8" });
  if (seeded.status !== 0) throw new Error(`seed failed:\n${seeded.stderr}`);
  const seed = JSON.parse(
    seeded.stdout
      .trim()
      .split("\n")
      .findLast((l) => l.startsWith("{")),
  );
  const mod = await import(pathToFileURL(appFile).href);
  const config = mod.loadConfig();
  const database = await mod.openDatabase({
    kind: "postgres",
    url: config.databaseUrl,
    poolSize: config.databasePoolSize,
    preparedStatements: config.databasePreparedStatements,
  });
  const pino = (await import("pino")).default;
  const app = mod.createApp({ database, config, logger: pino({ level: "warn" }) });
  server = createServer((req, res) => app.yoga(req, res));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  const scenario = env.HEAP_SCENARIO ?? "vendor-page";
  let request;
  if (scenario === "list-page") {
    await withClient({ url: url.toString() }, (db) => addListPageTasks(db, seed.organizationId, "heap"));
    request = listPageRequest(seed);
  } else if (scenario === "graphql-task") {
    request = graphqlTask.request({ seed });
  } else {
    request = vendorPageRequest(seed, await createVendorPage(base, seed));
  }
  const { Request } = app.yoga.fetchAPI;
  const once = async () => {
    const response = await app.yoga.fetch(
      new Request(`http://127.0.0.1${request.path}`, { method: request.method, headers: request.headers, body: request.body }),
      {},
    );
    const text = await response.text();
    if (response.status !== 200 || text.includes('"errors"'))
      throw new Error(`${scenario}: ${response.status} ${text.slice(0, 300)}`);
    return text.length;
  };
  for (let i = 0; i < warmup; i++) await once();

  const heapBefore = process.memoryUsage().heapUsed;
  const t = performance.now();
  let bytesOut = 0;
  const { profile } = await allocationProfile(async () => {
    for (let i = 0; i < requests; i++) bytesOut += await once();
  });
  const ms = performance.now() - t;
  writeFileSync(path.join(outDir, `${scenario}.heapprofile`), JSON.stringify(profile));

  // Sum the samples' sizes by package / source file and by function.
  const byArea = new Map();
  const byFunction = new Map();
  let total = 0;
  for (const { file, pkg, key, size } of samplesOf(profile)) {
    const area =
      pkg ??
      (file.includes(".exp/heap/app.js")
        ? "the service (src/, bundled)"
        : file
          ? file.replace(/^node:/, "node:")
          : "(V8 / native)");
    byArea.set(area, (byArea.get(area) ?? 0) + size);
    byFunction.set(key, (byFunction.get(key) ?? 0) + size);
    total += size;
  }
  const kb = (bytes) => (bytes / 1024 / requests).toFixed(1);
  const lines = [
    `${{ "list-page": "List page (50 tasks and totalCount)", "graphql-task": "GraphQL get task" }[scenario] ?? "Vendor page (50 vendors, stats, 5 comments with authors)"}, in process, ${requests} requests after ${warmup} of warm-up; ` +
      `Node ${process.version}, flags ${startFlags.join(" ")}${env.HEAP_ENV ? `, ${env.HEAP_ENV}` : ""}`,
    `allocated: ${(total / 1024 / 1024).toFixed(0)} MB in all, ${kb(total)} KB per page (the answer itself: ${(bytesOut / requests / 1024).toFixed(1)} KB of JSON); ` +
      `${(ms / requests).toFixed(1)} ms per page (wall, one at a time); heap used ${((process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024).toFixed(0)} MB higher after`,
    "",
    "| where (self) | KB per page | share |",
    "|---|---:|---:|",
    ...[...byArea]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([area, size]) => `| ${area} | ${kb(size)} | ${((100 * size) / total).toFixed(1)} % |`),
    "",
    "| function (self) | KB per page | share |",
    "|---|---:|---:|",
    ...[...byFunction]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([fn, size]) => `| \`${fn}\` | ${kb(size)} | ${((100 * size) / total).toFixed(1)} % |`),
  ];
  const text = lines.join("\n");
  process.stdout.write(`${text}\n`);
  writeFileSync(
    path.join(outDir, `${scenario}${env.HEAP_ENV ? `-${env.HEAP_ENV.replace(/[^A-Za-z0-9]+/g, "-")}` : ""}.md`),
    `${text}\n`,
  );
  await app.yoga.dispose?.();
  await database.close();
} finally {
  server?.close();
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => {});
  await admin.end();
}
process.exit(0);
