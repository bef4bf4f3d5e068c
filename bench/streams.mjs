// The "streams" scenario (issue 39): what 10,000 open live streams cost a replica, and how fast one
// comment reaches 5,000 of them. PostgreSQL, the built server in production mode, and the streams
// opened by a separate client process (this file with --client), each on a connection of its own,
// each authenticated (a JWT of one of the organization's users, as a browser tab holds):
//   1. RSS of the idle replica, with the streams open (half `notificationAdded`, half `commentAdded`
//      on one task), and after they closed;
//   2. one comment on that task: its POST's latency, and when the last of the task's subscribers
//      received it (from the POST's start and from its answer), against POSTs with no subscriber.
// `node bench/streams.mjs [--streams 10000] [--replicas 2] [--jemalloc]`: with two replicas (REDIS_URL shared),
// the streams are spread over both and the comments are written on the first. `--jemalloc` runs
// the replicas on jemalloc (LD_PRELOAD of Debian's libjemalloc2), to compare with glibc's allocator
// (the default; docs/production.md, Memory).
// BENCH_STREAMS_SETTLE_S=60 reads RSS again every 10 s until that long after the close (memory given
// back late). BENCH_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/postgres), BENCH_REDIS_URL
// (default redis://127.0.0.1:6379). Each process raises its open-file limit as far as its hard
// limit allows (`ulimit -n`): 10,000 sockets need more than the usual 1,024.
import { fork, spawnSync } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { newResultsFile } from "./settings.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
/**
 * The V8 heap in use and the memory outside it (buffers), from the replica's /metrics; the resident
 * part of malloc's main heap (native memory: sockets, HTTP parsers), from /proc; and how many times
 * the replica gave freed native memory back (src/platform/native-memory.ts).
 */
async function heapMb({ base, pid }) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (name) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  const mb = (name) => value(name) / 1024 / 1024;
  return {
    heap: mb("nodejs_heap_size_used_bytes"),
    committed: mb("nodejs_heap_size_total_bytes"),
    newSpace: mb('nodejs_heap_space_size_total_bytes\\{space="new"\\}'),
    external: mb("nodejs_external_memory_bytes"),
    mallocHeap: Number(/\[heap\]\n(?:.*\n)*?Rss:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/smaps`, "utf8"))?.[1] ?? 0) / 1024,
    trims: value("native_memory_trims_total"),
    fullCollections: value('nodejs_gc_duration_seconds_count\\{kind="major"\\}'),
    fullCollectionMs: value('nodejs_gc_duration_seconds_sum\\{kind="major"\\}') * 1000,
  };
}
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;

const commentSubscription = `subscription($id: ID!) { commentAdded(entityId: $id, entityType: task) { id content createdAt author { id name } } }`;
const inboxSubscription = "subscription { notificationAdded { id reason createdAt } }";

// ---------------------------------------------------------------------------------------------
// The client process: opens the streams it is told to, reports when each comment arrived.
// ---------------------------------------------------------------------------------------------
async function client() {
  const streams = [];
  /** Arrival times (epoch ms, fractional) of the `next` events that carried `marker`, per stream. */
  let watch = null;
  process.on("message", async (message) => {
    if (message.type === "open") {
      const { specs, concurrency } = message;
      let opened = 0;
      let failed = 0;
      let next = 0;
      const worker = async () => {
        while (next < specs.length) {
          const spec = specs[next++];
          const ok = await openStream(spec);
          if (ok) opened++;
          else failed++;
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      process.send({ type: "opened", opened, failed });
    } else if (message.type === "watch") {
      watch = { marker: message.marker, times: [], since: Date.now() };
    } else if (message.type === "collect") {
      // Until every subscriber of the task has it, or 10 s after the watch began.
      const deadline = (watch?.since ?? Date.now()) + 10_000;
      while (watch && watch.times.length < message.expect && Date.now() < deadline) await sleep(50);
      const times = watch?.times ?? [];
      watch = null;
      process.send({ type: "collected", count: times.length, last: times.length ? Math.max(...times) : null });
    } else if (message.type === "close") {
      for (const s of streams) s.destroy();
      streams.length = 0;
      process.send({ type: "closed" });
    } else if (message.type === "exit") {
      process.exit(0);
    }
  });

  function openStream({ port, headers, body }) {
    return new Promise((resolve) => {
      const req = request(
        {
          host: "127.0.0.1",
          port,
          path: "/graphql",
          method: "POST",
          agent: false,
          headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
        },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            resolve(false);
            return;
          }
          streams.push(req);
          let first = true;
          res.on("data", (chunk) => {
            if (first) {
              first = false;
              resolve(true);
            }
            if (watch && chunk.includes(watch.marker)) watch.times.push(performance.timeOrigin + performance.now());
            else if (chunk.includes('"errors"')) process.send({ type: "error", text: chunk.toString().slice(0, 300) });
          });
          res.on("error", () => {});
        },
      );
      req.on("error", () => resolve(false));
      req.end(body);
    });
  }
  process.send({ type: "ready" });
}

// ---------------------------------------------------------------------------------------------
// The bench: database, replicas, the client, the figures.
// ---------------------------------------------------------------------------------------------
function jwt(secret, userId) {
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const unsigned = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ sub: userId, iat: now, exp: now + 3_600 })}`;
  return `${unsigned}.${createHmac("sha256", secret).update(unsigned).digest("base64url")}`;
}

/** Debian's libjemalloc2, wherever the architecture puts it. */
function jemallocPath() {
  const found = ["x86_64-linux-gnu", "aarch64-linux-gnu"]
    .map((arch) => `/usr/lib/${arch}/libjemalloc.so.2`)
    .find((file) => existsSync(file));
  if (!found) throw new Error("--jemalloc: libjemalloc.so.2 not found (apt-get install libjemalloc2)");
  return found;
}

export async function benchStreams({
  streams: total = 10_000,
  replicas: replicaCount = 1,
  jemalloc = false,
  postgresUrl = "postgresql://postgres@127.0.0.1:5432/postgres",
  redisUrl = "redis://127.0.0.1:6379",
  log = () => {},
}) {
  const cleanups = [];
  try {
    // The server as it is in this tree.
    const built = spawnSync("npm", ["run", "--silent", "build"], { cwd: root, stdio: "inherit" });
    if (built.status !== 0) throw new Error("npm run build failed");
    const databaseUrl = await throwawayDatabase(postgresUrl, "bench_streams", cleanups);

    const secret = randomBytes(32).toString("hex");
    const baseEnv = replicaEnv(databaseUrl);
    const seed = seedOrganization(baseEnv);

    const nodeBin = existsSync(path.join(root, "node_modules/.bin/node"))
      ? path.join(root, "node_modules/.bin/node")
      : process.execPath;
    const redisPrefix = `bench:streams:${process.pid}:`;
    const startStreamsReplica = () =>
      startReplica({
        env: baseEnv,
        settings: {
          // As docs/production.md (Memory) recommends: glibc gives large freed buffers back.
          MALLOC_MMAP_THRESHOLD_: "131072",
          ...(jemalloc ? { LD_PRELOAD: jemallocPath() } : {}),
          AUTH_JWT_SECRET: secret,
          HEAP_FLAG: process.env.BENCH_STREAMS_SNAPSHOT ? "--heapsnapshot-signal=SIGUSR2" : "",
          ...(replicaCount > 1 ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisPrefix } : {}),
        },
        cleanups,
        // The shell raises the soft limit on open files to the hard one before the server starts.
        command: "sh",
        args: [
          "-c",
          'ulimit -n "$(ulimit -Hn)"; exec "$0" --max-semi-space-size=16 --liftoff-only $HEAP_FLAG dist/server.js',
          nodeBin,
        ],
      });
    const replicas = [];
    for (let i = 0; i < replicaCount; i++) replicas.push(await startStreamsReplica());
    const writer = replicas[0];
    const keyHeaders = { "x-api-key": seed.apiKey, "content-type": "application/json" };

    // Users to hold the streams: the demo's and a few more, so that no user passes the
    // per-credential cap (1,000 streams by default).
    const userIds = [...seed.userIds];
    const usersNeeded = Math.ceil(total / 800);
    for (let i = userIds.length; i < usersNeeded; i++) {
      const res = await fetch(`${writer.base}/v1/people`, {
        method: "POST",
        headers: keyHeaders,
        body: JSON.stringify({
          email: `stream${i}.${randomBytes(3).toString("hex")}@example.com`,
          name: `Stream ${i}`,
          role: "employee",
        }),
      });
      if (res.status !== 201) throw new Error(`create member: ${res.status} ${await res.text()}`);
      userIds.push((await res.json()).userId);
    }
    const tokens = userIds.map((u) => jwt(secret, u));
    const taskId = seed.taskIds[0];
    const authorUserId = seed.userIds[0];

    const post = async (content) => {
      const started = performance.timeOrigin + performance.now();
      const res = await fetch(`${writer.base}/v1/comments`, {
        method: "POST",
        headers: keyHeaders,
        body: JSON.stringify({ content, entityId: taskId, entityType: "task", userId: authorUserId }),
      });
      const answered = performance.timeOrigin + performance.now();
      if (res.status !== 201) throw new Error(`create comment: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      return { started, answered, ms: answered - started };
    };

    // Warm up, then the idle figures.
    for (let i = 0; i < 20; i++) await post(`warm-up ${i}`);
    await sleep(3_000);
    const idle = replicas.map((r) => rssMb(r.pid));
    const idleHeap = await Promise.all(replicas.map((r) => heapMb(r)));
    const withoutSubscribers = [];
    for (let i = 0; i < 15; i++) withoutSubscribers.push((await post(`no subscriber ${i}`)).ms);

    if (process.env.BENCH_STREAMS_SNAPSHOT) {
      process.kill(replicas[0].pid, "SIGUSR2");
      await sleep(20_000);
    }
    // The client process.
    const child = fork(fileURLToPath(import.meta.url), ["--client"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    cleanups.push(() => child.kill("SIGKILL"));
    const inbox = [];
    const next = (type) =>
      new Promise((resolve) => {
        const listener = (message) => {
          if (message.type === "error" && inbox.length < 3) {
            inbox.push(message.text);
            log(`  a stream said: ${message.text}`);
          }
          if (message.type !== type) return;
          child.off("message", listener);
          resolve(message);
        };
        child.on("message", listener);
      });
    await next("ready");

    const specs = Array.from({ length: total }, (_, i) => {
      const user = Math.floor(i / 2) % tokens.length;
      const replica = replicas[i % replicas.length];
      return {
        port: replica.port,
        headers: { authorization: `Bearer ${tokens[user]}`, "x-organization-id": seed.organizationId },
        body: JSON.stringify(
          i % 2 === 0 ? { query: commentSubscription, variables: { id: taskId } } : { query: inboxSubscription },
        ),
      };
    });
    log(`streams: opening ${total} streams on ${replicaCount} replica(s)`);
    const openStart = Date.now();
    child.send({ type: "open", specs, concurrency: 200 });
    const opened = await next("opened");
    const openSeconds = (Date.now() - openStart) / 1000;
    log(`streams: ${opened.opened} open, ${opened.failed} refused or failed, in ${openSeconds.toFixed(1)} s`);
    await sleep(5_000);
    const open = replicas.map((r) => rssMb(r.pid));
    const openHeap = await Promise.all(replicas.map((r) => heapMb(r)));
    if (process.env.BENCH_STREAMS_SNAPSHOT) {
      // A heap snapshot of the first replica with the streams open, in the working directory.
      process.kill(replicas[0].pid, "SIGUSR2");
      await sleep(30_000);
    }

    // Fan-out: one comment at a time, the client watching for its text.
    const fanOut = [];
    const withSubscribers = [];
    for (let i = 0; i < 7; i++) {
      const marker = `fan-out ${i} ${randomBytes(4).toString("hex")}`;
      child.send({ type: "watch", marker });
      await sleep(200);
      const timing = await post(marker);
      withSubscribers.push(timing.ms);
      child.send({ type: "collect", expect: Math.ceil(opened.opened / 2) });
      const got = await next("collected");
      fanOut.push({ count: got.count, fromStart: got.last - timing.started, fromAnswer: got.last - timing.answered });
      await sleep(500);
    }
    const subscribersOfTask = Math.ceil(total / 2);

    const beforeClose = await Promise.all(replicas.map((r) => heapMb(r)));
    child.send({ type: "close" });
    await next("closed");
    await sleep(10_000);
    const closed = replicas.map((r) => rssMb(r.pid));
    const closedHeap = await Promise.all(replicas.map((r) => heapMb(r)));
    // BENCH_STREAMS_SETTLE_S: RSS again that long after the close, for memory given back late.
    const settleS = Number(process.env.BENCH_STREAMS_SETTLE_S ?? 0);
    const settled = [];
    for (let s = 10; s < settleS; s += 10) {
      await sleep(10_000);
      settled.push({ s: s + 10, rss: replicas.map((r) => rssMb(r.pid)) });
    }
    child.send({ type: "exit" });

    const results = {
      total,
      replicas: replicaCount,
      opened: opened.opened,
      failed: opened.failed,
      openSeconds,
      idle,
      open,
      closed,
      withoutSubscribers: median(withoutSubscribers),
      withSubscribers: median(withSubscribers),
      fanOut,
    };
    const perReplica = replicas.map((_, i) => {
      const above = open[i] - idle[i];
      const back = closed[i] - idle[i];
      return `  replica ${i + 1}: RSS idle ${idle[i].toFixed(0)} MB, ${(total / replicaCount).toFixed(0)} streams open ${open[i].toFixed(0)} MB (+${above.toFixed(0)} MB, ${((above * 1024) / (total / replicaCount)).toFixed(1)} KB a stream), 10 s after they closed ${closed[i].toFixed(0)} MB (${back >= 0 ? "+" : ""}${((back / idle[i]) * 100).toFixed(1)} % of idle); V8 heap used ${idleHeap[i].heap.toFixed(0)} / ${openHeap[i].heap.toFixed(0)} / ${closedHeap[i].heap.toFixed(0)} MB, committed ${idleHeap[i].committed.toFixed(0)} / ${openHeap[i].committed.toFixed(0)} / ${closedHeap[i].committed.toFixed(0)} MB (of which new space ${idleHeap[i].newSpace.toFixed(0)} / ${openHeap[i].newSpace.toFixed(0)} / ${closedHeap[i].newSpace.toFixed(0)} MB), external ${idleHeap[i].external.toFixed(0)} / ${openHeap[i].external.toFixed(0)} / ${closedHeap[i].external.toFixed(0)} MB; malloc's main heap ${idleHeap[i].mallocHeap.toFixed(0)} / ${openHeap[i].mallocHeap.toFixed(0)} / ${closedHeap[i].mallocHeap.toFixed(0)} MB resident, ${closedHeap[i].trims} trim(s) after the close, ${closedHeap[i].fullCollections - beforeClose[i].fullCollections} full collection(s) (${(closedHeap[i].fullCollectionMs - beforeClose[i].fullCollectionMs).toFixed(0)} ms)`;
    });
    const lastFromStart = fanOut.map((f) => f.fromStart);
    const lastFromAnswer = fanOut.map((f) => f.fromAnswer);
    const text = [
      `Streams (PostgreSQL, production mode, ${replicaCount} replica(s)${replicaCount > 1 ? " sharing events through Redis" : ""}, ${jemalloc ? "jemalloc" : "glibc malloc"}; ${total} SSE streams from a separate process, each on its own connection and authenticated with a JWT of one of ${tokens.length} users; half notificationAdded, half commentAdded on one task):`,
      `  opened ${opened.opened} streams (${opened.failed} refused or failed) in ${openSeconds.toFixed(1)} s`,
      ...perReplica,
      ...settled.map(
        ({ s: after, rss }) =>
          `  ${after} s after they closed: ${rss.map((mb, i) => `replica ${i + 1} ${mb.toFixed(0)} MB (${mb >= idle[i] ? "+" : ""}${(((mb - idle[i]) / idle[i]) * 100).toFixed(1)} % of idle)`).join(", ")}`,
      ),
      `  one comment on the task: reached all ${subscribersOfTask} of its subscribers in ${fanOut.map((f) => f.count).join(", ")} (per comment); the last of them, median of ${fanOut.length}: ${median(lastFromStart).toFixed(0)} ms after its POST began, ${median(lastFromAnswer).toFixed(0)} ms after its answer (max ${Math.max(...lastFromAnswer).toFixed(0)} ms)`,
      `  POST /v1/comments, median: ${results.withoutSubscribers.toFixed(1)} ms with no subscriber, ${results.withSubscribers.toFixed(1)} ms with ${total} streams open (${subscribersOfTask} on the task)`,
      "  On a 2-core machine the service, PostgreSQL and the client process share the cores.",
    ].join("\n");
    return { results, text };
  } finally {
    while (cleanups.length) {
      const cleanup = cleanups.pop();
      await Promise.resolve()
        .then(cleanup)
        .catch(() => {});
    }
  }
}

if (process.argv.includes("--client")) {
  await client();
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const replicas = arg("replicas", 1);
  const { text } = await benchStreams({
    streams: arg("streams", 10_000),
    jemalloc: process.argv.includes("--jemalloc"),
    replicas,
    postgresUrl: process.env.BENCH_POSTGRES_URL,
    redisUrl: process.env.BENCH_REDIS_URL,
    log: (line) => process.stdout.write(`${line}\n`),
  });
  process.stdout.write(`${text}\n`);
  // A file of its own for each run (settings.mjs): the committed results of earlier runs stay as they are.
  const file = newResultsFile("streams");
  writeFileSync(
    file,
    `# Streams (bench/streams.mjs)\n\n## ${new Date().toISOString()} (node bench/streams.mjs ${process.argv.slice(2).join(" ")})\n\n\`\`\`\n${text}\n\`\`\`\n`,
  );
  process.stdout.write(`written to ${path.relative(root, file)}\n`);
  process.exit(0);
}
