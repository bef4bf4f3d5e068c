import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();

const fields = "id title description status priority entityId entityType createdAt updatedAt";
const itemKeys = [
  "assigneeId",
  "createdAt",
  "description",
  "entityId",
  "entityType",
  "id",
  "priority",
  "status",
  "title",
  "updatedAt",
];

const createMutation = `mutation($title: String!, $entityId: ID!, $entityType: TaskItemEntityType!, $status: TaskItemStatus,
  $priority: TaskItemPriority, $description: String) {
  createTaskItem(title: $title, entityId: $entityId, entityType: $entityType, status: $status, priority: $priority,
    description: $description) { ${fields} }
}`;
const listQuery = `query($entityId: ID!, $entityType: TaskItemEntityType!, $limit: Int, $cursor: String) {
  taskItems(entityId: $entityId, entityType: $entityType, limit: $limit, cursor: $cursor) { items { ${fields} assigneeId } nextCursor }
}`;
const updateMutation = `mutation($id: ID!, $title: String, $status: TaskItemStatus, $priority: TaskItemPriority, $description: String) {
  updateTaskItem(id: $id, title: $title, status: $status, priority: $priority, description: $description) { ${fields} assigneeId }
}`;

/** A new vendor of the test organization, without task items. */
async function newVendor(organizationId = org.organizationId): Promise<string> {
  const id = `vnd_test_${Math.random().toString(36).slice(2)}`;
  await t.db.vendor.create({ data: { id, organizationId, name: "Test vendor" } });
  return id;
}

async function createItem(body: Record<string, unknown>, key = org.apiKey) {
  const res = await t.rest("POST", "/v1/task-management", { key, body });
  expect(res.status).toBe(201);
  return res.body;
}

const isoDate = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

describe("create task item", () => {
  it("answers 201 with the new item and the defaults over REST, and writes an audit event", async () => {
    const vendorId = await newVendor();
    const res = await t.rest("POST", "/v1/task-management", {
      key: org.apiKey,
      body: { title: "Collect pen test report", entityId: vendorId, entityType: "vendor" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^tski_/),
      title: "Collect pen test report",
      description: null,
      status: "todo",
      priority: "medium",
      entityId: vendorId,
      entityType: "vendor",
      assigneeId: null,
      createdAt: isoDate,
      updatedAt: isoDate,
    });
    const row = await t.db.taskItem.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.organizationId).toBe(org.organizationId);
    const audit = await t.db.auditEvent.findMany({ where: { action: "task_item.created", entityId: res.body.id } });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      organizationId: org.organizationId,
      entityType: "task_item",
      actorApiKeyId: expect.stringMatching(/^apk_/),
      data: { title: "Collect pen test report", entityId: vendorId, entityType: "vendor", status: "todo", priority: "medium" },
    });
  });

  it("takes every field over GraphQL", async () => {
    const res = await t.gql(
      createMutation,
      {
        title: "Add a second region",
        entityId: org.riskIds[0],
        entityType: "risk",
        status: "in_review",
        priority: "urgent",
        description: "Backups in eu-west too",
      },
      { key: org.apiKey },
    );
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createTaskItem).toEqual({
      id: expect.stringMatching(/^tski_/),
      title: "Add a second region",
      description: "Backups in eu-west too",
      status: "in_review",
      priority: "urgent",
      entityId: org.riskIds[0],
      entityType: "risk",
      createdAt: isoDate,
      updatedAt: isoDate,
    });
  });

  it("counts lengths in code points: 255 emoji are a valid title, 10000 a valid description", async () => {
    const body = await createItem({
      title: "😀".repeat(255),
      description: "😀".repeat(10_000),
      entityId: org.vendorIds[1],
      entityType: "vendor",
    });
    expect(body.title).toBe("😀".repeat(255));
  });

  it("reads null for status, priority and description as not given, on both transports", async () => {
    const nulls = { status: null, priority: null, description: null };
    const rest = await createItem({ title: "Nulls", entityId: org.vendorIds[1], entityType: "vendor", ...nulls });
    expect(rest).toMatchObject({ status: "todo", priority: "medium", description: null });
    const gql = await t.gql(
      createMutation,
      { title: "Nulls", entityId: org.vendorIds[1], entityType: "vendor", ...nulls },
      {
        key: org.apiKey,
      },
    );
    expect(gql.body.data.createTaskItem).toMatchObject({ status: "todo", priority: "medium", description: null });
  });

  it.each([
    ["a null title", { title: null }, "title"],
    ["an empty title", { title: "" }, "title"],
    ["a whitespace title", { title: "  \t\n " }, "title"],
    ["a 256-character title", { title: "x".repeat(256) }, "title"],
    ["a 10001-character description", { description: "x".repeat(10_001) }, "description"],
    ["an empty entityId", { entityId: "" }, "entityId"],
    ["entityType task", { entityType: "task" }, "entityType"],
    ["an unknown status", { status: "blocked" }, "status"],
    ["an unknown priority", { priority: "critical" }, "priority"],
    ["a number as title", { title: 5 }, "title"],
    ["an unknown field", { assignee: "someone" }, "assignee"],
    ["no title", { title: undefined }, "title"],
    ["no entityId", { entityId: undefined }, "entityId"],
    ["no entityType", { entityType: undefined }, "entityType"],
  ])("answers 400 for %s and writes nothing", async (_label, change, path) => {
    const before = await t.db.taskItem.count();
    const body = { title: "Valid", entityId: org.vendorIds[0], entityType: "vendor", ...change };
    const res = await t.rest("POST", "/v1/task-management", { key: org.apiKey, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.details).toEqual([{ path, message: expect.any(String) }]);
    expect(await t.db.taskItem.count()).toBe(before);
  });

  it("answers BAD_USER_INPUT with details over GraphQL", async () => {
    const res = await t.gql(
      createMutation,
      { title: " ", entityId: org.vendorIds[0], entityType: "vendor" },
      { key: org.apiKey },
    );
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0].extensions).toEqual({
      code: "BAD_USER_INPUT",
      details: [{ path: "title", message: "must not be empty or only whitespace" }],
    });
  });

  it("answers 404 for a missing entity, one of the other type, or another organization's, and writes nothing", async () => {
    const before = await t.db.taskItem.count();
    for (const [entityId, entityType] of [
      ["vnd_missing", "vendor"],
      [org.vendorIds[0], "risk"],
      [org.riskIds[0], "vendor"],
      [other.vendorIds[0], "vendor"],
      [other.riskIds[0], "risk"],
    ]) {
      const res = await t.rest("POST", "/v1/task-management", { key: org.apiKey, body: { title: "x", entityId, entityType } });
      expect(res.status, `${entityType} ${entityId}`).toBe(404);
      expect(res.body.code).toBe("NOT_FOUND");
      const gql = await t.gql(createMutation, { title: "x", entityId, entityType }, { key: org.apiKey });
      expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
    }
    expect(await t.db.taskItem.count()).toBe(before);
  });

  it("needs task:create", async () => {
    const body = { title: "x", entityId: org.vendorIds[0], entityType: "vendor" };
    const { key: readOnly } = await t.keyWith(org.organizationId, ["task:read", "task:update"]);
    const denied = await t.rest("POST", "/v1/task-management", { key: readOnly, body });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe("FORBIDDEN");
    const { key } = await t.keyWith(org.organizationId, ["task:create"]);
    expect((await t.rest("POST", "/v1/task-management", { key, body })).status).toBe(201);
  });
});

describe("list task items", () => {
  it("lists the entity's items newest first, the same on both transports", async () => {
    const vendorId = await newVendor();
    const first = await createItem({ title: "First", entityId: vendorId, entityType: "vendor" });
    const second = await createItem({ title: "Second", entityId: vendorId, entityType: "vendor", priority: "high" });
    await createItem({ title: "On another vendor", entityId: org.vendorIds[1], entityType: "vendor" });
    const res = await t.rest("GET", `/v1/task-management?entityId=${vendorId}&entityType=vendor`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [second, first], nextCursor: null });
    expect(Object.keys(res.body.items[0]).sort()).toEqual(itemKeys);
    const gql = await t.gql(listQuery, { entityId: vendorId, entityType: "vendor" }, { key: org.apiKey });
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.taskItems).toEqual(res.body);
  });

  it("answers an empty page for an entity without items", async () => {
    const vendorId = await newVendor();
    const res = await t.rest("GET", `/v1/task-management?entityId=${vendorId}&entityType=vendor`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], nextCursor: null });
  });

  it("pages through 25 items in pages of 10, each once, newest first", async () => {
    const vendorId = await newVendor();
    for (let i = 0; i < 25; i++) await createItem({ title: `Item ${i}`, entityId: vendorId, entityType: "vendor" });
    const expected = await t.db.taskItem.findMany({
      where: { entityId: vendorId },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      select: { id: true },
    });
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `entityId=${vendorId}&entityType=vendor&limit=10${cursor ? `&cursor=${cursor}` : ""}`;
      const res = await t.rest("GET", `/v1/task-management?${query}`, { key: org.apiKey });
      expect(res.status).toBe(200);
      sizes.push(res.body.items.length);
      seen.push(...res.body.items.map((item: { id: string }) => item.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(sizes).toEqual([10, 10, 5]);
    expect(seen).toEqual(expected.map((e) => e.id));
  });

  it("answers 400 for a limit out of 1..100 or a bogus cursor, on both transports", async () => {
    const base = `/v1/task-management?entityId=${org.vendorIds[0]}&entityType=vendor`;
    for (const [query, path] of [
      ["&limit=0", "limit"],
      ["&limit=101", "limit"],
      ["&limit=ten", "limit"],
      ["&cursor=not-a-cursor", "cursor"],
      ["&sort=colour", "sort"],
    ]) {
      const res = await t.rest("GET", `${base}${query}`, { key: org.apiKey });
      expect(res.status, query).toBe(400);
      expect(res.body.details, query).toEqual([{ path, message: expect.any(String) }]);
    }
    expect((await t.rest("GET", `${base}&limit=100`, { key: org.apiKey })).status).toBe(200);
    expect((await t.rest("GET", `/v1/task-management?entityId=${org.vendorIds[0]}`, { key: org.apiKey })).status).toBe(400);
    expect((await t.rest("GET", `${base}&entityType=risk`, { key: org.apiKey })).status).toBe(400);
    for (const variables of [{ limit: 0 }, { limit: 101 }, { cursor: "bogus" }]) {
      const gql = await t.gql(listQuery, { entityId: org.vendorIds[0], entityType: "vendor", ...variables }, { key: org.apiKey });
      expect(gql.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    }
  });

  it("answers 404 for a missing entity, one of the other type, or another organization's", async () => {
    for (const [entityId, entityType] of [
      ["vnd_missing", "vendor"],
      [org.vendorIds[0], "risk"],
      [other.vendorIds[0], "vendor"],
    ]) {
      const res = await t.rest("GET", `/v1/task-management?entityId=${entityId}&entityType=${entityType}`, { key: org.apiKey });
      expect(res.status).toBe(404);
      const gql = await t.gql(listQuery, { entityId, entityType }, { key: org.apiKey });
      expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
    }
  });

  it("costs the same number of SQL statements for 2 items as for 20", async () => {
    const vendorId = await newVendor();
    for (let i = 0; i < 20; i++) await createItem({ title: `Item ${i}`, entityId: vendorId, entityType: "vendor" });
    const count = async (limit: number) =>
      (
        await t.countQueries(async () => {
          const res = await t.gql(listQuery, { entityId: vendorId, entityType: "vendor", limit }, { key: org.apiKey });
          expect(res.body.data.taskItems.items).toHaveLength(limit);
        })
      ).statements.filter((s) => s.includes('"TaskItem"')).length;
    // One statement picks the page's ids by the list's filter and order, one reads those rows.
    expect(await count(2)).toBe(2);
    expect(await count(20)).toBe(2);
    const rest = await t.countQueries(() =>
      t.rest("GET", `/v1/task-management?entityId=${vendorId}&entityType=vendor&limit=20`, { key: org.apiKey }),
    );
    const restSmall = await t.countQueries(() =>
      t.rest("GET", `/v1/task-management?entityId=${vendorId}&entityType=vendor&limit=2`, { key: org.apiKey }),
    );
    expect(rest.count).toBe(restSmall.count);
  });

  it("needs task:read", async () => {
    const { key } = await t.keyWith(org.organizationId, ["task:create"]);
    const res = await t.rest("GET", `/v1/task-management?entityId=${org.vendorIds[0]}&entityType=vendor`, { key });
    expect(res.status).toBe(403);
  });
});

describe("update task item", () => {
  async function freshItem() {
    return createItem({
      title: "Review DPA",
      entityId: org.vendorIds[0],
      entityType: "vendor",
      description: "Check clause 7",
      priority: "high",
    });
  }
  const audits = (id: string) => t.db.auditEvent.findMany({ where: { action: "task_item.updated", entityId: id } });

  it("changes the given fields over REST, keeps the others, and audits exactly the changes", async () => {
    const item = await freshItem();
    const res = await t.rest("PATCH", `/v1/task-management/${item.id}`, {
      key: org.apiKey,
      body: { title: "Review the DPA", status: "in_progress", priority: "high" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...item, title: "Review the DPA", status: "in_progress", updatedAt: isoDate });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(item.updatedAt));
    const events = await audits(item.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      organizationId: org.organizationId,
      entityType: "task_item",
      data: { changes: { title: { from: "Review DPA", to: "Review the DPA" }, status: { from: "todo", to: "in_progress" } } },
    });
  });

  it("clears the description with null over GraphQL and leaves absent fields alone", async () => {
    const item = await freshItem();
    const res = await t.gql(updateMutation, { id: item.id, description: null }, { key: org.apiKey });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.updateTaskItem).toEqual({ ...item, description: null, updatedAt: isoDate });
    expect((await audits(item.id))[0]?.data).toEqual({ changes: { description: { from: "Check clause 7", to: null } } });
    const priority = await t.gql(updateMutation, { id: item.id, priority: "low" }, { key: org.apiKey });
    expect(priority.body.data.updateTaskItem).toMatchObject({ title: "Review DPA", description: null, priority: "low" });
  });

  it("refuses null for title, status and priority over GraphQL, changing nothing", async () => {
    const item = await freshItem();
    for (const field of ["title", "status", "priority"]) {
      const res = await t.gql(updateMutation, { id: item.id, [field]: null, description: "new" }, { key: org.apiKey });
      expect(res.body.data).toBeNull();
      expect(res.body.errors[0].extensions).toEqual({
        code: "BAD_USER_INPUT",
        details: [{ path: field, message: "must not be null; leave the field out to keep its value" }],
      });
    }
    const row = await t.db.taskItem.findUniqueOrThrow({ where: { id: item.id } });
    expect(row.description).toBe("Check clause 7");
    expect(await audits(item.id)).toEqual([]);
  });

  it("over REST, null clears the description and is 400 for title, status and priority", async () => {
    const item = await freshItem();
    for (const field of ["title", "status", "priority"]) {
      const res = await t.rest("PATCH", `/v1/task-management/${item.id}`, {
        key: org.apiKey,
        body: { [field]: null, description: "new" },
      });
      expect(res.status, field).toBe(400);
      expect(res.body.details).toEqual([{ path: field, message: "must not be null; leave the field out to keep its value" }]);
    }
    const res = await t.rest("PATCH", `/v1/task-management/${item.id}`, { key: org.apiKey, body: { description: null } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...item, description: null, updatedAt: isoDate });
  });

  it("answers 400 for an empty update on both transports", async () => {
    const item = await freshItem();
    for (const body of [{}, undefined]) {
      const res = await t.rest("PATCH", `/v1/task-management/${item.id}`, { key: org.apiKey, body });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("BAD_USER_INPUT");
      expect(res.body.details).toEqual([{ path: "", message: expect.any(String) }]);
    }
    const gql = await t.gql(updateMutation, { id: item.id }, { key: org.apiKey });
    expect(gql.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect(await audits(item.id)).toEqual([]);
  });

  it.each([
    ["an empty title", { title: "" }, "title"],
    ["a whitespace title", { title: "   " }, "title"],
    ["a 256-character title", { title: "x".repeat(256) }, "title"],
    ["a 10001-character description", { description: "x".repeat(10_001) }, "description"],
    ["an unknown status", { status: "blocked" }, "status"],
    ["a number as priority", { priority: 1 }, "priority"],
    ["entityId, which cannot change", { entityId: "vnd_other" }, "entityId"],
    ["the id in the body", { id: "tski_other" }, "id"],
  ])("answers 400 for %s and changes nothing", async (_label, body, path) => {
    const item = await freshItem();
    const res = await t.rest("PATCH", `/v1/task-management/${item.id}`, { key: org.apiKey, body });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path, message: expect.any(String) }]);
    expect(await t.db.taskItem.findUniqueOrThrow({ where: { id: item.id } })).toMatchObject({
      title: item.title,
      description: item.description,
      status: item.status,
      priority: item.priority,
    });
  });

  it("changes nothing, and audits nothing, when every value given is the current one", async () => {
    const item = await freshItem();
    const res = await t.rest("PATCH", `/v1/task-management/${item.id}`, {
      key: org.apiKey,
      body: { title: item.title, priority: item.priority },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(item);
    expect(await audits(item.id)).toEqual([]);
  });

  it("keeps the audit trail a chain when updates race: each change's from is the previous change's to", async () => {
    const item = await freshItem();
    const titles = Array.from({ length: 12 }, (_, i) => `Title ${i}`);
    const results = await Promise.all(
      titles.map((title) => t.rest("PATCH", `/v1/task-management/${item.id}`, { key: org.apiKey, body: { title } })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
    const events = await t.db.auditEvent.findMany({ where: { action: "task_item.updated", entityId: item.id } });
    const next = new Map<string, string>();
    for (const event of events) {
      const { from, to } = (event.data as { changes: { title: { from: string; to: string } } }).changes.title;
      expect(next.has(from), `two changes from ${from}`).toBe(false);
      next.set(from, to);
    }
    // Following the changes from the original title visits every event once and ends at the stored title.
    const path = ["Review DPA"];
    while (next.has(path[path.length - 1] as string)) path.push(next.get(path[path.length - 1] as string) as string);
    expect(path).toHaveLength(13);
    expect(new Set(path.slice(1))).toEqual(new Set(titles));
    const row = await t.db.taskItem.findUniqueOrThrow({ where: { id: item.id } });
    expect(row.title).toBe(path[12]);
  });

  it("answers 404 for a missing item and for another organization's, leaving it unchanged", async () => {
    expect((await t.rest("PATCH", "/v1/task-management/tski_missing", { key: org.apiKey, body: { title: "x" } })).status).toBe(
      404,
    );
    const theirs = await t.db.taskItem.findUniqueOrThrow({ where: { id: other.taskItemIds[0] } });
    const res = await t.rest("PATCH", `/v1/task-management/${theirs.id}`, {
      key: org.apiKey,
      body: { title: "Hijacked", status: "canceled" },
    });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("NOT_FOUND");
    const gql = await t.gql(updateMutation, { id: theirs.id, description: null }, { key: org.apiKey });
    expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
    expect(await t.db.taskItem.findUniqueOrThrow({ where: { id: theirs.id } })).toEqual(theirs);
    expect(await audits(theirs.id)).toEqual([]);
  });

  it("needs task:update", async () => {
    const item = await freshItem();
    const { key } = await t.keyWith(org.organizationId, ["task:read", "task:create"]);
    const res = await t.rest("PATCH", `/v1/task-management/${item.id}`, { key, body: { title: "x" } });
    expect(res.status).toBe(403);
  });
});

describe("the task-management routes together", () => {
  it("keeps GET /v1/task-management/stats working beside PATCH /v1/task-management/{id}", async () => {
    const res = await t.rest("GET", `/v1/task-management/stats?entityId=${org.riskIds[0]}&entityType=risk`, {
      key: org.apiKey,
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["byStatus", "total"]);
    const patch = await t.rest("PATCH", "/v1/task-management/stats", { key: org.apiKey, body: { title: "x" } });
    expect(patch.status).toBe(404);
  });

  it("answers 405 with Allow for another method", async () => {
    const res = await t.rest("DELETE", "/v1/task-management", { key: org.apiKey });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")?.split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
    const item = await t.rest("PUT", `/v1/task-management/${org.taskItemIds[0]}`, { key: org.apiKey });
    expect(item.status).toBe(405);
    expect(item.headers.get("allow")?.split(", ").sort()).toEqual(["DELETE", "PATCH"]);
  });
});
