import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/admin/admin.service.js";
import { type SeedResult, seedDemo } from "../../src/admin/seed.js";
import { permissions } from "../../src/auth/permissions.js";
import { openDatabase } from "../../src/platform/db/database.js";
import { NO_TRANSACTION_MARKER } from "../../src/platform/db/migrate.js";
import { documentedHaproxyConfig, type Haproxy, haproxyMissing, startHaproxy } from "../helpers/haproxy.js";
import { buildServer, randomPort, type ServerProcess, startServer } from "../helpers/server-process.js";
import { type PostgresServer, type RedisServer, serversMissing, sleep, startPostgres, startRedis } from "../helpers/servers.js";
import { usePostgres } from "../helpers/test-app.js";

/**
 * Two replicas (the built server as processes) behind HAProxy (Debian's package, the configuration
 * of docs/production.md), on a PostgreSQL cluster and a Redis of the test's own, each under a
 * steady bounded mixed load: task reads, comment creates with `Idempotency-Key` (a client that
 * retries a failed create with the same key), and a graph screen over GraphQL. Run by
 * `npm run test:postgres` (vitest.config.ts), skipped otherwise.
 */
const missing = !usePostgres ? "TEST_DATABASE is not postgres" : (haproxyMissing() ?? serversMissing());
if (missing) console.warn(`skipping the HAProxy tests: ${missing}`);

const root = fileURLToPath(new URL("../..", import.meta.url));
const CHECK_INTER_MS = 300;

type Outcome = { kind: "read" | "create" | "graph"; status: number | "error"; at: number; ms: number; retryAfter?: string };

describe.skipIf(missing)("two replicas behind HAProxy under load", () => {
  let postgres: PostgresServer;
  let redis: RedisServer;
  let haproxy: Haproxy;
  let org: SeedResult;
  let apiKey: string;
  let databaseUrl: string;
  const ports: number[] = [];
  const replicas: (ServerProcess | undefined)[] = [];
  /** Comment ids answered 201, by the client's key. */
  const acknowledged = new Map<string, string>();
  let upgradeBundle: string | undefined;
  let upgradeDir: string | undefined;

  const env = () => ({
    LOG_LEVEL: "warn",
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    DATABASE_PREPARED_STATEMENTS: "true",
    // Out of HAProxy before the listener closes: above inter × fall, with room for a loaded machine.
    SHUTDOWN_DELAY_MS: "2000",
    SHUTDOWN_GRACE_MS: "3000",
    RATE_LIMIT_PER_MINUTE: "1000000",
  });
  /** Whether HAProxy's last word on replica `i` is that it is up (or it never took it out). */
  const inRotation = (i: number) => {
    const out = haproxy.output();
    return out.lastIndexOf(`replicas/replica${i + 1} is UP`) >= out.lastIndexOf(`replicas/replica${i + 1} is DOWN`);
  };
  /**
   * Starts replica `i` (again) and, once HAProxy runs, waits until its checks have seen the new
   * process and keep it in. A replica that starts again within `fall` checks is never taken out
   * (no DOWN, no UP in the log), so the wait is for checks, not for an UP line.
   */
  const startReplica = async (i: number, script?: string) => {
    replicas[i] = await startServer(env(), { port: ports[i], until: "ready", script });
    if (!haproxy) return;
    await sleep(2 * CHECK_INTER_MS + 100);
    const deadline = Date.now() + 15_000;
    while (!inRotation(i)) {
      if (Date.now() > deadline) throw new Error(`HAProxy did not put replica ${i + 1} back:\n${haproxy.output()}`);
      await sleep(50);
    }
  };

  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
    const admin = new pg.Client({ connectionString: postgres.url() });
    await admin.connect();
    await admin.query("CREATE DATABASE app");
    await admin.end();
    databaseUrl = postgres.url("app");
    const database = await openDatabase({ kind: "postgres", url: databaseUrl });
    org = await seedDemo(database.db);
    apiKey = (await createApiKey(database.db, { organizationId: org.organizationId, name: "lb", scopes: [...permissions] })).key;
    await database.close();
    // Ports of the test's choosing (a replica starts again on its own in the rolling upgrade), below
    // the OS's ephemeral range, where no connection of any process can take one in between.
    ports.push(randomPort(), randomPort());
    buildServer();
    await Promise.all([startReplica(0), startReplica(1)]);
    haproxy = await startHaproxy(ports, { inter: `${CHECK_INTER_MS}ms` });
  }, 120_000);

  afterAll(async () => {
    for (const replica of replicas) replica?.child.kill("SIGKILL");
    await haproxy?.stop();
    await redis?.destroy();
    postgres?.destroy();
    if (upgradeDir) rmSync(upgradeDir, { recursive: true, force: true });
  });

  const headers = { "x-api-key": "", "content-type": "application/json" };
  /** Requests sent and not answered yet, across the clients. */
  let inFlight = 0;
  const call = async (
    kind: Outcome["kind"],
    outcomes: Outcome[],
    init: () => Promise<Response>,
  ): Promise<Response | undefined> => {
    const at = Date.now();
    inFlight++;
    try {
      const response = await init();
      await response.clone().arrayBuffer();
      outcomes.push({
        kind,
        status: response.status,
        at,
        ms: Date.now() - at,
        retryAfter: response.headers.get("retry-after") ?? undefined,
      });
      return response;
    } catch {
      outcomes.push({ kind, status: "error", at, ms: Date.now() - at });
      return undefined;
    } finally {
      inFlight--;
    }
  };
  let sequence = 0;
  /**
   * `loops` clients, each in turn: a task read, a comment create with a key of its own (retried
   * with the same key, up to `retries` times a second apart, on an error or a 5xx), a graph
   * screen; until `stop` resolves. Every first attempt is an outcome; retries are outcomes of
   * their own (`retried`).
   */
  async function load(stop: Promise<unknown>, loops = 4, retries = 3) {
    const outcomes: Outcome[] = [];
    const retried: Outcome[] = [];
    let stopped = false;
    stop.then(() => {
      stopped = true;
    });
    const h = { ...headers, "x-api-key": apiKey };
    const taskId = org.taskIds[0] as string;
    const loop = async () => {
      while (!stopped) {
        await call("read", outcomes, () => fetch(`${haproxy.url}/v1/tasks/${taskId}`, { headers: h }));
        const key = `load-${process.pid}-${sequence++}`;
        const body = JSON.stringify({ content: key, entityId: taskId, entityType: "task", userId: org.userIds[0] });
        const create = () =>
          fetch(`${haproxy.url}/v1/comments`, { method: "POST", headers: { ...h, "idempotency-key": key }, body });
        let answer = await call("create", outcomes, create);
        for (let attempt = 0; attempt < retries && (!answer || answer.status >= 500); attempt++) {
          await sleep(1_000);
          answer = await call("create", retried, create);
        }
        if (answer?.status === 201) acknowledged.set(key, ((await answer.json()) as { id: string }).id);
        await call("graph", outcomes, () =>
          fetch(`${haproxy.url}/graphql`, {
            method: "POST",
            headers: h,
            body: JSON.stringify({
              query: `query($id: ID!) { task(taskId: $id) { id title status comments(limit: 5) { items { id content } } } }`,
              variables: { id: taskId },
            }),
          }),
        );
      }
    };
    await Promise.all(Array.from({ length: loops }, loop));
    return { outcomes, retried };
  }
  const failed = (outcomes: Outcome[]) => outcomes.filter((o) => o.status === "error" || (o.status as number) >= 300);
  /** The failures, with HAProxy's log lines of answers other than 2xx (what it did with them). */
  const summary = (outcomes: Outcome[]) => {
    const failures = failed(outcomes)
      .slice(0, 10)
      .map((o) => `${o.kind} ${o.status} after ${o.ms} ms`);
    if (failures.length === 0) return [];
    const logged = haproxy
      .output()
      .split("\n")
      .filter((line) => / [345]\d\d \d+ /.test(line) || /is (UP|DOWN)/.test(line));
    return [...failures, ...logged.slice(-30)];
  };

  /** Every acknowledged comment is in the database, once. */
  async function everyAcknowledgedWritePresent() {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const { rows } = await client.query<{ content: string; n: string; ids: string[] }>(
      `SELECT "content", count(*) AS n, array_agg("id") AS ids FROM "Comment" WHERE "content" LIKE 'load-%' GROUP BY "content"`,
    );
    await client.end();
    const byKey = new Map(rows.map((r) => [r.content, r]));
    const lost = [...acknowledged].filter(([key, id]) => !byKey.get(key)?.ids.includes(id));
    expect(lost).toEqual([]);
    // One write per key, whatever HAProxy and the client retried.
    expect(rows.filter((r) => Number(r.n) > 1)).toEqual([]);
  }

  it("reuses connections left idle 6 to 7 s (longer than Node's 5 s keep-alive) without an error or a retry", async () => {
    // One connection to HAProxy, and HAProxy's pooled ones to the replicas (http-reuse always).
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const taskId = org.taskIds[0] as string;
    const get = () =>
      new Promise<number | undefined>((resolve, reject) => {
        const request = http.get(`${haproxy.url}/v1/tasks/${taskId}`, { agent, headers: { "x-api-key": apiKey } }, (response) => {
          response.resume();
          response.on("end", () => resolve(response.statusCode));
        });
        request.on("error", reject);
      });
    /** HAProxy's log lines of the task reads: status and retries (the fifth connection count). */
    const reads = () =>
      [...haproxy.output().matchAll(/ (\d{3}) \d+ \S+ \S+ \S+ \d+\/\d+\/\d+\/\d+\/(\+?\d+) \d+\/\d+ "GET \/v1\/tasks\//g)].map(
        (m) => `${m[1]} retries ${m[2]}`,
      );
    try {
      // Both replicas get connections (leastconn), then every one of them idles 6 to 7 s.
      const statuses = await Promise.all([get(), get(), get(), get()]);
      for (const idleMs of [6_000, 6_500, 7_000]) {
        await sleep(idleMs);
        statuses.push(await get(), await get());
      }
      expect(statuses.every((status) => status === 200)).toBe(true);
      await sleep(200);
      const logged = reads().slice(-10);
      expect(logged).toHaveLength(10);
      expect(logged.filter((line) => line !== "200 retries 0")).toEqual([]);
    } finally {
      agent.destroy();
    }
  }, 60_000);

  it("tells its clients a keep-alive shorter than its own idle timeout toward them, not the replicas' 65 s", async () => {
    // docs/production.md's configuration: a client trusting the replicas' header would keep a
    // connection HAProxy closes after `timeout http-keep-alive`, and reuse it as it closes.
    const { config } = documentedHaproxyConfig();
    const idleSeconds = Number(/timeout http-keep-alive (\d+)s/.exec(config)?.[1]);
    const response = await fetch(`${haproxy.url}/v1/tasks/${org.taskIds[0]}`, { headers: { "x-api-key": apiKey } });
    await response.arrayBuffer();
    const told = Number(/timeout=(\d+)/.exec(response.headers.get("keep-alive") ?? "")?.[1]);
    expect(idleSeconds).toBeGreaterThan(0);
    expect(told).toBeGreaterThan(0);
    expect(told).toBeLessThan(idleSeconds);
  });

  it("rolls an upgrade with an additive migration (a column, an index built concurrently) through both replicas: every request 2xx", async () => {
    // The next version: this bundle beside one more migration, in a folder of dist/ (the bundle
    // finds node_modules above it and prisma/migrations three levels up, as defaultMigrationsDir says).
    upgradeDir = path.join(root, "dist", `.upgrade-${process.pid}`);
    const bundleDir = path.join(upgradeDir, "a", "b");
    mkdirSync(bundleDir, { recursive: true });
    // The launcher (server.js) and the bundle it imports (service.js).
    for (const file of ["server.js", "service.js"]) cpSync(path.join(root, "dist", file), path.join(bundleDir, file));
    const migrations = path.join(upgradeDir, "prisma", "migrations");
    cpSync(path.join(root, "prisma", "migrations"), migrations, { recursive: true });
    mkdirSync(path.join(migrations, "29991231000000_comment_upgrade_note"));
    writeFileSync(
      path.join(migrations, "29991231000000_comment_upgrade_note", "migration.sql"),
      `${NO_TRANSACTION_MARKER}\nALTER TABLE "Comment" ADD COLUMN IF NOT EXISTS "upgradeNote" TEXT;\nCREATE INDEX CONCURRENTLY IF NOT EXISTS "Comment_upgradeNote_idx" ON "Comment" ("upgradeNote");\n`,
    );
    upgradeBundle = path.relative(root, path.join(bundleDir, "server.js"));

    let done!: () => void;
    const running = load(new Promise<void>((resolve) => (done = resolve)));
    await sleep(1_000);
    for (const i of [0, 1]) {
      const old = replicas[i] as ServerProcess;
      old.child.kill("SIGTERM");
      expect(await old.exited).toBe(0);
      await startReplica(i, upgradeBundle);
    }
    await sleep(500);
    done();
    const { outcomes } = await running;
    expect(outcomes.length).toBeGreaterThan(50);
    expect(summary(outcomes)).toEqual([]);
    await everyAcknowledgedWritePresent();
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const index = await client.query(`SELECT indisvalid FROM pg_index WHERE indexrelid = '"Comment_upgradeNote_idx"'::regclass`);
    await client.end();
    expect(index.rows).toEqual([{ indisvalid: true }]);
  }, 120_000);

  it("costs only the requests in flight on a replica killed with SIGKILL, and none after the next health check", async () => {
    let done!: () => void;
    const running = load(new Promise<void>((resolve) => (done = resolve)), 6);
    await sleep(1_000);
    const downs = haproxy.output().split("replicas/replica2 is DOWN").length - 1;
    const inFlightAtKill = inFlight;
    const killedAt = Date.now();
    (replicas[1] as ServerProcess).child.kill("SIGKILL");
    // HAProxy's checks take it out: from then on nothing may fail.
    while (haproxy.output().split("replicas/replica2 is DOWN").length - 1 === downs) await sleep(20);
    const downAt = Date.now();
    await sleep(2_000);
    done();
    const { outcomes, retried } = await running;
    const failures = failed(outcomes);
    // At most the requests in flight at the kill (on either replica: the test cannot tell which).
    expect(failures.length).toBeLessThanOrEqual(inFlightAtKill);
    expect(failures.filter((o) => o.at > downAt)).toEqual([]);
    // The clients' retries, with the same key, succeeded: the first answer or one write.
    expect(failed(retried)).toEqual([]);
    await everyAcknowledgedWritePresent();
    console.info(
      `SIGKILL: ${outcomes.length} requests, ${inFlightAtKill} in flight at the kill, ${failures.length} failed, ${retried.length} client retries, out of HAProxy after ${downAt - killedAt} ms`,
    );
    await startReplica(1, upgradeBundle);
  }, 120_000);

  it("answers fast 503s with Retry-After while PostgreSQL restarts, is back within 5 s of it, and loses no acknowledged write", async () => {
    // The load's clients share fetch's pool of keep-alive connections to HAProxy with the test before,
    // which killed and restarted a replica. In one CI run (2026-12-04, PostgreSQL run, not reproduced
    // alone) the four clients' first reads all failed at the socket 800 ms before the stop, PostgreSQL
    // still up: all four, where a replica's fault would hit about half of them (leastconn), so
    // connections of the test before (HAProxy then told clients the replicas' 65 s of keep-alive; it
    // tells them 9 s now, below its own 10 s, the test above). Those idle connections are used (or
    // found closed) here first, outside the measured load; what they met is printed, should it recur.
    const primed = await Promise.all(
      Array.from({ length: 8 }, () =>
        fetch(`${haproxy.url}/v1/tasks/${org.taskIds[0]}`, { headers: { "x-api-key": apiKey } })
          .then(async (r) => {
            await r.arrayBuffer();
            return r.status;
          })
          .catch((error: Error) => `${error.message} (${(error.cause as Error | undefined)?.message ?? "no cause"})`),
      ),
    );
    if (primed.some((p) => p !== 200))
      console.info(`before the load, through the connections of the test before: ${primed.join(", ")}`);
    let done!: () => void;
    const running = load(new Promise<void>((resolve) => (done = resolve)), 4, 0);
    await sleep(800);
    const stoppedAt = Date.now();
    postgres.stop();
    await sleep(1_500);
    postgres.start();
    const startedAt = Date.now();
    // Until the service answers again through HAProxy.
    let backAt = 0;
    while (Date.now() - startedAt < 8_000) {
      const r = await fetch(`${haproxy.url}/v1/tasks/${org.taskIds[0]}`, { headers: { "x-api-key": apiKey } }).catch(
        () => undefined,
      );
      if (r?.status === 200) {
        backAt = Date.now();
        break;
      }
      await sleep(100);
    }
    await sleep(1_000);
    done();
    const { outcomes } = await running;
    expect(backAt).toBeGreaterThan(0);
    expect(backAt - startedAt).toBeLessThan(5_000);
    const failures = failed(outcomes);
    // Relative to the stop, for a failure's message.
    const timeline = (list: Outcome[]) => ({
      startedAt: startedAt - stoppedAt,
      backAt: backAt - stoppedAt,
      failures: list.map((o) => `${o.kind} ${o.status} sent at ${o.at - stoppedAt} ms, answered in ${o.ms} ms`),
    });
    // Every failure was a 503 with Retry-After, answered fast, while the database was away or coming
    // back: answered after the stop (in flight then, or sent later), sent before the service was back.
    expect(timeline(failures.filter((o) => o.status !== 503 || !o.retryAfter)).failures).toEqual([]);
    expect(timeline(failures.filter((o) => o.ms > 3_000))).toMatchObject({ failures: [] });
    expect(timeline(failures.filter((o) => o.at + o.ms < stoppedAt || o.at > backAt + 1_000))).toMatchObject({ failures: [] });
    await everyAcknowledgedWritePresent();
    console.info(
      `PostgreSQL restart: ${outcomes.length} requests, ${failures.length} fast 503s, back ${backAt - startedAt} ms after it`,
    );
  }, 120_000);

  it("fails no request while Redis restarts", async () => {
    let done!: () => void;
    const running = load(new Promise<void>((resolve) => (done = resolve)));
    await sleep(800);
    await redis.stop();
    await sleep(1_000);
    await redis.start();
    await sleep(1_500);
    done();
    const { outcomes } = await running;
    expect(outcomes.length).toBeGreaterThan(30);
    expect(summary(outcomes)).toEqual([]);
    await everyAcknowledgedWritePresent();
  }, 60_000);

  it("answers no 500 while a column's type changes under load (prepared statements prepared again)", async () => {
    let done!: () => void;
    const running = load(new Promise<void>((resolve) => (done = resolve)));
    await sleep(1_000);
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`ALTER TABLE "Task" ALTER COLUMN "title" TYPE varchar(1000)`);
    await client.end();
    await sleep(1_500);
    done();
    const { outcomes } = await running;
    expect(outcomes.filter((o) => o.status === 500)).toEqual([]);
    // Reads and the graph screen run outside transactions: prepared again and answered.
    expect(summary(outcomes)).toEqual([]);
    await everyAcknowledgedWritePresent();
  }, 60_000);
});
