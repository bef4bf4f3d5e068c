// The "soak" scenario (issue 38): does memory hold and does latency stay steady under a long mixed
// load? One replica (the built server, production mode) on a throwaway PostgreSQL database with
// the demo data, driven by SOAK_LOOPS clients in turn: a task read (REST), a comment create with
// an Idempotency-Key (REST), a graph screen (GraphQL: a task, its comments). Every few seconds it
// prints the server's RSS and V8 heap (its /metrics), and at the end: the slope of both after the
// warm-up (least squares, MB per minute) and the p99 latency of each window.
//   node bench/soak.mjs                          ten minutes, 60 s windows, 60 s warm-up
//   SOAK_SECONDS=60 SOAK_WINDOW_SECONDS=15 SOAK_WARMUP_SECONDS=15 node bench/soak.mjs
// BENCH_POSTGRES_URL: the server on which the throwaway database is made (default: local 5432).
// Writes its figures to bench/results/<date>-soak.md (SOAK_RESULTS: another file).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { newResultsFile } from "./settings.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const num = (name, fallback) => Number(process.env[name] ?? fallback);
const SECONDS = num("SOAK_SECONDS", 600);
const WINDOW_S = num("SOAK_WINDOW_SECONDS", 60);
const WARMUP_S = num("SOAK_WARMUP_SECONDS", Math.min(60, SECONDS / 4));
const SAMPLE_S = num("SOAK_SAMPLE_SECONDS", 5);
const LOOPS = num("SOAK_LOOPS", 8);
const postgresUrl = process.env.BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

const p99 = (values) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)];
};
/** Least-squares slope of (t seconds, value) points, per minute. */
const slopePerMinute = (points) => {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mt = points.reduce((s, p) => s + p.t, 0) / n;
  const mv = points.reduce((s, p) => s + p.v, 0) / n;
  const cov = points.reduce((s, p) => s + (p.t - mt) * (p.v - mv), 0);
  const varT = points.reduce((s, p) => s + (p.t - mt) ** 2, 0);
  return (cov / varT) * 60;
};
const mb = (bytes) => bytes / 1024 / 1024;
const metric = (text, name) => Number(text.match(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m"))?.[1]);

async function main() {
  if (!existsSync(path.join(root, "dist", "server.js"))) {
    spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
  }
  const cleanups = [];
  try {
    const env = replicaEnv(await throwawayDatabase(postgresUrl, "bench_soak", cleanups));
    const seed = seedOrganization(env);
    const { base } = await startReplica({ env, cleanups, args: ["dist/server.js"] });

    const headers = { "x-api-key": seed.apiKey, "content-type": "application/json" };
    const taskId = seed.taskIds[0];
    const t0 = Date.now();
    const end = t0 + SECONDS * 1000;
    /** Latencies (ms) and failures per window. */
    const windows = [];
    const windowOf = (at) => {
      const i = Math.floor((at - t0) / (WINDOW_S * 1000));
      windows[i] ??= { latencies: [], failed: 0 };
      return windows[i];
    };
    let sequence = 0;
    const byKind = { read: [], create: [], graph: [] };
    const timed = async (kind, send) => {
      const at = Date.now();
      // The last turn of a loop may start past the end: not counted.
      if (at >= end) return;
      let ok = false;
      try {
        const r = await send();
        await r.arrayBuffer();
        ok = r.ok;
      } catch {}
      const w = windowOf(at);
      w.latencies.push(Date.now() - at);
      byKind[kind].push(Date.now() - at);
      if (!ok) w.failed++;
    };
    const loop = async () => {
      while (Date.now() < end) {
        await timed("read", () => fetch(`${base}/v1/tasks/${taskId}`, { headers }));
        const key = `soak-${sequence++}`;
        await timed("create", () =>
          fetch(`${base}/v1/comments`, {
            method: "POST",
            headers: { ...headers, "idempotency-key": key },
            body: JSON.stringify({ content: key, entityId: taskId, entityType: "task", userId: seed.userIds[0] }),
          }),
        );
        await timed("graph", () =>
          fetch(`${base}/graphql`, {
            method: "POST",
            headers,
            body: JSON.stringify({
              query: "query($id: ID!) { task(taskId: $id) { id title status comments(limit: 10) { items { id content } } } }",
              variables: { id: taskId },
            }),
          }),
        );
      }
    };
    const samples = [];
    const sampler = (async () => {
      while (Date.now() < end) {
        await sleep(SAMPLE_S * 1000);
        const text = await fetch(`${base}/metrics`).then(
          (r) => r.text(),
          () => "",
        );
        const sample = {
          t: (Date.now() - t0) / 1000,
          rss: metric(text, "process_resident_memory_bytes"),
          heap: metric(text, "nodejs_heap_size_used_bytes"),
        };
        samples.push(sample);
        console.log(
          `${sample.t.toFixed(0).padStart(5)} s  rss ${mb(sample.rss).toFixed(1)} MB  heap ${mb(sample.heap).toFixed(1)} MB`,
        );
      }
    })();
    await Promise.all([...Array.from({ length: LOOPS }, loop), sampler]);

    const after = samples.filter((s) => s.t >= WARMUP_S);
    const rssSlope = slopePerMinute(after.map((s) => ({ t: s.t, v: mb(s.rss) })));
    const heapSlope = slopePerMinute(after.map((s) => ({ t: s.t, v: mb(s.heap) })));
    // The heap between collections is a saw: its floor (the lowest sample of each window) is what a leak raises.
    const floors = [];
    for (const s of after) {
      const i = Math.floor(s.t / WINDOW_S);
      if (!floors[i] || s.heap < floors[i].heap) floors[i] = s;
    }
    const floorSlope = slopePerMinute(floors.filter(Boolean).map((s) => ({ t: s.t, v: mb(s.heap) })));
    const measured = windows.filter((w, i) => w && (i + 1) * WINDOW_S > WARMUP_S);
    const p99Ratio = p99(measured.at(-1)?.latencies ?? []) / p99(measured[0]?.latencies ?? []);
    const rows = windows.map((w, i) => ({
      window: `${i * WINDOW_S}-${(i + 1) * WINDOW_S} s`,
      requests: w.latencies.length,
      failed: w.failed,
      p99: p99(w.latencies),
    }));
    const lines = [
      `# Soak: ${SECONDS} s of mixed load (${LOOPS} clients: task read, keyed comment create, graph screen), one replica on PostgreSQL`,
      "",
      `Run: \`SOAK_SECONDS=${SECONDS} SOAK_WINDOW_SECONDS=${WINDOW_S} SOAK_WARMUP_SECONDS=${WARMUP_S} node bench/soak.mjs\` on ${new Date().toISOString()}.`,
      "",
      `After the ${WARMUP_S} s warm-up: RSS slope ${rssSlope.toFixed(2)} MB/min, heap slope ${heapSlope.toFixed(2)} MB/min,`,
      `heap floor (lowest sample per window) slope ${floorSlope.toFixed(2)} MB/min; p99 of the last window / the first after warm-up: ${p99Ratio.toFixed(2)}`,
      `(first/last sample after warm-up: RSS ${mb(after[0]?.rss).toFixed(1)} -> ${mb(after.at(-1)?.rss).toFixed(1)} MB, heap ${mb(after[0]?.heap).toFixed(1)} -> ${mb(after.at(-1)?.heap).toFixed(1)} MB).`,
      "",
      "| request | count | p50 ms | p99 ms |",
      "| --- | --- | --- | --- |",
      ...Object.entries(byKind).map(
        ([kind, l]) => `| ${kind} | ${l.length} | ${[...l].sort((a, b) => a - b)[Math.floor(l.length / 2)] ?? "-"} | ${p99(l)} |`,
      ),
      "",
      "| window | requests | failed | p99 ms |",
      "| --- | --- | --- | --- |",
      ...rows.map((r) => `| ${r.window} | ${r.requests} | ${r.failed} | ${r.p99} |`),
      "",
      "| t (s) | RSS MB | heap MB |",
      "| --- | --- | --- |",
      ...samples.map((s) => `| ${s.t.toFixed(0)} | ${mb(s.rss).toFixed(1)} | ${mb(s.heap).toFixed(1)} |`),
      "",
    ];
    console.log(`\n${lines.join("\n")}`);
    const out = process.env.SOAK_RESULTS ?? newResultsFile("soak");
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, lines.join("\n"));
    console.log(`written to ${path.relative(root, out)}`);
  } finally {
    while (cleanups.length) await cleanups.pop()();
  }
}

await main();
