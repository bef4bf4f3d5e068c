import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import pg from "pg";
import { fromPrisma } from "pg-boss";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/admin/admin.service.js";
import { type SeedResult, seedDemo } from "../../src/admin/seed.js";
import { permissions } from "../../src/auth/permissions.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import { startJobQueue } from "../../src/platform/jobs.js";
import { freshDataDir } from "../helpers/data-dir.js";
import { type ServerProcess, startServer } from "../helpers/server-process.js";
import { pgbouncerMissing, startPgBouncer } from "../helpers/servers.js";
import { type SmtpServer, startSmtpServer } from "../helpers/smtp.js";
import { createPostgresDatabase, migratedPostgresDatabase, usePostgres } from "../helpers/test-app.js";

// Service processes as deployed, each working the mail queue, against a real SMTP server: every
// notification becomes exactly one message, whichever replica made the change and whichever sends it.

const mailEnv = (smtp: SmtpServer) => ({
  SMTP_URL: smtp.url,
  MAIL_FROM: "Workspace <notify@gateway.test>",
  PUBLIC_URL: "http://gateway.test",
  APP_URL: "https://app.gateway.test",
  MAIL_UNSUBSCRIBE_SECRET: randomBytes(32).toString("hex"),
  MAIL_RETRY_DELAY_SECONDS: "1",
  MAIL_RETRY_DELAY_MAX_SECONDS: "1",
  MAIL_POLL_INTERVAL_SECONDS: "0.5",
  LOG_LEVEL: "warn",
});

/** Posts `count` comments by `userId`, each mentioning two members, spread over the servers in turn. */
async function mention(
  servers: ServerProcess[],
  key: string,
  userId: string,
  taskId: string,
  memberIds: string[],
  count: number,
) {
  for (let i = 0; i < count; i++) {
    const server = servers[i % servers.length] as ServerProcess;
    const [a, b] = [memberIds[1 + (i % 3)], memberIds[1 + ((i + 1) % 3)]];
    const res = await fetch(`${server.url}/v1/comments`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ content: `@[A](${a}) and @[B](${b}): comment ${i}`, entityId: taskId, entityType: "task", userId }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
  }
}

async function sentBy(server: ServerProcess): Promise<number> {
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  return Number(/^notification_mail_sent_total (\d+)/m.exec(metrics)?.[1] ?? "0");
}

/**
 * For the describe it is called in: an SMTP server, a PostgreSQL database with the demo
 * organization and an all-scopes API key, and the replicas the tests start into `replicas`, all
 * stopped after it. Its fields are set once its beforeAll has run.
 */
function demoWithMail(smtpOptions?: Parameters<typeof startSmtpServer>[0]) {
  const s = { replicas: [] as ServerProcess[] } as {
    smtp: SmtpServer;
    url: string;
    drop: () => Promise<void>;
    database: Database;
    org: SeedResult;
    key: string;
    replicas: ServerProcess[];
  };
  beforeAll(async () => {
    s.smtp = await startSmtpServer(smtpOptions);
    ({ url: s.url, drop: s.drop } = await migratedPostgresDatabase());
    s.database = await openDatabase({ kind: "postgres", url: s.url });
    s.org = await seedDemo(s.database.db);
    s.key = (
      await createApiKey(s.database.db, { organizationId: s.org.organizationId, name: "e2e", scopes: [...permissions] })
    ).key;
  }, 120_000);
  afterAll(async () => {
    for (const replica of s.replicas) replica.child.kill("SIGKILL");
    await s.smtp?.stop();
    await s.database?.close();
    await s.drop?.();
  });
  return s;
}

// Each run its own part: `npm test` the embedded database, `npm run test:postgres` PostgreSQL (vitest.config.ts).
describe.runIf(usePostgres)("two service processes on one PostgreSQL database", () => {
  // A little slow, as real servers are: a replica busy sending leaves jobs to the other.
  const s = demoWithMail({ delayMs: 30 });

  beforeAll(async () => {
    const env = { ...mailEnv(s.smtp), DATABASE_URL: s.url, NODE_ENV: "production" };
    // Both start at once: pg-boss creates its schema under its own lock.
    s.replicas.push(...(await Promise.all([startServer(env, { until: "spawned" }), startServer(env, { until: "spawned" })])));
    await Promise.all(s.replicas.map((replica) => replica.ready()));
  }, 120_000);

  it("send each message once: as many messages as notifications, distinct Message-IDs, from both replicas", async () => {
    await mention(s.replicas, s.key, s.org.userIds[0] as string, s.org.taskIds[0] as string, s.org.memberIds, 20);
    const notifications = await s.database.db.notification.findMany({
      where: { organizationId: s.org.organizationId },
      select: { id: true },
    });
    expect(notifications).toHaveLength(40);
    await s.smtp.waitFor((mails) => mails.length >= 40, 60_000, "40 messages");
    // Every job settled: nothing more can arrive.
    const client = new pg.Client({ connectionString: s.url });
    await client.connect();
    try {
      await s.replicas[0]?.waitFor(
        async () =>
          (
            await client.query(
              `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'notification-mail' AND state = 'completed'`,
            )
          ).rows[0].n === 40,
        "40 completed jobs",
        30_000,
      );
    } finally {
      await client.end();
    }
    expect(s.smtp.received).toHaveLength(40);
    const messageIds = new Set(s.smtp.received.map((m) => m.messageId));
    expect(messageIds).toEqual(new Set(notifications.map((n) => `<${n.id}@gateway.test>`)));
    const [first, second] = await Promise.all(s.replicas.map(sentBy));
    expect((first ?? 0) + (second ?? 0)).toBe(40);
    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(0);
  });
});

describe.runIf(usePostgres)("a web replica with MAIL_WORKER=false beside a mail replica", () => {
  const s = demoWithMail();

  it("the web replica enqueues in the change's transaction and sends nothing; the mail replica sends every message", async () => {
    const env = { ...mailEnv(s.smtp), DATABASE_URL: s.url, NODE_ENV: "production" };
    const web = await startServer({ ...env, MAIL_WORKER: "false" }, { until: "ready" });
    s.replicas.push(web);
    await mention([web], s.key, s.org.userIds[0] as string, s.org.taskIds[0] as string, s.org.memberIds, 5);
    const client = new pg.Client({ connectionString: s.url });
    await client.connect();
    const jobs = async (state: string) =>
      (await client.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'notification-mail' AND state = $1`, [state]))
        .rows[0].n as number;
    try {
      expect(await jobs("created")).toBe(10);
      // Three of the web replica's would-be poll intervals (0.5 s): a worker would have taken them by now.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await jobs("created")).toBe(10);
      expect(s.smtp.received).toHaveLength(0);

      const mailer = await startServer(env, { until: "ready" });
      s.replicas.push(mailer);
      await s.smtp.waitFor((mails) => mails.length >= 10, 60_000, "10 messages");
      await mailer.waitFor(async () => (await sentBy(mailer)) === 10, "the mail replica to count 10 sent", 10_000);
      expect(await sentBy(web)).toBe(0);
      expect(await jobs("completed")).toBe(10);
      expect(new Set(s.smtp.received.map((m) => m.messageId)).size).toBe(10);
    } finally {
      await client.end();
    }
  });
});

describe.skipIf(usePostgres)("one service process on the embedded database", () => {
  let smtp: SmtpServer;
  let server: ServerProcess;
  let dataDir: string;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    dataDir = freshDataDir("gateway-mail-");
    server = await startServer(
      { ...mailEnv(smtp), DATA_DIR: dataDir, DATABASE_URL: "", SEED_DEMO_DATA: "true", LOG_LEVEL: "info" },
      { until: "ready" },
    );
  }, 120_000);

  afterAll(async () => {
    server?.child.kill("SIGKILL");
    await server?.exited;
    await smtp?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("sends each message once, and stops cleanly with the queue", async () => {
    await server.waitFor(() => /API key:\s+cwk_/.test(server.output()), "the demo API key");
    const key = /API key:\s+(cwk_\S+)/.exec(server.output())?.[1] as string;
    const headers = { "x-api-key": key };
    const people = (await (await fetch(`${server.url}/v1/people?limit=10`, { headers })).json()) as {
      items: { id: string; userId: string }[];
    };
    const tasks = (await (await fetch(`${server.url}/v1/tasks?limit=1`, { headers })).json()) as { items: { id: string }[] };
    const memberIds = people.items.map((p) => p.id);
    expect(memberIds.length).toBeGreaterThanOrEqual(4);
    await mention([server], key, people.items[0]?.userId as string, tasks.items[0]?.id as string, memberIds, 10);
    await smtp.waitFor((mails) => mails.length >= 20, 60_000, "20 messages");
    await server.waitFor(async () => (await sentBy(server)) === 20, "the server to count 20 sent", 10_000);
    expect(smtp.received).toHaveLength(20);
    expect(new Set(smtp.received.map((m) => m.messageId)).size).toBe(20);
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect(server.output()).toContain('"stop the job queue":"done"');
  });
});

describe.runIf(usePostgres && !pgbouncerMissing())("the job queue through PgBouncer in transaction mode", () => {
  it("creates its schema, takes jobs sent in Prisma transactions and works them, two queues on a pool of two server connections", async () => {
    // Empty: openDatabase migrates it through the direct URL beside PgBouncer's, as the service does.
    const { url: direct, drop } = await createPostgresDatabase();
    const name = new URL(direct).pathname.slice(1);
    // The documented mode, with a pool small enough that every session is shared between clients.
    const bouncer = await startPgBouncer(
      { [name]: `host=127.0.0.1 port=5432 dbname=${name}` },
      { pool_mode: "transaction", default_pool_size: "2", max_client_conn: "100" },
    );
    const logger = pino({ level: "silent" });
    const database = await openDatabase({ kind: "postgres", url: bouncer.url(name), directUrl: direct, poolSize: 4 });
    const queues = [] as Awaited<ReturnType<typeof startJobQueue>>[];
    try {
      queues.push(...(await Promise.all([0, 1].map(() => startJobQueue({ url: bouncer.url(name), logger })))));
      const [a, b] = queues as [(typeof queues)[0], (typeof queues)[0]];
      await a.boss.createQueue("through-bouncer");
      const worked: number[] = [];
      for (const queue of queues) {
        await queue.boss.work("through-bouncer", { pollingIntervalSeconds: 0.5, batchSize: 2 }, async (jobs) => {
          for (const job of jobs) worked.push((job.data as { n: number }).n);
        });
      }
      for (let n = 0; n < 20; n++) {
        await database.db.$transaction(async (tx) => {
          await (n % 2 ? a : b).boss.send("through-bouncer", { n }, { db: fromPrisma(tx) });
        });
      }
      await expect(
        database.db.$transaction(async (tx) => {
          await a.boss.send("through-bouncer", { n: 99 }, { db: fromPrisma(tx) });
          throw new Error("roll back");
        }),
      ).rejects.toThrow("roll back");
      const deadline = Date.now() + 30_000;
      while (worked.length < 20 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect([...worked].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, n) => n));
    } finally {
      for (const queue of queues) await queue.stop(1_000);
      await database.close();
      bouncer.destroy();
      await drop();
    }
  }, 120_000);
});
