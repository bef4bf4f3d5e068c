import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org } = await openFixture({ organizations: 1, corsOrigins: ["https://app.example.com"] });
const long = (n: number) => `x${"y".repeat(n - 1)}`;

describe("bounds the OpenAPI document states for what a caller sends", () => {
  it("refuses an id longer than 64 characters with 400, in a path, a query, a body and over GraphQL", async () => {
    const id = long(65);
    for (const [name, res] of [
      ["path", await t.rest("GET", `/v1/tasks/${id}`, { key: org.apiKey })],
      ["query", await t.rest("GET", `/v1/comments?entityId=${id}&entityType=task`, { key: org.apiKey })],
      ["body", await t.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: "t", assigneeId: id } })],
    ] as const) {
      expect(res.status, name).toBe(400);
      expect(res.body.code, name).toBe("BAD_USER_INPUT");
      expect(res.body.details?.[0]?.message, name).toBe("must be at most 64 characters");
    }
    const graphql = await t.gql("query($id: ID!) { task(taskId: $id) { id } }", { id }, { key: org.apiKey });
    expect(graphql.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    const nodes = await t.gql("query($ids: [ID!]!) { nodes(ids: $ids) { id } }", { ids: ["tsk_x", id] }, { key: org.apiKey });
    expect(nodes.body.errors[0]).toMatchObject({
      extensions: { code: "BAD_USER_INPUT" },
      message: "ids.1 must be at most 64 characters",
    });
    // 64 is still a lookup: not found.
    expect((await t.rest("GET", `/v1/tasks/${long(64)}`, { key: org.apiKey })).status).toBe(404);
  });

  it("refuses a cursor longer than 4096 characters and an X-Organization-Id longer than 64", async () => {
    const cursor = await t.rest("GET", `/v1/tasks?cursor=${long(4097)}`, { key: org.apiKey });
    expect(cursor.status).toBe(400);
    expect(cursor.body.details).toEqual([{ path: "cursor", message: "must be at most 4096 characters" }]);
    const header = await t.rest("GET", "/v1/tasks", { key: org.apiKey, headers: { "x-organization-id": long(65) } });
    expect(header.status).toBe(400);
    expect(header.body.details).toEqual([{ path: "X-Organization-Id", message: "must be at most 64 characters" }]);
  });

  it("sends the headers the document declares on every answer: rate limit, CORS for a listed origin, Vary", async () => {
    const origin = "https://app.example.com";
    const answers = [
      await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey, headers: { origin } }),
      await t.rest("GET", "/v1/tasks/tsk_missing", { key: org.apiKey, headers: { origin } }),
      await t.rest("POST", "/v1/tasks", { key: org.apiKey, headers: { origin }, body: { title: 5 } }),
      await t.rest("GET", "/v1/tasks", { headers: { origin } }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 404, 400, 401]);
    for (const answer of answers) {
      expect(Number(answer.headers.get("ratelimit-limit")), String(answer.status)).toBeGreaterThan(0);
      expect(answer.headers.get("ratelimit-remaining"), String(answer.status)).toMatch(/^\d+$/);
      expect(answer.headers.get("ratelimit-reset"), String(answer.status)).toMatch(/^\d+$/);
      expect(answer.headers.get("ratelimit-policy"), String(answer.status)).toMatch(/^\d+;w=\d+$/);
      expect(answer.headers.get("access-control-allow-origin"), String(answer.status)).toBe(origin);
      expect(answer.headers.get("vary"), String(answer.status)).toMatch(/Origin/);
    }
  });
});
