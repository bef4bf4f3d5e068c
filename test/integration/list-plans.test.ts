import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Prisma } from "../../src/generated/prisma/client.js";
import { type ListKey, type ListSpec, listPage } from "../../src/graphql/lists.js";
import { auditEventList } from "../../src/modules/audit/audit.service.js";
import { commentList } from "../../src/modules/comments/comments.service.js";
import { evidenceRequestList } from "../../src/modules/evidence-requests/evidence-requests.service.js";
import { memberList } from "../../src/modules/members/members.service.js";
import { notificationList } from "../../src/modules/notifications/notifications.service.js";
import { policyList } from "../../src/modules/policies/policies.service.js";
import { riskList } from "../../src/modules/risks/risks.service.js";
import { taskItemList } from "../../src/modules/task-items/task-items.service.js";
import { taskList } from "../../src/modules/tasks/tasks.service.js";
import { vendorList } from "../../src/modules/vendors/vendors.service.js";
import type { Db } from "../../src/platform/db/database.js";
import { openDatabase } from "../../src/platform/db/database.js";
import { createPostgresDatabase, usePostgres } from "../helpers/test-app.js";

/**
 * The plans of the list statements on PostgreSQL (the embedded run skips this file): with 100,000
 * tasks and 100,000 task items in one organization, the task and task-item lists use an index
 * with the planner's default settings; for the smaller tables an index serves every filter and
 * order once sequential scans are off. The statements are the engine's own, recorded as it builds them.
 */
const ORG = "org_plans";
let client: pg.Client;
let drop: () => Promise<void>;

/** The statements a page and its count run, recorded instead of executed. */
async function statementsOf(spec: ListSpec, key: ListKey): Promise<Prisma.Sql[]> {
  const recorded: Prisma.Sql[] = [];
  const recorder = {
    $queryRaw: async (statement: Prisma.Sql) => {
      recorded.push(statement);
      return [];
    },
  } as unknown as Db;
  const page = await listPage(recorder, ORG, spec, key, async () => []);
  await page.totalCount();
  return recorded;
}

async function plan(statement: Prisma.Sql): Promise<string> {
  const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${statement.text}`, statement.values as unknown[]);
  return rows.map((r) => r["QUERY PLAN"]).join("\n");
}

describe.skipIf(!usePostgres)("list plans on PostgreSQL", () => {
  beforeAll(async () => {
    const created = await createPostgresDatabase(undefined, "gateway_plans_");
    drop = created.drop;
    const database = await openDatabase({ kind: "postgres", url: created.url, poolSize: 2 });
    await database.close();
    client = new pg.Client({ connectionString: created.url });
    await client.connect();
    await client.query(`
      INSERT INTO "Organization" ("id", "name", "updatedAt") VALUES ('${ORG}', 'Plans', now()), ('org_other', 'Other', now());
      INSERT INTO "User" ("id", "name", "email", "updatedAt")
        SELECT 'usr_' || g, 'Person ' || g, 'person' || g || '@example.com', now() FROM generate_series(1, 500) g;
      INSERT INTO "Member" ("id", "organizationId", "userId", "role", "updatedAt", "createdAt")
        SELECT 'mem_' || g, CASE WHEN g % 2 = 0 THEN '${ORG}' ELSE 'org_other' END, 'usr_' || g,
               (ARRAY['owner','admin','auditor','employee','contractor'])[1 + g % 5]::"MemberRole", now(), now() - g * interval '1 minute'
        FROM generate_series(1, 500) g;
      INSERT INTO "Task" ("id", "organizationId", "title", "description", "status", "assigneeId", "dueDate", "createdAt", "updatedAt")
        SELECT 'tsk_' || lpad(g::text, 8, '0'), '${ORG}', 'Task ' || g || ' ' || md5(g::text), 'About ' || md5((g * 7)::text),
               (ARRAY['todo','in_progress','done','blocked'])[1 + g % 4]::"TaskStatus",
               CASE WHEN g % 10 = 0 THEN NULL ELSE 'mem_' || (2 * (1 + g % 250)) END,
               CASE WHEN g % 3 = 0 THEN NULL ELSE date '2026-01-01' + (g % 700) END,
               now() - g * interval '1 second', now() - (g % 5000) * interval '1 second'
        FROM generate_series(1, 100000) g;
      INSERT INTO "Vendor" ("id", "organizationId", "name", "status", "category", "assigneeId", "createdAt", "updatedAt")
        SELECT 'vnd_' || g, CASE WHEN g % 2 = 0 THEN '${ORG}' ELSE 'org_other' END, 'Vendor ' || md5(g::text),
               (ARRAY['not_assessed','in_progress','assessed'])[1 + g % 3]::"VendorStatus",
               (ARRAY['cloud','finance','other'])[1 + g % 3]::"VendorCategory",
               CASE WHEN g % 4 = 0 THEN NULL ELSE 'mem_' || (2 * (1 + g % 250)) END, now() - g * interval '1 minute', now()
        FROM generate_series(1, 2000) g;
      INSERT INTO "TaskItem" ("id", "organizationId", "entityId", "entityType", "title", "status", "priority", "assigneeId", "createdAt", "updatedAt")
        SELECT 'tski_' || g, '${ORG}', 'vnd_' || (2 * (1 + g % 10)), 'vendor', 'Item ' || md5(g::text),
               (ARRAY['todo','in_progress','in_review','done','canceled'])[1 + g % 5]::"TaskItemStatus",
               (ARRAY['urgent','high','medium','low'])[1 + g % 4]::"TaskItemPriority",
               CASE WHEN g % 10 = 0 THEN NULL ELSE 'mem_' || (2 * (1 + g % 250)) END,
               now() - g * interval '1 second', now() - (g % 5000) * interval '1 second'
        FROM generate_series(1, 100000) g;
      INSERT INTO "Risk" ("id", "organizationId", "title", "status", "category", "likelihood", "impact", "score", "assigneeId", "createdAt", "updatedAt")
        SELECT 'rsk_' || g, CASE WHEN g % 2 = 0 THEN '${ORG}' ELSE 'org_other' END, 'Risk ' || md5(g::text),
               (ARRAY['open','pending','closed','archived'])[1 + g % 4]::"RiskStatus", 'other', 1 + g % 5, 1 + g % 3,
               (1 + g % 5) * (1 + g % 3), CASE WHEN g % 4 = 0 THEN NULL ELSE 'mem_2' END, now() - g * interval '1 minute', now()
        FROM generate_series(1, 2000) g;
      INSERT INTO "Policy" ("id", "organizationId", "name", "status", "createdAt", "updatedAt")
        SELECT 'pol_' || g, CASE WHEN g % 2 = 0 THEN '${ORG}' ELSE 'org_other' END, 'Policy ' || md5(g::text),
               (ARRAY['draft','published','needs_review'])[1 + g % 3]::"PolicyStatus", now() - g * interval '1 minute', now()
        FROM generate_series(1, 2000) g;
      INSERT INTO "PolicyVersion" ("id", "organizationId", "policyId", "version", "status", "content", "approverId")
        SELECT 'pv_' || g, CASE WHEN g % 2 = 0 THEN '${ORG}' ELSE 'org_other' END, 'pol_' || g, 1,
               (ARRAY['draft','published','in_review'])[1 + g % 3]::"PolicyVersionStatus", '[]', 'mem_' || (2 * (1 + g % 250))
        FROM generate_series(1, 2000) g;
      INSERT INTO "Comment" ("id", "organizationId", "entityType", "entityId", "content", "authorId", "createdAt")
        SELECT 'cmt_' || g, '${ORG}', 'task', 'tsk_' || lpad((1 + g % 50)::text, 8, '0'), 'Comment ' || g, 'mem_' || (2 * (1 + g % 250)),
               now() - g * interval '1 second'
        FROM generate_series(1, 5000) g;
      INSERT INTO "AuditEvent" ("id", "organizationId", "actorUserId", "action", "entityType", "entityId", "createdAt", "sequence", "hash")
        SELECT 'aud_' || g, '${ORG}', 'usr_' || (2 * (1 + g % 250)), (ARRAY['task.created','task.updated','vendor.updated'])[1 + g % 3],
               'task', 'tsk_' || lpad((1 + g % 5000)::text, 8, '0'), now() - g * interval '1 second', 20001 - g, md5(g::text)
        FROM generate_series(1, 20000) g;`);
    await client.query("VACUUM ANALYZE");
  }, 600_000);

  afterAll(async () => {
    await client?.end();
    await drop?.();
  });

  const mine = "mem_4";
  const taskKeys: [string, ListKey][] = [
    ["newest first", {}],
    [
      "my open tasks by due date",
      { filter: { status: ["todo", "in_progress"], assigneeId: [mine] }, orderBy: { field: "dueDate", direction: "asc" } },
    ],
    [
      "PostGraphile's screen: one status, the assignee, by due date",
      { filter: { status: ["todo"], assigneeId: [mine] }, orderBy: { field: "dueDate", direction: "asc" }, limit: 50 },
    ],
    ["unassigned", { filter: { assigneeId: [null] } }],
    ["search", { filter: { search: "7e3f" } }],
    ["due soon", { filter: { dueBefore: "2026-01-15" }, orderBy: { field: "dueDate", direction: "asc" } }],
    [
      "recently changed",
      { filter: { updatedAfter: new Date(Date.now() - 60_000) }, orderBy: { field: "updatedAt", direction: "desc" } },
    ],
    ...["title", "status", "updatedAt", "createdAt"].flatMap((field) =>
      (["asc", "desc"] as const).map((direction): [string, ListKey] => [
        `by ${field} ${direction}`,
        { orderBy: { field, direction } },
      ]),
    ),
    // Backward pages read the same index back to front (nulls first).
    ["the last page, newest first", { last: 50 }],
    // Due dates are nullable: both directions, both ways, walk the one index (values, then nulls).
    ...(["asc", "desc"] as const).flatMap((direction): [string, ListKey][] => [
      [`by due date ${direction}`, { orderBy: { field: "dueDate", direction } }],
      [`the last page by due date ${direction}`, { last: 50, orderBy: { field: "dueDate", direction } }],
    ]),
    [
      "my open tasks by due date, backward",
      {
        filter: { status: ["todo", "in_progress"], assigneeId: [mine] },
        orderBy: { field: "dueDate", direction: "asc" },
        last: 50,
      },
    ],
  ];

  /** Page size 50, unless the key pages backward (limit and last do not mix). */
  const sized = (key: ListKey): ListKey => (key.last ? key : { limit: 50, ...key });

  it.each(taskKeys)("tasks, %s: pages use an index with the planner's defaults", async (_name, key) => {
    const [page, count] = await statementsOf(taskList, sized(key));
    const pagePlan = await plan(page as Prisma.Sql);
    expect(pagePlan, pagePlan).toMatch(/Index/);
    expect(pagePlan, pagePlan).not.toMatch(/Seq Scan on "Task"/);
    if (Object.keys(key.filter ?? {}).length) {
      const countPlan = await plan(count as Prisma.Sql);
      expect(countPlan, countPlan).toMatch(/Index/);
    }
  });

  // The nullable due date: each walk reads the index in its own order and stops at the page's size.
  // An ascending first page (and the last page read backward) is one walk, nothing sorted; a
  // descending one is two walks (values, then nulls), whose rows only the page's merge sorts.
  const sortsBelowPage: [string, ListKey, number][] = [
    [
      "my open tasks, first page",
      { filter: { status: ["todo"], assigneeId: [mine] }, orderBy: { field: "dueDate", direction: "asc" } },
      0,
    ],
    ["ascending, first page", { orderBy: { field: "dueDate", direction: "asc" } }, 0],
    ["ascending, the last page", { last: 50, orderBy: { field: "dueDate", direction: "asc" } }, 0],
    ["descending, first page", { orderBy: { field: "dueDate", direction: "desc" } }, 1],
    [
      "my open tasks descending",
      { filter: { status: ["todo"], assigneeId: [mine] }, orderBy: { field: "dueDate", direction: "desc" } },
      1,
    ],
  ];
  it.each(sortsBelowPage)("tasks by due date, %s: sorts only where two walks merge", async (_name, key, sorts) => {
    const [page] = await statementsOf(taskList, sized(key));
    const pagePlan = await plan(page as Prisma.Sql);
    expect(pagePlan.match(/(Incremental )?Sort {2}\(cost/g) ?? [], pagePlan).toHaveLength(sorts);
  });

  const itemKeys: [string, ListKey][] = [
    ["newest first", {}],
    ["open, urgent first", { filter: { status: ["todo", "in_progress"] }, orderBy: { field: "priority", direction: "asc" } }],
    ["mine", { filter: { assigneeId: [mine] } }],
    ["search", { filter: { search: "7e3f" } }],
    ...["title", "status", "priority", "updatedAt"].map((field): [string, ListKey] => [
      `by ${field}`,
      { orderBy: { field, direction: "desc" } },
    ]),
    ["by priority, backward", { last: 50, orderBy: { field: "priority", direction: "asc" } }],
  ];

  it.each(itemKeys)("task items of a vendor, %s: use an index with the planner's defaults", async (_name, key) => {
    const [page, count] = await statementsOf(taskItemList, sized({ parent: ["vendor", "vnd_4"], ...key }));
    for (const statement of [page, count] as Prisma.Sql[]) {
      const text = await plan(statement);
      expect(text, text).toMatch(/Index/);
      expect(text, text).not.toMatch(/Seq Scan on "TaskItem"/);
    }
  });

  /** Sample values for each filter of each smaller list. */
  const smaller: [string, ListSpec, Record<string, unknown>, ListKey["parent"]?][] = [
    ["Vendor", vendorList, { status: ["assessed"], category: ["cloud"], assigneeId: [null, mine], search: "abc1" }],
    ["Risk", riskList, { status: ["open"], category: ["other"], assigneeId: [null], minScore: 12, search: "abc1" }],
    ["Policy", policyList, { status: ["needs_review"], awaitingApprovalBy: mine, search: "abc1" }],
    ["Member", memberList, { role: ["admin"], department: ["it"], isActive: true, search: "person1" }],
    ["Comment", commentList, { authorId: ["usr_4"] }, ["task", "tsk_00000001"]],
    ["Notification", notificationList, { unread: true, reason: ["mention", "assigned"] }, ["mem_2"]],
    [
      "EvidenceRequest",
      evidenceRequestList,
      {
        status: ["open", "rejected"],
        controlId: ["ctl_00000001"],
        vendorId: ["vnd_00000001"],
        dueBefore: new Date(),
        dueAfter: new Date(),
        search: "abc1",
        visibleTo: ["vendor"],
      },
    ],
    [
      "AuditEvent",
      auditEventList,
      { entityType: "task", entityId: ["tsk_00000042"], actorUserId: ["usr_4"], action: ["task.updated"] },
    ],
  ];
  const cases = smaller.flatMap(([table, spec, samples, parent]) => [
    ...Object.entries(samples).map(([name, value]): [string, ListSpec, ListKey] => [
      `${table} filter ${name}`,
      spec,
      { parent, filter: { [name]: value } },
    ]),
    ...Object.keys(spec.filters)
      .filter((name) => /^(created|updated)(After|Before)$/.test(name))
      .map((name): [string, ListSpec, ListKey] => [`${table} filter ${name}`, spec, { parent, filter: { [name]: new Date() } }]),
    ...Object.keys(spec.orders).flatMap((field) =>
      (["asc", "desc"] as const).map((direction): [string, ListSpec, ListKey] => [
        `${table} order ${field} ${direction}`,
        spec,
        { parent, orderBy: { field, direction } },
      ]),
    ),
  ]);

  it.each(cases)("%s: an index serves it with enable_seqscan off", async (_name, spec, key) => {
    await client.query("SET enable_seqscan = off");
    try {
      for (const statement of await statementsOf(spec, key)) {
        const text = await plan(statement);
        expect(text, text).toMatch(/Index/);
        expect(text, text).not.toMatch(new RegExp(`Seq Scan on "${spec.table}"`));
      }
    } finally {
      await client.query("RESET enable_seqscan");
    }
  });
});
