// The "audit-chain" scenario (issue 35, and issue 59 item 4: where a write's tail goes): REST create
// comment in one organization under 32 connections, on PostgreSQL, three ways in alternating rounds
// of the same run, each with an organization of its own on one database: the service as it ships
// (the chain on), the same build without it (BENCH_AUDIT_CHAIN=off: the event is inserted unchained),
// and the hand-written floor (bench/floor.mjs: one transaction, the audit row unchained). For each,
// the medians of its rounds: req/s, p50 and p99, and where the time goes meanwhile, sampled every
// few milliseconds: PostgreSQL's backends of that variant waiting on a row lock (the chain head's),
// flushing the WAL at commit, running, or idle in a transaction; for the service, the requests
// waiting for a connection of its pool and the garbage collector's pauses (its /metrics).
// Run alone: `node bench/audit-chain.mjs` (PostgreSQL at BENCH_POSTGRES_URL or the local server).
// BENCH_AUDIT_SECONDS (3) and BENCH_AUDIT_ROUNDS (2) set its length.
import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import { median, newResultsFile, num, sleep } from "./settings.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CONNECTIONS = 32;
const VARIANTS = ["off", "on", "floor"];

/** What a backend of the loaded variant is doing, as pg_stat_activity says: a row lock, the WAL, running or idle in a transaction (null: anything else). */
function stateOf({ state, wait_event_type: type, wait_event: event }) {
  if (state === "idle in transaction") return "inTransaction";
  if (state !== "active") return null;
  if (type === "Lock") return "lock";
  if (type === "IO" && /^WAL/.test(event)) return "wal";
  return type ? null : "running";
}

/** The service's figures in its /metrics text: the pool's waiting requests, and the collector's pauses (sum and count, and those over 10 ms). */
function metricsOf(text) {
  const value = (pattern) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
  let gcSeconds = 0;
  let pauses = 0;
  let under10ms = 0;
  for (const [, kind, v] of text.matchAll(/^nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} (\S+)$/gm))
    if (kind !== "weakcb") gcSeconds += Number(v);
  for (const [, kind, v] of text.matchAll(/^nodejs_gc_duration_seconds_count\{kind="(\w+)"\} (\S+)$/gm))
    if (kind !== "weakcb") pauses += Number(v);
  for (const [, le, kind, v] of text.matchAll(/^nodejs_gc_duration_seconds_bucket\{le="([^"]+)",kind="(\w+)"\} (\S+)$/gm))
    if (le === "0.01" && kind !== "weakcb") under10ms += Number(v);
  return { poolWaiting: value(/^db_pool_waiting_requests (\S+)$/m), gcSeconds, pauses, over10ms: pauses - under10ms };
}

/**
 * Samples while `load` runs: every 10 ms the loaded variant's backends (by its `application_name`:
 * the other two variants' connections stay idle), every 50 ms its pool's waiting requests; the
 * collector's pauses as the difference of /metrics before and after (the service's only).
 */
async function sampled(admin, databaseName, variant, load) {
  const counts = { lock: 0, wal: 0, running: 0, inTransaction: 0 };
  let samples = 0;
  const poolWaiting = [];
  let done = false;
  const metrics = async () => (variant.metrics ? metricsOf(await (await fetch(`${variant.base}/metrics`)).text()) : null);
  const before = await metrics();
  const started = Date.now();
  const running = Promise.resolve(load()).finally(() => {
    done = true;
  });
  const backends = (async () => {
    while (!done) {
      const { rows } = await admin.query(
        `SELECT state, wait_event_type, wait_event FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND application_name = $2`,
        [databaseName, variant.applicationName],
      );
      samples++;
      for (const row of rows) {
        const state = stateOf(row);
        if (state) counts[state]++;
      }
      await sleep(10);
    }
  })();
  const pool = (async () => {
    if (!variant.metrics) return;
    while (!done) {
      poolWaiting.push((await metrics()).poolWaiting);
      await sleep(50);
    }
  })();
  const result = await running;
  await Promise.all([backends, pool]);
  const after = await metrics();
  const elapsed = (Date.now() - started) / 1000;
  const per = (n) => (samples ? n / samples : null);
  return {
    result,
    backends: Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, per(n)])),
    poolWaiting: variant.metrics ? poolWaiting.reduce((a, b) => a + b, 0) / (poolWaiting.length || 1) : null,
    gcMsPerS: after ? ((after.gcSeconds - before.gcSeconds) * 1000) / elapsed : null,
    gcPausesOver10msPerS: after ? (after.over10ms - before.over10ms) / elapsed : null,
  };
}

export async function benchAuditChain({
  durationS = Number(process.env.BENCH_AUDIT_SECONDS ?? 3),
  rounds = Number(process.env.BENCH_AUDIT_ROUNDS ?? 2),
  postgresUrl = process.env.BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
  log = (line) => process.stderr.write(`${line}\n`),
} = {}) {
  const cleanups = [];
  try {
    if (!existsSync(path.join(root, "dist/server.js"))) {
      const built = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
      if (built.status !== 0) throw new Error("the build failed");
    }
    const databaseUrl = await throwawayDatabase(postgresUrl, "bench_audit", cleanups);
    const databaseName = new URL(databaseUrl).pathname.slice(1);
    const baseEnv = replicaEnv(databaseUrl, ["BENCH_AUDIT_CHAIN"]);
    // One key for both replicas (the checkpoints of either verify on the other).
    const signingKey = (await import("node:crypto"))
      .generateKeyPairSync("ed25519")
      .privateKey.export({ type: "pkcs8", format: "pem" });
    baseEnv.AUDIT_SIGNING_KEY = signingKey;
    // Each variant's connections named (libpq's application_name, which pg reads from PGAPPNAME), so the sampler tells them apart.
    const start = async (name, settings, args) => {
      const applicationName = `bench_audit_${name}`;
      const { base } = await startReplica({
        env: { ...baseEnv, PGAPPNAME: applicationName },
        settings: { LOG_LEVEL: "error", ...settings },
        cleanups,
        ...(args ? { args } : {}),
      });
      // The floor has no /metrics: its pool and collector are not sampled.
      return { base, metrics: name !== "floor", applicationName, org: seedOrganization(baseEnv) };
    };
    const variants = {
      off: await start("off", { BENCH_AUDIT_CHAIN: "off" }),
      on: await start("on", { BENCH_AUDIT_CHAIN: "on" }),
      floor: await start("floor", { FLOOR_DB: "postgres" }, ["bench/floor.mjs"]),
    };
    const load = ({ base, org }, seconds) =>
      autocannon({
        url: `${base}/v1/comments`,
        method: "POST",
        connections: CONNECTIONS,
        duration: seconds,
        headers: { "x-api-key": org.apiKey, "content-type": "application/json" },
        body: JSON.stringify({
          content: "A comment of ordinary length, on a task.",
          entityId: org.taskIds[0],
          entityType: "task",
          userId: org.userIds[0],
        }),
      });
    const admin = new pg.Client({ connectionString: databaseUrl });
    admin.on("error", () => {});
    await admin.connect();
    cleanups.push(() => admin.end());
    // Warm each up (JIT, pools), then rounds in which each variant takes each place in turn.
    for (const name of VARIANTS) await load(variants[name], 1);
    const rows = Object.fromEntries(VARIANTS.map((name) => [name, []]));
    const errors = Object.fromEntries(VARIANTS.map((name) => [name, 0]));
    for (let round = 0; round < rounds; round++) {
      for (let place = 0; place < VARIANTS.length; place++) {
        const name = VARIANTS[(round + place) % VARIANTS.length];
        const s = await sampled(admin, databaseName, variants[name], () => load(variants[name], durationS));
        const r = s.result;
        rows[name].push({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, ...s });
        errors[name] += r.non2xx + r.errors;
        const b = s.backends;
        log(
          `  ${name.padEnd(5)} ${r.requests.average.toFixed(0)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms; ` +
            `backends: lock ${b.lock?.toFixed(2)}, WAL ${b.wal?.toFixed(2)}, running ${b.running?.toFixed(2)}, in a transaction ${b.inTransaction?.toFixed(2)}` +
            (s.poolWaiting === null
              ? ""
              : `; pool waiting ${s.poolWaiting.toFixed(1)}; GC ${s.gcMsPerS.toFixed(0)} ms/s, pauses > 10 ms ${s.gcPausesOver10msPerS.toFixed(2)}/s`),
        );
      }
    }
    const medians = Object.fromEntries(
      VARIANTS.map((name) => {
        const list = rows[name];
        const m = (pick) => median(list.map(pick));
        return [
          name,
          {
            rps: m((x) => x.rps),
            p50: m((x) => x.p50),
            p99: m((x) => x.p99),
            lock: m((x) => x.backends.lock),
            wal: m((x) => x.backends.wal),
            running: m((x) => x.backends.running),
            inTransaction: m((x) => x.backends.inTransaction),
            poolWaiting: m((x) => x.poolWaiting),
            gcMsPerS: m((x) => x.gcMsPerS),
            gcPausesOver10msPerS: m((x) => x.gcPausesOver10msPerS),
          },
        ];
      }),
    );
    // The chain the load wrote verifies.
    const verify = spawnSync(
      "npm",
      ["run", "--silent", "cli", "--", "audit", "verify", "--org", variants.on.org.organizationId, "--json"],
      {
        cwd: root,
        env: baseEnv,
        encoding: "utf8",
      },
    );
    const { off, on } = medians;
    const result = {
      off: off.rps,
      on: on.rps,
      ratio: on.rps / off.rps,
      medians,
      errors,
      rounds,
      durationS,
      verified: verify.status === 0 ? JSON.parse(verify.stdout) : verify.stdout,
    };
    // What `npm run bench` prints at its end.
    return {
      ...result,
      text: `Create comment in one organization, the chain on and off and the floor:\n${auditChainTable(result)}`,
    };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

/** The result as Markdown: the table a results file keeps. */
export function auditChainTable(result) {
  const label = {
    on: "service, chain on (as it ships)",
    off: "service, chain off (bench only)",
    floor: "hand-written floor (unchained)",
  };
  return [
    "| variant | req/s | p50 ms | p99 ms | p99 / floor's | backends on a row lock | in the WAL flush | running | idle in a transaction | pool waiting | GC ms/s | GC pauses > 10 ms /s |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...VARIANTS.map((name) => {
      const m = result.medians[name];
      return `| ${label[name]} | ${num(m.rps)} | ${num(m.p50)} | ${num(m.p99)} | ${num(m.p99 / result.medians.floor.p99, 2)}x | ${num(m.lock, 2)} | ${num(m.wal, 2)} | ${num(m.running, 2)} | ${num(m.inTransaction, 2)} | ${num(m.poolWaiting, 1)} | ${num(m.gcMsPerS)} | ${num(m.gcPausesOver10msPerS, 2)} |`;
    }),
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchAuditChain();
  const lines = [
    `\`node bench/audit-chain.mjs\`: REST create comment in one organization each, ${CONNECTIONS} connections, PostgreSQL, the service with and without the chain and the floor on one database, ${result.rounds} rounds of ${result.durationS} s in which each takes each place in turn; medians of the rounds.`,
    "",
    auditChainTable(result),
    "",
    `Chain on / off: ${result.ratio.toFixed(2)}x req/s (target >= 0.9x). Non-2xx or errors: ${VARIANTS.map((n) => `${n} ${result.errors[n]}`).join(", ")}. The chained organization's trail afterwards: \`${JSON.stringify(result.verified)}\`.`,
    "",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  const file = newResultsFile("audit-chain");
  writeFileSync(file, `# Audit chain and a write's tail: create comment three ways\n\n${lines.join("\n")}`);
  process.stdout.write(`written to ${path.relative(root, file)}\n`);
}

/** In `npm run bench` (bench/suites.mjs): create comment in one organization with and without the audit chain. */
export const suite = {
  id: "audit-chain",
  resultKey: "auditChain",
  skip: "BENCH_AUDIT_CHAIN_SUITE",
  runs: (settings) => !settings.against && settings.databases.includes("postgres"),
  run: (settings, log) =>
    benchAuditChain({ durationS: settings.durationS, rounds: settings.rounds, postgresUrl: settings.postgresUrl, log }),
};
