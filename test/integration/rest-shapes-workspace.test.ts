/**
 * The key structure of the REST answers of the operations that existed before the workspace
 * operations (section 8) were added. Sofa returns types that have a by-id and a list query as ids
 * only when nested, so adding such queries (vendor/vendors, risk/risks, policy/policies) or new
 * fields must not change these answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

let t: TestApp;
let org: SeedResult;
beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
});
afterAll(() => t.close());

/**
 * Recorded before the workspace operations were added; the only keys added since are the
 * deliberate new fields (assigneeId on tasks and task items outside GET /v1/tasks/{taskId}; a
 * version's approverId, rejectionReason and publishedAt). Nothing was removed.
 */
const expected: Record<string, string[]> = {
  createComment: [
    "attachments",
    "attachments[].createdAt",
    "attachments[].id",
    "attachments[].name",
    "attachments[].size",
    "attachments[].type",
    "author",
    "author.deactivated",
    "author.email",
    "author.id",
    "author.image",
    "author.name",
    "content",
    "createdAt",
    "id",
  ],
  comments: [
    "items",
    "items[].attachments",
    "items[].attachments[].createdAt",
    "items[].attachments[].id",
    "items[].attachments[].name",
    "items[].attachments[].size",
    "items[].attachments[].type",
    "items[].author",
    "items[].author.deactivated",
    "items[].author.email",
    "items[].author.id",
    "items[].author.image",
    "items[].author.name",
    "items[].content",
    "items[].createdAt",
    "items[].id",
    "nextCursor",
  ],
  unlinkDevice: [
    "createdAt",
    "department",
    "deviceLabelId",
    "id",
    "isActive",
    "jobTitle",
    "organizationId",
    "role",
    "user",
    "user.createdAt",
    "user.email",
    "user.emailVerified",
    "user.id",
    "user.image",
    "user.lastLogin",
    "user.name",
    "user.updatedAt",
    "userId",
  ],
  createPolicyVersion: ["version", "versionId"],
  policy: ["createdAt", "currentVersionId", "description", "id", "name", "status", "updatedAt"],
  policyVersions: [
    "items",
    "items[].approverId",
    "items[].changelog",
    "items[].content",
    "items[].createdAt",
    "items[].id",
    "items[].publishedAt",
    "items[].rejectionReason",
    "items[].sourceVersionId",
    "items[].status",
    "items[].version",
    "nextCursor",
  ],
  createPolicy: ["createdAt", "currentVersionId", "description", "id", "name", "status", "updatedAt"],
  taskItemStats: [
    "byStatus",
    "byStatus.canceled",
    "byStatus.done",
    "byStatus.in_progress",
    "byStatus.in_review",
    "byStatus.todo",
    "total",
  ],
  task: ["createdAt", "description", "id", "status", "taskTemplateId", "title", "updatedAt"],
  tasks: [
    "items",
    "items[].assigneeId",
    "items[].createdAt",
    "items[].description",
    "items[].id",
    "items[].status",
    "items[].taskTemplateId",
    "items[].title",
    "items[].updatedAt",
    "nextCursor",
  ],
  createTask: ["assigneeId", "createdAt", "description", "id", "status", "taskTemplateId", "title", "updatedAt"],
  updateTask: ["assigneeId", "createdAt", "description", "id", "status", "taskTemplateId", "title", "updatedAt"],
  members: [
    "items",
    "items[].createdAt",
    "items[].department",
    "items[].deviceLabelId",
    "items[].id",
    "items[].isActive",
    "items[].jobTitle",
    "items[].organizationId",
    "items[].role",
    "items[].user",
    "items[].user.createdAt",
    "items[].user.email",
    "items[].user.emailVerified",
    "items[].user.id",
    "items[].user.image",
    "items[].user.lastLogin",
    "items[].user.name",
    "items[].user.updatedAt",
    "items[].userId",
    "nextCursor",
  ],
  member: [
    "createdAt",
    "department",
    "deviceLabelId",
    "id",
    "isActive",
    "jobTitle",
    "organizationId",
    "role",
    "user",
    "user.createdAt",
    "user.email",
    "user.emailVerified",
    "user.id",
    "user.image",
    "user.lastLogin",
    "user.name",
    "user.updatedAt",
    "userId",
  ],
  updateMember: [
    "createdAt",
    "department",
    "deviceLabelId",
    "id",
    "isActive",
    "jobTitle",
    "organizationId",
    "role",
    "user",
    "user.createdAt",
    "user.email",
    "user.emailVerified",
    "user.id",
    "user.image",
    "user.lastLogin",
    "user.name",
    "user.updatedAt",
    "userId",
  ],
  createVendor: ["createdAt", "description", "id", "name", "updatedAt"],
  createRisk: ["createdAt", "description", "id", "title", "updatedAt"],
  createTaskItem: [
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
  ],
  taskItems: [
    "items",
    "items[].assigneeId",
    "items[].createdAt",
    "items[].description",
    "items[].entityId",
    "items[].entityType",
    "items[].id",
    "items[].priority",
    "items[].status",
    "items[].title",
    "items[].updatedAt",
    "nextCursor",
  ],
  updateTaskItem: [
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
  ],
  auditEvents: [
    "items",
    "items[].action",
    "items[].actorApiKeyId",
    "items[].actorUserId",
    "items[].createdAt",
    "items[].data",
    "items[].entityId",
    "items[].entityType",
    "items[].id",
    "items[].requestId",
    "nextCursor",
  ],
};

/** The answer's key paths, recursing into objects and the first item of lists, not into JSON values (audit data, content). */
function shape(value: unknown, prefix = ""): string[] {
  if (Array.isArray(value)) return value.length ? shape(value[0], `${prefix}[]`) : [];
  if (!value || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([k, v]) => {
    const path = prefix ? `${prefix}.${k}` : k;
    return k === "data" || k === "content" ? [path] : [path, ...shape(v, path)];
  });
}

describe("REST answers of the existing operations", () => {
  it("keep their key structure", async () => {
    const key = org.apiKey;
    const vendorId = org.vendorIds[0] as string;
    const shapes: Record<string, string[]> = {};
    const record = async (name: string, method: string, path: string, body?: unknown) => {
      const res = await t.rest(method, path, { key, body });
      expect(res.status, `${name}: ${res.text}`).toBeLessThan(300);
      shapes[name] = shape(res.body).sort();
      return res.body;
    };
    const comment = await record("createComment", "POST", "/v1/comments", {
      content: "hello",
      entityId: vendorId,
      entityType: "vendor",
      userId: org.userIds[0],
      attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: "aGVsbG8=" }],
    });
    expect(comment.id).toBeTruthy();
    await record("comments", "GET", `/v1/comments?entityId=${vendorId}&entityType=vendor`);
    await record("unlinkDevice", "PATCH", `/v1/people/${org.memberIds[0]}/unlink-device`);
    await record("createPolicyVersion", "POST", `/v1/policies/${org.policyIds[0]}/versions`, { changelog: "x" });
    await record("policy", "GET", `/v1/policies/${org.policyIds[0]}`);
    await record("policyVersions", "GET", `/v1/policies/${org.policyIds[0]}/versions`);
    await record("createPolicy", "POST", "/v1/policies", { name: "P" });
    await record("taskItemStats", "GET", `/v1/task-management/stats?entityId=${vendorId}&entityType=vendor`);
    await record("task", "GET", `/v1/tasks/${org.taskIds[0]}`);
    await record("tasks", "GET", "/v1/tasks");
    await record("createTask", "POST", "/v1/tasks", { title: "T" });
    await record("updateTask", "PATCH", `/v1/tasks/${org.taskIds[0]}`, { title: "T2" });
    await record("members", "GET", "/v1/people");
    await record("member", "GET", `/v1/people/${org.memberIds[0]}`);
    await record("updateMember", "PATCH", `/v1/people/${org.memberIds[1]}`, { jobTitle: "X" });
    await record("createVendor", "POST", "/v1/vendors", { name: "V" });
    await record("createRisk", "POST", "/v1/risks", { title: "R" });
    await record("createTaskItem", "POST", "/v1/task-management", { title: "I", entityId: vendorId, entityType: "vendor" });
    await record("taskItems", "GET", `/v1/task-management?entityId=${vendorId}&entityType=vendor`);
    await record("updateTaskItem", "PATCH", `/v1/task-management/${org.taskItemIds[0]}`, { title: "I2" });
    await record("auditEvents", "GET", "/v1/audit-events");
    expect(shapes).toEqual(expected);
  });
});
