import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../src/admin/admin.service.js";
import { createSession } from "../../src/auth/sessions.js";
import { openFixture } from "../helpers/fixtures.js";

// Who hears of what: each reason on both transports, never the actor, never another organization, once per change.
const { t, org, other } = await openFixture();

const [owner, admin, auditor, employee] = org.memberIds as [string, string, string, string];
const [ownerUser, adminUser, , employeeUser] = org.userIds as [string, string, string, string];
/** Session headers of a user of `org`. */
const as: Record<string, Record<string, string>> = {};

beforeAll(async () => {
  for (const [name, userId] of [
    ["owner", ownerUser],
    ["admin", adminUser],
    ["employee", employeeUser],
  ] as const) {
    const session = await createSession(t.db, userId, 3_600_000);
    as[name] = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
  }
});

/** The notifications written about one record, oldest first, as [reason, recipient, actor]. */
async function told(entityId: string) {
  const rows = await t.db.notification.findMany({
    where: { entityId },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: { reason: true, recipientId: true, actorId: true, organizationId: true },
  });
  for (const row of rows) expect(row.organizationId).toBe(org.organizationId);
  return rows.map((r) => [r.reason, r.recipientId, r.actorId]);
}

async function newTask() {
  const res = await t.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: `Task ${randomBytes(3).toString("hex")}` } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function inactiveMember() {
  const { memberId } = await createUser(t.db, {
    email: `gone.${randomBytes(4).toString("hex")}@example.com`,
    name: "Gone Member",
    organizationId: org.organizationId,
  });
  await t.db.member.update({ where: { id: memberId as string }, data: { isActive: false } });
  return memberId as string;
}

const tiptap = (...ids: string[]) =>
  JSON.stringify({
    type: "doc",
    content: [
      {
        type: "paragraph",
        content: [
          { type: "text", text: "Please look: " },
          ...ids.map((id) => ({ type: "mention", attrs: { id, label: "someone" } })),
        ],
      },
    ],
  });

const createComment = `mutation($content: String!, $entityId: ID!, $entityType: CommentEntityType!, $userId: ID, $contextUrl: String) {
  createComment(content: $content, entityId: $entityId, entityType: $entityType, userId: $userId, contextUrl: $contextUrl) {
    id mentions { id name }
  }
}`;

describe("mention", () => {
  it("REST, TipTap JSON: each active member of the organization mentioned, once; never the author, another organization or an unknown id", async () => {
    const taskId = await newTask();
    const gone = await inactiveMember();
    const res = await t.rest("POST", "/v1/comments", {
      headers: as.owner,
      body: {
        content: tiptap(admin, auditor, admin, owner, other.memberIds[0] as string, "mem_nobody", gone),
        entityId: taskId,
        entityType: "task",
      },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(["attachments", "author", "content", "createdAt", "id"]);
    // One change writes its notifications together: their order among themselves is not defined.
    expect((await told(taskId)).sort()).toEqual(
      [
        ["mention", admin, owner],
        ["mention", auditor, owner],
      ].sort(),
    );
    const rows = await t.db.notification.findMany({ where: { entityId: taskId } });
    expect(rows.every((r) => r.commentId === res.body.id && r.entityType === "task" && r.url === null && r.readAt === null)).toBe(
      true,
    );
    expect(await t.db.notification.count({ where: { organizationId: other.organizationId, entityId: taskId } })).toBe(0);
  });

  it("GraphQL, @[name](mem_…) markup in plain text, written for a user by an API key: the author is the actor", async () => {
    const taskId = await newTask();
    const res = await t.gql(
      createComment,
      {
        content: `@[Ada Owner](${owner}) and @[Edsger](${employee}), see @[Stranger](${other.memberIds[1]})`,
        entityId: taskId,
        entityType: "task",
        userId: employeeUser,
      },
      { key: org.apiKey },
    );
    expect(res.body.errors).toBeUndefined();
    // Comment.mentions answers whom it mentions: members of the organization only, the author included.
    expect(res.body.data.createComment.mentions).toEqual([
      { id: owner, name: "Ada Owner" },
      { id: employee, name: "Edsger Employee" },
    ]);
    expect(await told(taskId)).toEqual([["mention", owner, employee]]);
  });

  it("an edit notifies only the mentions it adds", async () => {
    const taskId = await newTask();
    const created = await t.rest("POST", "/v1/comments", {
      headers: as.owner,
      body: { content: `hi @[Grace](${admin})`, entityId: taskId, entityType: "task" },
    });
    expect(created.status).toBe(201);
    const edited = await t.rest("PATCH", `/v1/comments/${created.body.id}`, {
      headers: as.owner,
      body: { content: `hi @[Grace](${admin}) and @[Alan](${auditor})` },
    });
    expect(edited.status).toBe(200);
    const again = await t.gql(
      `mutation($id: ID!, $content: String!) { updateComment(id: $id, content: $content) { id mentions { id } } }`,
      { id: created.body.id, content: tiptap(auditor, admin, employee) },
      { headers: as.owner },
    );
    expect(again.body.errors).toBeUndefined();
    expect(again.body.data.updateComment.mentions.map((m: { id: string }) => m.id)).toEqual([auditor, admin, employee]);
    expect(await told(taskId)).toEqual([
      ["mention", admin, owner],
      ["mention", auditor, owner],
      ["mention", employee, owner],
    ]);
  });

  it("content that is neither mention form, or JSON that is not a document, notifies nobody and is no error", async () => {
    const taskId = await newTask();
    for (const content of [
      `@${admin} plain`,
      `@[Grace](${admin}`,
      '{"type":"mention","attrs":{"id":42}}',
      "[1, 2, {]",
      JSON.stringify({ type: "doc", content: [{ type: "mention", attrs: null }] }),
    ]) {
      const res = await t.rest("POST", "/v1/comments", {
        headers: as.owner,
        body: { content, entityId: taskId, entityType: "task" },
      });
      expect(res.status).toBe(201);
    }
    expect(await told(taskId)).toEqual([]);
  });

  it("a contextUrl that is not http(s) is still a 400, and nothing is written", async () => {
    const taskId = await newTask();
    const res = await t.rest("POST", "/v1/comments", {
      headers: as.owner,
      body: { content: `@[Grace](${admin})`, entityId: taskId, entityType: "task", contextUrl: "javascript:alert(1)" },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(await told(taskId)).toEqual([]);
  });

  it("Comment.mentions over a page of comments costs the same statements for one comment as for five", async () => {
    const taskId = await newTask();
    const post = (content: string) =>
      t.rest("POST", "/v1/comments", { headers: as.owner, body: { content, entityId: taskId, entityType: "task" } });
    await post(`@[Grace](${admin})`);
    const page = `query($id: ID!, $limit: Int) { comments(entityId: $id, entityType: task, limit: $limit) { items { id mentions { id name } } } }`;
    const one = await t.countQueries(() => t.gql(page, { id: taskId, limit: 1 }, { key: org.apiKey }));
    for (const id of [auditor, employee, owner, admin]) await post(`@[x](${id}) ${tiptap(auditor)}`);
    let answer: { body: { data: { comments: { items: { mentions: unknown[] }[] } } } } | undefined;
    const five = await t.countQueries(async () => {
      answer = await t.gql(page, { id: taskId, limit: 5 }, { key: org.apiKey });
    });
    expect(answer?.body.data.comments.items).toHaveLength(5);
    expect(five.count).toBe(one.count);
  });
});

describe("assigned", () => {
  it("tasks: on create with an assignee and on a change of assignee, never on unassign, no change, or self-assignment", async () => {
    const created = await t.rest("POST", "/v1/tasks", { headers: as.owner, body: { title: "Rotate keys", assigneeId: admin } });
    expect(created.status).toBe(201);
    const taskId = created.body.id as string;
    const update = (assigneeId: string | null, headers = as.owner) =>
      t.gql(
        `mutation($id: ID!, $a: ID) { updateTask(taskId: $id, assigneeId: $a) { id assigneeId } }`,
        { id: taskId, a: assigneeId },
        { headers },
      );
    expect((await update(admin)).body.errors).toBeUndefined();
    expect((await update(employee)).body.errors).toBeUndefined();
    expect((await update(null)).body.errors).toBeUndefined();
    expect((await update(admin, as.admin)).body.errors).toBeUndefined();
    expect(await told(taskId)).toEqual([
      ["assigned", admin, owner],
      ["assigned", employee, owner],
    ]);
  });

  it("an API key with no member: the assignee hears of it, with no actor", async () => {
    const res = await t.gql(
      `mutation($a: ID) { createTask(title: "Audit", assigneeId: $a) { id } }`,
      { a: auditor },
      { key: org.apiKey },
    );
    expect(await told(res.body.data.createTask.id)).toEqual([["assigned", auditor, null]]);
  });

  it("task items, vendors and risks, on create and update, on both transports", async () => {
    const vendor = await t.rest("POST", "/v1/vendors", { headers: as.owner, body: { name: "Acme", assigneeId: admin } });
    expect(vendor.status).toBe(201);
    const vendorUpdate = await t.rest("PATCH", `/v1/vendors/${vendor.body.id}`, {
      headers: as.owner,
      body: { assigneeId: auditor },
    });
    expect(vendorUpdate.status).toBe(200);
    expect(await told(vendor.body.id)).toEqual([
      ["assigned", admin, owner],
      ["assigned", auditor, owner],
    ]);

    const risk = await t.gql(
      `mutation($a: ID) { createRisk(title: "Outage", assigneeId: $a) { id } }`,
      { a: employee },
      { headers: as.admin },
    );
    const riskId = risk.body.data.createRisk.id as string;
    const riskUpdate = await t.rest("PATCH", `/v1/risks/${riskId}`, { headers: as.admin, body: { assigneeId: owner } });
    expect(riskUpdate.status).toBe(200);
    expect(await told(riskId)).toEqual([
      ["assigned", employee, admin],
      ["assigned", owner, admin],
    ]);

    const item = await t.rest("POST", "/v1/task-management", {
      headers: as.owner,
      body: { title: "Collect report", entityId: vendor.body.id, entityType: "vendor", assigneeId: employee },
    });
    expect(item.status).toBe(201);
    const itemUpdate = await t.gql(
      `mutation($id: ID!, $a: ID) { updateTaskItem(id: $id, assigneeId: $a) { id } }`,
      { id: item.body.id, a: admin },
      { headers: as.owner },
    );
    expect(itemUpdate.body.errors).toBeUndefined();
    expect(await told(item.body.id)).toEqual([
      ["assigned", employee, owner],
      ["assigned", admin, owner],
    ]);
  });

  it("an assignee that is not an active member of the organization is refused as before, and nobody is told", async () => {
    const taskId = await newTask();
    const res = await t.rest("PATCH", `/v1/tasks/${taskId}`, { headers: as.owner, body: { assigneeId: other.memberIds[1] } });
    expect(res.status).toBe(404);
    expect(await told(taskId)).toEqual([]);
    expect(await t.db.notification.count({ where: { recipientId: other.memberIds[1] as string } })).toBe(0);
  });
});

describe("review_requested and review_completed", () => {
  async function draftVersion() {
    const policy = await t.rest("POST", "/v1/policies", { key: org.apiKey, body: { name: "Access", content: [{ type: "p" }] } });
    expect(policy.status).toBe(201);
    const version = await t.rest("POST", `/v1/policies/${policy.body.id}/versions`, { key: org.apiKey, body: {} });
    expect(version.status).toBe(201);
    return { policyId: policy.body.id as string, versionId: version.body.versionId as string };
  }
  const step = (p: string, v: string, action: string) => `/v1/policies/${p}/versions/${v}/${action}`;

  it("submit tells the approver; approve tells the submitter (REST)", async () => {
    const { policyId, versionId } = await draftVersion();
    const submitted = await t.rest("POST", step(policyId, versionId, "submit"), {
      headers: as.owner,
      body: { approverId: admin },
    });
    expect(submitted.status).toBe(200);
    const approved = await t.rest("POST", step(policyId, versionId, "approve"), { headers: as.admin });
    expect(approved.status).toBe(200);
    expect(await told(policyId)).toEqual([
      ["review_requested", admin, owner],
      ["review_completed", owner, admin],
    ]);
    // The submitter's inbox says how the review ended.
    const inbox = await t.rest("GET", "/v1/notifications?reason=review_completed", { headers: as.owner });
    expect(inbox.status).toBe(200);
    expect(inbox.body.items.find((n: { entityId: string }) => n.entityId === policyId)).toMatchObject({ outcome: "approved" });
  });

  it("reject tells the submitter (GraphQL); a version an API key submitted has no submitter to tell", async () => {
    const { policyId, versionId } = await draftVersion();
    const submit = `mutation($p: ID!, $v: ID!, $a: ID!) { submitPolicyVersion(id: $p, versionId: $v, approverId: $a) { id } }`;
    const reject = `mutation($p: ID!, $v: ID!) { rejectPolicyVersion(id: $p, versionId: $v, reason: "Too vague") { id status } }`;
    expect((await t.gql(submit, { p: policyId, v: versionId, a: owner }, { headers: as.admin })).body.errors).toBeUndefined();
    expect((await t.gql(reject, { p: policyId, v: versionId }, { headers: as.owner })).body.errors).toBeUndefined();
    expect((await t.gql(submit, { p: policyId, v: versionId, a: owner }, { key: org.apiKey })).body.errors).toBeUndefined();
    expect((await t.gql(reject, { p: policyId, v: versionId }, { headers: as.owner })).body.errors).toBeUndefined();
    expect(await told(policyId)).toEqual([
      ["review_requested", owner, admin],
      ["review_completed", admin, owner],
      ["review_requested", owner, null],
    ]);
    const inbox = await t.gql(
      `{ notifications(filter: { reason: [review_completed, review_requested] }) { items { reason outcome entityId } } }`,
      {},
      { headers: as.admin },
    );
    expect(inbox.body.errors).toBeUndefined();
    const mine = inbox.body.data.notifications.items.filter((n: { entityId: string }) => n.entityId === policyId);
    expect(mine).toEqual([{ reason: "review_completed", outcome: "rejected", entityId: policyId }]);
  });
});
