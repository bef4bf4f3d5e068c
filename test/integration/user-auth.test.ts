import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../src/admin/admin.service.js";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { createTestApp, type TestApp, testJwtSecret } from "../helpers/test-app.js";

let t: TestApp;
let org: SeedResult;
let other: SeedResult;

beforeAll(async () => {
  t = await createTestApp({ jwt: { secret: testJwtSecret, issuer: "https://auth.example.com", audience: "gateway" } });
  org = await t.seedOrg();
  other = await t.seedOrg();
});
afterAll(() => t.close());

function jwt(sub: string, options: { secret?: string; issuer?: string; audience?: string; expiresIn?: string } = {}) {
  return new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sub)
    .setIssuer(options.issuer ?? "https://auth.example.com")
    .setAudience(options.audience ?? "gateway")
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? "5m")
    .sign(new TextEncoder().encode(options.secret ?? testJwtSecret));
}

const task = (headers: Record<string, string>) => t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { headers });
const bearer = (token: string, orgId = org.organizationId) => ({ authorization: `Bearer ${token}`, "x-organization-id": orgId });

describe("JWT authentication", () => {
  it("accepts a valid token of an active member, with X-Organization-Id", async () => {
    const res = await task(bearer(await jwt(org.userIds[0] as string)));
    expect(res.status).toBe(200);
    const gql = await t.gql(
      `query($id: ID!) { task(taskId: $id) { id } }`,
      { id: org.taskIds[0] },
      { headers: bearer(await jwt(org.userIds[0] as string)) },
    );
    expect(gql.body.data.task.id).toBe(org.taskIds[0]);
  });

  it("answers 400 without X-Organization-Id", async () => {
    const res = await task({ authorization: `Bearer ${await jwt(org.userIds[0] as string)}` });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: "X-Organization-Id", message: expect.any(String) }]);
  });

  it("answers 403 for an organization the user is not an active member of", async () => {
    expect((await task(bearer(await jwt(org.userIds[0] as string), other.organizationId))).status).toBe(403);
    await t.db.member.update({ where: { id: org.memberIds[3] }, data: { isActive: false } });
    try {
      expect((await task(bearer(await jwt(org.userIds[3] as string)))).status).toBe(403);
    } finally {
      await t.db.member.update({ where: { id: org.memberIds[3] }, data: { isActive: true } });
    }
  });

  it.each([
    ["a wrong signature", { secret: "another-secret-another-secret-another-secret" }],
    ["an expired token", { expiresIn: "-1m" }],
    ["another issuer", { issuer: "https://evil.example.com" }],
    ["another audience", { audience: "someone-else" }],
  ])("answers 401 for %s", async (_name, options) => {
    const res = await task(bearer(await jwt(org.userIds[0] as string, options)));
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("UNAUTHENTICATED");
  });

  it("answers 401 for a malformed token and an unsigned one", async () => {
    expect((await task(bearer("abc.def.ghi"))).status).toBe(401);
    const header = Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url");
    const payload = Buffer.from(
      JSON.stringify({ sub: org.userIds[0], iss: "https://auth.example.com", aud: "gateway" }),
    ).toString("base64url");
    expect((await task(bearer(`${header}.${payload}.`))).status).toBe(401);
  });

  it("makes the caller the comment author and ignores userId", async () => {
    const res = await t.rest("POST", "/v1/comments", {
      headers: bearer(await jwt(org.userIds[2] as string)),
      body: { content: "from the app", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] },
    });
    expect(res.status).toBe(201);
    expect(res.body.author.id).toBe(org.userIds[2]);
    const comment = await t.db.comment.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(comment.apiKeyId).toBeNull();
    const audit = await t.db.auditEvent.findFirstOrThrow({ where: { entityId: res.body.id } });
    expect(audit.actorUserId).toBe(org.userIds[2]);
  });

  it("is off when no secret or JWKS is configured", async () => {
    const plain = await createTestApp({ jwt: {} });
    try {
      const seeded = await plain.seedOrg();
      const res = await plain.rest("GET", `/v1/tasks/${seeded.taskIds[0]}`, {
        headers: bearer(await jwt(seeded.userIds[0] as string), seeded.organizationId),
      });
      expect(res.status).toBe(401);
      expect(res.body.message).toMatch(/not enabled/);
    } finally {
      await plain.close();
    }
  });
});

describe("session authentication", () => {
  it("accepts the session cookie and a bearer session token", async () => {
    const { token } = await createSession(t.db, org.userIds[1] as string, 60_000);
    expect((await task({ cookie: `theme=dark; session_token=${token}`, "x-organization-id": org.organizationId })).status).toBe(
      200,
    );
    expect((await task(bearer(token))).status).toBe(200);
  });

  it("refuses the session cookie from an Origin CORS_ORIGINS does not list, on both transports (403)", async () => {
    const listed = await createTestApp({ database: t.database, corsOrigins: ["https://app.example.com"] });
    const { token } = await createSession(t.db, org.userIds[1] as string, 60_000);
    const cookieHeaders = (origin?: string) => ({
      cookie: `session_token=${token}`,
      "x-organization-id": org.organizationId,
      // Yoga's CSRF prevention wants a header a form cannot send; the origin check is ours, past it.
      "x-graphql-yoga-csrf": "1",
      ...(origin ? { origin } : {}),
    });
    const both = async (headers: Record<string, string>) => {
      const rest = await listed.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { headers });
      const gql = await listed.gql(
        "{ task(taskId: $id) { id } }".replace("$id", JSON.stringify(org.taskIds[0])),
        {},
        { headers },
      );
      return { rest, gql };
    };
    for (const origin of ["http://evil.example", "null", "https://app.example.com.evil.example", "not a url"]) {
      const { rest, gql } = await both(cookieHeaders(origin));
      expect(rest.status, origin).toBe(403);
      expect(rest.body).toMatchObject({ statusCode: 403, code: "FORBIDDEN" });
      expect(rest.body.message).toContain("CORS_ORIGINS");
      expect(gql.status, origin).toBe(403);
      expect(gql.body.errors[0].extensions.code).toBe("FORBIDDEN");
      expect(gql.body.data ?? null).toBeNull();
    }
    // A listed origin, this server's own, and no Origin at all (not a cross-site browser request) pass.
    for (const origin of ["https://app.example.com", "http://test", undefined]) {
      const { rest, gql } = await both(cookieHeaders(origin));
      expect(rest.status, origin).toBe(200);
      expect(gql.body.data.task.id, origin).toBe(org.taskIds[0]);
    }
    // A bearer token is never attached by a browser on its own: no Origin rule applies to it.
    const viaBearer = await listed.rest("GET", `/v1/tasks/${org.taskIds[0]}`, {
      headers: { ...bearer(token), origin: "http://evil.example" },
    });
    expect(viaBearer.status).toBe(200);
  });

  it("answers 401 for an expired or unknown session and 400 without X-Organization-Id", async () => {
    const { token } = await createSession(t.db, org.userIds[1] as string, 1);
    await new Promise((r) => setTimeout(r, 5));
    expect((await task(bearer(token))).status).toBe(401);
    expect((await task(bearer(`cws_${"x".repeat(43)}`))).status).toBe(401);
    const valid = await createSession(t.db, org.userIds[1] as string, 60_000);
    expect((await task({ cookie: `session_token=${valid.token}` })).status).toBe(400);
  });

  it("stores only a hash of the token", async () => {
    const { token } = await createSession(t.db, org.userIds[1] as string, 60_000);
    const rows = await t.db.session.findMany({ where: { userId: org.userIds[1] } });
    expect(JSON.stringify(rows)).not.toContain(token.slice(4));
  });

  it("lets an API key decide when both are sent", async () => {
    const { token } = await createSession(t.db, org.userIds[1] as string, 60_000);
    const res = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: "cwk_bad", headers: bearer(token) });
    expect(res.status).toBe(401);
  });
});

describe("a new member", () => {
  it("can use their role's permissions at once", async () => {
    const { userId } = await createUser(t.db, {
      email: `new.${Date.now()}@example.com`,
      name: "New",
      organizationId: org.organizationId,
      role: "auditor",
    });
    const headers = bearer(await jwt(userId));
    expect((await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { headers })).status).toBe(200);
    expect((await t.rest("PATCH", `/v1/people/${org.memberIds[0]}/unlink-device`, { headers })).status).toBe(403);
  });
});

describe("JWT authentication with a JWKS endpoint", () => {
  it("accepts tokens signed by a key the JWKS publishes and refuses others", async () => {
    const { createServer } = await import("node:http");
    const { exportJWK, generateKeyPair } = await import("jose");
    const trusted = await generateKeyPair("RS256");
    const stranger = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(trusted.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    const server = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] })),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const app = await createTestApp({ jwt: { jwksUrl: `http://127.0.0.1:${port}/jwks.json` } });
    try {
      const seeded = await app.seedOrg();
      const sign = (key: CryptoKey) =>
        new SignJWT({})
          .setProtectedHeader({ alg: "RS256", kid: "k1" })
          .setSubject(seeded.userIds[0] as string)
          .setExpirationTime("5m")
          .sign(key);
      const call = async (token: string) =>
        (
          await app.rest("GET", `/v1/tasks/${seeded.taskIds[0]}`, {
            headers: { authorization: `Bearer ${token}`, "x-organization-id": seeded.organizationId },
          })
        ).status;
      expect(await call(await sign(trusted.privateKey))).toBe(200);
      expect(await call(await sign(stranger.privateKey))).toBe(401);
      // A trusted key's token without exp would never expire: refused too.
      const forever = await new SignJWT({})
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .setSubject(seeded.userIds[0] as string)
        .sign(trusted.privateKey);
      expect(await call(forever)).toBe(401);
    } finally {
      await app.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
