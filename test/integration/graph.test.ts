import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { newId } from "../../src/platform/ids.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();

const comment = (key: string, entityType: string, entityId: string, userId: string, content = "c") =>
  t.rest("POST", "/v1/comments", {
    key,
    body: {
      content,
      entityType,
      entityId,
      userId,
      attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: "YQ==", description: "notes" }],
    },
  });

/** `n` vendors, each with 2 task items and 6 comments with an attachment. */
async function vendorsWithData(n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => newId("vnd"));
  await t.db.vendor.createMany({ data: ids.map((id, i) => ({ id, organizationId: org.organizationId, name: `V${i}` })) });
  await t.db.taskItem.createMany({
    data: ids.flatMap((entityId) =>
      ["todo", "done"].map((status) => ({
        id: newId("tski"),
        organizationId: org.organizationId,
        entityId,
        entityType: "vendor" as const,
        title: "I",
        status: status as "todo" | "done",
      })),
    ),
  });
  const authorId = (await t.db.member.findFirstOrThrow({ where: { id: org.memberIds[0] } })).id;
  for (let c = 0; c < 6; c++) {
    const commentIds = ids.map(() => newId("cmt"));
    await t.db.comment.createMany({
      data: ids.map((entityId, i) => ({
        id: commentIds[i] as string,
        organizationId: org.organizationId,
        entityType: "vendor" as const,
        entityId,
        content: `c${c}`,
        authorId,
      })),
    });
    await t.db.attachment.createMany({
      data: commentIds.map((commentId) => ({
        id: newId("att"),
        organizationId: org.organizationId,
        commentId,
        name: "a.txt",
        type: "text/plain",
        size: 1,
        uploaderId: authorId,
        // Metadata only: these tests read no bytes.
        store: "database",
        objectKey: randomBytes(16).toString("hex"),
        sha256: "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
      })),
    });
  }
  return ids;
}

const vendorPage = `query VendorPage($ids: [ID!]!) {
  nodes(ids: $ids) {
    id
    ... on Vendor {
      name
      taskItemStats { total byStatus { todo done } }
      taskItems(limit: 10) { items { id title status } nextCursor }
      comments(limit: 5) {
        items { id content author { id name member { id role } } attachments { id name description } }
        nextCursor
      }
    }
  }
}`;

describe("the graph", () => {
  it("answers a task page in one request: the task, its comments with authors and attachments, and the entity behind each", async () => {
    const taskId = org.taskIds[0] as string;
    await comment(org.apiKey, "task", taskId, org.userIds[1] as string, "first");
    await comment(org.apiKey, "task", taskId, org.userIds[0] as string, "second");
    const res = await t.gql(
      `query($id: ID!) {
        task(taskId: $id) {
          id title
          comments(limit: 1) {
            totalCount nextCursor
            items { content contextUrl author { name member { id } } attachments { name description } entity { __typename ... on Task { id } } }
          }
        }
        viewer { organization { id } permissions }
      }`,
      { id: taskId },
      { key: org.apiKey },
    );
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const page = res.body.data.task.comments;
    expect(page.totalCount).toBe(2);
    expect(page.items).toEqual([
      {
        content: "second",
        contextUrl: null,
        author: { name: "Ada Owner", member: { id: org.memberIds[0] } },
        attachments: [{ name: "a.txt", description: "notes" }],
        entity: { __typename: "Task", id: taskId },
      },
    ]);
    // The nested page's cursor continues as the root `comments` query's does.
    const next = await t.gql(
      `query($id: ID!, $cursor: String) { task(taskId: $id) { comments(cursor: $cursor) { items { content } nextCursor } } }`,
      { id: taskId, cursor: page.nextCursor },
      { key: org.apiKey },
    );
    expect(next.body.data.task.comments).toEqual({ items: [{ content: "first" }], nextCursor: null });
    const root = await t.rest("GET", `/v1/comments?entityId=${taskId}&entityType=task&cursor=${page.nextCursor}`, {
      key: org.apiKey,
    });
    expect(root.body.items.map((c: { content: string }) => c.content)).toEqual(["first"]);
  });

  it("answers a policy page in one request: current version, history with sources, comments", async () => {
    const policyId = org.policyIds[0] as string;
    const created = await t.gql(
      `mutation($id: ID!) { createPolicyVersion(id: $id, changelog: "v2") { version policyVersion { id version status sourceVersion { version } policy { id } } } }`,
      { id: policyId },
      { key: org.apiKey },
    );
    expect(created.body.errors).toBeUndefined();
    expect(created.body.data.createPolicyVersion.policyVersion).toMatchObject({
      status: "draft",
      sourceVersion: { version: 1 },
      policy: { id: policyId },
    });
    const res = await t.gql(
      `query($id: ID!) {
        policy(id: $id) {
          name
          currentVersion { version status }
          versions(limit: 10) { totalCount items { version changelog sourceVersion { version } } }
          comments { totalCount }
        }
      }`,
      { id: policyId },
      { key: org.apiKey },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.policy.currentVersion).toEqual({ version: 1, status: "published" });
    expect(res.body.data.policy.versions.totalCount).toBeGreaterThanOrEqual(2);
    expect(res.body.data.policy.versions.items.at(-1)).toEqual({ version: 1, changelog: "Initial version", sourceVersion: null });
  });

  it("answers a vendor page through nodes, with stats equal to taskItemStats", async () => {
    const [vendorId] = await vendorsWithData(1);
    const res = await t.gql(vendorPage, { ids: [vendorId] }, { key: org.apiKey });
    expect(res.body.errors).toBeUndefined();
    const vendor = res.body.data.nodes[0];
    const stats = await t.rest("GET", `/v1/task-management/stats?entityId=${vendorId}&entityType=vendor`, { key: org.apiKey });
    expect(vendor.taskItemStats).toEqual({ total: stats.body.total, byStatus: { todo: 1, done: 1 } });
    expect(vendor.taskItems.items).toHaveLength(2);
    expect(vendor.comments.items).toHaveLength(5);
    expect(vendor.comments.nextCursor).not.toBeNull();
    expect(vendor.comments.items[0].attachments[0].description).toBeNull();
  });

  it("costs the same number of SQL statements for 5 vendors as for 50", async () => {
    const ids = await vendorsWithData(50);
    const run = (n: number) =>
      t.countQueries(async () => {
        const res = await t.gql(vendorPage, { ids: ids.slice(0, n) }, { key: org.apiKey });
        expect(res.body.errors).toBeUndefined();
        expect(res.body.data.nodes).toHaveLength(n);
        expect(res.body.data.nodes.every((v: { comments: { items: unknown[] } }) => v.comments.items.length === 5)).toBe(true);
      });
    await run(1); // the API key's lookup and last-used write are cached after the first request
    const five = await run(5);
    const fifty = await run(50);
    expect(fifty.count, fifty.statements.join("\n")).toBe(five.count);
    // In whatever order the loaders of a level sent them.
    expect(fifty.statements.toSorted()).toEqual(five.statements.toSorted());
    // Vendors, stats, task item ids and rows, comment ids and rows (authors joined), their attachments, authors' members.
    expect(five.count, five.statements.join("\n")).toBeLessThanOrEqual(8);
  });

  it("reads comments by id with their authors in the comments' own statement, through nodes", async () => {
    const vendorId = org.vendorIds[0] as string;
    const ids: string[] = [];
    for (const [i, userId] of [org.userIds[0], org.userIds[1], org.userIds[0], org.userIds[1], org.userIds[0]].entries())
      ids.push((await comment(org.apiKey, "vendor", vendorId, userId as string, `by id ${i}`)).body.id);
    const byId = `query($ids: [ID!]!) { nodes(ids: $ids) { ... on Comment { content author { id name } } } }`;
    const run = (n: number) =>
      t.countQueries(async () => {
        const res = await t.gql(byId, { ids: ids.slice(0, n) }, { key: org.apiKey });
        expect(res.body.errors).toBeUndefined();
        expect(res.body.data.nodes.map((c: { author: { id: string } }) => c.author.id)).toEqual(
          [org.userIds[0], org.userIds[1], org.userIds[0], org.userIds[1], org.userIds[0]].slice(0, n),
        );
      });
    await run(1);
    const one = await run(1);
    const five = await run(5);
    // One statement: the comments with their authors joined (Comment's `include`), not one more per comment.
    expect(five.count, five.statements.join("\n")).toBe(one.count);
    expect(five.count, five.statements.join("\n")).toBe(1);
  });

  it("costs the same number of SQL statements for tasks(limit: 5) as for tasks(limit: 50), with comments", async () => {
    await t.db.task.createMany({
      data: Array.from({ length: 50 }, (_, i) => ({ id: newId("tsk"), organizationId: org.organizationId, title: `T${i}` })),
    });
    const run = (limit: number) =>
      t.countQueries(async () => {
        const res = await t.gql(
          `query($limit: Int) { tasks(limit: $limit) { totalCount items { id comments(limit: 5) { totalCount items { content author { name } attachments { name } } } } } }`,
          { limit },
          { key: org.apiKey },
        );
        expect(res.body.errors).toBeUndefined();
        expect(res.body.data.tasks.items).toHaveLength(limit);
      });
    await run(1);
    const five = await run(5);
    const fifty = await run(50);
    expect(fifty.count).toBe(five.count);
    // The same texts too: each level's statement takes its parents as arrays, so 5 and 50 share
    // one prepared statement.
    // In whatever order the loaders of a level sent them.
    expect(fifty.statements.toSorted()).toEqual(five.statements.toSorted());
  });

  it("counts totalCount only when it is selected, in the page's own statement", async () => {
    await t.gql("{ __typename }", {}, { key: org.apiKey });
    const without = await t.countQueries(() => t.gql("{ tasks(limit: 2) { nextCursor } }", {}, { key: org.apiKey }));
    let total = 0;
    const withCount = await t.countQueries(async () => {
      total = (await t.gql("{ tasks(limit: 2) { nextCursor totalCount } }", {}, { key: org.apiKey })).body.data.tasks.totalCount;
    });
    expect(withCount.count).toBe(without.count);
    const counting = (statements: string[]) => statements.filter((s) => s.includes("count(*)")).length;
    expect(counting(without.statements)).toBe(0);
    expect(counting(withCount.statements)).toBe(1);
    expect(total).toBe(await t.db.task.count({ where: { organizationId: org.organizationId } }));
  });

  it("answers null for a missing task while the other root fields answer; REST keeps 404", async () => {
    const res = await t.gql(
      `query($id: ID!, $missing: ID!) { task(taskId: $missing) { id } member(id: $missing) { id } policy(id: $missing) { id } other: task(taskId: $id) { id } }`,
      { id: org.taskIds[0], missing: "tsk_missing" },
      { key: org.apiKey },
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ task: null, member: null, policy: null, other: { id: org.taskIds[0] } });
    expect(res.body.errors.map((e: { path: string[]; extensions: { code: string } }) => [e.path[0], e.extensions.code])).toEqual(
      expect.arrayContaining([
        ["task", "NOT_FOUND"],
        ["member", "NOT_FOUND"],
        ["policy", "NOT_FOUND"],
      ]),
    );
    for (const path of ["/v1/tasks/tsk_missing", "/v1/people/mem_missing", "/v1/policies/pol_missing"]) {
      const rest = await t.rest("GET", path, { key: org.apiKey });
      expect(rest.status, path).toBe(404);
      expect(rest.body.code).toBe("NOT_FOUND");
    }
    const refused = await t.keyWith(org.organizationId, ["task:read"]);
    const rest = await t.rest("GET", `/v1/policies/${org.policyIds[0]}`, { key: refused.key });
    expect(rest.status).toBe(403);
  });

  it("node and nodes: the order asked, null for missing and foreign ids, FORBIDDEN only where the type may not be read", async () => {
    const key = await t.keyWith(org.organizationId, ["task:read", "vendor:read"]);
    const ids = [org.vendorIds[0], "tsk_missing", other.taskIds[0], org.taskIds[1], org.policyIds[0], "nope", org.riskIds[0]];
    const res = await t.gql(
      `query($ids: [ID!]!, $id: ID!) { nodes(ids: $ids) { __typename id } node(id: $id) { ... on Task { title } } }`,
      { ids, id: org.taskIds[1] },
      { key: key.key },
    );
    expect(res.status).toBe(200);
    expect(res.body.data.nodes).toEqual([
      { __typename: "Vendor", id: org.vendorIds[0] },
      null,
      null,
      { __typename: "Task", id: org.taskIds[1] },
      null,
      null,
      null,
    ]);
    expect(res.body.data.node).toEqual({ title: "Rotate encryption keys" });
    expect(res.body.errors.map((e: { path: unknown[]; extensions: { code: string } }) => [e.path, e.extensions.code])).toEqual([
      [["nodes", 4], "FORBIDDEN"],
      [["nodes", 6], "FORBIDDEN"],
    ]);
    const tooMany = await t.gql(
      `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`,
      { ids: Array(101).fill("x") },
      { key: key.key },
    );
    expect(tooMany.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    const every = await t.gql(
      `query($ids: [ID!]!) { nodes(ids: $ids) { __typename } }`,
      {
        ids: [
          org.taskIds[0],
          org.taskItemIds[0],
          org.vendorIds[0],
          org.riskIds[0],
          org.policyIds[0],
          org.memberIds[0],
          (await t.db.policyVersion.findFirstOrThrow({ where: { policyId: org.policyIds[0] } })).id,
          // A comment of this test's own: the organization has none until a test writes one.
          (await comment(org.apiKey, "vendor", org.vendorIds[0] as string, org.userIds[0] as string)).body.id,
        ],
      },
      { key: org.apiKey },
    );
    expect(every.body.data.nodes.map((n: { __typename: string }) => n.__typename)).toEqual([
      "Task",
      "TaskItem",
      "Vendor",
      "Risk",
      "Policy",
      "Member",
      "PolicyVersion",
      "Comment",
    ]);
  });

  it("viewer: the organization, permissions and, for a user credential, the member, user and organizations", async () => {
    const limited = await t.keyWith(org.organizationId, ["task:read"]);
    const asKey = await t.gql(
      "{ viewer { organization { id name } member { id } user { id } permissions organizations { id } credential } }",
      {},
      { key: limited.key },
    );
    expect(asKey.body.errors).toBeUndefined();
    expect(asKey.body.data.viewer).toMatchObject({
      organization: { id: org.organizationId },
      member: null,
      user: null,
      permissions: ["task:read"],
      organizations: [{ id: org.organizationId }],
      credential: "apiKey",
    });
    const { createSession } = await import("../../src/auth/sessions.js");
    const { token } = await createSession(t.db, org.userIds[3] as string, 60_000);
    const asUser = await t.gql(
      "{ viewer { member { id role devices { name } } user { id } organizations { id } permissions } }",
      {},
      { headers: { authorization: `Bearer ${token}`, "x-organization-id": org.organizationId } },
    );
    expect(asUser.body.errors).toBeUndefined();
    expect(asUser.body.data.viewer).toMatchObject({
      member: { id: org.memberIds[3], role: "employee", devices: [] },
      user: { id: org.userIds[3] },
      organizations: [{ id: org.organizationId }],
      permissions: ["comment:create", "comment:read", "task:read"],
    });
  });

  it("never returns another organization's rows through a relation or a loader", async () => {
    // A comment of the other organization on an id that also names nothing here.
    await comment(other.apiKey, "vendor", other.vendorIds[0] as string, other.userIds[0] as string, "foreign");
    const res = await t.gql(
      `query($ids: [ID!]!) { nodes(ids: $ids) { ... on Vendor { comments { totalCount items { content } } taskItemStats { total } } } }`,
      { ids: [other.vendorIds[0], org.vendorIds[1]] },
      { key: org.apiKey },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.nodes[0]).toBeNull();
    expect(res.body.data.nodes[1].comments.items.map((c: { content: string }) => c.content)).not.toContain("foreign");
  });

  it("AuditEvent.actor: the acting member, null for an API key alone; without member:read its id and name only", async () => {
    const res = await t.gql("{ auditEvents(limit: 3) { items { actorApiKeyId actor { id } } } }", {}, { key: org.apiKey });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.auditEvents.items[0].actor).toBeNull();
    const session = await createSession(t.db, org.userIds[1] as string, 60_000);
    const headers = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
    const auditorOnly = await t.keyWith(org.organizationId, ["audit:read"]);
    const acted = await t.rest("PATCH", `/v1/tasks/${org.taskIds[0]}`, { headers, body: { title: "Acted on by a person" } });
    expect(acted.status).toBe(200);
    const read = await t.gql(
      "{ auditEvents(limit: 1) { items { action actor { id name role } } } }",
      {},
      { key: auditorOnly.key },
    );
    expect(read.body.data.auditEvents.items[0]).toEqual({
      action: "task.updated",
      actor: { id: org.memberIds[1], name: "Grace Admin", role: null },
    });
    expect(read.body.errors).toEqual([
      expect.objectContaining({ path: ["auditEvents", "items", 0, "actor", "role"], extensions: { code: "FORBIDDEN" } }),
    ]);
  });
});
