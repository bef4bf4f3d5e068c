import { describe, expect, it } from "vitest";
import { ownRestRoutes, restRoutes } from "../../src/rest/routes.js";
import { openFixture } from "../helpers/fixtures.js";
import { createTestApp } from "../helpers/test-app.js";

const { t, org } = await openFixture({ bodyLimitBytes: 64 * 1024, organizations: 1 });

describe("REST surface", () => {
  it.each([
    ["GET", "/v1/task"],
    ["GET", "/v1/task-item-stats"],
    ["POST", "/v1/create-comment"],
    ["POST", "/v1/webhook"],
    ["DELETE", "/v1/webhook/1"],
    ["GET", "/v1tasks"],
    ["GET", "/v1"],
    ["GET", "/v1/nothing/here"],
  ])("answers %s %s with a JSON 404", async (method, path) => {
    const res = await t.rest(method, path, { key: org.apiKey, body: method === "GET" || method === "DELETE" ? undefined : {} });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ statusCode: 404, error: "Not Found", code: "NOT_FOUND" });
  });

  it("answers a wrong method with 405 and Allow", async () => {
    const res = await t.rest("DELETE", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD, PATCH");
    expect(res.body.code).toBe("METHOD_NOT_ALLOWED");
  });

  it("answers 413 in our envelope for a body over the limit, on both transports", async () => {
    const body = { content: "x".repeat(70 * 1024), entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] };
    const rest = await t.rest("POST", "/v1/comments", { key: org.apiKey, body });
    expect(rest.status).toBe(413);
    expect(rest.body).toMatchObject({ statusCode: 413, code: "PAYLOAD_TOO_LARGE" });
    const gql = await t.gql(
      'mutation($c: String!) { createComment(content: $c, entityId: "x", entityType: task) { id } }',
      { c: body.content },
      { key: org.apiKey },
    );
    expect(gql.status).toBe(413);
    expect(gql.body.errors[0].extensions.code).toBe("PAYLOAD_TOO_LARGE");
  });

  it("returns a request id, taking a sane one from the caller", async () => {
    const own = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey, headers: { "x-request-id": "trace-123" } });
    expect(own.headers.get("x-request-id")).toBe("trace-123");
    const generated = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, {
      key: org.apiKey,
      headers: { "x-request-id": "bad id with spaces" },
    });
    expect(generated.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("serves the OpenAPI document with exactly the routes of the route table (details in openapi.test.ts)", async () => {
    const res = await t.rest("GET", "/v1/openapi.json");
    expect(res.status).toBe(200);
    const doc = res.body;
    const operations = Object.entries(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap(
      ([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const expected = [...Object.values(restRoutes), ...Object.values(ownRestRoutes)].map(
      (r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`,
    );
    expect(operations.sort()).toEqual(expected.sort());
    for (const route of [
      "GET /task-management/stats",
      "GET /tasks/{taskId}",
      "PATCH /people/{id}/unlink-device",
      "POST /comments",
      "POST /policies/{id}/versions",
    ]) {
      expect(expected).toContain(route);
    }
  });
});

describe("health and readiness", () => {
  it("answers /health while the process runs and /ready while the database answers", async () => {
    const app = await createTestApp({ ownDatabase: true });
    expect((await app.app.fetch(new Request("http://test/health"))).status).toBe(200);
    const ready = await app.app.fetch(new Request("http://test/ready"));
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready", attachmentStore: "available" });
    await app.database.close();
    const down = await app.app.fetch(new Request("http://test/ready"));
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ status: "database unavailable", statusCode: 503, code: "SERVICE_UNAVAILABLE" });
  });

  it("answers /ready with 503 while shutting down", async () => {
    const t2 = await createTestApp();
    try {
      const { createApp } = await import("../../src/app.js");
      const pino = (await import("pino")).default;
      let shuttingDown = false;
      const app = createApp({
        database: t2.database,
        config: { production: true, bodyLimitBytes: 1024 },
        logger: pino({ level: "silent" }),
        isShuttingDown: () => shuttingDown,
      });
      expect((await app.fetch(new Request("http://test/ready"))).status).toBe(200);
      shuttingDown = true;
      expect((await app.fetch(new Request("http://test/ready"))).status).toBe(503);
    } finally {
      await t2.close();
    }
  });
});
