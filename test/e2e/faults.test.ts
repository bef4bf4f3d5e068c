import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/admin/admin.service.js";
import { type SeedResult, seedDemo } from "../../src/admin/seed.js";
import { permissions } from "../../src/auth/permissions.js";
import { openDatabase } from "../../src/platform/db/database.js";
import { randomPort, type ServerProcess, startServer } from "../helpers/server-process.js";
import { type PostgresServer, type RedisServer, serversMissing, sleep, startPostgres, startRedis } from "../helpers/servers.js";

/**
 * The service under the failures an operator sees: PostgreSQL and Redis servers of the test's own
 * are stopped, frozen and restarted under a steady mix of reads and writes on both transports.
 * Every answer is checked (JSON, our envelope or GraphQL errors, X-Request-Id, never a stack or a
 * file path), the process must never exit, and every acknowledged write must be in the database.
 */

const missing = serversMissing();
if (missing) console.warn(`skipping the fault-scenario tests: ${missing}`);

const STATEMENT_TIMEOUT_MS = 1_500;
const CONNECT_TIMEOUT_MS = 800;
const serviceEnv = (postgres: PostgresServer, redis: RedisServer) => ({
  NODE_ENV: "production",
  LOG_LEVEL: "warn",
  DATABASE_URL: postgres.url(),
  DATABASE_POOL_SIZE: "5",
  DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
  DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
  REDIS_URL: redis.url,
  REDIS_TIMEOUT_MS: "200",
  RATE_LIMIT_PER_MINUTE: "1000000",
  AUTH_FAILURES_PER_MINUTE: "1000000",
});

type Answer = { startedAt: number; ms: number; label: string; status: number; headers: Headers; text: string };

/**
 * Bounds of the "fast answer" tests: well above what a loaded 2-core machine needs (a request of
 * 1,318 ms was seen under load against the 200 ms Redis timeout), and each fault lasts longer than
 * its bound, so that a request that waited for the fault to end still fails the test. The tight
 * figures are the bench's.
 */
const FAST_MS = 3_000;

/** The slowest of some answers, said so that a failure names the request it waited on. */
function slowest(window: Answer[]): { ms: number; said: string } {
  const answer = window.reduce((a, b) => (b.ms > a.ms ? b : a));
  return {
    ms: answer.ms,
    said: `slowest: ${answer.label}, status ${answer.status}, ${answer.ms} ms, started at +${answer.startedAt - window[0]!.startedAt} ms`,
  };
}

/** What is wrong with an answer, or null. Every answer of the service must pass, in every state. */
function problemWith(answer: Answer): string | null {
  const { status, headers, text, label } = answer;
  if (status === 500 || status === 0) return `${label}: status ${status}: ${text.slice(0, 300)}`;
  if (!headers.get("x-request-id")) return `${label}: no X-Request-Id`;
  if (!headers.get("content-type")?.includes("application/json")) return `${label}: ${headers.get("content-type")} body`;
  if (/\n\s+at |node_modules|\/(src|dist|work|home|tmp)\/|\.(ts|js|mjs):\d+/.test(text))
    return `${label}: stack or path: ${text}`;
  let body: { code?: string; statusCode?: number; errors?: { extensions?: { code?: string } }[] };
  try {
    body = JSON.parse(text);
  } catch {
    return `${label}: not JSON: ${text.slice(0, 200)}`;
  }
  if (label.startsWith("graphql")) {
    if (body.errors?.some((e) => typeof e.extensions?.code !== "string")) return `${label}: a GraphQL error without a code`;
    // No failure of PostgreSQL or Redis is a defect of ours.
    if (body.errors?.some((e) => e.extensions?.code === "INTERNAL_SERVER_ERROR")) return `${label}: ${text}`;
    if (status === 503 && !body.errors?.every((e) => e.extensions?.code === "SERVICE_UNAVAILABLE"))
      return `${label}: 503 ${text}`;
  } else if (status >= 400) {
    if (body.statusCode !== status || typeof body.code !== "string") return `${label}: not our envelope: ${text}`;
    if (status === 503 && (body.code !== "SERVICE_UNAVAILABLE" || !headers.get("retry-after"))) return `${label}: 503 ${text}`;
  }
  return null;
}

describe.skipIf(missing)("when PostgreSQL or Redis fails", () => {
  let postgres: PostgresServer;
  let redis: RedisServer;
  let service: ServerProcess;
  let org: SeedResult;
  let key: string;
  const answers: Answer[] = [];
  const acknowledged: string[] = [];

  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
    const database = await openDatabase({ kind: "postgres", url: postgres.url() });
    org = await seedDemo(database.db);
    key = (await createApiKey(database.db, { organizationId: org.organizationId, name: "faults", scopes: [...permissions] })).key;
    await database.close();
    service = await startServer(serviceEnv(postgres, redis), { until: "ready" });
  }, 90_000);

  afterAll(async () => {
    const byStatus: Record<number, number> = {};
    for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
    console.info(
      `fault scenarios: ${answers.length} answers by status ${JSON.stringify(byStatus)}, ${acknowledged.length} acknowledged writes`,
    );
    service?.child.kill("SIGKILL");
    postgres?.destroy();
    await redis?.destroy();
  });

  async function call(label: string, path: string, init: RequestInit = {}): Promise<Answer> {
    const startedAt = Date.now();
    const response = await fetch(`${service.url}${path}`, { ...init, signal: AbortSignal.timeout(15_000) }).catch(
      (error: Error) => error,
    );
    const answer: Answer =
      response instanceof Error
        ? { startedAt, ms: Date.now() - startedAt, label, status: 0, headers: new Headers(), text: response.message }
        : {
            startedAt,
            ms: Date.now() - startedAt,
            label,
            status: response.status,
            headers: response.headers,
            text: await response.text(),
          };
    answers.push(answer);
    return answer;
  }

  const json = { "content-type": "application/json" };
  const writeComment = async (content: string) => {
    const answer = await call("rest write", "/v1/comments", {
      method: "POST",
      headers: { ...json, "x-api-key": key },
      body: JSON.stringify({ content, entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] }),
    });
    if (answer.status === 201) acknowledged.push(JSON.parse(answer.text).id);
    return answer;
  };

  /** Reads and writes on both transports, and unknown credentials (a database lookup each), until stopped. */
  function traffic() {
    let running = true;
    let n = 0;
    const loops = [
      () => writeComment(`under fire ${n++}`),
      () => call("rest read", `/v1/tasks/${org.taskIds[0]}`, { headers: { "x-api-key": key } }),
      () =>
        call("rest unknown key", `/v1/tasks/${org.taskIds[0]}`, {
          headers: { "x-api-key": `cwk_${Math.random().toString(16).slice(2, 18)}_${"x".repeat(43)}` },
        }),
      () =>
        call("graphql read", "/graphql", {
          method: "POST",
          headers: { ...json, "x-api-key": key },
          body: JSON.stringify({
            query: "query($id: ID!) { task(taskId: $id) { id title } }",
            variables: { id: org.taskIds[0] },
          }),
        }),
      () => call("ready", "/ready"),
    ].map(async (step) => {
      while (running) {
        await step();
        await sleep(25);
      }
    });
    return async () => {
      running = false;
      await Promise.all(loops);
    };
  }

  /** Runs traffic through `fault` and returns the answers to requests started while it lasted. */
  async function during(fault: () => Promise<void>): Promise<Answer[]> {
    const from = answers.length;
    const stop = traffic();
    await sleep(300);
    await fault();
    await stop();
    const window = answers.slice(from);
    expect(window.map(problemWith).filter(Boolean)).toEqual([]);
    expect(service.child.exitCode, service.output()).toBeNull();
    return window;
  }

  /** A live subscription to comments on the first task: the text it has received so far. */
  async function subscribe() {
    const controller = new AbortController();
    const response = await fetch(`${service.url}/graphql`, {
      method: "POST",
      signal: controller.signal,
      headers: { ...json, accept: "text/event-stream", "x-api-key": key },
      body: JSON.stringify({
        query: "subscription($id: ID!) { commentAdded(entityId: $id, entityType: task) { id } }",
        variables: { id: org.taskIds[0] },
      }),
    });
    expect(response.status).toBe(200);
    let text = "";
    const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    void (async () => {
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
    })();
    return { received: () => text, close: () => controller.abort() };
  }

  async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000) {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${service.output().slice(-3000)}`);
      await sleep(100);
    }
  }

  const readyBody = async () => JSON.parse((await call("ready", "/ready")).text) as Record<string, string>;

  it("keeps writing, without waiting on Redis, while Redis is down, and shares limits and events again when it returns", async () => {
    const before = await subscribe();
    let during503 = 0;
    let duringOutage: Awaited<ReturnType<typeof subscribe>> | undefined;
    // 503s of this outage only: the PostgreSQL tests before it (in a shuffled order) answer some.
    const from = answers.length;
    const window = await during(async () => {
      await redis.stop();
      const stopped = answers.length;
      // How soon the service notices depends on the machine's load: wait for it, with a bound.
      await until(async () => (await readyBody()).redis === "unavailable", "the service to see Redis down");
      expect(await readyBody()).toMatchObject({ status: "ready", redis: "unavailable", rateLimits: "per replica" });
      // A new subscription during the outage used to end the process.
      duringOutage = await subscribe();
      await sleep(1_200);
      // Writes go on meanwhile: at least six of them, however slowly a loaded machine answers.
      await until(
        () => answers.slice(stopped).filter((a) => a.label === "rest write").length > 5,
        "writes during the outage",
        20_000,
      );
      during503 = answers.slice(from).filter((a) => a.status === 503).length;
    });
    const writes = window.filter((a) => a.label === "rest write");
    expect(writes.length).toBeGreaterThan(5);
    expect(writes.every((a) => a.status === 201)).toBe(true);
    expect(during503).toBe(0);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/^redis_available 0$/m);
    expect(Number(/^events_publish_failures_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(Number(/^rate_limit_local_decisions_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(service.output()).toContain("redis unavailable");

    await redis.start();
    await until(async () => (await readyBody()).redis === "available", "Redis to be used again");
    // Both subscriptions, the one from before and the one opened during the outage, get new events.
    await until(async () => {
      const { id } = JSON.parse((await writeComment("after the outage")).text);
      await sleep(300);
      return before.received().includes(id) && (duringOutage?.received().includes(id) ?? false);
    }, "live events to resume");
    before.close();
    duringOutage?.close();
  });

  it("keeps serving while Redis flaps", async () => {
    const window = await during(async () => {
      for (let i = 0; i < 3; i++) {
        await redis.stop();
        await sleep(300);
        await redis.start();
        await sleep(300);
      }
    });
    expect(window.filter((a) => a.label === "rest write").every((a) => a.status === 201)).toBe(true);
    await until(async () => (await readyBody()).redis === "available", "Redis to be used again");
  });

  it("answers within Redis's timeout while Redis is frozen", async () => {
    const window = await during(async () => {
      redis.freeze();
      await sleep(FAST_MS + 1_500);
      redis.resume();
    });
    expect(window.every((a) => a.status !== 503)).toBe(true);
    // 200 ms waiting on Redis at most, once; the rest is the request itself on a busy machine.
    const slow = slowest(window);
    expect(slow.ms, slow.said).toBeLessThan(FAST_MS);
    await until(async () => (await readyBody()).redis === "available", "Redis to be used again");
  });

  it("answers 503 quickly while PostgreSQL refuses connections, and recovers without a restart", async () => {
    let stoppedAt = 0;
    let restartingAt = 0;
    const window = await during(async () => {
      postgres.stop();
      stoppedAt = Date.now();
      await sleep(FAST_MS + 1_500);
      restartingAt = Date.now();
      postgres.start();
      await until(async () => (await writeComment("after the restart")).status === 201, "writes to succeed again");
    });
    // Answered while PostgreSQL was down: an answer still on its way when the restart began may
    // rightly be a 200 (and pg_ctl blocks this process while PostgreSQL starts).
    const outage = window.filter((a) => a.startedAt > stoppedAt + 200 && a.startedAt + a.ms < restartingAt);
    console.info(`PostgreSQL stopped: ${outage.length} answers, slowest ${Math.max(...outage.map((a) => a.ms))} ms`);
    expect(outage.filter((a) => a.status === 503).length).toBeGreaterThan(3);
    expect(outage.some((a) => a.label === "graphql read" && a.text.includes('"SERVICE_UNAVAILABLE"'))).toBe(true);
    expect(outage.filter((a) => a.label === "ready").every((a) => a.status === 503)).toBe(true);
    const slow = slowest(outage);
    expect(slow.ms, slow.said).toBeLessThan(FAST_MS);
  });

  it("answers 503 within the statement timeout while PostgreSQL is frozen, and /ready within its own timeout", async () => {
    let frozenAt = 0;
    let resumedAt = 0;
    const window = await during(async () => {
      postgres.freeze();
      frozenAt = Date.now();
      await sleep(STATEMENT_TIMEOUT_MS + FAST_MS + 1_500);
      postgres.resume();
      resumedAt = Date.now();
      await until(async () => (await writeComment("after the freeze")).status === 201, "writes to succeed again");
    });
    const frozen = window.filter((a) => a.startedAt > frozenAt && a.startedAt < resumedAt);
    console.info(`PostgreSQL frozen: ${frozen.length} answers, slowest ${Math.max(...frozen.map((a) => a.ms))} ms`);
    expect(frozen.filter((a) => a.status === 503).length).toBeGreaterThan(0);
    // /ready gives up after 900 ms; every other request after the statement (or connect) timeout.
    const ready = slowest(frozen.filter((a) => a.label === "ready"));
    expect(ready.ms, ready.said).toBeLessThan(FAST_MS);
    const slow = slowest(frozen);
    expect(slow.ms, slow.said).toBeLessThan(STATEMENT_TIMEOUT_MS + FAST_MS);
  });

  it("lost no acknowledged write and half-wrote none, and never exited", async () => {
    expect(acknowledged.length).toBeGreaterThan(10);
    const client = new pg.Client({ connectionString: postgres.url() });
    await client.connect();
    try {
      const found = await client.query(`SELECT id FROM "Comment" WHERE id = ANY($1)`, [acknowledged]);
      expect(found.rowCount).toBe(acknowledged.length);
      // A comment and its audit row are written in one transaction: never one without the other.
      const orphans = await client.query(
        `SELECT count(*)::int AS n FROM "Comment" c
         WHERE c."organizationId" = $1
           AND NOT EXISTS (SELECT 1 FROM "AuditEvent" a WHERE a."entityId" = c.id AND a.action = 'comment.created')`,
        [org.organizationId],
      );
      expect(orphans.rows[0].n).toBe(0);
      const audits = await client.query(
        `SELECT count(*)::int AS n FROM "AuditEvent" a
         WHERE a."organizationId" = $1 AND a.action = 'comment.created'
           AND NOT EXISTS (SELECT 1 FROM "Comment" c WHERE c.id = a."entityId")`,
        [org.organizationId],
      );
      expect(audits.rows[0].n).toBe(0);
    } finally {
      await client.end();
    }
    expect(service.child.exitCode).toBeNull();
    expect(answers.length).toBeGreaterThan(200);
    expect(answers.map(problemWith).filter(Boolean)).toEqual([]);
  });

  describe("at start-up", () => {
    it("retries a database that is down, then exits 1 with one clear line, never listening", async () => {
      postgres.stop();
      try {
        const started = Date.now();
        const early = await startServer(
          { ...serviceEnv(postgres, redis), LOG_LEVEL: "info", DATABASE_STARTUP_TIMEOUT_MS: "2000" },
          // A port known before the start (below the OS's ephemeral range), to show nothing listens on it.
          { port: randomPort(), until: "spawned" },
        );
        const listened = fetch(`${early.url}/health`).then(
          () => true,
          () => false,
        );
        expect(await early.exited).toBe(1);
        expect(Date.now() - started).toBeLessThan(15_000);
        expect(await listened).toBe(false);
        const output = early.output();
        expect(output.match(/the database does not answer yet; retrying/g)?.length).toBeGreaterThanOrEqual(2);
        expect(output).toMatch(/^Cannot start: the database at 127\.0\.0\.1:\d+\/postgres did not answer within 2 s/m);
        expect(output).not.toContain('"msg":"listening"');
      } finally {
        postgres.start();
      }
    });

    it("gives up on a frozen database at its deadline", async () => {
      postgres.freeze();
      try {
        const early = await startServer(
          { ...serviceEnv(postgres, redis), DATABASE_STARTUP_TIMEOUT_MS: "2000" },
          { until: "spawned" },
        );
        expect(await early.exited).toBe(1);
        expect(early.output()).toMatch(/^Cannot start: .* did not answer within 2 s/m);
      } finally {
        postgres.resume();
      }
    });

    it("keeps serving when the job queue's connections are cut while it starts, and starts it once they stay up", async () => {
      const service = await startServer({ ...serviceEnv(postgres, redis), LOG_LEVEL: "info" }, { until: "listening" });
      const admin = new pg.Client({ connectionString: postgres.url() });
      await admin.connect();
      try {
        // For 3 s after the server listens, every other connection to the database is cut as soon
        // as it is made: the job queue starts 1 s after listening (server.ts), and its start meets it.
        for (const until = Date.now() + 3_000; Date.now() < until; ) {
          await admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
          );
        }
        expect(service.output()).toContain("the job queue did not start: the database is unavailable; trying again");
        await service.ready();
        await service.waitFor(
          async () =>
            (
              await admin.query<{ n: number }>(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'compliance-gateway-jobs'",
              )
            ).rows[0]!.n > 0,
          "the job queue to start",
          20_000,
        );
        expect(service.child.exitCode).toBeNull();
        expect(service.output()).not.toContain("Cannot start");
      } finally {
        await admin.end();
        service.child.kill("SIGKILL");
      }
    });

    it("keeps serving when the webhook worker's start loses its connections, and starts it once they stay up", async () => {
      // The webhook queue's row, made by a first start when no test before made it. Held FOR UPDATE
      // here, the worker's next start (which updates it: webhooks.worker.ts) waits on it, and each
      // backend waiting so is cut, as a database restart would cut it.
      const admin = new pg.Client({ connectionString: postgres.url() });
      await admin.connect();
      const exists = await admin
        .query("SELECT 1 FROM pgboss.queue WHERE name = 'webhook-delivery'")
        .catch(() => ({ rowCount: 0 }));
      if (!exists.rowCount) {
        const first = await startServer({ ...serviceEnv(postgres, redis), LOG_LEVEL: "info" }, { until: "listening" });
        await first.waitFor(async () => first.output().includes("the webhook worker started"), "a first start", 20_000);
        first.child.kill("SIGKILL");
      }
      await admin.query("BEGIN");
      const held = await admin.query("SELECT 1 FROM pgboss.queue WHERE name = 'webhook-delivery' FOR UPDATE");
      expect(held.rowCount).toBe(1);
      const service = await startServer({ ...serviceEnv(postgres, redis), LOG_LEVEL: "info" }, { until: "listening" });
      try {
        const cut = async () => {
          // Inside its transaction, this session would see the activity as it first read it.
          await admin.query("SELECT pg_stat_clear_snapshot()");
          return (
            await admin.query<{ n: number }>(
              "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE%queue%'",
            )
          ).rows[0]!.n;
        };
        let cuts = 0;
        for (const until = Date.now() + 10_000; Date.now() < until && cuts < 2; ) {
          cuts += await cut();
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(cuts).toBeGreaterThanOrEqual(2);
        await service.waitFor(
          async () => service.output().includes("the webhook worker did not start: the database is unavailable; trying again"),
          "the worker's start to be tried again",
          10_000,
        );
        await admin.query("COMMIT");
        await service.ready();
        await service.waitFor(async () => service.output().includes("the webhook worker started"), "the worker to start", 15_000);
        expect(service.child.exitCode).toBeNull();
        expect(service.output()).not.toContain("Cannot start");
      } finally {
        await admin.query("ROLLBACK").catch(() => {});
        await admin.end();
        service.child.kill("SIGKILL");
      }
    });

    it("starts once a database that was down comes up within the start-up time", async () => {
      postgres.stop();
      const late = await startServer(serviceEnv(postgres, redis), { until: "spawned" });
      try {
        const deadline = Date.now() + 15_000;
        while (!late.output().includes("the database does not answer yet; retrying") && Date.now() < deadline) await sleep(50);
        expect(late.output()).toContain("the database does not answer yet; retrying");
        postgres.start();
        await late.ready();
      } finally {
        late.child.kill("SIGKILL");
      }
    });
  });
});
