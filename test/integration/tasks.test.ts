import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org } = await openFixture({ organizations: 1 });

const taskQuery = `query($taskId: ID!) { task(taskId: $taskId) { id title status createdAt updatedAt description taskTemplateId } }`;

describe("get task", () => {
  it("returns the task with exactly the spec's fields over REST", async () => {
    const res = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      "createdAt",
      "description",
      "id",
      "status",
      "taskTemplateId",
      "title",
      "updatedAt",
    ]);
    expect(res.body).toMatchObject({
      id: org.taskIds[0],
      title: "Review access controls",
      status: "in_progress",
      taskTemplateId: "tmpl_access_review",
    });
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
  });

  it("returns null optional fields as null", async () => {
    const res = await t.rest("GET", `/v1/tasks/${org.taskIds[1]}`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.description).toBeNull();
    expect(res.body.taskTemplateId).toBeNull();
  });

  it("returns the same task over GraphQL", async () => {
    const rest = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey });
    const res = await t.gql(taskQuery, { taskId: org.taskIds[0] }, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.task).toEqual(rest.body);
  });

  it("returns 404 NOT_FOUND for a missing task on both transports", async () => {
    const res = await t.rest("GET", "/v1/tasks/tsk_missing", { key: org.apiKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ statusCode: 404, error: "Not Found", code: "NOT_FOUND", message: expect.any(String) });
    const gql = await t.gql(taskQuery, { taskId: "tsk_missing" }, { key: org.apiKey });
    // Nullable over GraphQL: the other root fields of a request still answer.
    expect(gql.body.data).toEqual({ task: null });
    expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
  });

  it("refuses a query parameter that is not an argument", async () => {
    const res = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}?taskId=other`, { key: org.apiKey });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.details).toEqual([{ path: "taskId", message: expect.any(String) }]);
  });

  it("issues one SQL statement once the caller's credential is cached", async () => {
    await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey });
    const { statements } = await t.countQueries(() => t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey }));
    expect(statements).toHaveLength(1);
    expect(statements[0]).toContain('"Task"');
    const gql = await t.countQueries(() => t.gql(taskQuery, { taskId: org.taskIds[0] }, { key: org.apiKey }));
    expect(gql.statements).toHaveLength(1);
  });
});
