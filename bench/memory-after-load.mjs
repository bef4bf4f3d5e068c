// What holds the service's RSS (issue 59, item 5), at the moments `npm run bench` reads it: the
// built server (dist/server.js, the Node flags of `npm start`, or MEMORY_NODE_FLAGS) on a throwaway
// PostgreSQL database seeded by the CLI; at start, after the bench's scenario setups (their data
// made through the API), after MEMORY_SECONDS (10) of each scenario's load at MEMORY_CONNECTIONS (32), and
// after 5 and 15 s idle. Each line: RSS split into the Node binary's pages, malloc's main heap and
// the other anonymous memory (/proc/<pid>/smaps), then the V8 heap's use and capacity per space and
// the external memory (/metrics).
//   npm run build && npx node bench/memory-after-load.mjs
//   MEMORY_SCENARIOS=rest-task,vendor-page MEMORY_ENV="NAME=value ..." npx node bench/memory-after-load.mjs
import { readFileSync } from "node:fs";
import { load, withClient } from "./harness.mjs";
import { scenarioList } from "./scenarios/index.mjs";
import { sleep, startFlagsOf } from "./settings.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const env = process.env;
const postgresUrl = env.BENCH_POSTGRES_URL ?? env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const seconds = Number(env.MEMORY_SECONDS ?? 10);
const connections = Number(env.MEMORY_CONNECTIONS ?? 32);
const flags = env.MEMORY_NODE_FLAGS ? env.MEMORY_NODE_FLAGS.split(" ").filter(Boolean) : startFlagsOf();
const extraEnv = Object.fromEntries(
  (env.MEMORY_ENV ?? "")
    .split(" ")
    .filter(Boolean)
    .map((kv) => kv.split(/=(.*)/s, 2)),
);
const wanted = env.MEMORY_SCENARIOS?.split(",");
const scenarios = scenarioList.filter((s) => !wanted || wanted.includes(s.id));
const mb = (bytes) => (Number(bytes) / 1048576).toFixed(1);

/** RSS by kind of mapping: the node binary's pages, malloc's main heap ([heap]), other anonymous memory. */
function rssOf(pid) {
  let binary = 0;
  let brk = 0;
  let anonymous = 0;
  let other = 0;
  let name = "";
  let size = 0;
  // MEMORY_MAPS=1: anonymous memory by the size of its mapping (a glibc thread arena reserves 64 MB,
  // V8 maps its pages 256 KB at a time, a WebAssembly memory reserves gigabytes).
  const bySize = new Map();
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = head[3];
      size = Number.parseInt(head[2], 16) - Number.parseInt(head[1], 16);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const bytes = Number(rss[1]) * 1024;
    if (name === process.execPath || name.endsWith("/node")) binary += bytes;
    else if (name === "[heap]") brk += bytes;
    else if (name === "") {
      anonymous += bytes;
      const kind = size >= 2 ** 30 ? ">= 1 GB" : size >= 2 ** 26 ? "64 MB to 1 GB" : size >= 2 ** 20 ? "1 to 64 MB" : "< 1 MB";
      bySize.set(kind, (bySize.get(kind) ?? 0) + bytes);
    } else other += bytes;
  }
  const maps = env.MEMORY_MAPS ? `; anonymous by mapping size: ${[...bySize].map(([k, v]) => `${k} ${mb(v)}`).join(", ")}` : "";
  return `RSS ${mb(binary + brk + anonymous + other)} MB (node ${mb(binary)}, malloc heap ${mb(brk)}, anonymous ${mb(anonymous)}, other ${mb(other)})${maps}`;
}

/** The V8 heap's figures of a Prometheus text. */
function heapOf(text) {
  const one = (name) => mb(new RegExp(`^${name}\\s+(\\S+)`, "m").exec(text)?.[1] ?? Number.NaN);
  const spaces = [...text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\}\s+(\S+)/gm)]
    .filter((m) => Number(m[2]) > 1048576)
    .map((m) => `${m[1]} ${mb(m[2])}`);
  return `heap ${one("nodejs_heap_size_used_bytes")} used of ${one("nodejs_heap_size_total_bytes")} (${spaces.join(", ")}); external ${one("nodejs_external_memory_bytes")}`;
}

const cleanups = [];
try {
  const databaseUrl = await throwawayDatabase(postgresUrl, "memory", cleanups);
  const serviceEnv = replicaEnv(databaseUrl);
  const seed = seedOrganization(serviceEnv);
  const server = await startReplica({ env: serviceEnv, settings: extraEnv, cleanups, args: [...flags, "dist/server.js"] });
  const show = async (label) => {
    const text = await (await fetch(`${server.base}/metrics`)).text();
    process.stdout.write(`${label.padEnd(26)} ${rssOf(server.pid)}\n${"".padEnd(26)} ${heapOf(text)}\n`);
  };
  process.stdout.write(`Node ${process.version}, flags ${flags.join(" ")}, ${JSON.stringify(extraEnv)}\n`);
  await show("start");
  const data = { seed, data: {} };
  const analyze = () => withClient({ url: databaseUrl }, (client) => client.query("ANALYZE"));
  for (const s of scenarios) {
    if (s.setup) await s.setup({ base: server.base, seed, data: data.data, log: () => {}, analyze });
  }
  await show("after the setups");
  for (const s of scenarios) {
    const result = await load(server, s.request(data), connections, seconds);
    await show(`${s.id} (${Math.round(result.rps)}/s)`);
  }
  await sleep(5_000);
  await show("idle 5 s");
  await sleep(10_000);
  await show("idle 15 s");
} finally {
  for (const undo of cleanups.reverse()) await undo().catch(() => {});
}
