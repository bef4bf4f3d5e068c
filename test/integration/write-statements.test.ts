import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

/**
 * The statements of a write (issue 47): each one is a round trip inside or before the transaction,
 * and through Prisma about a millisecond of CPU (bench/results/2026-11-28-write-path.md). Counted
 * without BEGIN/COMMIT and the API key's cached lookup, with a webhook endpoint listening.
 */
let t: TestApp;
let org: SeedResult;

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
  const endpoint = await t.rest("POST", "/v1/webhook-endpoints", {
    key: org.apiKey,
    body: { url: "https://hooks.example.com/statements" },
  });
  expect(endpoint.status).toBe(201);
});
afterAll(() => t.close());

/** The second of two equal writes (the first caches the API key); `body` is made for each. */
const counted = async (method: string, path: string, body: unknown | (() => unknown), status: number) => {
  const next = () => (typeof body === "function" ? body() : body);
  await t.rest(method, path, { key: org.apiKey, body: next() });
  const { statements } = await t.countQueries(async () => {
    const res = await t.rest(method, path, { key: org.apiKey, body: next() });
    expect(res.status, res.text).toBe(status);
  });
  // PGlite's adapter logs its BEGIN and COMMIT as comments (`-- Implicit "BEGIN" query ...`).
  const work = statements.filter((s) => !/^(BEGIN|COMMIT|ROLLBACK|--)/i.test(s.trim()) && !s.includes('"ApiKey"'));
  return { count: work.length, statements: work };
};

describe("statements per write", () => {
  it("creates a comment in one statement: its record's and author's checks, the comment, its event with its chain and delivery, without BEGIN or COMMIT", async () => {
    const body = { content: "Counted", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] };
    const { count, statements } = await counted("POST", "/v1/comments", body, 201);
    expect(count, statements.join("\n")).toBe(1);
    const all = await t.countQueries(() => t.rest("POST", "/v1/comments", { key: org.apiKey, body }));
    expect(all.statements.filter((s) => /^(BEGIN|COMMIT)|Implicit "(BEGIN|COMMIT)"/i.test(s.trim()))).toEqual([]);
  });

  it("creates a comment mentioning a member in four: the checks, the comment, its notification, the event", async () => {
    const body = {
      content: `Over to @[Grace](${org.memberIds[1]})`,
      entityId: org.taskIds[0],
      entityType: "task",
      userId: org.userIds[0],
    };
    const { count, statements } = await counted("POST", "/v1/comments", body, 201);
    expect(count, statements.join("\n")).toBe(4);
  });

  it("404s in one statement for a missing record or an author who is not an active member", async () => {
    for (const body of [
      { content: "x", entityId: "tsk_missing", entityType: "task", userId: org.userIds[0] },
      { content: "x", entityId: org.taskIds[0], entityType: "task", userId: "usr_missing" },
    ]) {
      const { count } = await counted("POST", "/v1/comments", body, 404);
      expect(count).toBe(1);
    }
  });

  it("updates a task in three and creates a policy version in five", async () => {
    let n = 0;
    const task = await counted("PATCH", `/v1/tasks/${org.taskIds[0]}`, () => ({ title: `Counted ${n++}` }), 200);
    expect(task.count, task.statements.join("\n")).toBe(3);
    const version = await counted("POST", `/v1/policies/${org.policyIds[0]}/versions`, {}, 201);
    expect(version.count, version.statements.join("\n")).toBe(5);
  });
});

describe("a new comment's answer, made of what the write knows", () => {
  const selection = `id content createdAt contextUrl
    author { id name email image deactivated member { id name } }
    attachments { id name type size sha256 createdAt }
    mentions { id name }
    entity { __typename ... on Task { id title } }`;

  it("is what reading the comment back answers, on both transports", async () => {
    const grace = org.memberIds[1];
    const created = await t.gql(
      `mutation ($entityId: ID!, $userId: ID!, $content: String!) {
        createComment(content: $content, entityId: $entityId, entityType: task, userId: $userId, contextUrl: "https://app.example.com/t") { ${selection} }
      }`,
      { entityId: org.taskIds[0], userId: org.userIds[0], content: `Over to @[Grace](${grace})` },
      { key: org.apiKey },
    );
    expect(created.body.errors).toBeUndefined();
    const comment = created.body.data.createComment;
    expect(comment.author.name).toBeTruthy();
    expect(comment.mentions).toEqual([{ id: grace, name: expect.any(String) }]);
    const read = await t.gql(
      `query ($id: ID!) { node(id: $id) { ... on Comment { ${selection} } } }`,
      { id: comment.id },
      { key: org.apiKey },
    );
    expect(read.body.data.node).toEqual(comment);

    const rest = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: "Read me back", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] },
    });
    expect(rest.status).toBe(201);
    const page = await t.rest("GET", `/v1/comments?entityId=${org.taskIds[0]}&entityType=task&limit=5`, { key: org.apiKey });
    expect(page.body.items.find((item: { id: string }) => item.id === rest.body.id)).toEqual(rest.body);
  });

  it("is the same for a caller without member:read (no e-mail but its own)", async () => {
    const key = await t.keyWith(org.organizationId, ["comment:create", "comment:read"]);
    const created = await t.rest("POST", "/v1/comments", {
      key: key.key,
      body: { content: "Scoped", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] },
    });
    expect(created.status).toBe(201);
    expect(created.body.author.email).toBeNull();
    const page = await t.rest("GET", `/v1/comments?entityId=${org.taskIds[0]}&entityType=task&limit=5`, { key: key.key });
    expect(page.body.items.find((item: { id: string }) => item.id === created.body.id)).toEqual(created.body);
  });
});
