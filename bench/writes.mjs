// The writes at 32 connections against their floor (issue 47, item 2), on PostgreSQL: REST create
// comment in one organization, the same spread over eight organizations, update task and create
// policy version; after each scenario, `audit verify` of every organization it wrote in (its answer
// is printed). The service (dist/server.js, rebuilt first) and the floor (bench/floor.mjs: the same
// insert, its audit event and one outbox row, in one transaction) run side by side on one throwaway
// database, each in organizations of its own (the floor's events are unchained), each organization
// with one webhook endpoint listening to every type (each write queues one delivery; the workers are
// off, so nothing is sent). Rounds alternate service, floor, floor, service.
//
//   node bench/writes.mjs
//
// Settings (environment): BENCH_DURATION (5 s per run), BENCH_ROUNDS (2 runs of each side per
// scenario), BENCH_WARMUP (2 s), WRITES_SCENARIOS (every scenario), BENCH_POSTGRES_URL.
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { processCpuMs, systemBusyMs } from "./cpu.mjs";
import { freePort } from "./free-port.mjs";
import { startFlagsOf } from "./settings.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
const CONNECTIONS = 32;
const durationS = Number(env.BENCH_DURATION ?? 5);
const rounds = Number(env.BENCH_ROUNDS ?? 2);
const warmupS = Number(env.BENCH_WARMUP ?? 2);
const postgresUrl = env.BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const log = (line) => process.stdout.write(`${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};
const startFlags = startFlagsOf();

/** The scenarios: for a side's organizations, the requests its connections take turns sending. */
let n = 0;
const key = (org) => ({ "x-api-key": org.apiKey, "content-type": "application/json" });
const comment = (org) => ({
  method: "POST",
  path: "/v1/comments",
  headers: key(org),
  body: JSON.stringify({
    content: "A comment of ordinary length, on a task.",
    entityId: org.taskIds[0],
    entityType: "task",
    userId: org.userIds[0],
  }),
});
const SCENARIOS = [
  { id: "comment-one-org", label: "REST create comment, one organization", orgs: 1, requests: (orgs) => [comment(orgs[0])] },
  {
    id: "comment-eight-orgs",
    label: "REST create comment, spread over eight organizations",
    orgs: 8,
    requests: (orgs) => orgs.map(comment),
  },
  {
    id: "update-task",
    label: "REST update task (title), one organization",
    orgs: 1,
    // The organization's tasks in turn, each with a new title (an unchanged title writes nothing).
    requests: (orgs) =>
      orgs[0].taskIds.map((id) => ({
        method: "PATCH",
        path: `/v1/tasks/${id}`,
        headers: key(orgs[0]),
        setupRequest: (request) => ({ ...request, body: JSON.stringify({ title: `Task ${n++}` }) }),
      })),
  },
  {
    id: "policy-version",
    label: "REST create policy version, one organization",
    orgs: 1,
    requests: (orgs) =>
      orgs[0].policyIds.map((id) => ({ method: "POST", path: `/v1/policies/${id}/versions`, headers: key(orgs[0]), body: "{}" })),
  },
].filter((s) => !env.WRITES_SCENARIOS || env.WRITES_SCENARIOS.split(",").includes(s.id));

async function load(side, requests, seconds) {
  const before = processCpuMs(side.pid);
  const result = await autocannon({ url: side.base, connections: CONNECTIONS, duration: seconds, timeout: 10, requests });
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    cpuMsPerRequest: result.requests.total ? (processCpuMs(side.pid) - before) / result.requests.total : null,
  };
}

function verify(baseEnv, org) {
  const run = spawnSync("npm", ["run", "--silent", "cli", "--", "audit", "verify", "--org", org.organizationId, "--json"], {
    cwd: root,
    env: baseEnv,
    encoding: "utf8",
  });
  try {
    return JSON.parse(run.stdout);
  } catch {
    return { ok: false, reason: `audit verify exited ${run.status}: ${run.stdout}${run.stderr}` };
  }
}

const cleanups = [];
try {
  const built = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
  if (built.status !== 0) throw new Error("the build failed");
  const baseEnv = replicaEnv(await throwawayDatabase(postgresUrl, "bench_writes", cleanups));
  baseEnv.AUDIT_SIGNING_KEY = (await import("node:crypto"))
    .generateKeyPairSync("ed25519")
    .privateKey.export({ type: "pkcs8", format: "pem" });
  // Eight organizations for each side.
  const orgs = { service: [], floor: [] };
  for (let i = 0; i < 16; i++) orgs[i % 2 ? "floor" : "service"].push(seedOrganization(baseEnv));
  const service = await startReplica({
    env: baseEnv,
    settings: { LOG_LEVEL: "error", WEBHOOK_WORKER: "false", MAIL_WORKER: "false" },
    args: [
      ...startFlags,
      ...(env.WRITES_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${env.WRITES_PROFILE_DIR}`] : []),
      "dist/server.js",
    ],
    cleanups,
  });
  service.name = "service";
  for (const org of [...orgs.service, ...orgs.floor]) {
    const res = await fetch(`${service.base}/v1/webhook-endpoints`, {
      method: "POST",
      headers: key(org),
      body: JSON.stringify({ url: "https://hooks.example.com/bench" }),
    });
    if (res.status !== 201) throw new Error(`webhook endpoint: ${res.status} ${await res.text()}`);
  }
  const floorPort = await freePort();
  const floorChild = spawn(process.execPath, ["bench/floor.mjs"], {
    cwd: root,
    env: { ...baseEnv, FLOOR_DB: "postgres", PORT: String(floorPort), HOST: "127.0.0.1" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  cleanups.push(async () => {
    floorChild.kill("SIGTERM");
    await new Promise((resolve) => floorChild.once("exit", resolve));
  });
  const floor = { name: "floor", base: `http://127.0.0.1:${floorPort}`, pid: floorChild.pid };
  for (let ready = false; !ready; await sleep(50))
    ready = await fetch(`${floor.base}/ready`).then(
      (r) => r.ok,
      () => false,
    );

  log(
    `# writes at ${CONNECTIONS} connections (bench/writes.mjs), ${rounds} rounds of ${durationS} s per side, ${new Date().toISOString()}`,
  );
  log(`load average before: ${readFileSync("/proc/loadavg", "utf8").trim()}`);
  const rows = [];
  for (const scenario of SCENARIOS) {
    const sides = { service, floor };
    const requests = Object.fromEntries(Object.keys(sides).map((s) => [s, scenario.requests(orgs[s].slice(0, scenario.orgs))]));
    for (const s of Object.keys(sides)) await load(sides[s], requests[s], warmupS);
    const runs = { service: [], floor: [] };
    const busy = systemBusyMs();
    const wall = performance.now();
    const own = processCpuMs(service.pid) + processCpuMs(floor.pid);
    for (let round = 0; round < rounds; round++) {
      for (const s of round % 2 ? ["floor", "service"] : ["service", "floor"]) {
        const r = await load(sides[s], requests[s], durationS);
        runs[s].push(r);
        log(
          `  ${scenario.id.padEnd(18)} ${s.padEnd(7)} ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms, ${r.cpuMsPerRequest?.toFixed(2)} ms CPU/req, ${r.errors} errors`,
        );
      }
    }
    const otherCores =
      (systemBusyMs() - busy - (processCpuMs(service.pid) + processCpuMs(floor.pid) - own)) / (performance.now() - wall);
    const verified = orgs.service.slice(0, scenario.orgs).map((org) => verify(baseEnv, org));
    for (const answer of verified) log(`  audit verify: ${JSON.stringify(answer)}`);
    const m = (s, k) => median(runs[s].map((r) => r[k]));
    rows.push({
      scenario,
      service: { rps: m("service", "rps"), p99: m("service", "p99"), cpu: m("service", "cpuMsPerRequest") },
      floor: { rps: m("floor", "rps"), p99: m("floor", "p99"), cpu: m("floor", "cpuMsPerRequest") },
      errors: [...runs.service, ...runs.floor].reduce((sum, r) => sum + r.errors, 0),
      verified: verified.every((v) => v.ok),
      otherCores,
    });
  }

  log("");
  log(
    "| scenario | service req/s | floor req/s | ratio (target ≥ 0.5x) | service p99 ms (target < 100) | CPU ms/req service / floor | errors | audit verify | other cores |",
  );
  log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |");
  for (const r of rows) {
    log(
      `| ${r.scenario.label} | ${r.service.rps.toFixed(0)} | ${r.floor.rps.toFixed(0)} | ${(r.service.rps / r.floor.rps).toFixed(2)}x | ${r.service.p99} | ${r.service.cpu?.toFixed(2)} / ${r.floor.cpu?.toFixed(2)} | ${r.errors} | ${r.verified ? "ok" : "BROKEN"} | ${r.otherCores.toFixed(2)} |`,
    );
  }
  const one = rows.find((r) => r.scenario.id === "comment-one-org");
  const eight = rows.find((r) => r.scenario.id === "comment-eight-orgs");
  if (one && eight) {
    const spread = eight.service.rps / one.service.rps;
    log("");
    log(`Eight organizations against one (service): ${spread.toFixed(2)}x (target ≤ 1.10x): ${spread <= 1.1 ? "PASS" : "FAIL"}`);
  }
  log(`load average after: ${readFileSync("/proc/loadavg", "utf8").trim()}`);
  if (rows.some((r) => !r.verified)) process.exitCode = 1;
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
}
