import { describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { listPage } from "../../src/graphql/lists.js";
import { taskItemList } from "../../src/modules/task-items/task-items.service.js";
import { newId } from "../../src/platform/ids.js";
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
  await t.db.taskItem.deleteMany({ where: { organizationId: seeded.organizationId } });
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
    await makeTasks(o.apiKey, [
      { title: "early", dueDate: "2026-01-01" },
      { title: "late", dueDate: "2027-01-01" },
    ]);
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

describe("the screens, one request each", () => {
  it("vendors not yet assessed, unassigned, by name; with the new fields written and audited", async () => {
    const o = await freshOrg();
    const created = await t.rest("POST", "/v1/vendors", {
      key: o.apiKey,
      body: { name: "Zeta Cloud", category: "cloud", website: "https://zeta.example.com", assigneeId: o.owner },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ status: "not_assessed", category: "cloud", assigneeId: o.owner });
    const bad = await t.rest("POST", "/v1/vendors", { key: o.apiKey, body: { name: "X", category: "space" } });
    expect(bad.status).toBe(400);
    const updated = await t.rest("PATCH", `/v1/vendors/${created.body.id}`, {
      key: o.apiKey,
      body: { status: "in_progress", assigneeId: null },
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ status: "in_progress", assigneeId: null });
    const events = data(
      await t.gql(
        `query($filter: AuditEventFilter) { auditEvents(filter: $filter) { items { action data } totalCount } }`,
        { filter: { entityType: "vendor", entityId: [created.body.id] } },
        { key: o.apiKey },
      ),
    ).auditEvents;
    expect(events.totalCount).toBe(2);
    expect(events.items[0]).toMatchObject({
      action: "vendor.updated",
      data: { changes: { status: { from: "not_assessed", to: "in_progress" }, assigneeId: { from: o.owner, to: null } } },
    });
    const list = await t.rest("GET", "/v1/vendors?status=not_assessed&assigneeId=none&sort=name", { key: o.apiKey });
    expect(list.status, list.text).toBe(200);
    const names = list.body.items.map((v: { name: string }) => v.name);
    expect(names).toEqual([...names].sort());
    expect(names).not.toContain("Zeta Cloud");
    const graph = data(
      await t.gql(
        `{ vendors(filter: { status: [in_progress], search: "ZETA" }) { totalCount items { name assignee { id } } } }`,
        {},
        { key: o.apiKey },
      ),
    ).vendors;
    expect(graph).toEqual({ totalCount: 1, items: [{ name: "Zeta Cloud", assignee: null }] });
  });

  it("high risks without an owner: score derived from likelihood and impact, never written", async () => {
    const o = await freshOrg();
    const high = await t.rest("POST", "/v1/risks", { key: o.apiKey, body: { title: "Data loss", likelihood: 4, impact: 5 } });
    expect(high.status, high.text).toBe(201);
    expect(high.body).toMatchObject({ score: 20, status: "open", category: "other", treatment: null });
    const owned = await t.rest("POST", "/v1/risks", {
      key: o.apiKey,
      body: { title: "Outage", likelihood: 5, impact: 5, assigneeId: o.owner, treatment: "mitigate" },
    });
    expect(owned.body.score).toBe(25);
    for (const body of [
      { title: "x", likelihood: 6 },
      { title: "x", impact: 0 },
      { title: "x", score: 3 },
    ]) {
      expect((await t.rest("POST", "/v1/risks", { key: o.apiKey, body })).status, JSON.stringify(body)).toBe(400);
    }
    const lowered = await t.rest("PATCH", `/v1/risks/${high.body.id}`, { key: o.apiKey, body: { impact: 2 } });
    expect(lowered.body.score).toBe(8);
    await t.rest("PATCH", `/v1/risks/${high.body.id}`, { key: o.apiKey, body: { impact: 4 } });
    const screen = data(
      await t.gql(
        `{ risks(filter: { minScore: 15, assigneeId: [null] }, orderBy: { field: score, direction: desc }) { totalCount items { id score } } }`,
        {},
        { key: o.apiKey },
      ),
    ).risks;
    expect(screen).toEqual({ totalCount: 1, items: [{ id: high.body.id, score: 16 }] });
    const rest = await t.rest("GET", "/v1/risks?minScore=15&assigneeId=none&sort=-score", { key: o.apiKey });
    expect(rest.body.items.map((r: { id: string }) => r.id)).toEqual([high.body.id]);
  });

  it("policies waiting for my approval", async () => {
    const o = await freshOrg();
    const policy = await t.rest("POST", "/v1/policies", { key: o.apiKey, body: { name: "Access control policy" } });
    await t.rest("POST", "/v1/policies", { key: o.apiKey, body: { name: "Backup policy" } });
    const draft = await t.rest("POST", `/v1/policies/${policy.body.id}/versions`, { key: o.apiKey, body: {} });
    const submit = await t.rest("POST", `/v1/policies/${policy.body.id}/versions/${draft.body.versionId}/submit`, {
      key: o.apiKey,
      body: { approverId: o.owner },
    });
    expect(submit.status, submit.text).toBe(200);
    const mine = data(
      await t.gql(
        `query($me: ID) { policies(filter: { awaitingApprovalBy: $me }) { totalCount items { id status } } }`,
        { me: o.owner },
        { key: o.apiKey },
      ),
    ).policies;
    expect(mine).toEqual({ totalCount: 1, items: [{ id: policy.body.id, status: "needs_review" }] });
    const rest = await t.rest("GET", `/v1/policies?awaitingApprovalBy=${o.memberIds[1]}`, { key: o.apiKey });
    expect(rest.body.items).toEqual([]);
    const versions = data(
      await t.gql(
        `query($id: ID!) { policyVersions(id: $id, filter: { status: [in_review] }) { totalCount items { version } } }`,
        { id: policy.body.id },
        { key: o.apiKey },
      ),
    ).policyVersions;
    expect(versions).toEqual({ totalCount: 1, items: [{ version: 2 }] });
  });

  it("the history of one record, members by name or e-mail, comments by author", async () => {
    const o = await freshOrg();
    const [task] = await makeTasks(o.apiKey, [{ title: "History" }]);
    await t.rest("PATCH", `/v1/tasks/${task}`, { key: o.apiKey, body: { status: "done", dueDate: "2026-12-24" } });
    const history = await t.rest("GET", `/v1/audit-events?entityType=task&entityId=${task}&sort=createdAt`, { key: o.apiKey });
    expect(history.status, history.text).toBe(200);
    expect(history.body.items.map((e: { action: string }) => e.action)).toEqual(["task.created", "task.updated"]);
    expect(history.body.items[1].data.changes.dueDate).toEqual({ from: null, to: "2026-12-24" });

    const people = data(
      await t.gql(
        `{ members(filter: { search: "grace", isActive: true }, orderBy: { field: name, direction: asc }) { totalCount items { id user { name } } } }`,
        {},
        { key: o.apiKey },
      ),
    ).members;
    expect(people).toEqual({ totalCount: 1, items: [{ id: o.memberIds[1], user: { name: "Grace Admin" } }] });
    const byRole = await t.rest("GET", "/v1/people?role=owner,auditor&sort=name", { key: o.apiKey });
    // Ada Owner before Alan Auditor.
    expect(byRole.body.items.map((m: { role: string }) => m.role)).toEqual(["owner", "auditor"]);

    for (const userId of [o.userIds[0], o.userIds[1]]) {
      const res = await t.rest("POST", "/v1/comments", {
        key: o.apiKey,
        body: { content: `by ${userId}`, entityId: task, entityType: "task", userId },
      });
      expect(res.status, res.text).toBe(201);
    }
    const comments = data(
      await t.gql(
        `query($task: ID!, $author: ID!) { task(taskId: $task) { comments(filter: { authorId: [$author] }) { totalCount items { author { id } } } } }`,
        { task, author: o.userIds[1] },
        { key: o.apiKey },
      ),
    ).task.comments;
    expect(comments).toEqual({ totalCount: 1, items: [{ author: { id: o.userIds[1] } }] });
  });

  it("task items of many vendors: filtered, sorted and counted per vendor in batched statements", async () => {
    const o = await freshOrg();
    const vendors = o.vendorIds;
    for (const vendor of vendors) {
      for (const [title, priority, status] of [
        ["Check SOC 2 report", "low", "todo"],
        ["Sign DPA", "urgent", "todo"],
        ["Pen test review", "high", "done"],
      ]) {
        await t.rest("POST", "/v1/task-management", {
          key: o.apiKey,
          body: { title, priority, status, entityId: vendor, entityType: "vendor" },
        });
      }
    }
    const query = `{ vendors(limit: 50) { items { id
      open: taskItems(filter: { status: [todo] }, orderBy: { field: priority, direction: asc }) { totalCount items { title } }
      old: taskItems(status: done) { totalCount }
      all: taskItems(limit: 1) { totalCount nextCursor } } } }`;
    const { count } = await t.countQueries(async () => {
      const page = data(await t.gql(query, {}, { key: o.apiKey })).vendors;
      for (const vendor of page.items.filter((v: { id: string }) => vendors.includes(v.id))) {
        expect(vendor.open).toEqual({ totalCount: 2, items: [{ title: "Sign DPA" }, { title: "Check SOC 2 report" }] });
        expect(vendor.old.totalCount).toBe(1);
        expect(vendor.all.totalCount).toBe(3);
        expect(vendor.all.nextCursor).toBeTruthy();
      }
    });
    // No statement per vendor: one vendor costs what all of them cost.
    const one = await t.countQueries(() => t.gql(query.replace("limit: 50", "limit: 1"), {}, { key: o.apiKey }));
    expect(o.vendorIds.length).toBeGreaterThan(1);
    expect(count).toBe(one.count);
    const rest = await t.rest(
      "GET",
      `/v1/task-management?entityId=${vendors[0]}&entityType=vendor&priority=urgent,high&sort=-priority`,
      {
        key: o.apiKey,
      },
    );
    expect(rest.body.items.map((i: { title: string }) => i.title)).toEqual(["Pen test review", "Sign DPA"]);
  });
});

describe("totalCount", () => {
  it("under many parents: each parent's whole list, empty pages too, in one statement for them all", async () => {
    const o = await freshOrg();
    const vendors = o.vendorIds;
    expect(vendors.length).toBeGreaterThan(1);
    const addItems = async (vendor: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await t.rest("POST", "/v1/task-management", {
          key: o.apiKey,
          body: { title: `Item ${i}`, entityId: vendor, entityType: "vendor" },
        });
        expect(res.status, res.text).toBe(201);
      }
    };
    // Every vendor but the last has three items.
    for (const vendor of vendors.slice(0, -1)) await addItems(vendor, 3);
    const query = (fields: string) => `{ vendors(limit: 50) { items { id taskItems(limit: 2) { ${fields} } } } }`;
    const totals = async () => {
      const page = data(await t.gql(query("items { title } totalCount"), {}, { key: o.apiKey })).vendors;
      return Object.fromEntries(
        page.items.map((v: { id: string; taskItems: { totalCount: number } }) => [v.id, v.taskItems.totalCount]),
      );
    };
    expect(await totals()).toEqual(Object.fromEntries(vendors.map((v, i) => [v, i < vendors.length - 1 ? 3 : 0])));
    const alone = await t.countQueries(() => t.gql(query("items { title }"), {}, { key: o.apiKey }));
    const counted = await t.countQueries(() => t.gql(query("items { title } totalCount"), {}, { key: o.apiKey }));
    // One grouped statement counts every vendor's list (a relation's count is not read with its page:
    // measured on the framework page, 2026-12-04, it saved the service 4 to 10 % of its CPU and
    // PostgreSQL none).
    expect(counted.count, counted.statements.join("\n")).toBe(alone.count + 1);
    await addItems(vendors.at(-1) as string, 1);
    expect(await totals()).toEqual(Object.fromEntries(vendors.map((v, i) => [v, i < vendors.length - 1 ? 3 : 1])));
  });

  it("reads the rows of the items it shows, not of the one read beyond the page to know that it goes on", async () => {
    const o = await freshOrg();
    const vendor = o.vendorIds[0] as string;
    for (let i = 0; i < 3; i++) {
      const res = await t.rest("POST", "/v1/task-management", {
        key: o.apiKey,
        body: { title: `Item ${i}`, entityId: vendor, entityType: "vendor" },
      });
      expect(res.status, res.text).toBe(201);
    }
    const read: string[][] = [];
    const hydrate = async (ids: string[]) => {
      read.push(ids);
      return (await t.db.taskItem.findMany({ where: { id: { in: ids } } })) as { id: string }[];
    };
    const page = await listPage(t.db, o.organizationId, taskItemList, { limit: 2, parent: ["vendor", vendor] }, hydrate);
    expect(page.items).toHaveLength(2);
    expect(page.pageInfo.hasNextPage).toBe(true);
    expect(read).toEqual([page.items.map((item) => item.id)]);
  });

  it("is read in the root page's own statement: every page, a cursor's too, counts the whole list", async () => {
    const o = await freshOrg();
    // Two without a due date: ordered by it, the page is read in two parts (dated, then undated).
    await makeTasks(o.apiKey, [
      { title: "One", dueDate: "2026-12-01" },
      { title: "Two", dueDate: "2026-12-02" },
      { title: "Three", dueDate: "2026-12-03" },
      { title: "Four" },
      { title: "Five" },
    ]);
    const page = (fields: string) =>
      `query($cursor: String, $orderBy: TaskOrderBy, $filter: TaskFilter) { tasks(limit: 2, cursor: $cursor, orderBy: $orderBy, filter: $filter) { ${fields} } }`;
    for (const orderBy of [undefined, { field: "dueDate", direction: "asc" }]) {
      const alone = await t.countQueries(() => t.gql(page("items { id } nextCursor"), { orderBy }, { key: o.apiKey }));
      let counted = await t.countQueries(() => t.gql(page("items { id } nextCursor totalCount"), { orderBy }, { key: o.apiKey }));
      // The count costs no statement of its own.
      expect(counted.count, counted.statements.join("\n")).toBe(alone.count);
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const res = await t.gql(page("items { id } nextCursor totalCount"), { orderBy, cursor }, { key: o.apiKey });
        const tasks = data(res).tasks;
        seen.push(tasks.items.length);
        expect(tasks.totalCount).toBe(5);
        cursor = tasks.nextCursor;
      } while (cursor);
      expect(seen).toEqual([2, 2, 1]);
      // An empty page is still counted (by a statement of its own).
      counted = await t.countQueries(async () => {
        const res = await t.gql(
          page("items { id } totalCount"),
          { orderBy, filter: { search: "nothing like it" } },
          {
            key: o.apiKey,
          },
        );
        expect(data(res).tasks).toEqual({ items: [], totalCount: 0 });
      });
      expect(counted.count).toBe(alone.count + 1);
    }
  });

  it("answers on every list, root and relation, found by introspection", async () => {
    // The owner's own credential: it reads every list, the personal ones (notifications) included.
    const session = await createSession(t.db, org.userIds[0] as string, 3_600_000);
    const owner = { headers: { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId } };
    const { __schema } = data(
      await t.gql(
        `{ __schema { queryType { name } types { name kind fields { name args { name type { kind } } type { name kind ofType { name kind } } } } } }`,
        {},
        owner,
      ),
    );
    type Field = {
      name: string;
      args: { name: string; type: { kind: string } }[];
      type: { name: string | null; ofType?: { name: string } };
    };
    type Type = { name: string; kind: string; fields: Field[] | null };
    const types = __schema.types as Type[];
    const named = (f: Field) => f.type.name ?? f.type.ofType?.name ?? "";
    const pageTypes = new Set(
      types.filter((ty) => ty.kind === "OBJECT" && ty.fields?.some((f) => f.name === "totalCount")).map((ty) => ty.name),
    );
    expect(pageTypes.size).toBeGreaterThanOrEqual(8);
    const query = types.find((ty) => ty.name === __schema.queryType.name) as Type;
    const idOf: Record<string, string> = {
      Task: org.taskIds[0] as string,
      Vendor: org.vendorIds[0] as string,
      Risk: org.riskIds[0] as string,
      Policy: org.policyIds[0] as string,
      Member: org.memberIds[0] as string,
    };
    // A webhook endpoint with deliveries (every change queues one), and a signed audit checkpoint.
    const hook = await t.rest("POST", "/v1/webhook-endpoints", {
      key: org.apiKey,
      body: { url: "https://hooks.example.com/in" },
    });
    expect(hook.status, hook.text).toBe(201);
    await makeTasks(org.apiKey, [{ title: "Delivered" }]);
    expect((await t.rest("POST", "/v1/audit/checkpoints", { key: org.apiKey, body: {} })).status).toBe(201);
    const control = await t.rest("POST", "/v1/controls", { key: org.apiKey, body: { code: `L-${Date.now()}`, name: "Listed" } });
    expect(control.status, control.text).toBe(201);
    idOf.Control = control.body.id;
    const frameworkId = newId("fw");
    await t.db.framework.create({
      data: { id: frameworkId, organizationId: org.organizationId, key: frameworkId, name: "Listed", version: "1" },
    });
    idOf.Framework = frameworkId;
    const required: Record<string, string> = { entityId: `"${idOf.Vendor}"`, entityType: "vendor", id: `"${idOf.Policy}"` };
    // The `id` of a list under one record other than a policy.
    const requiredOf: Record<string, Record<string, string>> = {
      webhookDeliveries: { id: `"${hook.body.id}"` },
      controlEvidence: { controlId: `"${idOf.Control}"` },
      vendorEvidence: { vendorId: `"${idOf.Vendor}"` },
      frameworkRequirements: { id: `"${frameworkId}"` },
    };
    const argsOf = (f: Field) => {
      const given = f.args
        .filter((a) => a.type.kind === "NON_NULL")
        .map((a) => `${a.name}: ${requiredOf[f.name]?.[a.name] ?? required[a.name]}`);
      return given.length ? `(${given.join(", ")})` : "";
    };
    const asked: string[] = [];
    for (const f of query.fields ?? []) {
      if (!pageTypes.has(named(f))) continue;
      const res = data(await t.gql(`{ list: ${f.name}${argsOf(f)} { totalCount } }`, {}, owner));
      expect(typeof res.list.totalCount, `Query.${f.name}`).toBe("number");
      if (/^(webhookDeliveries|webhookEndpoints|auditCheckpoints)$/.test(f.name)) {
        expect(res.list.totalCount, `Query.${f.name}`).toBeGreaterThan(0);
      }
      asked.push(`Query.${f.name}`);
    }
    for (const parent of types) {
      for (const f of parent.fields ?? []) {
        if (parent.name === query.name || !pageTypes.has(named(f))) continue;
        const root = query.fields?.find((r) => named(r) === parent.name && r.args.length <= 1);
        expect(root, `a root field reading one ${parent.name}`).toBeDefined();
        const rootArg = root?.args[0]?.name;
        const res = data(
          await t.gql(
            `{ one: ${root?.name}${rootArg ? `(${rootArg}: "${idOf[parent.name]}")` : ""} { list: ${f.name} { totalCount } } }`,
            {},
            owner,
          ),
        );
        expect(typeof res.one.list.totalCount, `${parent.name}.${f.name}`).toBe("number");
        asked.push(`${parent.name}.${f.name}`);
      }
    }
    expect(asked).toEqual(
      expect.arrayContaining([
        "Query.vendors",
        "Query.risks",
        "Query.policies",
        "Vendor.taskItems",
        "Policy.versions",
        "Query.notifications",
        "Viewer.notifications",
        "Query.webhookEndpoints",
        "Query.webhookDeliveries",
        "Query.auditCheckpoints",
        "Query.controls",
        "Query.controlEvidence",
        "Control.evidence",
        "Control.policies",
        "Control.tasks",
        "Task.controls",
        "Policy.controls",
        "Vendor.evidence",
      ]),
    );
  });
});

describe("tenancy", () => {
  it("another organization's ids in a filter match nothing", async () => {
    const a = await freshOrg();
    const b = await freshOrg();
    await makeTasks(a.apiKey, [{ title: "A's task", assigneeId: a.owner }]);
    const page = data(
      await t.gql(
        `query($m: ID) { tasks(filter: { assigneeId: [$m] }) { totalCount items { id } } }`,
        { m: a.owner },
        { key: b.apiKey },
      ),
    ).tasks;
    expect(page).toEqual({ totalCount: 0, items: [] });
    const policies = await t.rest("GET", `/v1/policies?awaitingApprovalBy=${a.owner}`, { key: b.apiKey });
    expect(policies.body.items).toEqual([]);
  });
});

describe("demo data has a history", () => {
  it("the vendor history screen shows the seeded vendor's creation, on both transports", async () => {
    const vendorId = org.vendorIds[0] as string;
    const rest = await t.rest("GET", `/v1/audit-events?entityType=vendor&entityId=${vendorId}`, { key: org.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body.items.map((e: { action: string }) => e.action)).toEqual(["vendor.created"]);
    const gql = await t.gql(
      `query($id: ID!) { auditEvents(filter: {entityType: "vendor", entityId: [$id]}) { totalCount items { action data } } }`,
      { id: vendorId },
      { key: org.apiKey },
    );
    expect(gql.body.data.auditEvents).toMatchObject({
      totalCount: 1,
      items: [{ action: "vendor.created", data: { via: "operator" } }],
    });
    // Every record the seed creates has its creation event.
    const seeded = [...org.taskIds, ...org.vendorIds, ...org.riskIds, ...org.policyIds, ...org.taskItemIds, ...org.memberIds];
    const events = await t.db.auditEvent.findMany({ where: { organizationId: org.organizationId, entityId: { in: seeded } } });
    expect(new Set(events.filter((e) => e.action.endsWith(".created")).map((e) => e.entityId))).toEqual(new Set(seeded));
  });
});
