import { readdirSync, readFileSync } from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/admin/admin.service.js";
import { type SeedResult, seedDemo } from "../../src/admin/seed.js";
import { permissions } from "../../src/auth/permissions.js";
import { openDatabase } from "../../src/platform/db/database.js";
import { defaultMigrationsDir } from "../../src/platform/db/migrate.js";
import { type ServerProcess, startServer } from "../helpers/server-process.js";
import {
  type PgBouncer,
  type PostgresServer,
  pgbouncerMissing,
  type RedisServer,
  sleep,
  startPgBouncer,
  startPostgres,
  startRedis,
  startStandby,
} from "../helpers/servers.js";

/**
 * The service as operators run it at scale: four replicas behind PgBouncer in transaction mode
 * (Debian's package, no ignore_startup_parameters), migrations over a direct connection, reads on
 * a streaming replica (pg_basebackup -R of a primary the test starts), Redis for read-your-writes.
 */

const missing = pgbouncerMissing();
if (missing) console.warn(`skipping the PgBouncer and read-replica tests: ${missing}`);

/** The [pgbouncer] section of the configuration docs/production.md gives operators. */
function documentedSettings(): Record<string, string> {
  const page = readFileSync(new URL("../../docs/production.md", import.meta.url), "utf8");
  const ini = page.match(/```ini\n([\s\S]*?)```/)?.[1] ?? "";
  const section = ini.split("[pgbouncer]")[1] ?? "";
  return Object.fromEntries(
    section
      .split("\n")
      .map((line) => line.match(/^(\w+)\s*=\s*(.*)$/))
      .filter((m): m is RegExpMatchArray => Boolean(m))
      .map((m) => [m[1] as string, (m[2] as string).trim()]),
  );
}

const STATEMENT_TIMEOUT_MS = 5_000;
const LOCK_TIMEOUT_MS = 1_000;
const IDLE_IN_TRANSACTION_MS = 4_000;
const MAX_LAG_MS = 3_000;

describe.skipIf(missing)("behind PgBouncer in transaction mode, with a streaming read replica", () => {
  let primary: PostgresServer;
  let standby: PostgresServer;
  let bouncer: PgBouncer;
  let redis: RedisServer;
  const services: ServerProcess[] = [];
  let org: SeedResult;
  const keys: string[] = [];
  const direct = () => new pg.Client({ connectionString: primary.url("app") });

  async function sql<T extends Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<T>(text, values)).rows;
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    [primary, redis] = await Promise.all([startPostgres(), startRedis()]);
    await sql(primary.url(), "CREATE DATABASE app");
    standby = await startStandby(primary);
    bouncer = await startPgBouncer(
      {
        app: `host=127.0.0.1 port=${primary.port} dbname=app`,
        app_replica: `host=127.0.0.1 port=${standby.port} dbname=app`,
      },
      // As documented, with a pool sized for this test.
      { ...documentedSettings(), default_pool_size: "4" },
    );
    const env = {
      NODE_ENV: "production",
      LOG_LEVEL: "warn",
      DATABASE_URL: bouncer.url("app"),
      DATABASE_DIRECT_URL: primary.url("app"),
      DATABASE_READ_URLS: bouncer.url("app_replica"),
      DATABASE_READ_MAX_LAG_MS: String(MAX_LAG_MS),
      DATABASE_POOL_SIZE: "5",
      // Generous: the assertions are about which bound answers, not about a loaded machine's speed.
      DATABASE_CONNECT_TIMEOUT_MS: "10000",
      DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      DATABASE_LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS),
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(IDLE_IN_TRANSACTION_MS),
      REDIS_URL: redis.url,
      RATE_LIMIT_PER_MINUTE: "1000000",
    };
    // Four at once on an empty database: the migrations must run exactly once.
    services.push(...(await Promise.all([0, 1, 2, 3].map(() => startServer(env, { until: "ready" })))));
    const database = await openDatabase({ kind: "postgres", url: primary.url("app") });
    org = await seedDemo(database.db);
    // writer, other (writes in most tests), reader (never writes: its reads may go to the replica)
    for (const name of ["writer", "other", "reader"]) {
      keys.push((await createApiKey(database.db, { organizationId: org.organizationId, name, scopes: [...permissions] })).key);
    }
    await database.close();
  }, 120_000);

  afterAll(async () => {
    for (const service of services) service.child.kill("SIGKILL");
    bouncer?.destroy();
    standby?.destroy();
    primary?.destroy();
    await redis?.destroy();
  });

  const call = (service: ServerProcess, key: string, method: string, pathname: string, body?: unknown) =>
    fetch(`${service.url}${pathname}`, {
      method,
      headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(20_000),
    });
  const service = (i: number) => services[i % services.length] as ServerProcess;
  const comment = (i: number, key: string, content: string) =>
    call(service(i), key, "POST", "/v1/comments", {
      content,
      entityId: org.taskIds[0],
      entityType: "task",
      userId: org.userIds[0],
    });
  const metric = async (s: ServerProcess, name: string) => {
    const text = await (await fetch(`${s.url}/metrics`)).text();
    const line = text.split("\n").find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return line ? Number(line.split(" ").at(-1)) : undefined;
  };

  it("runs the documented PgBouncer settings: transaction pooling, startup parameters refused", async () => {
    expect(documentedSettings()).toMatchObject({ pool_mode: "transaction" });
    expect(documentedSettings()).not.toHaveProperty("ignore_startup_parameters");
    const client = new pg.Client({ connectionString: bouncer.url("app"), statement_timeout: 1_000 });
    await expect(client.connect()).rejects.toThrow(/unsupported startup parameter/);
  });

  it("migrated exactly once although four replicas started together through PgBouncer", async () => {
    const migrations = readdirSync(defaultMigrationsDir, { withFileTypes: true }).filter((e) => e.isDirectory()).length;
    const [row] = await sql<{ n: string; names: string }>(
      primary.url("app"),
      `SELECT count(*) AS n, count(DISTINCT migration_name) AS names FROM "_prisma_migrations"`,
    );
    expect(Number(row?.n)).toBe(migrations);
    expect(Number(row?.names)).toBe(migrations);
  });

  it("has its statement, lock and idle-in-transaction timeouts on every connection PgBouncer opens, replica included", async () => {
    for (const database of ["app", "app_replica"]) {
      const [row] = await sql<Record<string, string>>(
        bouncer.url(database),
        "SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l, current_setting('idle_in_transaction_session_timeout') AS i",
      );
      expect(row).toEqual({ s: "5s", l: "1s", i: "4s" });
    }
    // The server itself ends a statement that runs too long, through transaction pooling.
    const started = Date.now();
    await expect(sql(bouncer.url("app"), "SELECT pg_sleep(30)")).rejects.toMatchObject({ code: "57014" });
    expect(Date.now() - started).toBeLessThan(STATEMENT_TIMEOUT_MS + 5_000);
  });

  it("answers a write that waits on a lock with a fast 503, and serves again once it is released", async () => {
    const locker = direct();
    await locker.connect();
    // The role's idle-in-transaction bound applies to this session too; it must outlive the request.
    await locker.query("SET idle_in_transaction_session_timeout = 0");
    await locker.query("BEGIN");
    await locker.query(`LOCK TABLE "Comment" IN ACCESS EXCLUSIVE MODE`);
    try {
      const started = Date.now();
      const response = await comment(0, keys[1] as string, "waits on a lock");
      const elapsed = Date.now() - started;
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ code: "SERVICE_UNAVAILABLE", statusCode: 503 });
      expect(response.headers.get("retry-after")).toBeTruthy();
      expect(elapsed).toBeLessThan(STATEMENT_TIMEOUT_MS);
    } finally {
      await locker.query("ROLLBACK");
      await locker.end();
    }
    expect((await comment(1, keys[1] as string, "after the lock")).status).toBe(201);
  });

  it("serves the REST and GraphQL flow over all four replicas through PgBouncer without an error", async () => {
    const writes = await Promise.all(Array.from({ length: 40 }, (_, i) => comment(i, keys[1] as string, `flow ${i}`)));
    expect(writes.map((r) => r.status)).toEqual(Array(40).fill(201));
    const versions = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(service(i), keys[1] as string, "POST", `/v1/policies/${org.policyIds[0]}/versions`, {}),
      ),
    );
    expect(versions.map((r) => r.status)).toEqual(Array(20).fill(201));
    const numbers = (await Promise.all(versions.map((r) => r.json())))
      .map((b: { version: number }) => b.version)
      .sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 20 }, (_, i) => (numbers[0] as number) + i));
    const graph = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        fetch(`${service(i).url}/graphql`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": keys[1] as string },
          body: JSON.stringify({
            query: "query($id: ID!) { task(taskId: $id) { id title comments(limit: 5) { totalCount } } }",
            variables: { id: org.taskIds[0] },
          }),
        }).then(async (r) => ({ status: r.status, body: await r.json() })),
      ),
    );
    expect(graph.every((g) => g.status === 200 && !g.body.errors && g.body.data.task.id === org.taskIds[0])).toBe(true);
    // The replicas' pools hold more connections to PgBouncer than PgBouncer holds to PostgreSQL.
    const clients = (await Promise.all(services.map((s) => metric(s, "db_pool_connections")))).reduce((a = 0, b = 0) => a + b, 0);
    const app = (await bouncer.admin("SHOW POOLS")).find((p) => p.database === "app");
    const servers = ["sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"].reduce(
      (sum, k) => sum + Number(app?.[k] ?? 0),
      0,
    );
    expect(servers).toBeLessThanOrEqual(4);
    expect(clients).toBeGreaterThan(servers);
  });

  it("reads on the replica: its own table statistics count the reads", async () => {
    const scans = async () =>
      Number(
        (
          await sql<{ n: string }>(
            standby.url("app"),
            `SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) AS n FROM pg_stat_user_tables WHERE relname = 'Task'`,
          )
        )[0]?.n,
      );
    const before = await scans();
    // One after another: reads made in the same tick are merged by Prisma into one statement.
    for (let i = 0; i < 20; i++) {
      expect((await call(service(i), keys[2] as string, "GET", `/v1/tasks/${org.taskIds[0]}`)).status).toBe(200);
    }
    // Statistics reach the view when the backends report them (within seconds); the services' lag
    // checks never read "Task".
    await service(0).waitFor(async () => (await scans()) - before >= 20, "the replica's statistics to count the reads", 20_000);
    const served = await Promise.all(services.map((s) => metric(s, "db_read_replica_reads_total")));
    expect(served.reduce((a = 0, b = 0) => a + b, 0)).toBeGreaterThanOrEqual(20);
  });

  it("reads a caller's comment back at once on another replica while the replica lags, and says the replica lags", async () => {
    // A fresh replayed transaction first, so that the replica stays within the bound for a while once paused.
    expect((await comment(2, keys[1] as string, "before the pause")).status).toBe(201);
    await sleep(300);
    await sql(standby.url("app"), "SELECT pg_wal_replay_pause()");
    try {
      const written = await comment(0, keys[0] as string, "read your writes");
      const writtenAt = Date.now();
      expect(written.status).toBe(201);
      const { id } = await written.json();
      const path = `/v1/comments?entityId=${org.taskIds[0]}&entityType=task&limit=5`;
      const [mine, theirs] = await Promise.all([
        call(service(1), keys[0] as string, "GET", path),
        call(service(3), keys[2] as string, "GET", path),
      ]);
      const theirsAfterMs = Date.now() - writtenAt;
      expect(mine.status).toBe(200);
      expect((await mine.json()).items.map((c: { id: string }) => c.id)).toContain(id);
      // Another caller, well within the bound, reads the replica as it is: without the comment.
      expect(theirs.status).toBe(200);
      if (theirsAfterMs < MAX_LAG_MS - 1_000)
        expect((await theirs.json()).items.map((c: { id: string }) => c.id)).not.toContain(id);
      else console.warn(`the other caller's read came ${theirsAfterMs} ms after the write: not checked against the replica`);

      // Past the bound, the replica is skipped for everyone, and /ready and /metrics say so.
      await sleep(MAX_LAG_MS + 500);
      const ready = await (await fetch(`${service(2).url}/ready`)).json();
      expect(ready.status).toBe("ready");
      expect(Object.values(ready.readReplicas)).toEqual(["lagging"]);
      expect(await metric(service(2), "db_read_replica_available")).toBe(0);
      const other = await call(
        service(3),
        keys[1] as string,
        "GET",
        `/v1/comments?entityId=${org.taskIds[0]}&entityType=task&limit=5`,
      );
      expect((await other.json()).items.map((c: { id: string }) => c.id)).toContain(id);
    } finally {
      await sql(standby.url("app"), "SELECT pg_wal_replay_resume()");
    }
    await service(2).waitFor(
      async () => Object.values((await (await fetch(`${service(2).url}/ready`)).json()).readReplicas)[0] === "available",
      "the replica to be available again",
      10_000,
    );
  });

  it("loses no request when the replica stops in the middle of the load, and reports it down", async () => {
    let running = true;
    const statuses: number[] = [];
    const loops = [0, 1, 2, 3].map(async (i) => {
      for (let n = 0; running; n++) {
        const response =
          n % 4 === 0
            ? await comment(i, keys[1] as string, `during the stop ${n}`)
            : await call(service(i), keys[1] as string, "GET", `/v1/tasks/${org.taskIds[0]}`);
        statuses.push(response.status);
      }
    });
    await sleep(500);
    standby.stop();
    await sleep(1_500);
    running = false;
    await Promise.all(loops);
    expect(statuses.length).toBeGreaterThan(20);
    expect(statuses.filter((s) => s !== 200 && s !== 201)).toEqual([]);
    await service(0).waitFor(
      async () => Object.values((await (await fetch(`${service(0).url}/ready`)).json()).readReplicas)[0] === "down",
      "/ready to say that the replica is down",
      10_000,
    );
    expect((await fetch(`${service(0).url}/ready`)).status).toBe(200);
  });
});
