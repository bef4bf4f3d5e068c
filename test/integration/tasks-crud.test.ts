import { beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import type { Prisma } from "../../src/generated/prisma/client.js";
import { openFixture } from "../helpers/fixtures.js";

const taskFields = "id title status createdAt updatedAt description taskTemplateId";
const taskKeys = ["createdAt", "description", "id", "status", "taskTemplateId", "title", "updatedAt"];
/** REST answers other than GET /v1/tasks/{taskId} also carry the assignee's member id and the due date. */
const restTaskKeys = ["assigneeId", "dueDate", ...taskKeys].sort();

const createTask = `mutation($title: String!, $description: String, $status: TaskStatus, $taskTemplateId: String) {
  createTask(title: $title, description: $description, status: $status, taskTemplateId: $taskTemplateId) { ${taskFields} }
}`;
const updateTask = `mutation($taskId: ID!, $title: String, $description: String, $status: TaskStatus, $taskTemplateId: String) {
  updateTask(taskId: $taskId, title: $title, description: $description, status: $status, taskTemplateId: $taskTemplateId) { ${taskFields} }
}`;
const listTasks = `query($limit: Int, $cursor: String) { tasks(limit: $limit, cursor: $cursor) { items { ${taskFields} assigneeId dueDate } nextCursor } }`;

// Each describe seeds organizations of its own.
const { t } = await openFixture({ organizations: 0 });

describe("create task", () => {
  let org: SeedResult;
  beforeAll(async () => {
    org = await t.seedOrg();
  });

  it("answers 201 with exactly the task's fields over REST", async () => {
    const res = await t.rest("POST", "/v1/tasks", {
      key: org.apiKey,
      body: {
        title: "Collect evidence",
        description: "Screenshots of the MFA settings",
        status: "in_progress",
        taskTemplateId: "tmpl_mfa",
      },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(restTaskKeys);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^tsk_[0-9a-f]{32}$/),
      title: "Collect evidence",
      description: "Screenshots of the MFA settings",
      status: "in_progress",
      taskTemplateId: "tmpl_mfa",
    });
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
    const get = await t.rest("GET", `/v1/tasks/${res.body.id}`, { key: org.apiKey });
    expect(get.status).toBe(200);
    // GET keeps the spec's exact shape: the same task without assigneeId and dueDate.
    const { assigneeId, dueDate, ...spec } = res.body;
    expect(assigneeId).toBeNull();
    expect(dueDate).toBeNull();
    expect(get.body).toEqual(spec);
  });

  it("applies the defaults and answers the same shape over GraphQL", async () => {
    const res = await t.gql(createTask, { title: "Minimal" }, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(Object.keys(res.body.data.createTask).sort()).toEqual(taskKeys);
    expect(res.body.data.createTask).toMatchObject({ title: "Minimal", status: "todo", description: null, taskTemplateId: null });
  });

  it("trims the title and accepts null for the optional text fields", async () => {
    const res = await t.rest("POST", "/v1/tasks", {
      key: org.apiKey,
      body: { title: "  Spaced  ", description: null, taskTemplateId: null },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ title: "Spaced", description: null, taskTemplateId: null, status: "todo" });
  });

  it("writes a task.created audit event", async () => {
    const res = await t.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: "Audited task", status: "blocked" } });
    expect(res.status).toBe(201);
    const events = await t.db.auditEvent.findMany({ where: { entityId: res.body.id } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      organizationId: org.organizationId,
      action: "task.created",
      entityType: "task",
      actorApiKeyId: expect.stringMatching(/^apk_/),
      data: { title: "Audited task", status: "blocked", taskTemplateId: null },
    });
  });

  it("counts lengths in code points: 255-emoji title and 10000-emoji description pass", async () => {
    const res = await t.rest("POST", "/v1/tasks", {
      key: org.apiKey,
      body: { title: "🚀".repeat(255), description: "😀".repeat(10_000) },
    });
    expect(res.status).toBe(201);
    expect(res.body.title).toBe("🚀".repeat(255));
  });

  it.each([
    [{}, "title"],
    [{ title: "" }, "title"],
    [{ title: " \t\n " }, "title"],
    [{ title: "t".repeat(256) }, "title"],
    [{ title: null }, "title"],
    [{ title: 5 }, "title"],
    [{ title: "ok", description: "d".repeat(10_001) }, "description"],
    [{ title: "ok", status: "finished" }, "status"],
    [{ title: "ok", taskTemplateId: "" }, "taskTemplateId"],
    [{ title: "ok", taskTemplateId: "x".repeat(256) }, "taskTemplateId"],
    [{ title: "ok", assignee: "usr_1" }, "assignee"],
  ])("answers 400 for %j with a detail at %s", async (body, path) => {
    const before = await t.db.task.count({ where: { organizationId: org.organizationId } });
    const res = await t.rest("POST", "/v1/tasks", { key: org.apiKey, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
    expect(await t.db.task.count({ where: { organizationId: org.organizationId } })).toBe(before);
  });

  it("takes a null status on create as not given: the default applies", async () => {
    const res = await t.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: "ok", status: null } });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe("todo");
  });

  it("validates the same way over GraphQL", async () => {
    const res = await t.gql(createTask, { title: "  ", description: "d".repeat(10_001) }, { key: org.apiKey });
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect(res.body.errors[0].extensions.details.map((d: { path: string }) => d.path).sort()).toEqual(["description", "title"]);
  });

  it("needs task:create", async () => {
    const { key } = await t.keyWith(org.organizationId, ["task:read", "task:update"]);
    const res = await t.rest("POST", "/v1/tasks", { key, body: { title: "No" } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
  });
});

describe("list tasks", () => {
  let org: SeedResult;
  let other: SeedResult;
  beforeAll(async () => {
    org = await t.seedOrg();
    other = await t.seedOrg();
    // 3 seeded + 22 = 25 tasks
    for (let i = 0; i < 22; i++) {
      const res = await t.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: `Task ${i}` } });
      expect(res.status).toBe(201);
    }
  });

  it("answers 200 with 20 tasks by default, newest first, and a cursor to the rest", async () => {
    const first = await t.rest("GET", "/v1/tasks", { key: org.apiKey });
    expect(first.status).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(["items", "nextCursor"]);
    expect(first.body.items).toHaveLength(20);
    expect(Object.keys(first.body.items[0]).sort()).toEqual(restTaskKeys);
    expect(first.body.items[0].title).toBe("Task 21");
    const second = await t.rest("GET", `/v1/tasks?cursor=${first.body.nextCursor}`, { key: org.apiKey });
    expect(second.status).toBe(200);
    expect(second.body.items).toHaveLength(5);
    expect(second.body.nextCursor).toBeNull();
    const ids = [...first.body.items, ...second.body.items].map((task: { id: string }) => task.id);
    const expected = await t.db.task.findMany({
      where: { organizationId: org.organizationId },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      select: { id: true },
    });
    expect(ids).toEqual(expected.map((task) => task.id));
    expect(ids.some((id) => other.taskIds.includes(id))).toBe(false);
  });

  it("answers the same over GraphQL", async () => {
    const rest = await t.rest("GET", "/v1/tasks?limit=7", { key: org.apiKey });
    const gql = await t.gql(listTasks, { limit: 7 }, { key: org.apiKey });
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.tasks).toEqual(rest.body);
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["limit=abc", "limit"],
    ["cursor=bogus", "cursor"],
  ])("answers 400 for ?%s", async (query, path) => {
    const res = await t.rest("GET", `/v1/tasks?${query}`, { key: org.apiKey });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path, message: expect.any(String) }]);
  });

  it("costs one SQL statement for the tasks whatever the page size: the page's ids and rows together", async () => {
    const small = await t.countQueries(() => t.rest("GET", "/v1/tasks?limit=2", { key: org.apiKey }));
    const large = await t.countQueries(() => t.rest("GET", "/v1/tasks?limit=25", { key: org.apiKey }));
    expect(large.count).toBe(small.count);
    const taskReads = large.statements.filter((s) => s.includes('"Task"'));
    expect(taskReads).toHaveLength(1);
    expect(taskReads[0]).not.toMatch(/"id" = ANY\(/);
  });

  it("needs task:read", async () => {
    const { key } = await t.keyWith(org.organizationId, ["task:create"]);
    expect((await t.rest("GET", "/v1/tasks", { key })).status).toBe(403);
  });
});

describe("update task", () => {
  // Tests that change a task each change one of their own; the rest change nothing of `taskId`.
  let org: SeedResult;
  let taskId: string;
  beforeAll(async () => {
    org = await t.seedOrg();
    taskId = org.taskIds[0] as string;
  });

  /** The first demo task of a new organization, with `state` over its seeded fields. */
  async function ownTask(state: Prisma.TaskUpdateInput = {}) {
    const own = await t.seedOrg();
    const id = own.taskIds[0] as string;
    await t.db.task.update({ where: { id }, data: state });
    return { key: own.apiKey, taskId: id };
  }

  const auditsOf = (id: string) =>
    t.db.auditEvent.findMany({ where: { entityId: id, action: "task.updated" }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });

  it("changes the given fields, answers 200 with the task and records what changed", async () => {
    const { key, taskId } = await ownTask();
    const before = await t.db.task.findUniqueOrThrow({ where: { id: taskId } });
    const res = await t.rest("PATCH", `/v1/tasks/${taskId}`, {
      key,
      body: { title: "Review access controls (Q3)", status: "done", taskTemplateId: "tmpl_access_review" },
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(restTaskKeys);
    expect(res.body).toMatchObject({
      id: taskId,
      title: "Review access controls (Q3)",
      status: "done",
      description: "Quarterly review of production access.",
      taskTemplateId: "tmpl_access_review",
    });
    expect(new Date(res.body.updatedAt).getTime()).toBeGreaterThan(before.updatedAt.getTime());
    const audits = await auditsOf(taskId);
    expect(audits).toHaveLength(1);
    expect(audits[0]?.data).toEqual({
      changes: {
        title: { from: "Review access controls", to: "Review access controls (Q3)" },
        status: { from: "in_progress", to: "done" },
      },
    });
  });

  it("leaves absent fields unchanged and clears description and taskTemplateId with null", async () => {
    const { key, taskId } = await ownTask({ title: "Review access controls (Q3)", status: "done" });
    const res = await t.rest("PATCH", `/v1/tasks/${taskId}`, {
      key,
      body: { description: null, taskTemplateId: null },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      title: "Review access controls (Q3)",
      status: "done",
      description: null,
      taskTemplateId: null,
    });
    expect((await auditsOf(taskId)).at(-1)?.data).toEqual({
      changes: {
        description: { from: "Quarterly review of production access.", to: null },
        taskTemplateId: { from: "tmpl_access_review", to: null },
      },
    });
  });

  it("works over GraphQL with the same null semantics", async () => {
    const { key, taskId } = await ownTask({ title: "Review access controls (Q3)", status: "done" });
    const set = await t.gql(updateTask, { taskId, description: "Back again", status: "blocked" }, { key });
    expect(set.body.errors).toBeUndefined();
    expect(set.body.data.updateTask).toMatchObject({
      description: "Back again",
      status: "blocked",
      title: "Review access controls (Q3)",
    });
    const cleared = await t.gql(updateTask, { taskId, description: null }, { key });
    expect(cleared.body.errors).toBeUndefined();
    expect(cleared.body.data.updateTask).toMatchObject({ description: null, status: "blocked" });
    const rest = await t.rest("GET", `/v1/tasks/${taskId}`, { key });
    expect(rest.body).toEqual(cleared.body.data.updateTask);
  });

  it("answers 200 without writing anything when nothing actually changes", async () => {
    const { key, taskId } = await ownTask({ status: "blocked", description: null });
    const count = (await auditsOf(taskId)).length;
    const before = await t.db.task.findUniqueOrThrow({ where: { id: taskId } });
    const res = await t.rest("PATCH", `/v1/tasks/${taskId}`, { key, body: { status: "blocked", description: null } });
    expect(res.status).toBe(200);
    expect(await auditsOf(taskId)).toHaveLength(count);
    expect((await t.db.task.findUniqueOrThrow({ where: { id: taskId } })).updatedAt).toEqual(before.updatedAt);
  });

  it.each([
    [{}, ""],
    [{ title: null }, "title"],
    [{ status: null }, "status"],
    [{ title: "   " }, "title"],
    [{ title: "t".repeat(256) }, "title"],
    [{ description: "d".repeat(10_001) }, "description"],
    [{ status: "closed" }, "status"],
    [{ taskTemplateId: "" }, "taskTemplateId"],
    [{ taskId: "tsk_other" }, "taskId"],
    [{ priority: "high" }, "priority"],
  ])("answers 400 for %j with a detail at %j", async (body, path) => {
    const before = await t.db.task.findUniqueOrThrow({ where: { id: taskId } });
    const res = await t.rest("PATCH", `/v1/tasks/${taskId}`, { key: org.apiKey, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
    expect(await t.db.task.findUniqueOrThrow({ where: { id: taskId } })).toEqual(before);
  });

  it("refuses an empty update and a null title over GraphQL", async () => {
    const empty = await t.gql(updateTask, { taskId }, { key: org.apiKey });
    expect(empty.body.errors[0].extensions).toMatchObject({ code: "BAD_USER_INPUT", details: [{ path: "" }] });
    const nullTitle = await t.gql(updateTask, { taskId, title: null }, { key: org.apiKey });
    expect(nullTitle.body.errors[0].extensions).toMatchObject({ code: "BAD_USER_INPUT", details: [{ path: "title" }] });
  });

  it("answers 404 for a missing task and for another organization's, changing nothing", async () => {
    const other = await t.seedOrg();
    const foreignId = other.taskIds[1] as string;
    const before = await t.db.task.findUniqueOrThrow({ where: { id: foreignId } });
    for (const id of ["tsk_missing", foreignId]) {
      const res = await t.rest("PATCH", `/v1/tasks/${id}`, { key: org.apiKey, body: { title: "Hijacked" } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ statusCode: 404, error: "Not Found", code: "NOT_FOUND", message: expect.any(String) });
      const gql = await t.gql(updateTask, { taskId: id, status: "done" }, { key: org.apiKey });
      expect(gql.body.data).toBeNull();
      expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
    }
    expect(await t.db.task.findUniqueOrThrow({ where: { id: foreignId } })).toEqual(before);
    expect(await auditsOf(foreignId)).toHaveLength(0);
  });

  it("needs task:update", async () => {
    const { key } = await t.keyWith(org.organizationId, ["task:read", "task:create"]);
    const res = await t.rest("PATCH", `/v1/tasks/${taskId}`, { key, body: { title: "No" } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
  });
});
