// The "audit-chain" scenario (issue 35): what chaining the audit trail costs a write. Create comment
// (REST) in one organization under 32 connections, on PostgreSQL, with the chain (the service as it
// ships) and without it (BENCH_AUDIT_CHAIN=off: the event is inserted unchained), two replicas of
// the same build on one database, each with an organization of its own, in alternating rounds of
// the same run (off, on, on, off, ...); medians of the rounds and their ratio (target >= 0.9x).
// Run alone: `node bench/audit-chain.mjs` (PostgreSQL at BENCH_POSTGRES_URL or the local server).
// BENCH_AUDIT_SECONDS (3) and BENCH_AUDIT_ROUNDS (2) set its length.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CONNECTIONS = 32;
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

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
    const baseEnv = replicaEnv(await throwawayDatabase(postgresUrl, "bench_audit", cleanups), ["BENCH_AUDIT_CHAIN"]);
    // One key for both replicas (the checkpoints of either verify on the other).
    const signingKey = (await import("node:crypto"))
      .generateKeyPairSync("ed25519")
      .privateKey.export({ type: "pkcs8", format: "pem" });
    baseEnv.AUDIT_SIGNING_KEY = signingKey;
    const start = async (chain) => {
      const { base } = await startReplica({
        env: baseEnv,
        settings: { LOG_LEVEL: "error", BENCH_AUDIT_CHAIN: chain ? "on" : "off" },
        cleanups,
      });
      return { base, org: seedOrganization(baseEnv) };
    };
    const variants = { off: await start(false), on: await start(true) };
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
    // Warm both up (JIT, pools), then alternate.
    await Promise.all([load(variants.off, 1), load(variants.on, 1)].map((p) => p.then(() => {})));
    const results = { off: [], on: [] };
    const errors = { off: 0, on: 0 };
    const order = Array.from({ length: rounds * 2 }, (_, i) => (i % 4 === 0 || i % 4 === 3 ? "off" : "on"));
    for (const kind of order) {
      const r = await load(variants[kind], durationS);
      results[kind].push(r.requests.average);
      errors[kind] += r.non2xx + r.errors;
      log(`  ${kind.padEnd(3)} ${r.requests.average.toFixed(0)} req/s, p99 ${r.latency.p99} ms`);
    }
    const off = median(results.off);
    const on = median(results.on);
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
    return {
      off,
      on,
      ratio: on / off,
      errors,
      rounds,
      durationS,
      verified: verify.status === 0 ? JSON.parse(verify.stdout) : verify.stdout,
    };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchAuditChain();
  const lines = [
    "# Audit chain: create comment with and without the chain (2026-11-26)",
    "",
    `\`node bench/audit-chain.mjs\`: REST create comment in one organization, ${CONNECTIONS} connections, PostgreSQL, two replicas of one build on one database (BENCH_AUDIT_CHAIN=off and on), ${result.rounds * 2} alternating rounds of ${result.durationS} s, medians. 2 shared cores: load generator, both replicas and PostgreSQL on one machine.`,
    "",
    "| | req/s (median) |",
    "| --- | --- |",
    `| without the chain | ${result.off.toFixed(0)} |`,
    `| with the chain | ${result.on.toFixed(0)} |`,
    `| ratio | ${result.ratio.toFixed(2)}x (target >= 0.9x) |`,
    "",
    `Non-2xx or errors: off ${result.errors.off}, on ${result.errors.on}. The chained organization's trail afterwards: \`${JSON.stringify(result.verified)}\`.`,
    "",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  mkdirSync(path.join(root, "bench/results"), { recursive: true });
  writeFileSync(path.join(root, "bench/results/2026-11-26-audit-chain.md"), lines.join("\n"));
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
