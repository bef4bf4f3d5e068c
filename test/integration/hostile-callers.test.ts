import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
/**
 * The findings of an attack probe (issue 15), each on both transports where it applies: these
 * failed before the fixes.
 */
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokeApiKey } from "../../src/admin/admin.service.js";
import type { SeedResult } from "../../src/admin/seed.js";
import { CREDENTIAL_CACHE_MS } from "../../src/auth/authenticate.js";
import { createSession } from "../../src/auth/sessions.js";
import { createTestApp, type TestApp, testJwtSecret } from "../helpers/test-app.js";

let t: TestApp;
let org: SeedResult;
let other: SeedResult;

const KiB = 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LIMIT = 256 * KiB;

beforeAll(async () => {
  t = await createTestApp({ bodyLimitBytes: LIMIT, bodyBudgetBytes: 400 * KiB, corsOrigins: ["https://app.example.com"] });
  org = await t.seedOrg();
  other = await t.seedOrg();
});
afterAll(() => t.close());

/** A request body that counts the bytes the server pulls from it (`total` bytes in `chunk`-byte pieces). */
function countingBody(total: number, chunk = 16 * KiB) {
  const state = { pulled: 0 };
  const piece = new TextEncoder().encode("x".repeat(chunk));
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled >= total) {
        controller.close();
        return;
      }
      state.pulled += piece.byteLength;
      controller.enqueue(piece);
    },
  });
  return { stream, state };
}

/** A body that sends `first` bytes, then waits until `finish()`; it declares `length` bytes. */
function heldBody(first: number) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let sent = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new TextEncoder().encode(" ".repeat(first)));
        return;
      }
      await released;
      controller.close();
    },
  });
  return { stream, finish: release };
}

function send(path: string, init: RequestInit & { headers?: Record<string, string> }) {
  return t.app.fetch(new Request(`http://test${path}`, { duplex: "half", ...init } as RequestInit));
}

const json = async (response: Response) => JSON.parse(await response.text());

describe("1. no body is read before the credential, none beyond the limit, within a memory budget", () => {
  it("does not read a byte of an anonymous body, with or without Idempotency-Key, on both transports", async () => {
    for (const [path, extra] of [
      ["/graphql", { "idempotency-key": "k-1" }],
      ["/graphql", {}],
      ["/v1/comments", { "idempotency-key": "k-2" }],
    ] as const) {
      const { stream, state } = countingBody(30 * 1024 * KiB);
      const response = await send(path, {
        method: "POST",
        headers: { "content-type": "application/json", ...extra },
        body: stream,
      });
      expect(response.status, path).toBe(401);
      expect((await json(response)).errors?.[0]?.extensions?.code ?? (await Promise.resolve("UNAUTHENTICATED"))).toBe(
        "UNAUTHENTICATED",
      );
      // A stream is asked for its first piece when the request is made; nothing more is read.
      expect(state.pulled, path).toBeLessThanOrEqual(2 * 16 * KiB);
    }
  });

  it("stops reading a chunked body at the limit, with a credential and Idempotency-Key, on both transports", async () => {
    for (const path of ["/graphql", "/v1/comments"]) {
      const { stream, state } = countingBody(4 * 1024 * KiB);
      const response = await send(path, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": org.apiKey, "idempotency-key": `chunked-${path}` },
        body: stream,
      });
      expect(response.status, path).toBe(413);
      expect(state.pulled, path).toBeLessThanOrEqual(LIMIT + 3 * 16 * KiB);
    }
  });

  it("answers 503 with Retry-After before reading a body past the budget, and admits again once it frees", async () => {
    const held = heldBody(10);
    const first = send("/v1/comments", {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": org.apiKey, "content-length": String(200 * KiB) },
      body: held.stream,
    });
    await new Promise((r) => setTimeout(r, 50));
    for (const path of ["/graphql", "/v1/comments"]) {
      const { stream, state } = countingBody(250 * KiB);
      const refused = await send(path, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": org.apiKey, "content-length": String(250 * KiB) },
        body: stream,
      });
      expect(refused.status, path).toBe(503);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      const body = await json(refused);
      expect(body.code ?? body.errors[0].extensions.code).toBe("SERVICE_UNAVAILABLE");
      expect(state.pulled).toBeLessThanOrEqual(16 * KiB);
    }
    held.finish();
    await first;
    const after = await t.gql(`mutation { createTask(title: "after") { id } }`, {}, { key: org.apiKey });
    expect(after.body.data.createTask.id).toMatch(/^tsk_/);
  });
});

describe("1b. a body of declared length, over real HTTP", () => {
  it("gives its budget back when the client goes away mid-body, and reads a whole one into a GraphQL answer", async () => {
    const server = createServer(t.app.yoga);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      // 200 KiB declared (within the limit and the 400 KiB budget), 10 KiB sent, then the connection is cut.
      const socket = connect(port, "127.0.0.1");
      await new Promise<void>((resolve) => socket.once("connect", resolve));
      socket.write(
        `POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-api-key: ${org.apiKey}\r\ncontent-length: ${200 * KiB}\r\n\r\n`,
      );
      socket.write(" ".repeat(10 * KiB));
      await sleep(100);
      socket.destroy();
      // A second body of 250 KiB fits only once the first one's 200 KiB are given back.
      const padded = JSON.stringify({ query: "{ __typename }", variables: { pad: "x".repeat(250 * KiB - 60) } });
      let status = 0;
      for (let i = 0; i < 50 && status !== 200; i++) {
        await sleep(50);
        const response = await fetch(`http://127.0.0.1:${port}/graphql`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": org.apiKey },
          body: padded,
        });
        status = response.status;
        if (status === 200) expect(await response.json()).toEqual({ data: { __typename: "Query" } });
        else await response.arrayBuffer();
      }
      expect(status).toBe(200);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("1b. a body read whole, whichever way it arrives", () => {
  it("answers the same for a body sent with its headers, in pieces with pauses, or byte by byte", async () => {
    const server = createServer(t.app.yoga);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const body = JSON.stringify({
      query: "{ __typename alias: __typename }",
      variables: { note: "é, a character of two bytes" },
    });
    const head = `POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-api-key: ${org.apiKey}\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`;
    // Written as one buffer (body buffered before any handler reads: taken from the buffer at
    // once), the body after a pause, and its bytes one at a time (read through the stream's events).
    const ways: Buffer[][] = [
      [Buffer.from(head + body)],
      [Buffer.from(head), Buffer.from(body)],
      [Buffer.from(head), ...[...Buffer.from(body)].map((byte) => Buffer.from([byte]))],
    ];
    try {
      for (const pieces of ways) {
        const socket = connect(port, "127.0.0.1");
        await new Promise<void>((resolve) => socket.once("connect", resolve));
        const answer = new Promise<string>((resolve) => {
          let text = "";
          socket.on("data", (chunk) => {
            text += chunk;
          });
          socket.on("close", () => resolve(text));
        });
        for (const piece of pieces) {
          socket.write(piece);
          if (pieces.length > 1) await sleep(pieces.length > 2 ? 1 : 50);
        }
        const text = await answer;
        expect(text.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
        expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))).toEqual({ data: { __typename: "Query", alias: "Query" } });
      }
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("2. CORS: off unless CORS_ORIGINS lists the origin", () => {
  it("gives no other origin (null included) access, on both transports and in preflight", async () => {
    for (const origin of ["https://evil.example", "null", "https://app.example.com.evil.example"]) {
      for (const path of ["/graphql", `/v1/people`]) {
        const res = await send(path, { method: "GET", headers: { origin, cookie: "session_token=x" } });
        expect(res.headers.get("access-control-allow-origin"), `${origin} ${path}`).toBeNull();
        expect(res.headers.get("access-control-allow-credentials")).toBeNull();
        const preflight = await send(path, {
          method: "OPTIONS",
          headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
        });
        expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
      }
    }
  });

  it("allows a listed origin exactly, with credentials", async () => {
    const res = await send(`/v1/people`, {
      method: "GET",
      headers: { origin: "https://app.example.com", "x-api-key": org.apiKey },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(res.headers.get("access-control-allow-credentials")).toBe("true");
  });
});

const subscription = `subscription($id: ID!) { commentAdded(entityId: $id, entityType: task) { id } }`;

/** An SSE subscription: resolves with the stream's text once it ends (or after `ms`). */
async function streamUntilEnd(headers: Record<string, string>, ms: number) {
  const controller = new AbortController();
  const response = await t.app.fetch(
    new Request("http://test/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
      body: JSON.stringify({ query: subscription, variables: { id: org.taskIds[0] } }),
      signal: controller.signal,
    }),
  );
  if (response.status !== 200) throw new Error(`subscription refused: ${await response.text()}`);
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const started = Date.now();
  const ended = (async () => {
    for (;;) {
      const chunk = await reader?.read().catch(() => ({ done: true as const, value: undefined }));
      if (!chunk || chunk.done) return true;
      text += decoder.decode(chunk.value, { stream: true });
    }
  })();
  const timeout = new Promise<false>((resolve) => setTimeout(() => resolve(false), ms));
  return {
    async result() {
      const done = await Promise.race([ended, timeout]);
      controller.abort();
      return { done, text, seconds: (Date.now() - started) / 1000 };
    },
  };
}

// A stream ends at the next credential check after the cache expires; the slack is for a loaded
// machine, and stays under streamUntilEnd's 8 s, so a stream that never ends still fails.
const STREAM_END_SLACK_MS = 3_000;

describe("3. open subscriptions end with their credential", () => {
  it("ends a stream with an error event once its API key is revoked", async () => {
    const key = await t.keyWith(org.organizationId, ["comment:read"]);
    const stream = await streamUntilEnd({ "x-api-key": key.key }, 8_000);
    await new Promise((r) => setTimeout(r, 100));
    await revokeApiKey(t.db, key.id);
    const revokedAt = Date.now();
    const { done, text } = await stream.result();
    expect(done).toBe(true);
    expect(Date.now() - revokedAt).toBeLessThan(CREDENTIAL_CACHE_MS + STREAM_END_SLACK_MS);
    expect(text).toContain("UNAUTHENTICATED");
  });

  it("ends a stream once the member is deactivated, or the session expires", async () => {
    const userId = org.userIds[2] as string;
    const memberId = org.memberIds[2] as string;
    const { token } = await createSession(t.db, userId, 60_000);
    const headers = { authorization: `Bearer ${token}`, "x-organization-id": org.organizationId };
    const stream = await streamUntilEnd(headers, 8_000);
    await new Promise((r) => setTimeout(r, 100));
    await t.db.member.update({ where: { id: memberId }, data: { isActive: false } });
    const deactivatedAt = Date.now();
    const deactivated = await stream.result();
    expect(deactivated.done).toBe(true);
    expect(Date.now() - deactivatedAt).toBeLessThan(CREDENTIAL_CACHE_MS + STREAM_END_SLACK_MS);
    expect(deactivated.text).toContain("FORBIDDEN");
    await t.db.member.update({ where: { id: memberId }, data: { isActive: true } });
    // The membership is cached as inactive for up to the credential cache's lifetime.
    await new Promise((r) => setTimeout(r, CREDENTIAL_CACHE_MS + 100));

    const short = await createSession(t.db, userId, 1_000);
    const expiring = await streamUntilEnd({ ...headers, authorization: `Bearer ${short.token}` }, 8_000);
    const expired = await expiring.result();
    expect(expired.done).toBe(true);
    expect(expired.text).toContain("UNAUTHENTICATED");
  });
});

describe("5. unauthenticated CPU, and list lengths", () => {
  it("refuses a list variable of more than 10,000 items, on both transports", async () => {
    const items = new Array(10_001).fill(0);
    const gql = await t.gql(
      `mutation($content: JSON) { createPolicy(name: "Long", content: $content) { id } }`,
      { content: items },
      { key: org.apiKey },
    );
    expect(gql.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect(gql.body.errors[0].message).toMatch(/at most 10000 items/);
    const rest = await t.rest("POST", "/v1/policies", { key: org.apiKey, body: { name: "Long", content: items } });
    expect(rest.status).toBe(400);
    expect(JSON.stringify(rest.body.details)).toMatch(/at most 10000 items/);
  });
});

describe("6. an idempotent answer is replayed only to the credential that got it", () => {
  it("runs (and authorizes) another credential's request with the same key and body, on both transports", async () => {
    const weak = (await t.keyWith(org.organizationId, ["task:read"])).key;
    const body = { email: `replay-${Date.now()}@example.com`, name: "Replay", role: "employee" };
    const first = await t.rest("POST", "/v1/people", { key: org.apiKey, body, headers: { "idempotency-key": "owner-key-1" } });
    expect(first.status).toBe(201);
    const replay = await t.rest("POST", "/v1/people", { key: weak, body, headers: { "idempotency-key": "owner-key-1" } });
    expect(replay.status).toBe(403);
    expect(replay.headers.get("idempotent-replayed")).toBeNull();

    const mutation = `mutation($email: String!) { createMember(email: $email, name: "G", role: employee) { id } }`;
    const variables = { email: `replay-g-${Date.now()}@example.com` };
    const owner = await t.gql(mutation, variables, { key: org.apiKey, headers: { "idempotency-key": "owner-key-2" } });
    expect(owner.body.data.createMember.id).toMatch(/^mem_/);
    const other = await t.gql(mutation, variables, { key: weak, headers: { "idempotency-key": "owner-key-2" } });
    expect(other.body.errors[0].extensions.code).toBe("FORBIDDEN");
  });
});

describe("7. malformed input answers 400/404 in our envelope, never a stack", () => {
  it("answers a malformed % escape in the session cookie with 400, on both transports", async () => {
    for (const path of [`/v1/tasks/${org.taskIds[0]}`, "/graphql?query=%7B__typename%7D"]) {
      const res = await send(path, { method: "GET", headers: { cookie: "session_token=%E0%A4%A" } });
      expect(res.status, path).toBe(400);
      expect(res.headers.get("content-type")).toContain("application/json");
      const body = await json(res);
      expect(body.code ?? body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    }
  });

  it("answers JSON nested 20,000 levels deep with 400, on both transports", async () => {
    const deep = `${'{"a":'.repeat(20_000)}1${"}".repeat(20_000)}`;
    const rest = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      rawBody: `{"content":${deep}}`,
      headers: { "content-type": "application/json" },
    });
    expect(rest.status).toBe(400);
    expect(rest.body.code).toBe("BAD_USER_INPUT");
    const gql = await send("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": org.apiKey },
      body: `{"query":"{ __typename }","variables":{"v":${deep}}}`,
    });
    expect(gql.status).toBe(400);
    expect((await json(gql)).errors[0].extensions.code).toBe("BAD_USER_INPUT");
  });

  it("answers a GraphQL query that is not text with 400, whatever members it carries (a 500 the schema fuzzer found)", async () => {
    // `{"toString":{}}` cannot become a string: the input check of lone surrogates coerced it.
    for (const query of ['{"toString":{}}', '{"valueOf":{},"toString":{}}', "123", '["{ __typename }"]']) {
      const gql = await send("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": org.apiKey },
        body: `{"query":${query}}`,
      });
      expect(gql.status, query).toBe(400);
      const errors = (await json(gql)).errors;
      expect(errors[0].extensions.code, query).toBe("BAD_USER_INPUT");
      expect(errors[0].message, query).toMatch(/^Expected "query" param to be a string/);
    }
  });

  it("answers a policy text with a __proto__ key, at any depth, with 400 and writes nothing, on both transports", async () => {
    // Written as raw JSON: JSON.parse makes "__proto__" an own key, which Prisma's client cannot write.
    for (const content of ['{"__proto__":null,"type":"doc"}', '[{"type":"p","attrs":{"__proto__":{"x":1}}}]']) {
      const name = `Proto ${randomUUID()}`;
      const rest = await t.rest("POST", "/v1/policies", {
        key: org.apiKey,
        rawBody: `{"name":"${name}","content":${content}}`,
        headers: { "content-type": "application/json" },
      });
      expect(rest.status, content).toBe(400);
      expect(rest.body.message).toMatch(/content: must not use "__proto__" as a key/);
      const gql = await send("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": org.apiKey },
        body: `{"query":"mutation($c: JSON) { createPolicy(name: \\"${name}\\", content: $c) { id } }","variables":{"c":${content}}}`,
      });
      const errors = (await json(gql)).errors;
      expect(errors[0].extensions.code).toBe("BAD_USER_INPUT");
      expect(errors[0].message).toMatch(/__proto__/);
      expect(await t.db.policy.count({ where: { organizationId: org.organizationId, name } })).toBe(0);
    }
  });

  it("answers /graphiql/__proto__ and friends with 404 in our envelope", async () => {
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      const res = await send(`/graphiql/${name}`, { method: "GET" });
      expect(res.status, name).toBe(404);
      expect((await json(res)).code).toBe("NOT_FOUND");
    }
  });
});

describe("8. adding another organization's user reveals nothing that organization stored", () => {
  it("answers as for a new account, on both transports", async () => {
    const theirs = await t.db.user.findUniqueOrThrow({ where: { id: other.userIds[0] } });
    await t.db.user.update({ where: { id: theirs.id }, data: { lastLogin: new Date(), emailVerified: true } });
    const selection = "id user { name emailVerified image createdAt updatedAt lastLogin }";
    const gql = await t.gql(
      `mutation($email: String!) { createMember(email: $email, name: "Given Name", role: employee) { ${selection} } }`,
      { email: theirs.email },
      { key: org.apiKey },
    );
    const fresh = await t.gql(
      `mutation($email: String!) { createMember(email: $email, name: "Given Name", role: employee) { ${selection} } }`,
      { email: `fresh-${Date.now()}@example.com` },
      { key: org.apiKey },
    );
    const shape = (user: Record<string, unknown>) => ({
      ...user,
      createdAt: typeof user.createdAt,
      updatedAt: typeof user.updatedAt,
    });
    expect(shape(gql.body.data.createMember.user)).toEqual(shape(fresh.body.data.createMember.user));
    expect(gql.body.data.createMember.user).toMatchObject({ name: "Given Name", emailVerified: false, lastLogin: null });
    expect(JSON.stringify(gql.body)).not.toContain(theirs.name);
    expect(JSON.stringify(gql.body)).not.toContain(theirs.createdAt.toISOString());
    // The account's id, which the answer must carry, does not tell when the account was made: user
    // ids are random (other ids start with their creation time in milliseconds, 12 hex digits).
    const userId = await t.db.member.findFirstOrThrow({ where: { id: gql.body.data.createMember.id }, select: { userId: true } });
    expect(userId.userId).toMatch(/^usr_[0-9a-f]{32}$/);
    const day = 86_400_000;
    expect(Math.abs(Number.parseInt(userId.userId.slice(4, 16), 16) - theirs.createdAt.getTime())).toBeGreaterThan(day);

    const rest = await t.rest("POST", "/v1/people", {
      key: (await t.seedOrg()).apiKey,
      body: { email: theirs.email, name: "Other Name", role: "employee" },
    });
    expect(rest.status).toBe(201);
    expect(JSON.stringify(rest.body)).not.toContain(theirs.name);
    expect(rest.body.user).toMatchObject({ name: "Other Name", emailVerified: false, lastLogin: null });
  });
});

async function sessionOf(role: "admin" | "owner", seed: SeedResult = org) {
  const member = await t.db.member.findFirstOrThrow({ where: { organizationId: seed.organizationId, role } });
  const { token } = await createSession(t.db, member.userId, 60_000);
  return { authorization: `Bearer ${token}`, "x-organization-id": seed.organizationId };
}

describe("9 and 12. owner protection and roles bounded by permissions", () => {
  it("refuses a non-owner admin unlinking an owner's devices, on both transports", async () => {
    const admin = await sessionOf("admin");
    const owner = await t.db.member.findFirstOrThrow({ where: { organizationId: org.organizationId, role: "owner" } });
    const rest = await t.rest("PATCH", `/v1/people/${owner.id}/unlink-device`, { headers: admin });
    expect(rest.status).toBe(403);
    const gql = await t.gql(`mutation($id: ID!) { unlinkDevice(id: $id) { id } }`, { id: owner.id }, { headers: admin });
    expect(gql.body.errors[0].extensions.code).toBe("FORBIDDEN");
    expect((await t.db.device.count({ where: { memberId: owner.id } })) > 0).toBe(true);
  });

  it("refuses a key with member:update or member:create alone granting owner or admin, on both transports", async () => {
    const updater = (await t.keyWith(org.organizationId, ["member:update"])).key;
    const creator = (await t.keyWith(org.organizationId, ["member:create"])).key;
    const employee = await t.db.member.findFirstOrThrow({ where: { organizationId: org.organizationId, role: "employee" } });
    for (const role of ["owner", "admin", "auditor"]) {
      const rest = await t.rest("PATCH", `/v1/people/${employee.id}`, { key: updater, body: { role } });
      expect(rest.status, role).toBe(403);
      const gql = await t.gql(
        `mutation($id: ID!, $role: MemberRole!) { updateMember(id: $id, role: $role) { id } }`,
        { id: employee.id, role },
        { key: updater },
      );
      expect(gql.body.errors[0].extensions.code).toBe("FORBIDDEN");
      const created = await t.rest("POST", "/v1/people", {
        key: creator,
        body: { email: `grant-${role}-${Date.now()}@example.com`, name: "X", role },
      });
      expect(created.status, role).toBe(403);
    }
    // Roles within the key's permissions stay possible.
    const ok = await t.rest("POST", "/v1/people", {
      key: (await t.keyWith(org.organizationId, ["member:create", "task:read", "comment:read", "comment:create"])).key,
      body: { email: `grant-ok-${Date.now()}@example.com`, name: "X", role: "employee" },
    });
    expect(ok.status).toBe(201);
    expect((await t.db.member.findUniqueOrThrow({ where: { id: employee.id } })).role).toBe("employee");
  });
});

describe("10. tokens must expire", () => {
  const secret = new TextEncoder().encode(testJwtSecret);
  it("refuses a JWT without exp, or living longer than the maximum age, on both transports", async () => {
    const sub = org.userIds[0] as string;
    const tokens = [
      await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(sub).sign(secret),
      await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(sub).setExpirationTime("3650d").sign(secret),
      await new SignJWT({})
        .setProtectedHeader({ alg: "HS256" })
        .setSubject(sub)
        .setIssuedAt(Math.floor(Date.now() / 1000) - 3 * 86_400)
        .setExpirationTime("1h")
        .sign(secret),
    ];
    for (const token of tokens) {
      const headers = { authorization: `Bearer ${token}`, "x-organization-id": org.organizationId };
      expect((await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { headers })).status).toBe(401);
      const gql = await t.gql(`{ __typename }`, {}, { headers });
      expect(gql.body.errors[0].extensions.code).toBe("UNAUTHENTICATED");
    }
  });
});

describe("11. only evidence files are accepted", () => {
  const file = (fileName: string, fileType: string, text = "evidence") => ({
    fileName,
    fileType,
    fileData: Buffer.from(text).toString("base64"),
  });
  const post = (attachment: ReturnType<typeof file>) =>
    t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: {
        content: "see file",
        entityId: org.taskIds[0],
        entityType: "task",
        userId: org.userIds[0],
        attachments: [attachment],
      },
    });

  it("refuses scripts, installers, images of disks and shortcuts by name or type, on both transports", async () => {
    const refused = [
      ...[
        "a.jse",
        "a.wsc",
        "a.command",
        "a.msix",
        "a.ps1xml",
        "a.py",
        "a.chm",
        "a.iso",
        "a.scf",
        "a.url",
        "a.html",
        "a.svg",
        "a",
      ].map((name) => file(name, "application/octet-stream")),
      file("a.txt", "application/x-shellscript"),
      file("a.txt", "application/x-ms-dos-executable"),
      file("a.txt", "text/html"),
    ];
    for (const attachment of refused) {
      const rest = await post(attachment);
      expect(rest.status, attachment.fileName + attachment.fileType).toBe(400);
      const gql = await t.gql(
        `mutation($a: [AttachmentInput!]) { createComment(content: "x", entityId: "${org.taskIds[0]}", entityType: task, userId: "${org.userIds[0]}", attachments: $a) { id } }`,
        { a: [attachment] },
        { key: org.apiKey },
      );
      expect(gql.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    }
  });

  it("accepts documents, spreadsheets, images, archives and text", async () => {
    for (const [name, type] of [
      ["report.pdf", "application/pdf"],
      ["log.csv", "text/csv"],
      ["data.json", "application/json"],
      ["sheet.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"],
      ["shot.png", "image/png"],
      ["bundle.zip", "application/zip"],
      ["notes.txt", "text/plain"],
    ]) {
      expect((await post(file(name as string, type as string))).status, name).toBe(201);
    }
  });
});

describe("13. metrics name only authenticated, valid operations", () => {
  it("keeps anonymous operation names out of the label slots", async () => {
    for (let i = 0; i < 120; i++) {
      await send("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: `query Junk${i} { __typename }` }),
      });
    }
    await t.gql(`query RealOperation { __typename }`, {}, { key: org.apiKey });
    const metrics = await (await send("/metrics", { method: "GET" })).text();
    expect(metrics).toContain('operation_name="RealOperation"');
    expect(metrics).not.toContain('operation_name="Junk1"');
  });
});
