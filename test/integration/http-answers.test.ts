import { Writable } from "node:stream";
import pino from "pino";
import { beforeEach, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { openFixture } from "../helpers/fixtures.js";

// Contract section 4's headers and input rules, HEAD, and the request log's status (issue 48).
const lines: Array<Record<string, unknown>> = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
    done();
  },
});
const { t, org } = await openFixture({ organizations: 1, logger: pino({ level: "info" }, sink) });
beforeEach(() => {
  lines.length = 0;
});

const key = org.apiKey;
const taskPath = `/v1/tasks/${org.taskIds[0]}`;
const send = (path: string, init: RequestInit = {}) => t.app.fetch(new Request(`http://test${path}`, init));
const withKey = (headers: Record<string, string> = {}) => ({ "x-api-key": key, ...headers });
const graphql = (query: string, headers: Record<string, string> = withKey()) =>
  send("/graphql", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ query }),
  });

describe("answer headers", () => {
  it("puts X-Content-Type-Options: nosniff on every JSON answer, errors included, on both transports", async () => {
    const answers = {
      "REST read": await send(taskPath, { headers: withKey() }),
      "REST 404": await send("/v1/tasks/tsk_missing", { headers: withKey() }),
      "REST 401": await send(taskPath),
      "REST 400": await send("/v1/tasks?limit=1000", { headers: withKey() }),
      "REST create": await send("/v1/tasks", {
        method: "POST",
        headers: withKey({ "content-type": "application/json" }),
        body: JSON.stringify({ title: "Sniffed" }),
      }),
      "GraphQL data": await graphql("{ __typename }"),
      "GraphQL error": await graphql("{ nope }"),
      "GraphQL 401": await graphql("{ __typename }", {}),
      "OpenAPI document": await send("/v1/openapi.json"),
      "/ready": await send("/ready"),
    };
    for (const [what, response] of Object.entries(answers)) {
      expect(response.headers.get("content-type"), what).toMatch(/json/);
      expect(response.headers.get("x-content-type-options"), what).toBe("nosniff");
    }
  });

  it("answers a credential with Cache-Control: no-store, except a GET with an ETag (private, no-cache)", async () => {
    const session = await createSession(t.db, org.userIds[0] as string, 60_000);
    const cookie = { cookie: `session_token=${session.token}`, "x-organization-id": org.organizationId };
    const read = await send(taskPath, { headers: withKey() });
    expect(read.headers.get("etag")).toBeTruthy();
    expect(read.headers.get("cache-control")).toBe("private, no-cache");
    const notModified = await send(taskPath, { headers: withKey({ "if-none-match": read.headers.get("etag") as string }) });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get("cache-control")).toBe("private, no-cache");
    const noStore = {
      "REST create": await send("/v1/tasks", {
        method: "POST",
        headers: withKey({ "content-type": "application/json" }),
        body: JSON.stringify({ title: "Not kept" }),
      }),
      "REST 404": await send("/v1/tasks/tsk_missing", { headers: withKey() }),
      "REST 404 to the session cookie": await send("/v1/tasks/tsk_missing", { headers: cookie }),
      "GraphQL over POST": await graphql("{ __typename }"),
      "GraphQL over GET": await send("/graphql?query=%7B__typename%7D", { headers: withKey() }),
      "GraphQL with a bearer token": await graphql("{ __typename }", {
        authorization: `Bearer ${session.token}`,
        "x-organization-id": org.organizationId,
      }),
      "REST 401 (a bad key)": await send(taskPath, { headers: { "x-api-key": "cwk_wrong" } }),
    };
    for (const [what, response] of Object.entries(noStore)) {
      expect(response.headers.get("etag"), what).toBeNull();
      expect(response.headers.get("cache-control"), what).toBe("no-store");
    }
    // The session cookie's read is a GET with an ETag: revalidated like the key's.
    expect((await send(taskPath, { headers: cookie })).headers.get("cache-control")).toBe("private, no-cache");
    // Without a credential nothing is the caller's own: the public key keeps its public caching.
    expect((await send("/v1/audit/public-key")).headers.get("cache-control")).toBe("public, max-age=300");
  });
});

describe("text that is not valid UTF-8", () => {
  /** A JSON body whose `@@` is the bytes ff fe (no UTF-8 sequence). */
  const withBadBytes = (json: string) => {
    const [before, after] = json.split("@@") as [string, string];
    return Buffer.concat([Buffer.from(before), Buffer.from([0xff, 0xfe]), Buffer.from(after)]);
  };

  it("is a 400 naming the field over REST, and nothing is stored", async () => {
    const before = await t.db.comment.count({ where: { organizationId: org.organizationId } });
    const res = await send("/v1/comments", {
      method: "POST",
      headers: withKey({ "content-type": "application/json" }),
      body: withBadBytes(
        JSON.stringify({ content: "Bad @@ bytes", entityType: "task", entityId: org.taskIds[0], userId: org.userIds[0] }),
      ),
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body).toMatchObject({
      statusCode: 400,
      code: "BAD_USER_INPUT",
      message: "content: text must be valid UTF-8",
      details: [{ path: "content", message: "not valid UTF-8" }],
    });
    expect(await t.db.comment.count({ where: { organizationId: org.organizationId } })).toBe(before);
    // A body that is no JSON at all is named as the body.
    const raw = await send("/v1/comments", {
      method: "POST",
      headers: withKey({ "content-type": "application/json" }),
      body: withBadBytes("@@ not json"),
    });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ code: "BAD_USER_INPUT", message: "The request body is not valid UTF-8" });
  });

  it("is a 400 naming the variable over GraphQL, and nothing is stored", async () => {
    const before = await t.db.comment.count({ where: { organizationId: org.organizationId } });
    const res = await send("/graphql", {
      method: "POST",
      headers: withKey({ "content-type": "application/json" }),
      body: withBadBytes(
        JSON.stringify({
          query:
            "mutation($content: String!, $id: ID!) { createComment(content: $content, entityId: $id, entityType: task) { id } }",
          variables: { content: "Bad @@ bytes", id: org.taskIds[0] },
        }),
      ),
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.errors).toEqual([
      { message: "variables.content: text must be valid UTF-8", extensions: { code: "BAD_USER_INPUT" } },
    ]);
    expect(await t.db.comment.count({ where: { organizationId: org.organizationId } })).toBe(before);
  });
});

describe("HEAD", () => {
  it("answers as GET without a body on REST reads, with the same status, ETag and type, and 304 when known", async () => {
    const get = await send(taskPath, { headers: withKey() });
    const head = await send(taskPath, { method: "HEAD", headers: withKey() });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    expect(head.headers.get("etag")).toBe(get.headers.get("etag"));
    expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
    expect(head.headers.get("content-length")).toBe(get.headers.get("content-length"));
    const known = await send(taskPath, {
      method: "HEAD",
      headers: withKey({ "if-none-match": get.headers.get("etag") as string }),
    });
    expect(known.status).toBe(304);
    // A list, and the refusals a GET would get.
    const list = await send("/v1/people?limit=2", { method: "HEAD", headers: withKey() });
    expect(list.status).toBe(200);
    expect(await list.text()).toBe("");
    expect((await send(taskPath, { method: "HEAD" })).status).toBe(401);
    expect((await send("/v1/tasks/tsk_missing", { method: "HEAD", headers: withKey() })).status).toBe(404);
    expect((await send(`/v1/people/${org.memberIds[0]}/unlink-device`, { method: "HEAD", headers: withKey() })).status).toBe(405);
    const logged = lines.filter((line) => line.msg === "request" && line.method === "HEAD").map((line) => line.status);
    expect(logged).toEqual([200, 304, 200, 401, 404, 405]);
  });

  it("answers as GET without a body on the facade's own routes, the OpenAPI document, GraphQL over GET, /ready and /metrics", async () => {
    for (const [path, headers] of [
      ["/v1/audit-events/export?format=csv", withKey()],
      ["/v1/audit/public-key", {}],
      ["/v1/openapi.json", {}],
      ["/v1/docs", {}],
      ["/graphql?query=%7B__typename%7D", withKey()],
      ["/ready", {}],
      ["/metrics", {}],
    ] as const) {
      const get = await send(path, { headers });
      const head = await send(path, { method: "HEAD", headers });
      expect(head.status, path).toBe(200);
      expect(get.status, path).toBe(200);
      expect(await head.text(), path).toBe("");
      expect((await get.text()).length, path).toBeGreaterThan(0);
      expect(head.headers.get("content-type"), path).toBe(get.headers.get("content-type"));
    }
  });
});

describe("the request log", () => {
  it("records the status the client got: 204 for a delete", async () => {
    const created = await send("/v1/webhook-endpoints", {
      method: "POST",
      headers: withKey({ "content-type": "application/json" }),
      body: JSON.stringify({ url: "https://hooks.example.com/x" }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    lines.length = 0;
    const deleted = await send(`/v1/webhook-endpoints/${id}`, { method: "DELETE", headers: withKey() });
    expect(deleted.status).toBe(204);
    const again = await send(`/v1/webhook-endpoints/${id}`, { method: "DELETE", headers: withKey() });
    expect(again.status).toBe(404);
    expect(lines.filter((line) => line.msg === "request").map((line) => [line.method, line.status])).toEqual([
      ["DELETE", 204],
      ["DELETE", 404],
    ]);
  });
});
