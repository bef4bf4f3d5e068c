// What holds the service's RSS after a load (issue 59, item 5): the built server (dist/server.js,
// the Node flags of `npm start`, or MEMORY_NODE_FLAGS) on a throwaway PostgreSQL database, its
// /metrics memory figures (RSS, the V8 heap's capacity and use, each heap space's capacity, memory
// outside the heap) at start, right after MEMORY_SECONDS (10) of load at 32 connections, and after
// 5 and 15 s idle. MEMORY_SCENARIO: `rest-task` (GET /v1/tasks/{id}, the default) or
// `create-comment` (POST /v1/comments). Run alone: `npm run build && npx node bench/memory-after-load.mjs`.
import autocannon from "autocannon";
import { startFlagsOf } from "./settings.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const env = process.env;
const postgresUrl = env.BENCH_POSTGRES_URL ?? env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const seconds = Number(env.MEMORY_SECONDS ?? 10);
const flags = env.MEMORY_NODE_FLAGS ? env.MEMORY_NODE_FLAGS.split(" ").filter(Boolean) : startFlagsOf();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const mb = (bytes) => (Number(bytes) / 1048576).toFixed(1);

/** The memory lines of a Prometheus text: one figure, or one per heap space. */
function memoryOf(text) {
  const one = (name) => mb(new RegExp(`^${name}\\s+(\\S+)`, "m").exec(text)?.[1] ?? Number.NaN);
  const spaces = [...text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\}\s+(\S+)/gm)]
    .filter((m) => Number(m[2]) > 0)
    .map((m) => `${m[1]} ${mb(m[2])}`);
  return `RSS ${one("process_resident_memory_bytes")} MB; heap ${one("nodejs_heap_size_used_bytes")} used of ${one("nodejs_heap_size_total_bytes")} (${spaces.join(", ")}); external ${one("nodejs_external_memory_bytes")}`;
}

const cleanups = [];
try {
  const databaseUrl = await throwawayDatabase(postgresUrl, "memory", cleanups);
  const serviceEnv = replicaEnv(databaseUrl);
  const seed = seedOrganization(serviceEnv);
  const server = await startReplica({ env: serviceEnv, cleanups, args: [...flags, "dist/server.js"] });
  const show = async (label) => {
    const text = await (await fetch(`${server.base}/metrics`)).text();
    process.stdout.write(`${label.padEnd(12)} ${memoryOf(text)}\n`);
  };
  const key = { "x-api-key": seed.apiKey };
  const load =
    env.MEMORY_SCENARIO === "create-comment"
      ? {
          url: `${server.base}/v1/comments`,
          method: "POST",
          headers: { ...key, "content-type": "application/json" },
          body: JSON.stringify({ content: "Memory", entityId: seed.taskIds[1], entityType: "task", userId: seed.userIds[0] }),
        }
      : { url: `${server.base}/v1/tasks/${seed.taskIds[0]}`, headers: key };
  process.stdout.write(`Node ${process.version}, flags ${flags.join(" ")}, ${env.MEMORY_SCENARIO ?? "rest-task"}\n`);
  await show("start");
  const result = await autocannon({ ...load, connections: 32, duration: seconds });
  process.stdout.write(`load: ${Math.round(result.requests.average)} req/s for ${seconds} s, non-2xx ${result.non2xx}\n`);
  await show("after load");
  await sleep(5_000);
  await show("idle 5 s");
  await sleep(10_000);
  await show("idle 15 s");
} finally {
  for (const undo of cleanups.reverse()) await undo().catch(() => {});
}
