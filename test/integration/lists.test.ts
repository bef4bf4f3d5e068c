import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org } = await openFixture({ organizations: 1 });

type Gql = Awaited<ReturnType<typeof t.gql>>;
function data(res: Gql) {
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data;
}

/** A fresh organization: lists counted in it see only what the test made. */
async function freshOrg() {
  const seeded = await t.seedOrg();
  await t.db.task.deleteMany({ where: { organizationId: seeded.organizationId } });
  return { ...seeded, owner: seeded.memberIds[0] as string, ownerUser: seeded.userIds[0] as string };
}

async function makeTasks(key: string, tasks: Record<string, unknown>[]): Promise<string[]> {
  const ids: string[] = [];
  for (const task of tasks) {
    const res = await t.rest("POST", "/v1/tasks", { key, body: task });
    expect(res.status, res.text).toBe(201);
    ids.push(res.body.id);
  }
  return ids;
}

const taskPage = `query($filter: TaskFilter, $orderBy: TaskOrderBy, $limit: Int, $cursor: String) {
  tasks(filter: $filter, orderBy: $orderBy, limit: $limit, cursor: $cursor) { items { id title status dueDate assigneeId } nextCursor totalCount } }`;

/** Every item of a list, page by page. */
async function walk(key: string, variables: Record<string, unknown>, limit = 2) {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { items: { id: string }[]; nextCursor: string | null } = data(
      await t.gql(taskPage, { ...variables, limit, cursor }, { key }),
    ).tasks;
    ids.push(...page.items.map((i: { id: string }) => i.id));
    cursor = page.nextCursor;
  } while (cursor);
  return ids;
}

describe("tasks: filter, sort, search, count", () => {
  it("filters by status, assignee (null for unassigned) and due date, with the same filter in totalCount", async () => {
    const o = await freshOrg();
    const [a, b, c, d] = await makeTasks(o.apiKey, [
      { title: "Review access rights", status: "todo", assigneeId: o.owner, dueDate: "2026-12-01" },
      { title: "Rotate keys", status: "in_progress", assigneeId: o.owner, dueDate: "2026-12-10" },
      { title: "Train staff", status: "todo", dueDate: "2027-01-05" },
      { title: "Close audit", status: "done", assigneeId: o.owner },
    ]);
    const ask = async (filter: Record<string, unknown>) => {
      const page = data(await t.gql(taskPage, { filter }, { key: o.apiKey })).tasks;
      return { ids: page.items.map((i: { id: string }) => i.id).sort(), count: page.totalCount };
    };
    expect(await ask({ status: ["todo", "in_progress"], assigneeId: [o.owner] })).toEqual({ ids: [a, b].sort(), count: 2 });
    expect(await ask({ assigneeId: [null] })).toEqual({ ids: [c], count: 1 });
    expect(await ask({ assigneeId: [null, o.owner], status: ["todo"] })).toEqual({ ids: [a, c].sort(), count: 2 });
    expect(await ask({ dueBefore: "2026-12-10" })).toEqual({ ids: [a], count: 1 });
    expect(await ask({ dueAfter: "2026-12-01", dueBefore: "2027-01-06" })).toEqual({ ids: [b, c].sort(), count: 2 });
    expect(await ask({ status: [] })).toEqual({ ids: [], count: 0 });
    expect(await ask({})).toEqual({ ids: [a, b, c, d].sort(), count: 4 });
  });

  it("searches title and description anywhere, case-insensitive, taking % and _ literally", async () => {
    const o = await freshOrg();
    const [a, b, c] = await makeTasks(o.apiKey, [
      { title: "Quarterly ACCESS review" },
      { title: "Backups", description: "check the access logs of the backup host" },
      { title: "100% coverage_plan" },
    ]);
    await makeTasks(o.apiKey, [{ title: "Unrelated" }, { title: "1000 coverageXplan" }]);
    const ask = async (search: string) =>
      data(await t.gql(taskPage, { filter: { search } }, { key: o.apiKey }))
        .tasks.items.map((i: { id: string }) => i.id)
        .sort();
    expect(await ask("access")).toEqual([a, b].sort());
    expect(await ask("ccEs")).toEqual([a, b].sort());
    expect(await ask("0% coverage_")).toEqual([c]);
  });

  it("sorts by every order field, nulls last both ways, ties on id, and pages exactly", async () => {
    const o = await freshOrg();
    const ids = await makeTasks(o.apiKey, [
      { title: "b", dueDate: "2026-12-02", status: "done" },
      { title: "a", status: "todo" },
      { title: "c", dueDate: "2026-12-01", status: "todo" },
      { title: "a", dueDate: "2026-12-02", status: "blocked" },
      { title: "d" },
    ]);
    const rows = await t.db.task.findMany({ where: { id: { in: ids } } });
    const statusOrder = ["todo", "in_progress", "done", "blocked"];
    const value = (r: (typeof rows)[number], field: string): string | number | null => {
      if (field === "dueDate") return r.dueDate ? r.dueDate.toISOString() : null;
      if (field === "status") return statusOrder.indexOf(r.status);
      if (field === "createdAt" || field === "updatedAt") return (r[field] as Date).toISOString();
      return r[field as "title"];
    };
    for (const field of ["createdAt", "updatedAt", "title", "status", "dueDate"]) {
      for (const direction of ["asc", "desc"] as const) {
        const expected = [...rows]
          .sort((x, y) => {
            const [vx, vy] = [value(x, field), value(y, field)];
            if (vx === null || vy === null) {
              if (vx !== vy) return vx === null ? 1 : -1;
            } else if (vx !== vy) {
              const cmp = typeof vx === "number" ? vx - (vy as number) : vx < vy ? -1 : 1;
              return direction === "asc" ? cmp : -cmp;
            }
            return (x.id < y.id ? -1 : 1) * (direction === "asc" ? 1 : -1);
          })
          .map((r) => r.id);
        expect(await walk(o.apiKey, { orderBy: { field, direction } }), `${field} ${direction}`).toEqual(expected);
      }
    }
  });

  it("a page after a cursor neither skips nor repeats rows while others are inserted", async () => {
    const o = await freshOrg();
    await makeTasks(o.apiKey, [
      { title: "m1", dueDate: "2026-12-05" },
      { title: "m2", dueDate: "2026-12-06" },
      { title: "m3" },
      { title: "m4", dueDate: "2026-12-07" },
    ]);
    const orderBy = { field: "dueDate", direction: "asc" };
    const first = data(await t.gql(taskPage, { orderBy, limit: 2 }, { key: o.apiKey })).tasks;
    // Inserted before and after the cursor's position.
    await makeTasks(o.apiKey, [{ title: "early", dueDate: "2026-01-01" }, { title: "late", dueDate: "2027-01-01" }]);
    const rest = await (async () => {
      const seen: string[] = [];
      let cursor = first.nextCursor;
      while (cursor) {
        const page = data(await t.gql(taskPage, { orderBy, limit: 2, cursor }, { key: o.apiKey })).tasks;
        seen.push(...page.items.map((i: { title: string }) => i.title));
        cursor = page.nextCursor;
      }
      return seen;
    })();
    expect(first.items.map((i: { title: string }) => i.title)).toEqual(["m1", "m2"]);
    expect(rest).toEqual(["m4", "late", "m3"]);
  });

  it("refuses a cursor reused with another order or filter, and a forged one, with BAD_USER_INPUT", async () => {
    const o = await freshOrg();
    await makeTasks(o.apiKey, [{ title: "xa1" }, { title: "xa2" }, { title: "xa3" }]);
    const { nextCursor } = data(await t.gql(taskPage, { limit: 1, filter: { search: "xa" } }, { key: o.apiKey })).tasks;
    expect(nextCursor).toBeTruthy();
    for (const variables of [
      { cursor: nextCursor, filter: { search: "xa1" } },
      { cursor: nextCursor },
      { cursor: nextCursor, filter: { search: "xa" }, orderBy: { field: "title", direction: "desc" } },
      { cursor: Buffer.from(JSON.stringify({ o: "createdAt", d: "desc", f: "x", v: "bogus", i: "a" })).toString("base64url") },
      { cursor: "not-a-cursor" },
    ]) {
      const res = await t.gql(taskPage, variables, { key: o.apiKey });
      expect(res.body.errors?.[0]?.extensions?.code, JSON.stringify(variables)).toBe("BAD_USER_INPUT");
    }
    const rest = await t.rest("GET", `/v1/tasks?cursor=${nextCursor}&q=xa1`, { key: o.apiKey });
    expect(rest.status).toBe(400);
    expect(rest.body.code).toBe("BAD_USER_INPUT");
  });

  it("refuses bad filters: unknown enum values, malformed dates, long lists, short or long search terms", async () => {
    for (const filter of [
      { status: ["open"] },
      { dueBefore: "2026-02-30" },
      { dueAfter: "tomorrow" },
      { createdAfter: "yesterday" },
      { assigneeId: Array.from({ length: 101 }, (_, i) => `mem_${i}`) },
      { search: "x" },
      { search: "x".repeat(101) },
    ]) {
      const res = await t.gql(taskPage, { filter }, { key: org.apiKey });
      expect(res.body.errors?.[0]?.extensions?.code, JSON.stringify(filter)).toMatch(/BAD_USER_INPUT|GRAPHQL_VALIDATION_FAILED/);
      expect(res.body.data?.tasks ?? null).toBeNull();
    }
  });
});

describe("REST query parameters", () => {
  it("filter, search and sort the task list as GraphQL does, keeping items and nextCursor", async () => {
    const o = await freshOrg();
    const [a, b, c] = await makeTasks(o.apiKey, [
      { title: "Access review", status: "todo", assigneeId: o.owner, dueDate: "2026-12-03" },
      { title: "Access logs", status: "blocked" },
      { title: "Access keys", status: "todo", dueDate: "2026-12-01" },
    ]);
    const res = await t.rest("GET", `/v1/tasks?status=todo,blocked&assigneeId=none,${o.owner}&q=ACCESS&sort=dueDate&limit=2`, {
      key: o.apiKey,
    });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["items", "nextCursor"]);
    expect(res.body.items.map((i: { id: string }) => i.id)).toEqual([c, a]);
    const next = await t.rest(
      "GET",
      `/v1/tasks?status=todo,blocked&assigneeId=none,${o.owner}&q=ACCESS&sort=dueDate&limit=2&cursor=${res.body.nextCursor}`,
      { key: o.apiKey },
    );
    expect(next.status, next.text).toBe(200);
    expect(next.body.items.map((i: { id: string }) => i.id)).toEqual([b]);
    const desc = await t.rest("GET", "/v1/tasks?sort=-title&status=todo&status=blocked", { key: o.apiKey });
    expect(desc.body.items.map((i: { title: string }) => i.title)).toEqual(["Access review", "Access logs", "Access keys"]);
  });

  it("answers 400 in our format for unknown parameters, enum values, dates, sort fields and long lists", async () => {
    for (const query of [
      "status=open",
      "dueBefore=2026-13-01",
      "createdAfter=not-a-date",
      "sort=-priority",
      "sort=",
      "q=a",
      `assigneeId=${Array.from({ length: 101 }, (_, i) => `mem_${i}`).join(",")}`,
      "colour=red",
      "filter=%7B%7D",
    ]) {
      const res = await t.rest("GET", `/v1/tasks?${query}`, { key: org.apiKey });
      expect(res.status, query).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: "Bad Request", code: "BAD_USER_INPUT" });
      expect(res.body.details?.length, query).toBeGreaterThan(0);
    }
  });
});
