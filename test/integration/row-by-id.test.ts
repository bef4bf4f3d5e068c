import { describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { policyRows } from "../../src/modules/policies/policies.service.js";
import { riskRows } from "../../src/modules/risks/risks.service.js";
import { taskItemRows } from "../../src/modules/task-items/task-items.service.js";
import { taskById } from "../../src/modules/tasks/tasks.service.js";
import { vendorRows } from "../../src/modules/vendors/vendors.service.js";
import { directWrites, writeRowsDirectly, writeText } from "../../src/platform/db/row-by-id.js";
import { openFixture } from "../helpers/fixtures.js";
import { usePostgres } from "../helpers/test-app.js";

const { t, org, other } = await openFixture();

// The by-id read without Prisma's query compiler (src/platform/db/row-by-id.ts) must answer what
// findUnique answers, value for value and type for type, on both databases: the JSON of both
// transports is written from it.
describe("a task read by id with one fixed statement", () => {
  it("returns what findUnique returns, every field set and every nullable field null", async () => {
    const full = await t.db.task.update({
      where: { id: org.taskIds[0] },
      data: {
        assigneeId: org.memberIds[1],
        dueDate: new Date("2027-02-28T00:00:00.000Z"),
        description: 'All fields set: ünïcode, "quotes" and a newline\n',
        status: "blocked",
      },
    });
    expect(full.taskTemplateId).not.toBeNull();
    const empty = await t.db.task.update({
      where: { id: org.taskIds[1] },
      data: { assigneeId: null, dueDate: null, description: null, taskTemplateId: null },
    });
    for (const task of [full, empty]) {
      const prisma = await t.db.task.findUnique({ where: { id: task.id, organizationId: org.organizationId } });
      const fixed = await taskById(t.db, task.id, org.organizationId);
      expect(fixed).toEqual(prisma);
      expect(Object.keys(fixed ?? {}).sort()).toEqual(Object.keys(prisma ?? {}).sort());
      for (const key of ["createdAt", "updatedAt"] as const) expect(fixed?.[key]).toBeInstanceOf(Date);
    }
    expect((await taskById(t.db, full.id, org.organizationId))?.dueDate?.toISOString()).toBe("2027-02-28T00:00:00.000Z");
  });

  it("keeps to the caller's organization and answers null for an unknown id", async () => {
    expect(await taskById(t.db, org.taskIds[0] as string, other.organizationId)).toBeNull();
    expect(await taskById(t.db, "tsk_unknown", org.organizationId)).toBeNull();
    const answer = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: other.apiKey });
    expect(answer.status).toBe(404);
  });

  it("answers an id with a NUL character as the caller's error on both transports, as Prisma's reads do", async () => {
    const rest = await t.rest("GET", "/v1/tasks/tsk_a%00b", { key: org.apiKey });
    expect(rest.status).toBe(400);
    expect(rest.body).toMatchObject({ code: "BAD_USER_INPUT", message: "Text must not contain NUL characters (\\u0000)" });
    const gql = await t.gql("query($id: ID!) { task(taskId: $id) { id } }", { id: "tsk_a\u0000b" }, { key: org.apiKey });
    // As Prisma's translated errors are: no locations, the caller's code.
    expect(gql.body.errors).toEqual([
      { message: "Text must not contain NUL characters (\\u0000)", path: ["task"], extensions: { code: "BAD_USER_INPUT" } },
    ]);
  });

  it("is one statement on both transports, and a selection with a relation still reads through Prisma", async () => {
    await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey }); // the key, verified and cached
    const rest = await t.countQueries(() => t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey }));
    expect(rest.statements).toHaveLength(1);
    expect(rest.statements[0]).toContain('"Task"');
    const withAssignee = await t.gql(
      "query($id: ID!) { task(taskId: $id) { id dueDate assignee { id } } }",
      { id: org.taskIds[0] },
      { key: org.apiKey },
    );
    expect(withAssignee.body.errors).toBeUndefined();
    expect(withAssignee.body.data.task).toEqual({
      id: org.taskIds[0],
      dueDate: "2027-02-28",
      assignee: { id: org.memberIds[1] },
    });
  });
});

// Lists read their rows by id the same way when a client selects scalar fields alone.
describe("a page's rows read by id with one fixed statement", () => {
  type Reader = { byIds(db: typeof t.db, ids: string[], organizationId: string): Promise<{ id: string }[]> };
  type Model = { findMany(args: { where: object }): Promise<{ id: string }[]> };
  // name, reader, the model findMany reads, and the seeded ids of the two organizations.
  const readers: [string, Reader, Model, keyof SeedResult][] = [
    ["Task", taskById, t.db.task, "taskIds"],
    ["Vendor", vendorRows, t.db.vendor, "vendorIds"],
    ["Risk", riskRows, t.db.risk, "riskIds"],
    ["TaskItem", taskItemRows, t.db.taskItem, "taskItemIds"],
    ["Policy", policyRows, t.db.policy, "policyIds"],
  ];

  it.each(readers)(
    "%s: what findMany returns, value for value, only the organization's rows, unknown ids left out",
    async (_name, reader, model, seeded) => {
      const asked = [...(org[seeded] as string[]).slice(0, 3), (other[seeded] as string[])[0] as string, "unknown_id"];
      const byId = (rows: { id: string }[]) => [...rows].sort((a, b) => (a.id < b.id ? -1 : 1));
      const prisma = byId(await model.findMany({ where: { id: { in: asked }, organizationId: org.organizationId } }));
      const fixed = byId(await reader.byIds(t.db, asked, org.organizationId));
      expect(prisma.length).toBeGreaterThan(0);
      expect(prisma.length).toBeLessThanOrEqual(3);
      expect(fixed).toEqual(prisma);
      for (const [a, b] of fixed.map((row, i) => [row, prisma[i]] as const)) {
        expect(Object.keys(a).sort()).toEqual(Object.keys(b ?? {}).sort());
      }
      expect(await reader.byIds(t.db, [], org.organizationId)).toEqual([]);
    },
  );
});

describe("pages selected by scalar fields read their rows in the statement that picks them", () => {
  it.each([
    ["/v1/tasks", "Task"],
    ["/v1/vendors", "Vendor"],
    ["/v1/risks", "Risk"],
    ["/v1/policies", "Policy"],
  ])("REST %s: one statement, and each item as its record's own route answers the fields they share", async (path, table) => {
    await t.rest("GET", path, { key: org.apiKey }); // the key, verified and cached
    const answer = await t.countQueries(() => t.rest("GET", `${path}?limit=3`, { key: org.apiKey }));
    expect(answer.statements.filter((s) => s.includes(`FROM "${table}" WHERE "id" = ANY(`))).toHaveLength(0);
    expect(answer.count, answer.statements.join("\n")).toBe(1);
    const page = await t.rest("GET", `${path}?limit=3`, { key: org.apiKey });
    expect(page.status).toBe(200);
    expect(page.body.items.length).toBeGreaterThan(0);
    for (const item of page.body.items) {
      const own = await t.rest("GET", `${path}/${item.id}`, { key: org.apiKey });
      expect(own.status).toBe(200);
      expect(item).toMatchObject(own.body);
    }
  });

  it("GraphQL, task items under many vendors", async () => {
    const query = `{ vendors(limit: 5) { items { id taskItems(limit: 3) { items { id title status } } } } }`;
    const answer = await t.countQueries(() => t.gql(query, {}, { key: org.apiKey }));
    expect(answer.statements.filter((s) => s.includes('FROM "TaskItem" WHERE "id" = ANY('))).toHaveLength(1);
  });
});

// A statement that writes and answers rows (writeText): on PostgreSQL on the primary's pool, not
// through Prisma's raw query, answering what that answers (create comment's one statement).
describe("a statement that writes, with its rows (writeText)", () => {
  it("answers what $queryRawUnsafe answers, value for value and type for type", async () => {
    const text = `UPDATE "Task" SET "description" = $1 WHERE "id" = $2 AND "organizationId" = $3 RETURNING *`;
    const values = ["Written by both ways", org.taskIds[2], org.organizationId];
    const viaPrisma = await t.db.$queryRawUnsafe<Record<string, unknown>[]>(text, ...values);
    const direct = await writeText<Record<string, unknown>>(t.db, text, values);
    expect(direct).toEqual(viaPrisma);
    expect(direct[0]?.createdAt).toBeInstanceOf(Date);
    expect(direct[0]?.description).toBe("Written by both ways");
  });

  it("creates a comment with its one statement on PostgreSQL's pool, on the embedded database through Prisma", async () => {
    const source = directWrites(t.db);
    expect(source !== undefined).toBe(usePostgres);
    const written: string[] = [];
    if (source) {
      writeRowsDirectly(t.db, (text, values, arrays) => {
        written.push(text);
        return source(text, values, arrays);
      });
    }
    try {
      const created = await t.rest("POST", "/v1/comments", {
        key: org.apiKey,
        body: { content: "One statement", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ content: "One statement", author: { id: org.userIds[0] } });
      expect(written.filter((text) => text.includes('INSERT INTO "Comment"'))).toHaveLength(usePostgres ? 1 : 0);
    } finally {
      if (source) writeRowsDirectly(t.db, source);
    }
  });
});
