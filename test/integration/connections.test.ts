import { createHash } from "node:crypto";
import { parse } from "graphql";
import { describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { Prisma } from "../../src/generated/prisma/client.js";
import { keyset, sortBy } from "../../src/graphql/lists.js";
import { estimateCost } from "../../src/graphql/query-cost.js";
import { schema } from "../../src/schema.js";
import { openFixture } from "../helpers/fixtures.js";

const { t } = await openFixture({ organizations: 0 });

type Gql = Awaited<ReturnType<typeof t.gql>>;
function data(res: Gql) {
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data;
}

type PageInfo = { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
type Connection = {
  items: { id: string }[];
  edges: { cursor: string; node: { id: string } }[];
  nextCursor: string | null;
  pageInfo: PageInfo;
  totalCount: number;
};
type Paging = { first?: number; after?: string | null; last?: number; before?: string | null };

const selection =
  "items { id } edges { cursor node { id } } nextCursor pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount";

/** One organization whose lists hold rows that tie on their sort keys, and tasks without a due date. */
async function organizationWithTies() {
  const o = await t.seedOrg();
  await t.db.task.deleteMany({ where: { organizationId: o.organizationId } });
  const key = o.apiKey;
  const post = async (path: string, body: Record<string, unknown>) => {
    const res = await t.rest("POST", path, { key, body });
    expect(res.status, res.text).toBe(201);
    return res.body as { id: string };
  };
  // Webhook endpoints, before the changes below: each change then queues a delivery to the first
  // (every type); the others take only policy events, which come later (none here).
  const endpoints = [];
  for (const [i, eventTypes] of [[], ["policy.*"], ["policy.*"]].entries()) {
    endpoints.push((await post("/v1/webhook-endpoints", { url: `https://hooks${i}.example.com/in`, eventTypes })).id);
  }
  const tasks = [];
  for (const task of [
    { title: "b", dueDate: "2026-12-02", status: "done" },
    { title: "a", status: "todo" },
    { title: "c", dueDate: "2026-12-01", status: "todo" },
    { title: "a", dueDate: "2026-12-02", status: "blocked" },
    { title: "d" },
    { title: "a", dueDate: "2026-12-01", status: "todo" },
    { title: "e" },
  ]) {
    tasks.push((await post("/v1/tasks", task)).id);
  }
  // Rows written in one statement share their createdAt: ties on the default order too.
  const now = new Date();
  await t.db.task.updateMany({ where: { id: { in: tasks.slice(0, 3) } }, data: { createdAt: now, updatedAt: now } });
  for (const vendor of o.vendorIds) {
    for (const [title, priority] of [
      ["Sign DPA", "high"],
      ["Check SOC 2", "high"],
      ["Pen test", "low"],
      ["Insurance", "urgent"],
    ]) {
      await post("/v1/task-management", { title, priority, entityId: vendor, entityType: "vendor" });
    }
  }
  for (const [i, userId] of [o.userIds[0], o.userIds[1], o.userIds[0], o.userIds[1]].entries()) {
    await post("/v1/comments", { content: `note ${i}`, entityId: tasks[0], entityType: "task", userId });
  }
  // Controls and evidence (contract sections 16, 17): a framework of the organization's own, a
  // control mapped to its requirements, with evidence, the controls linked to policies and tasks; vendor
  // evidence; evidence requests. Evidence without validUntil sorts last both ways.
  const framework = await post("/v1/frameworks", {
    format: "json",
    document: JSON.stringify({
      key: "ties",
      name: "Ties",
      version: "1",
      requirements: ["A-1", "A-2", "A-3", "A-4", "A-5"].map((ref) => ({ ref, title: "Same title" })),
    }),
  });
  const requirements = await t.rest("GET", `/v1/frameworks/${framework.id}/requirements?limit=100`, { key });
  expect(requirements.status, requirements.text).toBe(200);
  const controls = [];
  for (const [code, name] of [
    ["C-2", "Backups"],
    ["C-1", "Backups"],
    ["C-3", "Access"],
  ]) {
    controls.push((await post("/v1/controls", { code, name })).id);
  }
  const policies = [...o.policyIds, (await post("/v1/policies", { name: "Backups", content: [{ type: "p" }] })).id];
  const mapped = await t.rest("POST", `/v1/controls/${controls[0]}/requirements`, {
    key,
    body: { requirementIds: requirements.body.items.map((r: { id: string }) => r.id) },
  });
  expect(mapped.status, mapped.text).toBe(200);
  for (const control of controls) {
    const linked = await t.rest("POST", `/v1/controls/${control}/links`, { key, body: { policyIds: policies, taskIds: tasks } });
    expect(linked.status, linked.text).toBe(200);
  }
  const upload = async () => {
    const bytes = Buffer.from(`%PDF-1.7\n${Math.random()}\n`);
    const created = await post("/v1/attachment-uploads", {
      fileName: "evidence.pdf",
      fileType: "application/pdf",
      size: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("base64"),
    });
    const { uploadUrl, headers } = created as unknown as { uploadUrl: string; headers: Record<string, string> };
    const put = await t.app.fetch(new Request(uploadUrl, { method: "PUT", headers, body: new Uint8Array(bytes) }));
    expect(put.status).toBe(200);
    return created.id;
  };
  const dated = [
    { collectedAt: "2026-01-02T00:00:00.000Z", validUntil: "2030-01-01T00:00:00.000Z" },
    { collectedAt: "2026-01-01T00:00:00.000Z" },
    { collectedAt: "2026-01-02T00:00:00.000Z", validUntil: "2029-01-01T00:00:00.000Z" },
    { collectedAt: "2026-01-01T00:00:00.000Z", validUntil: "2030-01-01T00:00:00.000Z" },
    { collectedAt: "2026-01-03T00:00:00.000Z" },
  ];
  const evidence = [];
  for (const body of dated) {
    evidence.push((await post(`/v1/controls/${controls[0]}/evidence`, { uploadId: await upload(), ...body })).id);
    evidence.push((await post(`/v1/vendors/${o.vendorIds[0]}/evidence`, { uploadId: await upload(), ...body })).id);
  }
  for (const [title, dueInDays] of [
    ["SOC 2 report", 10],
    ["Pen test", 5],
    ["SOC 2 report", 5],
    ["Insurance", 20],
  ] as const) {
    await post("/v1/evidence-requests", {
      ...(dueInDays === 20 ? { controlId: controls[0] } : { vendorId: o.vendorIds[0] }),
      title,
      recipientEmail: "security@vendor.example",
      dueAt: new Date(Date.now() + dueInDays * 86_400_000).toISOString(),
    });
  }
  await t.db.control.updateMany({ where: { id: { in: controls.slice(0, 2) } }, data: { createdAt: now, updatedAt: now } });
  await t.db.evidence.updateMany({ where: { id: { in: evidence.slice(0, 4) } }, data: { createdAt: now } });
  // Ties in the webhook lists too: endpoints and deliveries that share their timestamps.
  const deliveries = await t.db.webhookDelivery.findMany({ where: { endpointId: endpoints[0] }, orderBy: { id: "asc" } });
  expect(deliveries.length).toBeGreaterThan(4);
  await t.db.webhookDelivery.updateMany({
    where: { id: { in: deliveries.slice(0, 3).map((d) => d.id) } },
    data: { createdAt: now, updatedAt: now },
  });
  await t.db.webhookEndpoint.updateMany({ where: { id: { in: endpoints.slice(1) } }, data: { createdAt: now, updatedAt: now } });
  // Signed audit checkpoints: two at the same sequence (a tie), then more as the chain goes on.
  for (const _ of [1, 2]) await post("/v1/audit/checkpoints", {});
  await post("/v1/comments", { content: "later", entityId: tasks[1], entityType: "task", userId: o.userIds[0] });
  for (const _ of [1, 2, 3]) await post("/v1/audit/checkpoints", {});
  return { ...o, tasks, endpoints, controls, frameworkId: framework.id };
}

const o = await organizationWithTies();
// The owner's own session reads every list the key reads, and the personal ones (notifications) too.
const ownerSession = await createSession(t.db, o.userIds[0] as string, 3_600_000);
const asOwner = { headers: { authorization: `Bearer ${ownerSession.token}`, "x-organization-id": o.organizationId } };

type Introspected = {
  name: string;
  kind: string;
  fields:
    | {
        name: string;
        args: { name: string; type: { kind: string } }[];
        type: { name: string | null; ofType?: { name: string } };
      }[]
    | null;
};

/** Every list by introspection, root and relation: how to reach it, and its order fields. */
async function allLists() {
  const { __schema } = data(
    await t.gql(
      `{ __schema { queryType { name } types { name kind fields { name args { name type { kind } } type { name ofType { name } } } } } }`,
      {},
      { key: o.apiKey },
    ),
  );
  const types = __schema.types as Introspected[];
  const named = (f: NonNullable<Introspected["fields"]>[number]) => f.type.name ?? f.type.ofType?.name ?? "";
  const connections = new Set(
    types.filter((ty) => ty.kind === "OBJECT" && ty.fields?.some((f) => f.name === "pageInfo")).map((ty) => ty.name),
  );
  const query = types.find((ty) => ty.name === __schema.queryType.name) as Introspected;
  const required: Record<string, string> = {
    entityId: `"${o.vendorIds[0]}"`,
    entityType: "vendor",
    id: `"${o.policyIds[0]}"`,
    controlId: `"${o.controls[0]}"`,
    vendorId: `"${o.vendorIds[0]}"`,
  };
  const idOf: Record<string, string | undefined> = {
    Task: o.tasks[0],
    Vendor: o.vendorIds[0],
    Risk: o.riskIds[0],
    Policy: o.policyIds[0],
    Member: o.memberIds[0],
    Control: o.controls[0],
    Framework: o.frameworkId,
  };
  const lists: {
    label: string;
    type: string;
    fixed: string;
    wrap: (inner: string) => string;
    unwrap: (d: never) => Connection;
  }[] = [];
  for (const f of query.fields ?? []) {
    if (!connections.has(named(f))) continue;
    const given = f.args.filter((a) => a.type.kind === "NON_NULL").map((a) => `${a.name}: ${required[a.name]}`);
    // Comments of a vendor: the task that has them; deliveries: those of the endpoint that takes every type.
    const fixed =
      f.name === "comments"
        ? [`entityId: "${o.tasks[0]}"`, "entityType: task"]
        : f.name === "webhookDeliveries"
          ? [`id: "${o.endpoints[0]}"`]
          : f.name === "frameworkRequirements"
            ? [`id: "${o.frameworkId}"`]
            : given;
    lists.push({
      label: `Query.${f.name}`,
      type: named(f),
      fixed: fixed.join(", "),
      wrap: (inner) => `list: ${f.name}${inner}`,
      unwrap: (d: { list: Connection }) => d.list,
    } as (typeof lists)[number]);
  }
  for (const parent of types) {
    if (parent.name === query.name || parent.kind !== "OBJECT" || parent.name.startsWith("__")) continue;
    for (const f of parent.fields ?? []) {
      if (!connections.has(named(f))) continue;
      const root = query.fields?.find((r) => named(r) === parent.name && r.args.length === 1);
      if (!root) continue; // a payload or event type, reached from a mutation or subscription
      const id = idOf[parent.name];
      expect(id, `a record of ${parent.name} to page its ${f.name}`).toBeDefined();
      lists.push({
        label: `${parent.name}.${f.name}`,
        type: named(f),
        fixed: "",
        wrap: (inner) => `one: ${root.name}(${root.args[0]?.name}: "${id}") { list: ${f.name}${inner} }`,
        unwrap: (d: { one: { list: Connection } }) => d.one.list,
      } as (typeof lists)[number]);
    }
  }
  return Promise.all(
    lists.map(async (list) => {
      const type = list.type.replace(/Connection$/, "");
      const { __type } = data(
        await t.gql(`{ __type(name: "${type}OrderField") { enumValues { name } } }`, {}, { key: o.apiKey }),
      );
      return { ...list, type, orders: (__type.enumValues as { name: string }[]).map((v) => v.name) };
    }),
  );
}

type List = Awaited<ReturnType<typeof allLists>>[number];

async function page(list: List, orderBy: { field: string; direction: string }, paging: Paging): Promise<Connection> {
  const args = `(${list.fixed ? `${list.fixed}, ` : ""}first: $first, after: $after, last: $last, before: $before, orderBy: $orderBy) { ${selection} }`;
  const query = `query($first: Int, $after: String, $last: Int, $before: String, $orderBy: ${list.type}OrderBy) { ${list.wrap(args)} }`;
  // Unset arguments as null, as Apollo and Relay send them.
  const variables = { first: null, after: null, last: null, before: null, ...paging, orderBy };
  const conn = list.unwrap(data(await t.gql(query, variables, asOwner)) as never);
  const ids = conn.edges.map((e) => e.node.id);
  expect(conn.items.map((i) => i.id)).toEqual(ids);
  expect(conn.pageInfo.startCursor).toBe(conn.edges[0]?.cursor ?? null);
  expect(conn.pageInfo.endCursor).toBe(conn.edges[conn.edges.length - 1]?.cursor ?? null);
  expect(conn.nextCursor).toBe(conn.pageInfo.hasNextPage ? conn.pageInfo.endCursor : null);
  return conn;
}

async function forward(list: List, orderBy: { field: string; direction: string }, size: number) {
  const ids: string[] = [];
  let after: string | null = null;
  for (let n = 0; n < 50; n++) {
    const conn = await page(list, orderBy, { first: size, after });
    expect(conn.pageInfo.hasPreviousPage).toBe(after !== null);
    expect(conn.edges.length).toBe(conn.pageInfo.hasNextPage ? size : conn.edges.length);
    ids.push(...conn.edges.map((e) => e.node.id));
    if (!conn.pageInfo.hasNextPage) return ids;
    after = conn.pageInfo.endCursor;
  }
  throw new Error("no last page after 50 pages");
}

async function backward(list: List, orderBy: { field: string; direction: string }, size: number) {
  const ids: string[] = [];
  let before: string | null = null;
  for (let n = 0; n < 50; n++) {
    const conn = await page(list, orderBy, { last: size, before });
    expect(conn.pageInfo.hasNextPage).toBe(before !== null);
    expect(conn.edges.length).toBe(conn.pageInfo.hasPreviousPage ? size : conn.edges.length);
    ids.unshift(...conn.edges.map((e) => e.node.id));
    if (!conn.pageInfo.hasPreviousPage) return ids;
    before = conn.pageInfo.startCursor;
  }
  throw new Error("no first page after 50 pages");
}

describe("connections: forward and backward paging", () => {
  it("pages every list, root and relation, forward and backward in every order to the same list", async () => {
    const lists = await allLists();
    expect(lists.map((l) => l.label)).toEqual(
      expect.arrayContaining([
        ...["tasks", "vendors", "risks", "policies", "members", "taskItems", "auditEvents", "comments", "policyVersions"].map(
          (f) => `Query.${f}`,
        ),
        "Task.comments",
        "Vendor.comments",
        "Vendor.taskItems",
        "Risk.taskItems",
        "Policy.versions",
        "Query.notifications",
        "Query.webhookEndpoints",
        "Query.webhookDeliveries",
        "Query.auditCheckpoints",
        ...["controls", "controlEvidence", "vendorEvidence", "frameworks", "frameworkRequirements", "evidenceRequests"].map(
          (f) => `Query.${f}`,
        ),
        ...["evidence", "requirements", "policies", "tasks"].map((f) => `Control.${f}`),
        "Framework.requirements",
        "Vendor.evidence",
      ]),
    );
    for (const list of lists) {
      for (const field of list.orders) {
        for (const direction of ["asc", "desc"]) {
          const orderBy = { field, direction };
          const label = `${list.label} ${field} ${direction}`;
          const whole = await page(list, orderBy, { first: 100 });
          expect(whole.pageInfo, label).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
          expect(whole.edges.length, label).toBe(whole.totalCount);
          // The webhook, checkpoint, control, framework and evidence lists hold more than a page, so that paging them is tested.
          if (/webhook|auditCheckpoints|[Cc]ontrol|[Ff]ramework|[Ee]vidence/.test(list.label)) {
            expect(whole.totalCount, label).toBeGreaterThan(2);
          }
          const ids = whole.edges.map((e) => e.node.id);
          expect(await forward(list, orderBy, 2), label).toEqual(ids);
          expect(await backward(list, orderBy, 2), label).toEqual(ids);
        }
      }
    }
  });

  it("answers the rows right before and after any edge's cursor, with ties and null due dates, in every task order", async () => {
    const rows = await t.db.task.findMany({ where: { organizationId: o.organizationId } });
    const statusOrder = ["todo", "in_progress", "done", "blocked"];
    const value = (r: (typeof rows)[number], field: string): string | number | null => {
      if (field === "dueDate") return r.dueDate ? r.dueDate.toISOString() : null;
      if (field === "status") return statusOrder.indexOf(r.status);
      if (field === "createdAt" || field === "updatedAt") return (r[field] as Date).toISOString();
      return r[field as "title"];
    };
    const tasks = (await allLists()).find((l) => l.label === "Query.tasks") as List;
    expect(tasks.orders.sort()).toEqual(["createdAt", "dueDate", "status", "title", "updatedAt"]);
    for (const field of tasks.orders) {
      for (const direction of ["asc", "desc"] as const) {
        const label = `${field} ${direction}`;
        // Section 9's order: the key's direction, nulls last both ways, ties on id in the key's direction.
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
        const orderBy = { field, direction };
        const whole = await page(tasks, orderBy, { first: 100 });
        expect(
          whole.edges.map((e) => e.node.id),
          label,
        ).toEqual(expected);
        const last3 = await page(tasks, orderBy, { last: 3 });
        expect(
          last3.edges.map((e) => e.node.id),
          label,
        ).toEqual(expected.slice(-3));
        expect(last3.pageInfo, label).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
        for (const [i, edge] of whole.edges.entries()) {
          const before = await page(tasks, orderBy, { last: 2, before: edge.cursor });
          expect(
            before.edges.map((e) => e.node.id),
            `${label} before #${i}`,
          ).toEqual(expected.slice(Math.max(0, i - 2), i));
          expect(before.pageInfo.hasPreviousPage, `${label} before #${i}`).toBe(i > 2);
          const after = await page(tasks, orderBy, { first: 2, after: edge.cursor });
          expect(
            after.edges.map((e) => e.node.id),
            `${label} after #${i}`,
          ).toEqual(expected.slice(i + 1, i + 3));
          expect(after.pageInfo.hasNextPage, `${label} after #${i}`).toBe(i + 3 < expected.length);
          // An edge's cursor is a cursor of the classic pair too.
          const classic = data(
            await t.gql(
              `query($c: String, $o: TaskOrderBy) { tasks(limit: 2, cursor: $c, orderBy: $o) { items { id } } }`,
              { c: edge.cursor, o: orderBy },
              { key: o.apiKey },
            ),
          ).tasks;
          expect(classic.items.map((r: { id: string }) => r.id)).toEqual(expected.slice(i + 1, i + 3));
        }
      }
    }
  });
});

describe("keyset reversal", () => {
  it("reads before any row, null or not, when the cursor's nullness varies per row of a batch (as in a LATERAL join)", async () => {
    const rows: [string, string | null][] = [
      ["r1", "2026-01-01"],
      ["r2", null],
      ["r3", "2026-01-01"],
      ["r4", "2026-01-02"],
      ["r5", null],
      ["r6", "2026-01-03"],
    ];
    const key = sortBy.date("d");
    const table = Prisma.sql`(VALUES ${Prisma.join(rows.map(([id, d]) => Prisma.sql`(${id}, ${d}::date)`))}) AS t("id", "d")`;
    for (const direction of ["asc", "desc"] as const) {
      const sign = direction === "asc" ? 1 : -1;
      const listed = [...rows]
        .sort(([ix, x], [iy, y]) => {
          if (x === null || y === null) return x === y ? (ix < iy ? -sign : sign) : x === null ? 1 : -1;
          return x === y ? (ix < iy ? -sign : sign) : x < y ? -sign : sign;
        })
        .map(([id]) => id);
      for (const [i, id] of listed.entries()) {
        const value = rows.find((r) => r[0] === id)?.[1] ?? null;
        for (const reversed of [false, true]) {
          const ks = keyset(
            key,
            direction,
            { value: Prisma.sql`k."cv"`, id: Prisma.sql`k."ci"`, valueIsNull: Prisma.sql`k."cn"` },
            reversed,
          );
          const found = await t.db.$queryRaw<{ id: string }[]>(Prisma.sql`
            SELECT t."id" FROM ${table}, (VALUES (${value === null}::boolean, ${value}::date, ${id}::text)) AS k("cn", "cv", "ci")
            WHERE ${ks.where} ORDER BY ${ks.orderBy}`);
          const expected = reversed ? listed.slice(0, i).reverse() : listed.slice(i + 1);
          expect(
            found.map((r) => r.id),
            `${direction} ${reversed ? "before" : "after"} ${id}`,
          ).toEqual(expected);
        }
      }
    }
  });
});

describe("connections: relation lists", () => {
  const orderBy = { field: "priority", direction: "asc" };
  const full = async (vendorId: string) =>
    data(
      await t.gql(
        `query($v: ID!, $o: TaskItemOrderBy) { vendor(id: $v) { taskItems(first: 100, orderBy: $o) { edges { cursor node { id } } } } }`,
        { v: vendorId, o: orderBy },
        { key: o.apiKey },
      ),
    ).vendor.taskItems.edges as { cursor: string; node: { id: string } }[];

  it("pages backward under many parents in one statement, each parent from its own cursor", async () => {
    expect(o.vendorIds.length).toBeGreaterThan(1);
    const query = `query($n: Int, $o: TaskItemOrderBy) { vendors(first: $n) { edges { node { id
      taskItems(last: 2, orderBy: $o) { totalCount edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }
    } } } }`;
    const many = await t.countQueries(async () => {
      const vendors = data(await t.gql(query, { n: 50, o: orderBy }, { key: o.apiKey })).vendors.edges;
      expect(vendors.length).toBe(o.vendorIds.length);
      for (const { node } of vendors) {
        const all = await full(node.id);
        expect(all.length).toBeGreaterThan(2);
        expect(node.taskItems.edges).toEqual(all.slice(-2));
        expect(node.taskItems.pageInfo).toEqual({
          hasNextPage: false,
          hasPreviousPage: true,
          startCursor: all[all.length - 2]?.cursor,
          endCursor: all[all.length - 1]?.cursor,
        });
      }
    });
    const one = await t.countQueries(() => t.gql(query, { n: 1, o: orderBy }, { key: o.apiKey }));
    // The check of each vendor's full list above adds its own statements; compare the query alone.
    const alone = await t.countQueries(() => t.gql(query, { n: 50, o: orderBy }, { key: o.apiKey }));
    expect(many.count).toBeGreaterThan(alone.count);
    expect(alone.count).toBe(one.count);

    const [a, b] = o.vendorIds as [string, string];
    const [allA, allB] = [await full(a), await full(b)];
    const aliased = (vendors: [string, number, string | undefined][]) =>
      t.gql(
        `query($o: TaskItemOrderBy) { ${vendors
          .map(
            ([id, n, cursor], i) =>
              `v${i}: vendor(id: "${id}") { taskItems(last: ${n}, before: "${cursor}", orderBy: $o) { edges { node { id } } pageInfo { hasPreviousPage hasNextPage } } }`,
          )
          .join(" ")} }`,
        { o: orderBy },
        { key: o.apiKey },
      );
    const both: [string, number, string | undefined][] = [
      [a, 2, allA[3]?.cursor],
      [b, 1, allB[1]?.cursor],
    ];
    const res = data(await aliased(both));
    expect(res.v0.taskItems.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(
      allA.slice(1, 3).map((e) => e.node.id),
    );
    expect(res.v0.taskItems.pageInfo).toEqual({ hasPreviousPage: true, hasNextPage: true });
    expect(res.v1.taskItems.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([allB[0]?.node.id]);
    expect(res.v1.taskItems.pageInfo).toEqual({ hasPreviousPage: false, hasNextPage: true });
    // Both vendors' pages come from one batch: two vendors cost what one does.
    const oneVendor = await t.countQueries(() => aliased(both.slice(0, 1)));
    const twoVendors = await t.countQueries(() => aliased(both));
    expect(twoVendors.count).toBe(oneVendor.count);
  });

  it("refuses another parent's cursor, and mixed paging arguments, at the relation's path", async () => {
    const [a, b] = o.vendorIds as [string, string];
    const cursor = (await full(a))[0]?.cursor;
    const res = await t.gql(
      `query($b: ID!, $c: String) { vendor(id: $b) { id taskItems(last: 1, before: $c) { totalCount } } }`,
      { b, c: cursor },
      { key: o.apiKey },
    );
    expect(res.status).toBe(200);
    expect(res.body.errors?.[0]).toMatchObject({ path: ["vendor", "taskItems"], extensions: { code: "BAD_USER_INPUT" } });
    expect(res.body.data.vendor).toEqual({ id: b, taskItems: null });
    const mixed = await t.gql(
      `query($b: ID!) { vendor(id: $b) { id taskItems(limit: 1, last: 1) { totalCount } } }`,
      { b },
      { key: o.apiKey },
    );
    expect(mixed.body.errors?.[0]).toMatchObject({ path: ["vendor", "taskItems"], extensions: { code: "BAD_USER_INPUT" } });
    expect(mixed.body.errors?.[0]?.message).toMatch(/limit cannot be combined with last/);
  });
});

describe("connections: what a page costs", () => {
  it("reads the rows once whether items, edges or both are selected, with no statement per row", async () => {
    const owner = o.memberIds[0] as string;
    for (const id of o.tasks) await t.rest("PATCH", `/v1/tasks/${id}`, { key: o.apiKey, body: { assigneeId: owner } });
    const shapes = {
      items: "items { id title assignee { name } }",
      edges: "edges { cursor node { id title assignee { name } } }",
      both: "items { id } edges { node { title assignee { name } } }",
    };
    const counts: Record<string, number> = {};
    for (const [name, shape] of Object.entries(shapes)) {
      for (const n of [1, 5]) {
        const { count } = await t.countQueries(async () => {
          const res = data(await t.gql(`query($n: Int) { tasks(first: $n) { ${shape} } }`, { n }, { key: o.apiKey }));
          const rows = res.tasks.edges?.map((e: { node: unknown }) => e.node) ?? res.tasks.items;
          expect(rows).toHaveLength(n);
          for (const row of rows) expect(row.assignee).toEqual({ name: "Ada Owner" });
        });
        counts[`${name} ${n}`] = count;
      }
    }
    // The selected assignee is joined into the one query that reads the rows.
    expect(new Set(Object.values(counts)).size, JSON.stringify(counts)).toBe(1);
  });

  it("prices first and last as limit, and edges { node } as items", () => {
    const cost = (query: string) => estimateCost(schema, parse(query), {});
    const nested = (args: string, page: (inner: string) => string) =>
      `{ tasks(${args}) { ${page(`comments(${args}) { ${page("id")} }`)} } }`;
    const items = (inner: string) => `items { id ${inner} }`;
    const edges = (inner: string) => `edges { cursor node { id ${inner} } }`;
    const byLimit = cost(nested("limit: 30", items));
    // tasks, its 30 items, their 30 comments pages, and 30 comments in each.
    expect(byLimit).toBe(1 + 30 + 30 + 30 * 30);
    expect(cost(nested("first: 30", items))).toBe(byLimit);
    expect(cost(nested("last: 30", edges))).toBe(byLimit);
    expect(cost(nested("first: 100", edges))).toBe(cost(nested("limit: 100", items)));
    expect(cost(nested("first: 100", edges))).toBeGreaterThan(10_000);
  });

  it("refuses first: 100 of a list with nested lists as it refuses limit: 100", async () => {
    for (const args of ["limit: 100", "first: 100", "last: 100"]) {
      const res = await t.gql(
        `{ tasks(${args}) { edges { node { comments(${args}) { edges { node { id } } } } } } }`,
        {},
        { key: o.apiKey },
      );
      expect(res.body.errors?.[0]?.extensions?.code, args).toBe("QUERY_TOO_COMPLEX");
    }
  });

  it("counts edges and node as levels of depth, as they are fields", async () => {
    const deep = `{ tasks { edges { node { comments { edges { node { attachments { id } } } } } } } }`;
    const res = await t.gql(deep, {}, { key: o.apiKey });
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    const deeper = `{ vendors { edges { node { comments { edges { node { entity { ... on Task { comments { edges { node { id } } } } } } } } } } } }`;
    const refused = await t.gql(deeper, {}, { key: o.apiKey });
    expect(refused.body.errors?.[0]?.extensions?.limit?.name).toBe("depth");
  });
});

describe("connections: refusals", () => {
  const tasksQuery = `query($limit: Int, $cursor: String, $first: Int, $after: String, $last: Int, $before: String, $filter: TaskFilter, $orderBy: TaskOrderBy) {
    tasks(limit: $limit, cursor: $cursor, first: $first, after: $after, last: $last, before: $before, filter: $filter, orderBy: $orderBy) { edges { cursor } } viewer { organization { id } } }`;

  it("refuses mixed paging arguments with BAD_USER_INPUT and a message naming them", async () => {
    const { edges } = data(await t.gql(tasksQuery, { first: 2 }, { key: o.apiKey })).tasks;
    const c = edges[0].cursor;
    for (const [variables, named] of [
      [{ limit: 2, first: 2 }, /limit.*first/],
      [{ cursor: c, after: c }, /cursor.*after/],
      [{ limit: 2, before: c }, /limit.*before/],
      [{ first: 2, last: 2 }, /first.*last/],
      [{ after: c, last: 2 }, /after.*last/],
      [{ first: 2, before: c }, /before.*first/],
      [{ after: c, before: c }, /after.*before/],
      [{ first: 0 }, /first/],
      [{ last: 101 }, /last/],
    ] as const) {
      const res = await t.gql(tasksQuery, variables, { key: o.apiKey });
      expect(res.status).toBe(200);
      const error = res.body.errors?.[0];
      expect(error?.extensions?.code, JSON.stringify(variables)).toBe("BAD_USER_INPUT");
      expect(error?.message, JSON.stringify(variables)).toMatch(named);
      // A refused list is null; the rest of the request answers.
      expect(res.body.data).toMatchObject({ tasks: null, viewer: { organization: { id: o.organizationId } } });
    }
  });

  it("refuses a cursor of another order or filter, or a forged one, as after and as before", async () => {
    const { edges } = data(await t.gql(tasksQuery, { first: 2, filter: { search: "zz" } }, { key: o.apiKey })).tasks;
    const whole = data(await t.gql(tasksQuery, { first: 2 }, { key: o.apiKey })).tasks.edges;
    const c = whole[0].cursor;
    expect(edges).toEqual([]);
    for (const variables of [
      { after: c, filter: { search: "ab" } },
      { before: c, orderBy: { field: "title", direction: "asc" } },
      { before: c, orderBy: { field: "createdAt", direction: "asc" } },
      { after: "not-a-cursor" },
      { before: Buffer.from(JSON.stringify({ o: "createdAt", d: "desc", f: "x", v: "bogus", i: "a" })).toString("base64url") },
    ]) {
      const res = await t.gql(tasksQuery, variables, { key: o.apiKey });
      const error = res.body.errors?.[0];
      expect(error?.extensions?.code, JSON.stringify(variables)).toBe("BAD_USER_INPUT");
      expect(error?.message).toMatch(/^(after|before) /);
    }
  });
});

describe("connections: REST stays as it was", () => {
  it("answers items and nextCursor only, and refuses the Relay arguments as unknown parameters", async () => {
    const res = await t.rest("GET", "/v1/tasks?limit=2", { key: o.apiKey });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["items", "nextCursor"]);
    const next = await t.rest("GET", `/v1/tasks?limit=2&cursor=${res.body.nextCursor}`, { key: o.apiKey });
    expect(next.status, next.text).toBe(200);
    for (const query of ["first=2", "last=2", `after=${res.body.nextCursor}`, `before=${res.body.nextCursor}`]) {
      const refused = await t.rest("GET", `/v1/tasks?${query}`, { key: o.apiKey });
      expect(refused.status, query).toBe(400);
      expect(refused.body).toMatchObject({ code: "BAD_USER_INPUT" });
    }
    const openapi = await t.rest("GET", "/v1/openapi.json", { key: o.apiKey });
    const params = openapi.body.paths["/tasks"].get.parameters.map((p: { name?: string }) => p.name);
    expect(params).toEqual(expect.arrayContaining(["limit", "cursor"]));
    for (const name of ["first", "after", "last", "before"]) expect(params).not.toContain(name);
    const schemas = Object.keys(openapi.body.components.schemas);
    expect(schemas).toEqual(expect.arrayContaining(["TaskPage", "VendorPage", "CommentPage"]));
    expect(schemas.filter((s) => /Connection|Edge|PageInfo/.test(s))).toEqual([]);
  });
});
