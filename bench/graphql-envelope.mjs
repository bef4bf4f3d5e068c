// GraphQL get task against REST get task in ONE server process (issue 59, item 1): the built
// server (dist/server.js, the Node flags of `npm start`) on a throwaway PostgreSQL database, the
// two scenarios in alternating rounds (REST, GraphQL, GraphQL, REST, ...) at 32 keep-alive
// connections; for each round req/s and the server process's CPU ms per request (from /proc).
// The ratio GraphQL / REST is taken per pair of neighbouring rounds, then the median: whatever
// the machine does in those seconds hits both alike. ENVELOPE_PROFILE=1 adds one CPU profile of
// the server (--cpu-prof) under each scenario, and its summary (the load window only), in .exp/envelope/.
//
//   npm run build && npx node bench/graphql-envelope.mjs   (npx: the Node that package.json pins)
//
// Settings: ENVELOPE_ROUNDS (6 per scenario), ENVELOPE_DURATION (3 s), ENVELOPE_CONNECTIONS (32),
// ENVELOPE_POSTGRES_URL (else TEST_POSTGRES_URL, else the local server).
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { processCpuMs, systemBusyMs } from "./cpu.mjs";
import { formatSummary, summarizeProfile } from "./profile.mjs";
import { startFlagsOf } from "./settings.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
const rounds = Number(env.ENVELOPE_ROUNDS ?? 6);
const durationS = Number(env.ENVELOPE_DURATION ?? 3);
const connections = Number(env.ENVELOPE_CONNECTIONS ?? 32);
const postgresUrl = env.ENVELOPE_POSTGRES_URL ?? env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const log = (line) => process.stdout.write(`${line}\n`);
const cleanups = [];
const cleanup = async () => {
  for (const undo of cleanups.reverse()) await undo().catch(() => {});
};
process.once("SIGINT", () => cleanup().then(() => process.exit(130)));

const GRAPHQL_TASK = "query($id: ID!) { task(taskId: $id) { id title status description taskTemplateId createdAt updatedAt } }";
const median = (xs) => {
  const v = xs.toSorted((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};

try {
  const databaseUrl = await throwawayDatabase(postgresUrl, "envelope", cleanups);
  const serviceEnv = replicaEnv(databaseUrl);
  const seed = seedOrganization(serviceEnv);
  const key = { "x-api-key": seed.apiKey };
  const scenarios = {
    rest: { method: "GET", path: `/v1/tasks/${seed.taskIds[0]}`, headers: key },
    graphql: {
      method: "POST",
      path: "/graphql",
      headers: { ...key, "content-type": "application/json" },
      body: JSON.stringify({ query: GRAPHQL_TASK, variables: { id: seed.taskIds[0] } }),
    },
  };
  const startFlags = startFlagsOf();

  const run = async (server, s, seconds) => {
    const before = processCpuMs(server.pid);
    const busy = systemBusyMs();
    const wall = performance.now();
    const r = await autocannon({
      url: server.base + s.path,
      method: s.method,
      headers: s.headers,
      body: s.body,
      connections,
      duration: seconds,
    });
    const cpu = processCpuMs(server.pid) - before;
    const otherCores = (systemBusyMs() - busy - cpu) / (performance.now() - wall);
    return {
      rps: r.requests.average,
      p99: r.latency.p99,
      cpuMsPerRequest: cpu / r.requests.total,
      errors: r.errors + r.timeouts + r.non2xx,
      otherCores,
    };
  };

  const server = await startReplica({ env: serviceEnv, cleanups, args: [...startFlags, "dist/server.js"] });
  for (const s of Object.values(scenarios)) {
    const answer = await fetch(server.base + s.path, { method: s.method, headers: s.headers, body: s.body });
    if (answer.status !== 200) throw new Error(`${s.path}: ${answer.status} ${await answer.text()}`);
  }
  log(`warm-up (2 s each), then ${rounds} rounds of ${durationS} s per scenario at ${connections} connections`);
  await run(server, scenarios.rest, 2);
  await run(server, scenarios.graphql, 2);
  const results = { rest: [], graphql: [] };
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 ? ["graphql", "rest"] : ["rest", "graphql"];
    for (const id of order) {
      const r = await run(server, scenarios[id], durationS);
      results[id].push(r);
      log(
        `  ${id.padEnd(8)} ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${String(r.p99).padStart(3)} ms  ` +
          `${r.cpuMsPerRequest.toFixed(3)} CPU ms/req  errors ${r.errors}  other cores ${r.otherCores.toFixed(2)}`,
      );
    }
  }
  const ratios = results.graphql.map((g, i) => g.rps / results.rest[i].rps);
  // ENVELOPE_ROUNDS=0: the profiles alone.
  if (rounds > 0) report(results, ratios);

  function report(results, ratios) {
    const cpuRatios = results.graphql.map((g, i) => g.cpuMsPerRequest / results.rest[i].cpuMsPerRequest);
    log(
      `REST ${median(results.rest.map((r) => r.rps)).toFixed(0)} req/s, ${median(results.rest.map((r) => r.cpuMsPerRequest)).toFixed(3)} CPU ms/req; ` +
        `GraphQL ${median(results.graphql.map((r) => r.rps)).toFixed(0)} req/s, ${median(results.graphql.map((r) => r.cpuMsPerRequest)).toFixed(3)} CPU ms/req`,
    );
    log(
      `GraphQL / REST: req/s ${median(ratios).toFixed(2)}x (rounds ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}); ` +
        `CPU per request ${median(cpuRatios).toFixed(2)}x`,
    );
  }

  if (env.ENVELOPE_PROFILE === "1") {
    const dir = path.join(root, ".exp", "envelope");
    mkdirSync(dir, { recursive: true });
    for (const id of ["rest", "graphql"]) {
      const profDir = path.join(dir, `${id}-tmp`);
      rmSync(profDir, { recursive: true, force: true });
      const profiled = [];
      const p = await startReplica({
        env: serviceEnv,
        cleanups: profiled,
        args: [...startFlags, "--cpu-prof", `--cpu-prof-dir=${profDir}`, "dist/server.js"],
      });
      await run(p, scenarios[id], 2);
      const startUs = Number(process.hrtime.bigint() / 1000n);
      const r = await run(p, scenarios[id], 6);
      const endUs = Number(process.hrtime.bigint() / 1000n);
      for (const undo of profiled) await undo();
      const [file] = readdirSync(profDir);
      const kept = path.join(dir, `${id}.cpuprofile`);
      renameSync(path.join(profDir, file), kept);
      rmSync(profDir, { recursive: true, force: true });
      const summary = summarizeProfile(JSON.parse(readFileSync(kept, "utf8")), { startUs, endUs });
      writeFileSync(
        path.join(dir, `${id}-summary.txt`),
        formatSummary(summary, `${id} get task, ${r.rps.toFixed(0)} req/s, load window only\n`),
      );
      log(`profile ${id}: ${r.rps.toFixed(0)} req/s, ${path.relative(root, kept)}, summary ${id}-summary.txt`);
    }
  }
} finally {
  await cleanup();
}
process.exit(0);
