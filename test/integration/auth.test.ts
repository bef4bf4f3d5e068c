import { describe, expect, it } from "vitest";
import { revokeApiKey } from "../../src/admin/admin.service.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();

const taskQuery = `query($taskId: ID!) { task(taskId: $taskId) { id } }`;

async function expectBoth(key: string | undefined, headers: Record<string, string>, status: number, code: string) {
  const rest = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key, headers });
  expect(rest.status).toBe(status);
  expect(rest.body.code).toBe(code);
  const gql = await t.gql(taskQuery, { taskId: org.taskIds[0] }, { key, headers });
  expect(gql.body.errors[0].extensions.code).toBe(code);
  // A failing credential is refused before execution (no body is read): no data at all. A missing
  // scope is refused by the field: task is nullable over GraphQL, so it is null with its error.
  if (status === 401) expect(gql.body.data ?? null).toBeNull();
  else expect(gql.body.data?.task ?? null).toBeNull();
}

describe("API key authentication", () => {
  it("answers 401 without a credential", () => expectBoth(undefined, {}, 401, "UNAUTHENTICATED"));
  it("answers 401 for a malformed key", () => expectBoth("not-a-key", {}, 401, "UNAUTHENTICATED"));
  it("answers 401 for a well-formed unknown key", () =>
    expectBoth(`cwk_0123456789abcdef_${"A".repeat(43)}`, {}, 401, "UNAUTHENTICATED"));
  it("answers 401 for a known key id with a wrong secret", () =>
    expectBoth(`${org.apiKey.slice(0, 21)}${"B".repeat(43)}`, {}, 401, "UNAUTHENTICATED"));

  it("answers 401 for a revoked key", async () => {
    const key = await t.keyWith(org.organizationId, ["task:read"]);
    expect((await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: key.key })).status).toBe(200);
    const revokedAt = Date.now();
    await revokeApiKey(t.db, key.id);
    // Credentials are cached briefly; a revocation must take effect within 5 seconds.
    while ((await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: key.key })).status === 200) {
      expect(Date.now() - revokedAt).toBeLessThan(5_000);
      await new Promise((r) => setTimeout(r, 100));
    }
    await expectBoth(key.key, {}, 401, "UNAUTHENTICATED");
  });

  it("answers 401 for an expired key", async () => {
    const key = await t.keyWith(org.organizationId, ["task:read"], { expiresInMs: 1 });
    await new Promise((r) => setTimeout(r, 5));
    await expectBoth(key.key, {}, 401, "UNAUTHENTICATED");
  });

  it("accepts X-Organization-Id naming the key's organization and answers 403 for another", async () => {
    const ok = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, {
      key: org.apiKey,
      headers: { "x-organization-id": org.organizationId },
    });
    expect(ok.status).toBe(200);
    await expectBoth(org.apiKey, { "x-organization-id": other.organizationId }, 403, "FORBIDDEN");
  });

  it("lets a bad key decide even when a bearer token is present", () =>
    expectBoth("cwk_bad", { authorization: "Bearer something" }, 401, "UNAUTHENTICATED"));

  it("answers 403 when the key lacks the operation's scope, on both transports", async () => {
    const key = await t.keyWith(org.organizationId, ["comment:create"]);
    await expectBoth(key.key, {}, 403, "FORBIDDEN");
    const cases: [string, string, unknown][] = [
      ["PATCH", `/v1/people/${org.memberIds[0]}/unlink-device`, undefined],
      ["POST", `/v1/policies/${org.policyIds[0]}/versions`, {}],
      ["GET", `/v1/task-management/stats?entityId=${org.vendorIds[0]}&entityType=vendor`, undefined],
    ];
    for (const [method, path, body] of cases) {
      const res = await t.rest(method, path, { key: key.key, body });
      expect(res.status, path).toBe(403);
      expect(res.body.message).toMatch(/(member:update|policy:update|task:read)/);
    }
    const readOnly = await t.keyWith(org.organizationId, ["task:read"]);
    const comment = await t.rest("POST", "/v1/comments", {
      key: readOnly.key,
      body: { content: "x", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] },
    });
    expect(comment.status).toBe(403);
  });

  it("records when a key was last used, at most once a minute", async () => {
    const key = await t.keyWith(org.organizationId, ["task:read"]);
    await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: key.key });
    const first = await t.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
    expect(first.lastUsedAt).not.toBeNull();
    const { statements } = await t.countQueries(() => t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: key.key }));
    expect(statements.some((s) => /^UPDATE/i.test(s.trim()))).toBe(false);
  });

  it("stores only a hash of the key", async () => {
    const rows = await t.db.apiKey.findMany({ where: { organizationId: org.organizationId } });
    for (const row of rows) {
      expect(Buffer.from(row.secretHash).toString("hex")).not.toContain(Buffer.from(org.apiKey).toString("hex"));
      expect(JSON.stringify(row)).not.toContain(org.apiKey.slice(22));
    }
  });

  it("needs a credential for introspection too: nothing of an anonymous body is read", async () => {
    const anonymous = await t.gql("{ __schema { queryType { name } } }");
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors[0].extensions.code).toBe("UNAUTHENTICATED");
    const res = await t.gql("{ __schema { queryType { name } } }", {}, { key: org.apiKey });
    expect(res.body.data.__schema.queryType.name).toBe("Query");
  });
});
