import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/admin/admin.service.js";
import { seedDemo } from "../../src/admin/seed.js";
import { permissions } from "../../src/auth/permissions.js";
import { openDatabase } from "../../src/platform/db/database.js";
import { reachable, type ServerProcess, startServer } from "../helpers/server-process.js";
import { migratedPostgresDatabase, usePostgres } from "../helpers/test-app.js";

/**
 * Two server processes on one PostgreSQL database, as two replicas behind a load balancer: a
 * keyed create held inside its transaction (the test holds the policy's row lock), then the
 * replica killed with SIGKILL or left running, and the same Idempotency-Key sent to the other.
 */
const run = usePostgres && (await reachable(5432));

describe.runIf(run)("Idempotency-Key across replicas, with a replica killed mid-request", () => {
  let drop: () => Promise<void>;
  let url: string;
  let apiKey: string;
  let policyId: string;
  const servers: ServerProcess[] = [];
  let sql: pg.Client;

  beforeAll(async () => {
    const created = await migratedPostgresDatabase();
    drop = created.drop;
    url = created.url;
    const database = await openDatabase({ kind: "postgres", url });
    const demo = await seedDemo(database.db);
    policyId = demo.policyIds[0] as string;
    apiKey = (await createApiKey(database.db, { organizationId: demo.organizationId, name: "crash", scopes: [...permissions] }))
      .key;
    await database.close();
    sql = new pg.Client({ connectionString: url });
    await sql.connect();
  }, 120_000);

  afterAll(async () => {
    for (const server of servers) server.child.kill("SIGKILL");
    await sql?.end();
    await drop?.();
  });

  const start = async () => {
    const server = await startServer({ LOG_LEVEL: "warn", REDIS_URL: "", DATABASE_URL: url }, { until: "ready" });
    servers.push(server);
    return server;
  };
  const createVersion = (server: ServerProcess, key: string) =>
    fetch(`${server.url}/v1/policies/${policyId}/versions`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json", "idempotency-key": key },
      body: "{}",
    });
  const versions = async () =>
    Number((await sql.query(`SELECT count(*) AS n FROM "PolicyVersion" WHERE "policyId" = $1`, [policyId])).rows[0].n);
  /** Holds the policy's row lock on the test's connection until `release`: a create of a version waits on it. */
  const lockPolicy = async () => {
    await sql.query("BEGIN");
    await sql.query(`SELECT 1 FROM "Policy" WHERE "id" = $1 FOR UPDATE`, [policyId]);
    return () => sql.query("COMMIT");
  };
  /** Until `n` backends of the database wait for a lock. */
  const lockWaiters = async (n: number) => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const waiting = await new pg.Client({ connectionString: url });
      await waiting.connect();
      const { rows } = await waiting.query(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      await waiting.end();
      if (Number(rows[0].n) >= n) return;
      if (Date.now() > deadline) throw new Error(`fewer than ${n} requests wait for the lock`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it("frees the key of a replica killed mid-request at once: the retry on the other runs once and answers", async () => {
    const [first, second] = [await start(), await start()];
    const before = await versions();
    const release = await lockPolicy();
    const key = `killed-${Date.now()}`;
    const lost = createVersion(first, key).then(
      (r) => r.status,
      () => "no answer",
    );
    await lockWaiters(1);
    first.child.kill("SIGKILL");
    expect(await lost).toBe("no answer");
    await release();

    const started = Date.now();
    const retry = await createVersion(second, key);
    expect(retry.status).toBe(201);
    // Before, the dead replica's "running" key held every retry for 15 s, then answered 409.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    const again = await createVersion(second, key);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(await retry.json());
    expect(await versions()).toBe(before + 1);
  }, 120_000);

  it("makes a retry on another replica wait for a first that is still running, then answer the first answer", async () => {
    const [first, second] = servers.filter((s) => s.child.exitCode === null && s.child.signalCode === null);
    const a = first as ServerProcess;
    const b = second ?? (await start());
    const before = await versions();
    const release = await lockPolicy();
    const key = `waiting-${Date.now()}`;
    const original = createVersion(a, key);
    await lockWaiters(1);
    const retry = createVersion(b, key);
    // The retry waits on the first's uncommitted key (a second waiter), not on the policy.
    await lockWaiters(2);
    await release();
    const [one, two] = await Promise.all([original, retry]);
    expect([one.status, two.status]).toEqual([201, 201]);
    expect(two.headers.get("idempotent-replayed")).toBe("true");
    expect(await two.json()).toEqual(await one.json());
    expect(await versions()).toBe(before + 1);
  }, 120_000);
});
