import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { serverAudits } from "graphql-http";
import { SignJWT } from "jose";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkDocuments, publishDocuments } from "../../src/admin/trusted-documents.js";
import { createSession } from "../../src/auth/sessions.js";
import { documentIdOf } from "../../src/platform/document-ids.js";
import { schema } from "../../src/schema.js";
import { openFixture } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/test-app.js";
import { testJwtSecret } from "../helpers/test-app.js";

const { t, org, appWith } = await openFixture();
afterAll(() => t.close());

/** Texts unique to this run (a comment is part of the text, so of its id): the documents table is shared. */
const run = randomBytes(4).toString("hex");
const unique = (text: string) => `# ${run}\n${text}`;
const app = `web-${run}`;

const getTask = unique("query GetTask($id: ID!) { task(taskId: $id) { id title } }");
const createComment = unique(
  'mutation AddComment($id: ID!, $userId: ID) { createComment(entityType: task, entityId: $id, content: "stored", userId: $userId) { id } }',
);
const tooManyAliases = unique(
  `query Aliases { viewer { ${Array.from({ length: 16 }, (_, n) => `a${n}: credential`).join(" ")} } }`,
);
const tooCostly = unique("query Costly { tasks(limit: 100) { items { comments(limit: 100) { items { id } } } } }");
const onComment = unique("subscription OnComment($id: ID!) { commentAdded(entityType: task, entityId: $id) { id } }");
const idOf = (text: string) => `sha256:${documentIdOf(text)}`;

async function publish(texts: string[], version = "1.0.0") {
  const documents = checkDocuments(
    schema,
    texts.map((text) => ({ id: idOf(text), text })),
  );
  return publishDocuments(t.db, { app, version, documents });
}

function jwt(sub: string) {
  return new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(testJwtSecret));
}

type Headers = Record<string, string>;

async function post(target: TestApp, body: unknown, headers: Headers) {
  const response = await target.app.fetch(
    new Request("http://test/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    }),
  );
  // biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary JSON
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

async function get(target: TestApp, params: Record<string, string>, headers: Headers) {
  const response = await target.app.fetch(
    new Request(`http://test/graphql?${new URLSearchParams(params)}`, { headers: { accept: "application/json", ...headers } }),
  );
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : undefined };
}

let apiKey: Headers;
let bearer: Headers;
let lines: Record<string, unknown>[];
let logged: TestApp;

beforeAll(async () => {
  await publish([getTask, createComment, tooManyAliases, tooCostly, onComment]);
  apiKey = { "x-api-key": org.apiKey };
  bearer = { authorization: `Bearer ${await jwt(org.userIds[0] as string)}`, "x-organization-id": org.organizationId };
  lines = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  logged = await appWith({ logger: pino({ level: "info" }, sink) });
});

describe("running a stored document by id", () => {
  it("runs it over POST with the id written as sha256:<hex>, bare hex, or Apollo's persistedQuery", async () => {
    const variables = { id: org.taskIds[0] };
    const hex = documentIdOf(getTask);
    for (const body of [
      { documentId: `sha256:${hex}`, variables },
      { documentId: hex.toUpperCase(), variables },
      { variables, extensions: { persistedQuery: { version: 1, sha256Hash: hex } } },
    ]) {
      const res = await post(t, body, apiKey);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.task.id).toBe(org.taskIds[0]);
    }
  });

  it("runs a query over GET with an ETag and Cache-Control, and answers 304 to If-None-Match", async () => {
    const params = { documentId: idOf(getTask), variables: JSON.stringify({ id: org.taskIds[0] }), operationName: "GetTask" };
    const first = await get(t, params, apiKey);
    expect(first.status).toBe(200);
    expect(first.body.data.task.id).toBe(org.taskIds[0]);
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect(first.headers.get("cache-control")).toBe("private, no-cache");

    const again = await get(t, params, { ...apiKey, "if-none-match": etag as string });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    expect(again.headers.get("etag")).toBe(etag);

    const other = await get(
      t,
      { ...params, variables: JSON.stringify({ id: org.taskIds[1] }) },
      {
        ...apiKey,
        "if-none-match": etag as string,
      },
    );
    expect(other.status).toBe(200);
    expect(other.body.data.task.id).toBe(org.taskIds[1]);
  });

  it("answers 405 for a stored mutation over GET, and runs it over POST", async () => {
    const variables = { id: org.taskIds[0], userId: org.userIds[0] };
    const viaGet = await get(t, { documentId: idOf(createComment), variables: JSON.stringify(variables) }, apiKey);
    expect(viaGet.status).toBe(405);
    expect(viaGet.body.errors[0].extensions.code).toBe("METHOD_NOT_ALLOWED");
    const viaPost = await post(t, { documentId: idOf(createComment), variables }, apiKey);
    expect(viaPost.status).toBe(200);
    expect(viaPost.body.data.createComment.id).toMatch(/^cmt_/);
  });

  it("answers 400 for a documentId beside a different query, and for an id that is not a SHA-256", async () => {
    const mismatch = await post(t, { documentId: idOf(getTask), query: "{ __typename }" }, apiKey);
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    for (const documentId of ["sha256:abc", "md5:0123", 42]) {
      const bad = await post(t, { documentId }, apiKey);
      expect(bad.status, String(documentId)).toBe(400);
      expect(bad.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    }
    const apollo = await post(t, { extensions: { persistedQuery: { version: 2, sha256Hash: "x" } } }, apiKey);
    expect(apollo.status).toBe(400);
  });

  it("runs text sent beside its own id as text, and never stores it", async () => {
    const text = unique("query Fresh { __typename }");
    const res = await post(t, { query: text, documentId: idOf(text) }, apiKey);
    expect(res.status).toBe(200);
    expect(res.body.data.__typename).toBe("Query");
    const later = await post(t, { documentId: idOf(text) }, apiKey);
    expect(later.body.errors[0].extensions.code).toBe("PERSISTED_QUERY_NOT_FOUND");
    expect(await t.db.trustedDocument.count({ where: { id: documentIdOf(text) } })).toBe(0);
  });

  it("answers an unknown id with PERSISTED_QUERY_NOT_FOUND and PersistedQueryNotFound, by the Accept rule", async () => {
    const unknown = idOf(unique("query Never { __typename }"));
    const legacy = await post(t, { documentId: unknown }, apiKey);
    expect(legacy.status).toBe(200);
    expect(legacy.body.data).toBeUndefined();
    expect(legacy.body.errors[0]).toMatchObject({
      message: "PersistedQueryNotFound",
      extensions: { code: "PERSISTED_QUERY_NOT_FOUND" },
    });
    const strict = await post(t, { documentId: unknown }, { ...apiKey, accept: "application/graphql-response+json" });
    expect(strict.status).toBe(400);
    expect(strict.body.errors[0].extensions.code).toBe("PERSISTED_QUERY_NOT_FOUND");
  });

  it("applies every document limit to a stored document", async () => {
    const aliases = await post(t, { documentId: idOf(tooManyAliases) }, apiKey);
    expect(aliases.body.errors[0].extensions).toMatchObject({ code: "GRAPHQL_VALIDATION_FAILED", limit: { name: "aliases" } });
    const costly = await post(t, { documentId: idOf(tooCostly) }, apiKey);
    expect(costly.body.errors[0].extensions.code).toBe("QUERY_TOO_COMPLEX");
    // Once more: the cached parse and validation still refuse.
    expect((await post(t, { documentId: idOf(tooCostly) }, apiKey)).body.errors[0].extensions.code).toBe("QUERY_TOO_COMPLEX");
  });

  it("streams a stored subscription over GET as server-sent events, with no ETag", async () => {
    const response = await t.app.fetch(
      new Request(
        `http://test/graphql?${new URLSearchParams({ documentId: idOf(onComment), variables: JSON.stringify({ id: org.taskIds[0] }) })}`,
        {
          headers: { ...apiKey, accept: "text/event-stream" },
        },
      ),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("etag")).toBeNull();
    const reader = response.body?.getReader();
    expect((await reader?.read())?.done).toBe(false);
    await reader?.cancel();
  });

  it("parses a stored document once per process, however many other documents pass meanwhile", async () => {
    const own = await appWith();
    const parses = async () =>
      Number(
        /^trusted_document_parses_total (\d+)$/m.exec(
          await (await own.app.fetch(new Request("http://test/metrics"))).text(),
        )?.[1],
      );
    const body = { documentId: idOf(getTask), variables: { id: org.taskIds[0] } };
    expect((await post(own, body, apiKey)).body.data.task.id).toBe(org.taskIds[0]);
    expect(await post(own, body, apiKey)).toMatchObject({ status: 200 });
    expect(await parses()).toBe(1);
    // More distinct texts than Yoga's parse cache keeps (1,024): its copy of the stored text goes.
    for (let i = 0; i < 1_100; i++) await post(own, { query: `query Q${i} { __typename }` }, apiKey);
    expect((await post(own, body, apiKey)).body.data.task.id).toBe(org.taskIds[0]);
    expect(await parses()).toBe(1);
  });

  it("needs a credential like any GraphQL request, over GET too", async () => {
    const res = await get(t, { documentId: idOf(getTask), variables: JSON.stringify({ id: org.taskIds[0] }) }, {});
    expect(res.status).toBe(401);
  });
});

describe("TRUSTED_DOCUMENTS", () => {
  const text = "query($id: ID!) { task(taskId: $id) { id } }";
  const introspection = "query IntrospectionQuery { __schema { queryType { name } types { name } } }";
  const stored = { documentId: idOf(getTask), variables: { id: "" } };

  it("allow (the default): text and ids both run, for every caller", async () => {
    stored.variables.id = org.taskIds[0] as string;
    for (const headers of [apiKey, bearer]) {
      expect((await post(t, { query: text, variables: { id: org.taskIds[0] } }, headers)).body.data.task.id).toBe(org.taskIds[0]);
      expect((await post(t, stored, headers)).body.data.task.id).toBe(org.taskIds[0]);
    }
  });

  it("sessions: a JWT or session caller runs only stored documents; an API key may still send text", async () => {
    const sessions = await appWith({ trustedDocuments: "sessions" });
    const session = await createSession(t.db, org.userIds[0] as string, 60_000);
    const cookie = { cookie: `session_token=${session.token}`, "x-organization-id": org.organizationId };
    for (const headers of [bearer, cookie]) {
      const refused = await post(sessions, { query: text, variables: { id: org.taskIds[0] } }, headers);
      expect(refused.status).toBe(200);
      expect(refused.body.data).toBeUndefined();
      expect(refused.body.errors[0].extensions.code).toBe("PERSISTED_QUERY_REQUIRED");
      const strict = await post(sessions, { query: text }, { ...headers, accept: "application/graphql-response+json" });
      expect(strict.status).toBe(400);
      expect((await post(sessions, stored, headers)).body.data.task.id).toBe(org.taskIds[0]);
      // GraphiQL's introspection is not an operation of an app.
      expect((await post(sessions, { query: introspection }, headers)).body.data.__schema.queryType.name).toBe("Query");
    }
    expect((await post(sessions, { query: text, variables: { id: org.taskIds[0] } }, apiKey)).body.data.task.id).toBe(
      org.taskIds[0],
    );
    // Text beside its hash is still text: refused.
    const withHash = await post(sessions, { query: getTask, documentId: idOf(getTask), variables: stored.variables }, bearer);
    expect(withHash.body.errors[0].extensions.code).toBe("PERSISTED_QUERY_REQUIRED");
  });

  it("all: every caller runs only stored documents; the REST facade is unaffected", async () => {
    const all = await appWith({ trustedDocuments: "all" });
    const refused = await post(all, { query: text, variables: { id: org.taskIds[0] } }, apiKey);
    expect(refused.body.errors[0].extensions.code).toBe("PERSISTED_QUERY_REQUIRED");
    expect((await post(all, stored, apiKey)).body.data.task.id).toBe(org.taskIds[0]);
    const rest = await all.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body.id).toBe(org.taskIds[0]);
  });
});

describe("every replica agrees", () => {
  it("a replica started after a publish runs the document; one that was asked before sees it within seconds", async () => {
    const late = unique("query Late($id: ID!) { task(taskId: $id) { id status } }");
    const body = { documentId: idOf(late), variables: { id: org.taskIds[0] } };
    const before = await appWith();
    expect((await post(before, body, apiKey)).body.errors[0].extensions.code).toBe("PERSISTED_QUERY_NOT_FOUND");

    expect(await publish([late], "1.1.0")).toEqual({ app, version: "1.1.0", published: 1, alreadyKnown: 0 });
    const after = await appWith();
    expect((await post(after, body, apiKey)).body.data.task.id).toBe(org.taskIds[0]);

    const started = Date.now();
    let answer = await post(before, body, apiKey);
    while (answer.body.errors && Date.now() - started < 5_000) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      answer = await post(before, body, apiKey);
    }
    expect(answer.body.data.task.id).toBe(org.taskIds[0]);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("publishing again changes nothing", async () => {
    expect(await publish([getTask, createComment], "2.0.0")).toEqual({ app, version: "2.0.0", published: 0, alreadyKnown: 2 });
    const row = await t.db.trustedDocument.findUnique({ where: { id: documentIdOf(getTask) } });
    expect(row).toMatchObject({ app, version: "1.0.0", text: getTask });
  });
});

describe("request log and /metrics", () => {
  it("name the app and version of each stored document run, and count refused texts and unknown ids", async () => {
    const counting = await appWith({ trustedDocuments: "sessions" });
    await post(counting, { documentId: idOf(getTask), variables: { id: org.taskIds[0] } }, apiKey);
    await post(counting, { documentId: idOf(getTask), variables: { id: org.taskIds[1] } }, apiKey);
    await post(counting, { documentId: idOf(unique("query Unknown { __typename }")) }, apiKey);
    await post(counting, { query: "{ viewer { id } }" }, bearer);
    const metrics = await (await counting.app.fetch(new Request("http://test/metrics"))).text();
    expect(metrics).toContain(`trusted_document_runs_total{app="${app}",version="1.0.0"} 2`);
    expect(metrics).toMatch(/^trusted_document_unknown_total 1$/m);
    expect(metrics).toMatch(/^trusted_document_refused_total 1$/m);

    lines.length = 0;
    await post(logged, { documentId: idOf(getTask), variables: { id: org.taskIds[0] } }, apiKey);
    await post(logged, { documentId: idOf(unique("query Unknown { __typename }")) }, apiKey);
    const requests = lines.filter((line) => line.msg === "request");
    expect(requests.map((line) => line.document)).toEqual([
      { outcome: "stored", id: documentIdOf(getTask), app, version: "1.0.0" },
      { outcome: "unknown", id: documentIdOf(unique("query Unknown { __typename }")) },
    ]);
  });
});

describe("GraphQL over HTTP conformance with the trusted documents plugin", () => {
  // The default policy, and sessions for an API key (which may still send text): the audits stay whole.
  for (const policy of [undefined, "sessions"] as const) {
    it(`passes every graphql-http server audit, warnings included, with TRUSTED_DOCUMENTS=${policy ?? "(unset: allow)"}`, async () => {
      const target = await appWith({ trustedDocuments: policy });
      const fetchFn = (input: RequestInfo | URL, init?: RequestInit) => {
        const request = new Request(input, init);
        request.headers.set("x-api-key", org.apiKey);
        return target.app.fetch(request);
      };
      const audits = serverAudits({ url: "http://test/graphql", fetchFn });
      expect(audits.length).toBeGreaterThanOrEqual(61);
      const failed: string[] = [];
      for (const audit of audits) {
        const result = await audit.fn();
        if (result.status !== "ok") failed.push(`${audit.name}: ${result.status} ${result.reason}`);
      }
      expect(failed).toEqual([]);
    });
  }
});
