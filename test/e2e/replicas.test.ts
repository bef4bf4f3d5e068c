import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/admin/admin.service.js";
import { type SeedResult, seedDemo } from "../../src/admin/seed.js";
import { permissions } from "../../src/auth/permissions.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import { reachable, type ServerProcess, startServer } from "../helpers/server-process.js";
import { createPostgresDatabase, usePostgres } from "../helpers/test-app.js";

const redisUrl = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

// `npm run test:postgres` only (vitest.config.ts), with Redis.
const servicesUp = usePostgres && (await reachable(6379));

type Replica = ServerProcess;

function startReplica(databaseUrl: string, prefix: string): Promise<Replica> {
  return startServer(
    {
      NODE_ENV: "production",
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: prefix,
      RATE_LIMIT_PER_MINUTE: "40",
      LOG_LEVEL: "warn",
    },
    { until: "spawned" },
  );
}

describe.runIf(servicesUp)("two replicas on one PostgreSQL database with Redis", () => {
  const prefix = `cwg:test:${randomBytes(4).toString("hex")}:`;
  const replicas: Replica[] = [];
  let drop: () => Promise<void>;
  let database: Database;
  let org: SeedResult;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    const created = await createPostgresDatabase();
    drop = created.drop;
    // Both start on an empty database at once: the migration lock must keep them from racing.
    replicas.push(...(await Promise.all([startReplica(created.url, prefix), startReplica(created.url, prefix)])));
    await Promise.all(replicas.map((replica) => replica.ready()));
    database = await openDatabase({ kind: "postgres", url: created.url });
    org = await seedDemo(database.db);
    for (const name of ["versions", "burst", "readback", "subscriber"]) {
      keys[name] = (await createApiKey(database.db, { organizationId: org.organizationId, name, scopes: [...permissions] })).key;
    }
  }, 120_000);

  afterAll(async () => {
    for (const replica of replicas) replica.child.kill("SIGKILL");
    await database?.close();
    await drop?.();
    const redis = new Redis(redisUrl);
    const stale = await redis.keys(`${prefix}*`);
    if (stale.length) await redis.del(...stale);
    redis.disconnect();
  });

  const call = (replica: Replica, key: string, method: string, pathname: string, body?: unknown) =>
    fetch(`${replica.url}${pathname}`, {
      method,
      headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });

  it("applied the migrations once although both started together", async () => {
    const rows = await database.db.$queryRawUnsafe<{ n: bigint }[]>(`SELECT count(*) AS n FROM "_prisma_migrations"`);
    const names = await database.db.$queryRawUnsafe<{ n: bigint }[]>(
      `SELECT count(DISTINCT migration_name) AS n FROM "_prisma_migrations"`,
    );
    expect(Number(rows[0]?.n)).toBe(Number(names[0]?.n));
  });

  it("numbers 40 concurrent versions over both replicas consecutively, without an error", async () => {
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(replicas[i % 2] as Replica, keys.versions as string, "POST", `/v1/policies/${org.policyIds[0]}/versions`, {}),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(40).fill(201));
    const versions = (await Promise.all(responses.map((r) => r.json())))
      .map((b: { version: number }) => b.version)
      .sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: 40 }, (_, i) => i + 2));
  });

  it("reads on one replica what was written on the other", async () => {
    const created = await call(replicas[0] as Replica, keys.readback as string, "POST", "/v1/tasks", {
      title: "Written on replica one",
    });
    expect(created.status).toBe(201);
    const { id } = await created.json();
    const read = await call(replicas[1] as Replica, keys.readback as string, "GET", `/v1/tasks/${id}`);
    expect(read.status).toBe(200);
    expect((await read.json()).title).toBe("Written on replica one");
  });

  it("shares the rate limit: 60 requests over both replicas with a limit of 40 let about 40 through", async () => {
    const statuses = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        call(replicas[i % 2] as Replica, keys.burst as string, "GET", `/v1/tasks/${org.taskIds[0]}`).then((r) => r.status),
      ),
    );
    const ok = statuses.filter((s) => s === 200).length;
    expect(ok).toBeGreaterThanOrEqual(38);
    expect(ok).toBeLessThanOrEqual(42);
    expect(statuses.filter((s) => s !== 200).every((s) => s === 429)).toBe(true);
  });

  it("delivers a comment created on one replica to a subscriber on the other", async () => {
    const controller = new AbortController();
    const response = await fetch(`${replicas[0]?.url}/graphql`, {
      method: "POST",
      signal: controller.signal,
      headers: { "content-type": "application/json", accept: "text/event-stream", "x-api-key": keys.subscriber as string },
      body: JSON.stringify({
        query: "subscription($id: ID!) { commentAdded(entityId: $id, entityType: task) { id content } }",
        variables: { id: org.taskIds[0] },
      }),
    });
    expect(response.status).toBe(200);
    const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    let text = "";
    const received = (async () => {
      const decoder = new TextDecoder();
      while (!text.includes("event: next")) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    const created = await call(replicas[1] as Replica, keys.subscriber as string, "POST", "/v1/comments", {
      content: "across replicas",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: org.userIds[0],
    });
    expect(created.status).toBe(201);
    const { id } = await created.json();
    await Promise.race([received, new Promise((r) => setTimeout(r, 10_000))]);
    controller.abort();
    expect(text).toContain(id);
    expect(text).toContain("across replicas");
  });
});
