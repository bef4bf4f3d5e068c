// The "webhooks" scenario (issue 36): what webhooks cost the change, and how fast one replica
// delivers. PostgreSQL; a local receiver (node:http on 127.0.0.1, answering 204) in this process:
//   1. create comment (REST) in an organization with three endpoints subscribed to comment.created
//      against one with none, in alternating rounds of the same run, on a web replica
//      (WEBHOOK_WORKER=false): each comment writes its delivery rows in its transaction (one
//      INSERT ... SELECT, no rows without endpoints); medians of the rounds;
//   2. deliveries per second one replica sends, and its CPU per delivery: a worker replica
//      (WEBHOOK_WORKER on, no requests) started on the backlog the rounds left, timed while it drains.
// Standalone: `node bench/webhooks.mjs` (BENCH_DURATION, BENCH_ROUNDS, BENCH_POSTGRES_URL); prints
// its figures and writes them to bench/results/<date>-webhooks.md (-2, -3... when the day has one).
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import { postgresCpuMs, postgresCpuSince, processCpuMs } from "./cpu.mjs";
import { abbaMedians } from "./rounds.mjs";
import { newResultsFile } from "./settings.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const CONNECTIONS = 16;
const ENDPOINTS = 3;
/** The longest the worker replica is timed on the backlog. */
const SEND_WINDOW_S = 20;

/** Runs the scenario; `postgresUrl` is a server on which a throwaway database is made. */
export async function benchWebhooks({ durationS = 5, rounds = 2, postgresUrl, log = () => {} }) {
  const cleanups = [];
  try {
    let received = 0;
    const receiver = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        received++;
        res.writeHead(204).end();
      });
    });
    await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => receiver.close(resolve)));
    const receiverPort = receiver.address().port;

    const databaseUrl = await throwawayDatabase(postgresUrl, "bench_hooks", cleanups);
    const baseEnv = replicaEnv(databaseUrl);
    const quiet = seedOrganization(baseEnv);
    const subscribed = seedOrganization(baseEnv);

    /** A service replica on the bench's database; `worker`: whether it sends webhooks. */
    const startWebhookReplica = (worker) =>
      startReplica({
        env: baseEnv,
        settings: {
          WEBHOOK_ALLOWED_CIDRS: "127.0.0.1/32",
          WEBHOOK_POLL_INTERVAL_MS: "200",
          WEBHOOK_WORKER: String(worker),
        },
        cleanups,
      });
    const web = await startWebhookReplica(false);
    const { base } = web;
    for (let i = 0; i < ENDPOINTS; i++) {
      const res = await fetch(`${base}/v1/webhook-endpoints`, {
        method: "POST",
        headers: { "x-api-key": subscribed.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook/${i}`, eventTypes: ["comment.created"] }),
      });
      if (res.status !== 201) throw new Error(`create endpoint: ${res.status} ${await res.text()}`);
    }
    const bodyOf = (org) =>
      JSON.stringify({
        content: "A comment of about the length people write, to compare like with like.",
        entityId: org.taskIds[0],
        entityType: "task",
        userId: org.userIds[0],
      });
    const sides = { none: quiet, three: subscribed };
    const run = (kind, seconds) =>
      autocannon({
        url: `${base}/v1/comments`,
        method: "POST",
        headers: { "x-api-key": sides[kind].apiKey, "content-type": "application/json" },
        body: bodyOf(sides[kind]),
        connections: CONNECTIONS,
        duration: seconds,
      });
    const db = new pg.Client({ connectionString: databaseUrl });
    db.on("error", () => {});
    await db.connect();
    cleanups.push(() => db.end());
    const pending = async () =>
      Number((await db.query(`SELECT count(*)::int AS n FROM "WebhookDelivery" WHERE "nextAttemptAt" IS NOT NULL`)).rows[0].n);

    // 1. Create comment with three endpoints subscribed against none.
    log(`webhooks: warm-up, then ${rounds * 2} rounds of ${durationS} s per side at ${CONNECTIONS} connections`);
    await run("none", 2);
    await run("three", 2);
    const summary = await abbaMedians(["none", "three"], rounds, web.pid, (kind) => run(kind, durationS));
    const slower = 1 - summary.three.rps / summary.none.rps;

    // 2. Deliveries per second: a worker replica on the backlog, timed while it drains.
    const backlogAtStart = await pending();
    const worker = await startWebhookReplica(true);
    const sentOf = async () => {
      const text = await (await fetch(`${worker.base}/metrics`)).text();
      return Number(/^webhook_deliveries_succeeded_total (\d+)/m.exec(text)?.[1] ?? 0);
    };
    const startSent = await sentOf();
    const startCpu = processCpuMs(worker.pid);
    const startPg = postgresCpuMs();
    const startAt = performance.now();
    let backlog = backlogAtStart;
    for (const deadline = Date.now() + SEND_WINDOW_S * 1000; backlog > 0 && Date.now() < deadline; ) {
      await sleep(250);
      backlog = await pending();
    }
    const seconds = (performance.now() - startAt) / 1000;
    const sent = (await sentOf()) - startSent;
    const send = {
      backlogAtStart,
      sent,
      seconds,
      perSecond: sent / seconds,
      cpuMsPerDelivery: (processCpuMs(worker.pid) - startCpu) / Math.max(sent, 1),
      postgresCpuMsPerDelivery: postgresCpuSince(startPg) / Math.max(sent, 1),
    };
    const verdict = slower <= 0.1 ? "PASS" : "FAIL";
    const text = [
      `Webhooks (PostgreSQL, a web replica with WEBHOOK_WORKER=false; ${CONNECTIONS} connections, ${rounds * 2} alternating rounds of ${durationS} s per side, medians):`,
      `  create comment, no endpoint        ${summary.none.rps.toFixed(0).padStart(6)} req/s, p50 ${summary.none.p50} ms, p99 ${summary.none.p99} ms, ${summary.none.errors} errors; CPU per request: service ${summary.none.serviceCpuMs.toFixed(2)} ms, PostgreSQL ${summary.none.postgresCpuMs.toFixed(2)} ms`,
      `  create comment, ${ENDPOINTS} endpoints       ${summary.three.rps.toFixed(0).padStart(6)} req/s, p50 ${summary.three.p50} ms, p99 ${summary.three.p99} ms, ${summary.three.errors} errors; CPU per request: service ${summary.three.serviceCpuMs.toFixed(2)} ms, PostgreSQL ${summary.three.postgresCpuMs.toFixed(2)} ms`,
      `  ${verdict}  three endpoints at most 10 % slower: ${(slower * 100).toFixed(1)} % slower (the same one INSERT ... SELECT either way: ${ENDPOINTS} rows against none; test/integration/webhooks.test.ts counts the statements)`,
      `  deliveries sent by one worker replica: ${send.perSecond.toFixed(0)} /s, ${send.cpuMsPerDelivery.toFixed(2)} ms of its CPU and ${send.postgresCpuMsPerDelivery.toFixed(2)} ms of PostgreSQL's per delivery (${send.sent} of a backlog of ${send.backlogAtStart} in ${send.seconds.toFixed(1)} s); ${received} messages received in all`,
      "  On a 2-core machine the service, PostgreSQL, the receiver and the load generator share the cores.",
    ].join("\n");
    return { results: { comment: summary, slower, send }, text };
  } finally {
    while (cleanups.length)
      await cleanups
        .pop()()
        .catch(() => {});
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const build = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
  if (build.status !== 0) process.exit(1);
  const { text } = await benchWebhooks({
    durationS: Number(process.env.BENCH_DURATION ?? 5),
    rounds: Number(process.env.BENCH_ROUNDS ?? 2),
    postgresUrl:
      process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
    log: (line) => console.log(line),
  });
  console.log(text);
  const when = new Date().toISOString().slice(0, 16).replace("T", " ");
  writeFileSync(
    newResultsFile("webhooks"),
    `# Webhooks bench, ${when} UTC\n\n\`node bench/webhooks.mjs\` (BENCH_DURATION=${process.env.BENCH_DURATION ?? 5}, BENCH_ROUNDS=${process.env.BENCH_ROUNDS ?? 2}), on the shared 2-core machine while other engineers ran tests: read the ratio, not the absolute figures.\n\n\`\`\`\n${text}\n\`\`\`\n`,
  );
  process.exit(0);
}

/** In `npm run bench` (bench/suites.mjs): create comment with three webhook endpoints against none; deliveries a replica sends. */
export const suite = {
  id: "webhooks",
  resultKey: "webhooks",
  skip: "BENCH_WEBHOOKS",
  runs: (settings) => !settings.against && settings.databases.includes("postgres"),
  run: (settings, log) =>
    benchWebhooks({ durationS: settings.durationS, rounds: settings.rounds, postgresUrl: settings.postgresUrl, log }),
};
