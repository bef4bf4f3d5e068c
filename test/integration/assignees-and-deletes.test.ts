import { beforeAll, describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();
let deactivatedMemberId: string;
beforeAll(async () => {
  const created = await t.rest("POST", "/v1/people", {
    key: org.apiKey,
    body: { email: `left-${Date.now()}@example.com`, name: "Left", role: "employee" },
  });
  expect(created.status).toBe(201);
  deactivatedMemberId = created.body.id;
  expect(
    (await t.rest("PATCH", `/v1/people/${deactivatedMemberId}`, { key: org.apiKey, body: { isActive: false } })).status,
  ).toBe(200);
});

const vendorId = () => org.vendorIds[0] as string;

describe("deleteTaskItem", () => {
  it("answers 204 with no body; the item is gone, audited, and the statistics follow", async () => {
    const stats = async () =>
      (await t.rest("GET", `/v1/task-management/stats?entityId=${vendorId()}&entityType=vendor`, { key: org.apiKey })).body;
    const created = await t.rest("POST", "/v1/task-management", {
      key: org.apiKey,
      body: { title: "Review SOC 2", entityId: vendorId(), entityType: "vendor", status: "in_review" },
    });
    expect(created.status).toBe(201);
    const before = await stats();
    const res = await t.rest("DELETE", `/v1/task-management/${created.body.id}`, { key: org.apiKey });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(res.headers.get("content-type")).toBeNull();
    const after = await stats();
    expect(after.total).toBe(before.total - 1);
    expect(after.byStatus.in_review).toBe(before.byStatus.in_review - 1);
    expect(await t.db.taskItem.count({ where: { id: created.body.id } })).toBe(0);
    const event = await t.db.auditEvent.findFirst({ where: { entityId: created.body.id, action: "task_item.deleted" } });
    expect(event?.data).toMatchObject({ title: "Review SOC 2", entityId: vendorId(), status: "in_review" });
    expect((await t.rest("DELETE", `/v1/task-management/${created.body.id}`, { key: org.apiKey })).status).toBe(404);
  });

  it("answers the id and the entity over GraphQL; another organization's item is 404; needs task:update", async () => {
    const id = org.taskItemIds[0] as string;
    const deleteItem =
      "mutation($id: ID!) { deleteTaskItem(id: $id) { deletedId entity { __typename ... on Vendor { id } ... on Risk { id } } } }";
    const foreign = await t.gql(deleteItem, { id }, { key: other.apiKey });
    expect(foreign.body.errors[0].extensions.code).toBe("NOT_FOUND");
    const reader = await t.keyWith(org.organizationId, ["task:read", "task:create"]);
    expect((await t.rest("DELETE", `/v1/task-management/${id}`, { key: reader.key })).status).toBe(403);
    expect(await t.db.taskItem.count({ where: { id } })).toBe(1);
    const { entityType, entityId } = await t.db.taskItem.findUniqueOrThrow({ where: { id } });
    const res = await t.gql(deleteItem, { id }, { key: org.apiKey });
    const __typename = entityType === "vendor" ? "Vendor" : "Risk";
    expect(res.body).toEqual({ data: { deleteTaskItem: { deletedId: id, entity: { __typename, id: entityId } } } });
  });
});

const kinds = [
  {
    label: "task",
    create: (body: Record<string, unknown>) =>
      t.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: "Assigned", ...body } }),
    update: (id: string, body: Record<string, unknown>) => t.rest("PATCH", `/v1/tasks/${id}`, { key: org.apiKey, body }),
    read: (id: string) => `{ task(taskId: "${id}") { id assigneeId assignee { id role user { name } } } }`,
    field: "task",
  },
  {
    label: "task item",
    create: (body: Record<string, unknown>) =>
      t.rest("POST", "/v1/task-management", {
        key: org.apiKey,
        body: { title: "Assigned", entityId: vendorId(), entityType: "vendor", ...body },
      }),
    update: (id: string, body: Record<string, unknown>) =>
      t.rest("PATCH", `/v1/task-management/${id}`, { key: org.apiKey, body }),
    read: (_id: string) =>
      `{ taskItems(entityId: "${vendorId()}", entityType: vendor, limit: 100) { items { id assigneeId assignee { id role user { name } } } } }`,
    field: "taskItems",
  },
] as const;

describe.each(kinds)("$label assignee", (kind) => {
  it("is set on create, changed and unassigned (null) on update, audited", async () => {
    const created = await kind.create({ assigneeId: org.memberIds[1] });
    expect(created.status).toBe(201);
    expect(created.body.assigneeId).toBe(org.memberIds[1]);
    expect(created.body).not.toHaveProperty("assignee");
    const changed = await kind.update(created.body.id, { assigneeId: org.memberIds[3] });
    expect(changed.status).toBe(200);
    expect(changed.body.assigneeId).toBe(org.memberIds[3]);
    const cleared = await kind.update(created.body.id, { assigneeId: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.assigneeId).toBeNull();
    const events = await t.db.auditEvent.findMany({
      where: { entityId: created.body.id, action: { endsWith: ".updated" } },
      orderBy: { createdAt: "asc" },
    });
    expect(events.map((e) => e.data)).toEqual([
      { changes: { assigneeId: { from: org.memberIds[1], to: org.memberIds[3] } } },
      { changes: { assigneeId: { from: org.memberIds[3], to: null } } },
    ]);
  });

  it("refuses a foreign, missing or deactivated member with 404 in our envelope, changing nothing", async () => {
    for (const assigneeId of [other.memberIds[0], "mem_missing", deactivatedMemberId]) {
      const res = await kind.create({ assigneeId });
      expect(res.status, String(assigneeId)).toBe(404);
      expect(res.body).toMatchObject({ statusCode: 404, code: "NOT_FOUND", error: "Not Found" });
    }
    const created = await kind.create({});
    for (const assigneeId of [other.memberIds[0], deactivatedMemberId]) {
      const res = await kind.update(created.body.id, { assigneeId });
      expect(res.status).toBe(404);
    }
    const bad = await kind.update(created.body.id, { assigneeId: "" });
    expect(bad.status).toBe(400);
  });

  it("resolves assignee in the graph, joined into the parent's query; without member:read its id and name only", async () => {
    const created = await kind.create({ assigneeId: org.memberIds[1] });
    const { count } = await t.countQueries(async () => {
      const res = await t.gql(kind.read(created.body.id), {}, { key: org.apiKey });
      expect(res.body.errors).toBeUndefined();
      const record =
        kind.field === "task"
          ? res.body.data.task
          : res.body.data.taskItems.items.find((i: { id: string }) => i.id === created.body.id);
      expect(record.assignee).toEqual({ id: org.memberIds[1], role: "admin", user: { name: "Grace Admin" } });
    });
    // The parent's query, with the assignee and its user joined in, and the API key lookup: no query per record.
    expect(count).toBeLessThanOrEqual(kind.field === "task" ? 2 : 3);

    const key = await t.keyWith(org.organizationId, ["task:read"]);
    const res = await t.gql(kind.read(created.body.id), {}, { key: key.key });
    // The directory answers (who is assigned); the role and the user account are null with FORBIDDEN.
    const record =
      kind.field === "task"
        ? res.body.data.task
        : res.body.data.taskItems.items.find((i: { id: string }) => i.id === created.body.id);
    expect(record).toMatchObject({
      id: created.body.id,
      assigneeId: org.memberIds[1],
      assignee: { id: org.memberIds[1], role: null, user: null },
    });
    expect(res.body.errors.map((e: { path: (string | number)[] }) => e.path.slice(-2))).toEqual([
      ["assignee", "role"],
      ["assignee", "user"],
    ]);
    expect(res.body.errors.every((e: { extensions: { code: string } }) => e.extensions.code === "FORBIDDEN")).toBe(true);
  });
});

describe("GET /v1/tasks/{taskId}", () => {
  it("keeps the spec's exact shape for an assigned task: no assigneeId, no assignee", async () => {
    const created = await t.rest("POST", "/v1/tasks", {
      key: org.apiKey,
      body: { title: "Exact", assigneeId: org.memberIds[0] },
    });
    const res = await t.rest("GET", `/v1/tasks/${created.body.id}`, { key: org.apiKey });
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
  });

  it("answers a key without member:read in full: the assignee is not asked for", async () => {
    const key = await t.keyWith(org.organizationId, ["task:read"]);
    const res = await t.rest("GET", "/v1/tasks", { key: key.key });
    expect(res.status).toBe(200);
    expect(res.body.items[0]).toHaveProperty("assigneeId");
    expect(res.body.items[0]).not.toHaveProperty("assignee");
  });
});
