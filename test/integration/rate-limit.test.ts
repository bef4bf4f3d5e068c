import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

const taskQuery = `query($id: ID!) { task(taskId: $id) { id } }`;

describe("rate limiting in memory", () => {
  let t: TestApp;
  let org: SeedResult;
  beforeAll(async () => {
    t = await createTestApp({ rateLimitPerMinute: 5, trustProxy: true });
    org = await t.seedOrg();
  });
  afterAll(() => t.close());

  it("counts both transports against one budget per credential and answers 429 with Retry-After", async () => {
    const key = (await t.keyWith(org.organizationId, ["task:read"])).key;
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key })).status);
    for (let i = 0; i < 2; i++) statuses.push((await t.gql(taskQuery, { id: org.taskIds[0] }, { key })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);

    const rest = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key });
    expect(rest.status).toBe(429);
    expect(rest.body).toMatchObject({ statusCode: 429, error: "Too Many Requests", code: "RATE_LIMITED" });
    const retryAfter = Number(rest.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(rest.headers.get("ratelimit-limit")).toBe("5");
    expect(rest.headers.get("ratelimit-remaining")).toBe("0");
    expect(rest.headers.get("ratelimit-policy")).toBe("5;w=60");

    const gql = await t.gql(taskQuery, { id: org.taskIds[0] }, { key });
    expect(gql.status).toBe(429);
    expect(gql.body.errors[0].extensions.code).toBe("RATE_LIMITED");
  });

  it("gives each credential its own budget and tells the remainder", async () => {
    const other = (await t.keyWith(org.organizationId, ["task:read"])).key;
    const res = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: other });
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit-remaining")).toBe("4");
  });

  it("limits requests without a credential by the address the trusted proxy added", async () => {
    // The proxy appends the address it received from; whatever the client wrote before it is ignored.
    let spoof = 0;
    const from = (address: string) =>
      t.rest("GET", "/v1/tasks/x", { headers: { "x-forwarded-for": `198.51.100.${spoof++ % 250}, ${address}` } });
    for (let i = 0; i < 5; i++) expect((await from("203.0.113.7")).status).toBe(401);
    expect((await from("203.0.113.7")).status).toBe(429);
    expect((await from("203.0.113.8")).status).toBe(401);
  });

  it("keys a session and a JWT on the verified user, however the credential is spelt", async () => {
    const { createSession } = await import("../../src/auth/sessions.js");
    const { SignJWT } = await import("jose");
    const { testJwtSecret } = await import("../helpers/test-app.js");
    const userId = org.userIds[1] as string;
    const { token: session } = await createSession(t.db, userId, 60_000);
    const headers = (extra: Record<string, string>) => ({ "x-organization-id": org.organizationId, ...extra });
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(userId)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(testJwtSecret));
    const spellings: Record<string, string>[] = [
      { cookie: `session_token=${session}` },
      { cookie: `session_token=${encodeURIComponent(session).replace(/[A-Za-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`)}` },
      { cookie: `other=1; session_token=${session}` },
      { authorization: `Bearer ${session}` },
      { authorization: `bearer  ${token}` },
      { authorization: `Bearer ${token}` },
    ];
    const statuses: number[] = [];
    for (const extra of spellings)
      statuses.push((await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { headers: headers(extra) })).status);
    // One user in one organization: five requests, then refused, whichever spelling comes next.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it("never limits health and readiness checks", async () => {
    for (let i = 0; i < 8; i++) {
      const res = await t.app.fetch(new Request("http://test/health"));
      expect(res.status).toBe(200);
    }
  });
});

describe("rate limiting shared through Redis", () => {
  const prefix = `cwg:test:${randomBytes(4).toString("hex")}`;
  const redis = new Redis(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379", { lazyConnect: true, maxRetriesPerRequest: 1 });
  let available = true;

  beforeAll(async () => {
    try {
      await redis.connect();
    } catch {
      available = false;
    }
  });
  afterAll(async () => {
    if (available) {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
    }
    redis.disconnect();
  });

  it("lets two replicas share one budget per credential", async (context) => {
    if (!available) context.skip();
    const first = await createTestApp({ rateLimitPerMinute: 10, redis, rateLimitKeyPrefix: prefix });
    const second = await createTestApp({ rateLimitPerMinute: 10, redis, rateLimitKeyPrefix: prefix, database: first.database });
    try {
      const org = await first.seedOrg();
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          (i % 2 ? first : second).rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey }),
        ),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(6);
    } finally {
      await second.close();
      await first.close();
    }
  });
});
