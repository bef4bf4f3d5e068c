import { describe, expect, it } from "vitest";
import { taskById } from "../../src/modules/tasks/tasks.service.js";
import { openFixture } from "../helpers/fixtures.js";

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

  it("reads many ids as findMany does: every scalar, only the organization's rows, unknown ids left out", async () => {
    const ids = [...org.taskIds.slice(0, 3), other.taskIds[0] as string, "tsk_unknown"] as string[];
    const where = { id: { in: ids }, organizationId: org.organizationId };
    const prisma = await t.db.task.findMany({ where, orderBy: { id: "asc" } });
    const fixed = await taskById.byIds(t.db, ids, org.organizationId);
    expect(prisma).toHaveLength(3);
    expect([...fixed].sort((a, b) => a.id.localeCompare(b.id))).toEqual(prisma);
    expect(await taskById.byIds(t.db, [], org.organizationId)).toEqual([]);
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
