// The "notifications" scenario (issue 29): what notifying costs the change that notifies, and how
// fast one replica sends the e-mail. PostgreSQL with e-mail on (a local SMTP server, smtp-server,
// in this process), deployed as web replicas beside a mail replica:
//   1. create comment (REST) with five mentions against without any, in alternating rounds
//      (plain, mentions, mentions, plain, ...) of the same run, on a web replica (MAIL_WORKER=false):
//      each mention writes its notification and enqueues its e-mail job in the comment's
//      transaction; medians of the rounds;
//   2. messages per second one replica sends, and its CPU per message: a mail replica (MAIL_WORKER
//      on, no requests) started on the backlog the rounds left, timed while it drains.
// Runs inside `npm run bench` (BENCH_NOTIFICATIONS=0 skips it) or alone: `node bench/notifications.mjs`.
// BENCH_NOTIFICATIONS_MAIL=0 runs part 1 without e-mail (no jobs at all) and skips part 2.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import { SMTPServer } from "smtp-server";
import { processCpuMs } from "./cpu.mjs";
import { abbaMedians } from "./rounds.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const MENTIONS = 5;
const CONNECTIONS = 16;
/** The longest the mail replica is timed on the backlog. */
const SEND_WINDOW_S = 15;
/** Members the comments mention, five at a time in turn: as in an organization, not the same five every time. */
const POOL = 40;

export function notificationsBenchMissing(postgresUrl) {
  return postgresUrl ? null : "no PostgreSQL URL";
}

/** Runs the scenario; `postgresUrl` is a server on which a throwaway database is made. */
export async function benchNotifications({ durationS = 5, rounds = 2, postgresUrl, log = () => {} }) {
  const cleanups = [];
  try {
    let received = 0;
    const smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS", "AUTH"],
      logger: false,
      onData(stream, _session, callback) {
        stream.on("data", () => {});
        stream.on("end", () => {
          received++;
          callback();
        });
      },
    });
    await new Promise((resolve) => smtp.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => smtp.close(resolve)));
    const smtpPort = smtp.server.address().port;

    const databaseUrl = await throwawayDatabase(postgresUrl, "bench_mail", cleanups);
    const baseEnv = replicaEnv(databaseUrl);
    const seed = seedOrganization(baseEnv);

    const mailOn = process.env.BENCH_NOTIFICATIONS_MAIL !== "0";
    const mailEnv = mailOn
      ? {
          SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
          MAIL_FROM: "Bench <bench@example.com>",
          PUBLIC_URL: "http://127.0.0.1",
          MAIL_UNSUBSCRIBE_SECRET: randomBytes(32).toString("hex"),
          MAIL_POLL_INTERVAL_SECONDS: "0.5",
        }
      : {};
    /** A service replica on the bench's database; `worker`: whether it sends e-mail. */
    const startMailReplica = (worker) =>
      startReplica({
        env: baseEnv,
        settings: { APP_URL: "https://app.example.com", ...mailEnv, MAIL_WORKER: String(worker) },
        cleanups,
      });
    // The web replica: takes the requests, enqueues the e-mail, sends none.
    const web = await startMailReplica(false);
    const { base } = web;
    const headers = { "x-api-key": seed.apiKey, "content-type": "application/json" };
    // Members to mention besides the author: the demo has four in all.
    const mentioned = seed.memberIds.slice(1);
    for (let i = mentioned.length; i < POOL; i++) {
      const res = await fetch(`${base}/v1/people`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          email: `bench${i}.${randomBytes(3).toString("hex")}@example.com`,
          name: `Bench ${i}`,
          role: "employee",
        }),
      });
      if (res.status !== 201) throw new Error(`create member: ${res.status} ${await res.text()}`);
      mentioned.push((await res.json()).id);
    }
    const taskId = seed.taskIds[0];
    const userId = seed.userIds[0];
    const mentionBodies = Array.from({ length: POOL }, (_, start) => {
      const markup = Array.from({ length: MENTIONS }, (_, i) => `@[Member ${i}](${mentioned[(start + i) % POOL]})`).join(" ");
      return JSON.stringify({ content: `${markup} please look`, entityId: taskId, entityType: "task", userId });
    });
    const plainBody = JSON.stringify({
      content:
        "A comment that mentions nobody, about as long as the one with five mentions in it, to compare like with like here.",
      entityId: taskId,
      entityType: "task",
      userId,
    });
    let turn = 0;
    const bodyOf = (kind) => (kind === "plain" ? plainBody : mentionBodies[turn++ % POOL]);
    const load = (kind, options) =>
      autocannon({
        url: `${base}/v1/comments`,
        method: "POST",
        headers,
        requests: [{ setupRequest: (request) => ({ ...request, body: bodyOf(kind) }) }],
        ...options,
      });
    const run = (kind, seconds) => load(kind, { connections: CONNECTIONS, duration: seconds });
    const metricsSent = async (replica) => {
      const text = await (await fetch(`${replica}/metrics`)).text();
      return Number(/^notification_mail_sent_total (\d+)/m.exec(text)?.[1] ?? 0);
    };
    const db = new pg.Client({ connectionString: databaseUrl });
    // A server stopped or a database dropped while the client is connected must not end the bench.
    db.on("error", () => {});
    await db.connect();
    cleanups.push(() => db.end());
    const pending = async () =>
      !mailOn
        ? 0
        : Number(
            (
              await db.query(
                `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'notification-mail' AND state IN ('created', 'retry', 'active')`,
              )
            ).rows[0].n,
          );

    // 1. Create comment with five mentions against without any.
    log(`notifications: warm-up, then ${rounds * 2} rounds of ${durationS} s per side at ${CONNECTIONS} connections`);
    await run("plain", 2);
    await run("mentions", 2);
    const summary = await abbaMedians(["plain", "mentions"], rounds, web.pid, (kind) => run(kind, durationS));
    const slower = 1 - summary.mentions.rps / summary.plain.rps;

    // 2. Messages per second: a mail replica, started on the backlog the rounds left, timed while it
    // drains (at most SEND_WINDOW_S); its CPU per message from /proc.
    let send = null;
    if (mailOn) {
      const backlogAtStart = await pending();
      const mailer = await startMailReplica(true);
      const startSent = await metricsSent(mailer.base);
      const startCpu = processCpuMs(mailer.pid);
      const startAt = performance.now();
      let backlog = backlogAtStart;
      for (const deadline = Date.now() + SEND_WINDOW_S * 1000; backlog > 0 && Date.now() < deadline; ) {
        await sleep(250);
        backlog = await pending();
      }
      const seconds = (performance.now() - startAt) / 1000;
      const sent = (await metricsSent(mailer.base)) - startSent;
      const cpuMsPerMessage = (processCpuMs(mailer.pid) - startCpu) / Math.max(sent, 1);
      send = { backlogAtStart, sent, seconds, perSecond: sent / seconds, cpuMsPerMessage, received };
    }

    const results = { comment: summary, slower, mail: mailOn, send };
    const verdict = slower <= 0.1 ? "PASS" : "FAIL";
    const text = [
      `Notifications (PostgreSQL, a web replica with ${mailOn ? "e-mail enqueued (MAIL_WORKER=false)" : "e-mail off"}; ${CONNECTIONS} connections, ${rounds * 2} alternating rounds of ${durationS} s per side, medians; mentions rotate over ${POOL} members):`,
      `  create comment, no mention        ${summary.plain.rps.toFixed(0).padStart(6)} req/s, p50 ${summary.plain.p50} ms, p99 ${summary.plain.p99} ms, ${summary.plain.errors} errors; CPU per request: service ${summary.plain.serviceCpuMs.toFixed(2)} ms, PostgreSQL ${summary.plain.postgresCpuMs.toFixed(2)} ms`,
      `  create comment, ${MENTIONS} mentions        ${summary.mentions.rps.toFixed(0).padStart(6)} req/s, p50 ${summary.mentions.p50} ms, p99 ${summary.mentions.p99} ms, ${summary.mentions.errors} errors; CPU per request: service ${summary.mentions.serviceCpuMs.toFixed(2)} ms, PostgreSQL ${summary.mentions.postgresCpuMs.toFixed(2)} ms`,
      `  ${verdict}  five mentions at most 10 % slower: ${(slower * 100).toFixed(1)} % slower (${MENTIONS} notifications${mailOn ? ` and ${MENTIONS} e-mail jobs` : ""} in the comment's transaction)`,
      send
        ? `  e-mail sent by one mail replica: ${send.perSecond.toFixed(0)} messages/s, ${send.cpuMsPerMessage.toFixed(2)} ms of its CPU per message (${send.sent} of a backlog of ${send.backlogAtStart} in ${send.seconds.toFixed(1)} s); ${received} messages received in all`
        : "  e-mail off: nothing sent",
      "  On a 2-core machine the service, PostgreSQL, the SMTP server and the load generator share the cores.",
    ];
    return { results, text: lines(text) };
  } finally {
    while (cleanups.length)
      await cleanups
        .pop()()
        .catch(() => {});
  }
}

const lines = (list) => list.join("\n");

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const build = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
  if (build.status !== 0) process.exit(1);
  const { text } = await benchNotifications({
    durationS: Number(process.env.BENCH_DURATION ?? 5),
    rounds: Number(process.env.BENCH_ROUNDS ?? 2),
    postgresUrl:
      process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
    log: (line) => console.log(line),
  });
  console.log(text);
  process.exit(0);
}

/** As a part of `npm run bench` (bench/suites.mjs): after the scenarios, on PostgreSQL. */
export const suite = {
  id: "notifications",
  resultKey: "notifications",
  skip: "BENCH_NOTIFICATIONS",
  runs: (settings) => !settings.against && settings.databases.includes("postgres"),
  run: (settings, log) =>
    benchNotifications({ durationS: settings.durationS, rounds: settings.rounds, postgresUrl: settings.postgresUrl, log }),
};
