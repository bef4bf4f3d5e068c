import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../src/admin/admin.service.js";
import type { SeedResult } from "../../src/admin/seed.js";
import { type Permission, permissions, rolePermissions } from "../../src/auth/permissions.js";
import { createSession } from "../../src/auth/sessions.js";
import type { MemberRole } from "../../src/generated/prisma/enums.js";
import { newId } from "../../src/platform/ids.js";
import { restRoutes } from "../../src/rest/routes.js";
import { adopt, makeFramework } from "../helpers/frameworks.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

let t: TestApp;
let org: SeedResult;
let attachmentId: string;
let controlId: string;
let requirementId: string;
let n = 0;
const unique = () => `${Date.now()}${n++}`;

type Call = { rest: [method: string, path: string, body?: unknown]; gql: [query: string, variables: Record<string, unknown>] };
/** The caller a call is made for: its user and member (none for an API key), or an evidence request's link. */
type Who = { userId?: string; memberId?: string; link?: string };

/** Every operation with the permission the contract gives it, and a valid call of it on each transport. */
const operations: Record<
  string,
  {
    permission: Permission;
    call: (who: Who) => Call | Promise<Call>;
    /** Only the approver named on submit, a person, may do it: an API key is refused whatever its scopes. */
    approverOnly?: boolean;
    /** The caller's own inbox: every user credential, whatever its role; an API key is refused whatever its scopes. */
    personal?: boolean;
    /** A permission that would also let the call through (a list of either kind): a key refused lacks both. */
    alsoBy?: Permission[];
    /** Permissions each of which, alone, lets the call through as well (an operation serving several purposes). */
    orAlone?: Permission[];
    /** Takes an evidence request's link token alone: every member's or key's credential is 401. */
    linkOnly?: boolean;
    /**
     * A person without the permission nor control:read (an employee, a contractor) acts on the controls they own:
     * the call names a control they do not own, so it is as missing (404), or a list shows theirs.
     */
    withoutPermission?: "allowed" | 404;
    /** The call passes the permission check and fails after it with this status (an upload that does not exist). */
    passes?: 404;
  }
> = {
  "Mutation.createComment": {
    permission: "comment:create",
    call: () => {
      const args = { content: "hi", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] };
      return {
        rest: ["POST", "/v1/comments", args],
        gql: [
          "mutation($content: String!, $entityId: ID!, $entityType: CommentEntityType!, $userId: ID) { createComment(content: $content, entityId: $entityId, entityType: $entityType, userId: $userId) { id } }",
          args,
        ],
      };
    },
  },
  "Query.comments": {
    permission: "comment:read",
    call: () => ({
      rest: ["GET", `/v1/comments?entityId=${org.taskIds[0]}&entityType=task`],
      gql: ["query($id: ID!) { comments(entityId: $id, entityType: task) { nextCursor } }", { id: org.taskIds[0] }],
    }),
  },
  "Query.attachment": {
    permission: "comment:read",
    call: () => ({
      rest: ["GET", `/v1/attachments/${attachmentId}`],
      gql: ["query($id: ID!) { attachment(id: $id) { id } }", { id: attachmentId }],
    }),
  },
  "Query.attachmentDownloadUrl": {
    permission: "comment:read",
    call: () => ({
      rest: ["GET", `/v1/attachments/${attachmentId}/download-url`],
      gql: ["query($id: ID!) { attachmentDownloadUrl(id: $id) { url } }", { id: attachmentId }],
    }),
  },
  "Mutation.createAttachmentUpload": {
    permission: "comment:create",
    alsoBy: ["control:update", "vendor:update"],
    orAlone: ["control:update", "vendor:update"],
    call: () => {
      // The SHA-256 of "%PDF-1.7\n", base64; the bytes are never sent.
      const args = {
        fileName: "r.pdf",
        fileType: "application/pdf",
        size: 9,
        sha256: "Bxb5Jkyf4Z9ddFUnYQfz3cwdNJf2PWBomnNViuihv14=",
      };
      return {
        rest: ["POST", "/v1/attachment-uploads", args],
        gql: [
          "mutation($fileName: String!, $fileType: String!, $size: Int!, $sha256: String!) { createAttachmentUpload(fileName: $fileName, fileType: $fileType, size: $size, sha256: $sha256) { id } }",
          args,
        ],
      };
    },
  },
  "Mutation.unlinkDevice": {
    permission: "member:update",
    call: () => ({
      rest: ["PATCH", `/v1/people/${org.memberIds[3]}/unlink-device`],
      gql: ["mutation($id: ID!) { unlinkDevice(id: $id) { id } }", { id: org.memberIds[3] }],
    }),
  },
  "Mutation.createMember": {
    permission: "member:create",
    call: () => {
      const args = { email: `m${unique()}@example.com`, name: "M", role: "employee" };
      return {
        rest: ["POST", "/v1/people", args],
        gql: [
          "mutation($email: String!, $name: String!, $role: MemberRole!) { createMember(email: $email, name: $name, role: $role) { id } }",
          { ...args, email: `g${args.email}` },
        ],
      };
    },
  },
  "Query.members": {
    permission: "member:read",
    call: () => ({ rest: ["GET", "/v1/people"], gql: ["{ members { nextCursor } }", {}] }),
  },
  "Query.member": {
    permission: "member:read",
    call: () => ({
      rest: ["GET", `/v1/people/${org.memberIds[3]}`],
      // The directory (id, name) is any credential's: the role is what member:read guards.
      gql: ["query($id: ID!) { member(id: $id) { id name role } }", { id: org.memberIds[3] }],
    }),
  },
  "Mutation.updateMember": {
    permission: "member:update",
    call: () => ({
      rest: ["PATCH", `/v1/people/${org.memberIds[3]}`, { jobTitle: "Engineer" }],
      gql: ['mutation($id: ID!) { updateMember(id: $id, jobTitle: "Engineer II") { id } }', { id: org.memberIds[3] }],
    }),
  },
  "Mutation.createTask": {
    permission: "task:create",
    call: () => ({ rest: ["POST", "/v1/tasks", { title: "T" }], gql: ['mutation { createTask(title: "T") { id } }', {}] }),
  },
  "Query.tasks": { permission: "task:read", call: () => ({ rest: ["GET", "/v1/tasks"], gql: ["{ tasks { nextCursor } }", {}] }) },
  "Query.task": {
    permission: "task:read",
    call: () => ({
      rest: ["GET", `/v1/tasks/${org.taskIds[0]}`],
      gql: ["query($id: ID!) { task(taskId: $id) { id } }", { id: org.taskIds[0] }],
    }),
  },
  "Mutation.updateTask": {
    permission: "task:update",
    call: () => ({
      rest: ["PATCH", `/v1/tasks/${org.taskIds[1]}`, { status: "in_progress" }],
      gql: ["mutation($id: ID!) { updateTask(taskId: $id, status: todo) { id } }", { id: org.taskIds[1] }],
    }),
  },
  "Mutation.importFramework": {
    permission: "framework:manage",
    call: () => {
      const document = (key: string) =>
        JSON.stringify({ key, name: "Own", version: "1", requirements: [{ ref: "A", title: "A" }] });
      const key = `own-${unique()}`;
      return {
        rest: ["POST", "/v1/frameworks", { format: "json", document: document(key) }],
        gql: [
          "mutation($document: String!) { importFramework(format: json, document: $document) { id } }",
          { document: document(`${key}-g`) },
        ],
      };
    },
  },
  "Mutation.importRequirementMapping": {
    permission: "framework:manage",
    call: async () => {
      const key = `own-mapped-${unique()}`;
      await t.db.framework.create({
        data: {
          id: `fw_${key}`,
          organizationId: org.organizationId,
          key,
          name: "Own",
          version: "1",
          requirementCount: 1,
          requirements: { create: [{ id: `req_${key}`, ref: "A", title: "A", position: 1 }] },
        },
      });
      const document = JSON.stringify({
        source: key,
        target: "soc2-tsc-2017",
        mappings: [{ sourceRef: "A", targetRef: "CC1.1", relationship: "equal" }],
      });
      return {
        rest: ["POST", "/v1/frameworks/mappings", { document }],
        gql: ["mutation($document: String!) { importRequirementMapping(document: $document) { mappingCount } }", { document }],
      };
    },
  },
  "Mutation.createVendor": {
    permission: "vendor:create",
    call: () => ({ rest: ["POST", "/v1/vendors", { name: "V" }], gql: ['mutation { createVendor(name: "V") { id } }', {}] }),
  },
  "Mutation.createRisk": {
    permission: "risk:create",
    call: () => ({ rest: ["POST", "/v1/risks", { title: "R" }], gql: ['mutation { createRisk(title: "R") { id } }', {}] }),
  },
  "Mutation.createTaskItem": {
    permission: "task:create",
    call: () => {
      const args = { title: "I", entityId: org.vendorIds[0], entityType: "vendor" };
      return {
        rest: ["POST", "/v1/task-management", args],
        gql: [
          "mutation($title: String!, $entityId: ID!, $entityType: TaskItemEntityType!) { createTaskItem(title: $title, entityId: $entityId, entityType: $entityType) { id } }",
          args,
        ],
      };
    },
  },
  "Query.taskItems": {
    permission: "task:read",
    call: () => ({
      rest: ["GET", `/v1/task-management?entityId=${org.vendorIds[0]}&entityType=vendor`],
      gql: ["query($id: ID!) { taskItems(entityId: $id, entityType: vendor) { nextCursor } }", { id: org.vendorIds[0] }],
    }),
  },
  "Query.taskItemStats": {
    permission: "task:read",
    call: () => ({
      rest: ["GET", `/v1/task-management/stats?entityId=${org.vendorIds[0]}&entityType=vendor`],
      gql: ["query($id: ID!) { taskItemStats(entityId: $id, entityType: vendor) { total } }", { id: org.vendorIds[0] }],
    }),
  },
  "Mutation.updateTaskItem": {
    permission: "task:update",
    call: () => ({
      rest: ["PATCH", `/v1/task-management/${org.taskItemIds[0]}`, { priority: "high" }],
      gql: ["mutation($id: ID!) { updateTaskItem(id: $id, priority: low) { id } }", { id: org.taskItemIds[0] }],
    }),
  },
  "Mutation.createPolicy": {
    permission: "policy:create",
    call: () => ({ rest: ["POST", "/v1/policies", { name: "P" }], gql: ['mutation { createPolicy(name: "P") { id } }', {}] }),
  },
  "Query.policy": {
    permission: "policy:read",
    call: () => ({
      rest: ["GET", `/v1/policies/${org.policyIds[0]}`],
      gql: ["query($id: ID!) { policy(id: $id) { id } }", { id: org.policyIds[0] }],
    }),
  },
  "Query.policyVersions": {
    permission: "policy:read",
    call: () => ({
      rest: ["GET", `/v1/policies/${org.policyIds[0]}/versions`],
      gql: ["query($id: ID!) { policyVersions(id: $id) { nextCursor } }", { id: org.policyIds[0] }],
    }),
  },
  "Mutation.createPolicyVersion": {
    permission: "policy:update",
    call: () => ({
      rest: ["POST", `/v1/policies/${org.policyIds[0]}/versions`, {}],
      gql: ["mutation($id: ID!) { createPolicyVersion(id: $id) { version } }", { id: org.policyIds[0] }],
    }),
  },
  "Query.auditEvents": {
    permission: "audit:read",
    call: () => ({ rest: ["GET", "/v1/audit-events"], gql: ["{ auditEvents { nextCursor } }", {}] }),
  },
  "Query.verifyAuditTrail": {
    permission: "audit:read",
    call: () => ({ rest: ["GET", "/v1/audit/verify?to=1"], gql: ["{ verifyAuditTrail(to: 1) { ok } }", {}] }),
  },
  "Query.auditCheckpoints": {
    permission: "audit:read",
    call: () => ({ rest: ["GET", "/v1/audit/checkpoints"], gql: ["{ auditCheckpoints { nextCursor } }", {}] }),
  },
  "Mutation.createAuditCheckpoint": {
    permission: "audit:read",
    call: () => ({ rest: ["POST", "/v1/audit/checkpoints"], gql: ["mutation { createAuditCheckpoint { id } }", {}] }),
  },
  "Query.vendors": {
    permission: "vendor:read",
    call: () => ({ rest: ["GET", "/v1/vendors"], gql: ["{ vendors { nextCursor } }", {}] }),
  },
  "Query.vendor": {
    permission: "vendor:read",
    call: () => ({
      rest: ["GET", `/v1/vendors/${org.vendorIds[0]}`],
      gql: ["query($id: ID!) { vendor(id: $id) { id } }", { id: org.vendorIds[0] }],
    }),
  },
  "Mutation.updateVendor": {
    permission: "vendor:update",
    call: () => ({
      rest: ["PATCH", `/v1/vendors/${org.vendorIds[0]}`, { description: "REST" }],
      gql: ['mutation($id: ID!) { updateVendor(id: $id, description: "GraphQL") { id } }', { id: org.vendorIds[0] }],
    }),
  },
  "Query.risks": { permission: "risk:read", call: () => ({ rest: ["GET", "/v1/risks"], gql: ["{ risks { nextCursor } }", {}] }) },
  "Query.risk": {
    permission: "risk:read",
    call: () => ({
      rest: ["GET", `/v1/risks/${org.riskIds[0]}`],
      gql: ["query($id: ID!) { risk(id: $id) { id } }", { id: org.riskIds[0] }],
    }),
  },
  "Mutation.updateRisk": {
    permission: "risk:update",
    call: () => ({
      rest: ["PATCH", `/v1/risks/${org.riskIds[0]}`, { description: "REST" }],
      gql: ['mutation($id: ID!) { updateRisk(id: $id, description: "GraphQL") { id } }', { id: org.riskIds[0] }],
    }),
  },
  "Query.policies": {
    permission: "policy:read",
    call: () => ({ rest: ["GET", "/v1/policies"], gql: ["{ policies { nextCursor } }", {}] }),
  },
  "Mutation.updatePolicy": {
    permission: "policy:update",
    call: () => ({
      rest: ["PATCH", `/v1/policies/${org.policyIds[0]}`, { description: "REST" }],
      gql: ['mutation($id: ID!) { updatePolicy(id: $id, description: "GraphQL") { id } }', { id: org.policyIds[0] }],
    }),
  },
  "Mutation.updateComment": {
    permission: "comment:create",
    call: async (who) => {
      const id = await commentBy(who.userId ?? (org.userIds[0] as string));
      const userId = who.userId ?? org.userIds[0];
      return {
        rest: ["PATCH", `/v1/comments/${id}`, { content: "REST", userId }],
        gql: [
          'mutation($id: ID!, $userId: ID) { updateComment(id: $id, content: "GraphQL", userId: $userId) { id } }',
          { id, userId },
        ],
      };
    },
  },
  "Mutation.deleteComment": {
    permission: "comment:create",
    call: async (who) => {
      const userId = who.userId ?? (org.userIds[0] as string);
      const [a, b] = [await commentBy(userId), await commentBy(userId)];
      return {
        rest: ["DELETE", `/v1/comments/${a}?userId=${userId}`],
        gql: ["mutation($id: ID!, $userId: ID) { deleteComment(id: $id, userId: $userId) { deletedId } }", { id: b, userId }],
      };
    },
  },
  "Mutation.deleteTaskItem": {
    permission: "task:update",
    call: async () => {
      const [a, b] = [await taskItem(), await taskItem()];
      return {
        rest: ["DELETE", `/v1/task-management/${a}`],
        gql: ["mutation($id: ID!) { deleteTaskItem(id: $id) { deletedId } }", { id: b }],
      };
    },
  },
  "Mutation.submitPolicyVersion": {
    permission: "policy:update",
    call: async () => {
      const [a, b] = [await draftVersion(), await draftVersion()];
      const approverId = org.memberIds[0];
      return {
        rest: ["POST", `/v1/policies/${org.policyIds[1]}/versions/${a}/submit`, { approverId }],
        gql: [
          "mutation($id: ID!, $v: ID!, $a: ID!) { submitPolicyVersion(id: $id, versionId: $v, approverId: $a) { id } }",
          { id: org.policyIds[1], v: b, a: approverId },
        ],
      };
    },
  },
  "Mutation.approvePolicyVersion": {
    permission: "policy:update",
    approverOnly: true,
    call: async (who) => {
      const [a, b] = [await versionInReview(who), await versionInReview(who)];
      return {
        rest: ["POST", `/v1/policies/${org.policyIds[1]}/versions/${a}/approve`],
        gql: [
          "mutation($id: ID!, $v: ID!) { approvePolicyVersion(id: $id, versionId: $v) { id } }",
          { id: org.policyIds[1], v: b },
        ],
      };
    },
  },
  "Mutation.rejectPolicyVersion": {
    permission: "policy:update",
    approverOnly: true,
    call: async (who) => {
      const [a, b] = [await versionInReview(who), await versionInReview(who)];
      return {
        rest: ["POST", `/v1/policies/${org.policyIds[1]}/versions/${a}/reject`, { reason: "No" }],
        gql: [
          'mutation($id: ID!, $v: ID!) { rejectPolicyVersion(id: $id, versionId: $v, reason: "No") { id } }',
          { id: org.policyIds[1], v: b },
        ],
      };
    },
  },
};

// The inbox needs no permission but a person: `permission` only names what the API key test grants.
Object.assign(operations, {
  "Query.notifications": {
    permission: "comment:read",
    personal: true,
    call: () => ({ rest: ["GET", "/v1/notifications"], gql: ["{ notifications { nextCursor } }", {}] }),
  },
  "Mutation.markNotificationsRead": {
    permission: "comment:read",
    personal: true,
    call: () => ({
      rest: ["POST", "/v1/notifications/read", { all: true }],
      gql: ["mutation { markNotificationsRead(all: true) { unreadCount } }", {}],
    }),
  },
  "Query.notificationPreferences": {
    permission: "comment:read",
    personal: true,
    call: () => ({
      rest: ["GET", "/v1/notifications/preferences"],
      gql: ["{ notificationPreferences { email { mention } } }", {}],
    }),
  },
  "Mutation.updateNotificationPreferences": {
    permission: "comment:read",
    personal: true,
    call: () => ({
      rest: ["PATCH", "/v1/notifications/preferences", { email: { mention: false } }],
      gql: ["mutation { updateNotificationPreferences(email: { mention: true }) { email { mention } } }", {}],
    }),
  },
} satisfies typeof operations);

/** An endpoint no attempt may reach (a reserved address), written directly: the test message fails at once. */
async function webhookEndpoint(): Promise<string> {
  const id = `whe_${unique()}`;
  await t.db.webhookEndpoint.create({
    data: { id, organizationId: org.organizationId, url: "https://203.0.113.10/hook", secret: "whsec_AAAA" },
  });
  return id;
}

async function webhookDelivery(): Promise<string> {
  const endpointId = await webhookEndpoint();
  const id = `whd_${unique()}`;
  await t.db.webhookDelivery.create({
    data: {
      id,
      organizationId: org.organizationId,
      endpointId,
      eventId: "aud_x",
      eventType: "task.created",
      status: "failed",
      nextAttemptAt: null,
    },
  });
  return id;
}

const onEndpoint = (rest: (id: string) => [string, string, unknown?], gql: string) => async (): Promise<Call> => {
  const [a, b] = [await webhookEndpoint(), await webhookEndpoint()];
  return { rest: rest(a), gql: [gql, { id: b }] };
};

Object.assign(operations, {
  "Mutation.createWebhookEndpoint": {
    permission: "webhook:manage",
    call: () => ({
      rest: ["POST", "/v1/webhook-endpoints", { url: "https://hooks.example.com/rest" }],
      gql: ['mutation { createWebhookEndpoint(url: "https://hooks.example.com/gql") { id secret } }', {}],
    }),
  },
  "Query.webhookEndpoints": {
    permission: "webhook:manage",
    call: () => ({ rest: ["GET", "/v1/webhook-endpoints"], gql: ["{ webhookEndpoints { nextCursor } }", {}] }),
  },
  "Query.webhookEndpoint": {
    permission: "webhook:manage",
    call: onEndpoint((id) => ["GET", `/v1/webhook-endpoints/${id}`], "query($id: ID!) { webhookEndpoint(id: $id) { id } }"),
  },
  "Mutation.updateWebhookEndpoint": {
    permission: "webhook:manage",
    call: onEndpoint(
      (id) => ["PATCH", `/v1/webhook-endpoints/${id}`, { description: "d" }],
      'mutation($id: ID!) { updateWebhookEndpoint(id: $id, description: "g") { id } }',
    ),
  },
  "Mutation.deleteWebhookEndpoint": {
    permission: "webhook:manage",
    call: onEndpoint(
      (id) => ["DELETE", `/v1/webhook-endpoints/${id}`],
      "mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { id } }",
    ),
  },
  "Mutation.rotateWebhookEndpointSecret": {
    permission: "webhook:manage",
    call: onEndpoint(
      (id) => ["POST", `/v1/webhook-endpoints/${id}/rotate-secret`],
      "mutation($id: ID!) { rotateWebhookEndpointSecret(id: $id) { secret } }",
    ),
  },
  "Mutation.sendTestWebhook": {
    permission: "webhook:manage",
    call: onEndpoint(
      (id) => ["POST", `/v1/webhook-endpoints/${id}/test`],
      "mutation($id: ID!) { sendTestWebhook(id: $id) { status } }",
    ),
  },
  "Query.webhookDeliveries": {
    permission: "webhook:manage",
    call: onEndpoint(
      (id) => ["GET", `/v1/webhook-endpoints/${id}/deliveries`],
      "query($id: ID!) { webhookDeliveries(id: $id) { nextCursor } }",
    ),
  },
  "Mutation.replayWebhookEndpoint": {
    permission: "webhook:manage",
    call: onEndpoint(
      (id) => ["POST", `/v1/webhook-endpoints/${id}/replay`, { since: "2026-01-01T00:00:00Z" }],
      'mutation($id: ID!) { replayWebhookEndpoint(id: $id, since: "2026-01-01T00:00:00Z") { queued } }',
    ),
  },
  "Mutation.redeliverWebhook": {
    permission: "webhook:manage",
    call: async () => {
      const [a, b] = [await webhookDelivery(), await webhookDelivery()];
      return {
        rest: ["POST", `/v1/webhook-deliveries/${a}/redeliver`],
        gql: ["mutation($id: ID!) { redeliverWebhook(id: $id) { id } }", { id: b }],
      };
    },
  },
} satisfies typeof operations);

// Evidence requests (contract section 17): a vendor's, so vendor:read and vendor:update decide.
const dueIn5Days = () => new Date(Date.now() + 5 * 86_400_000).toISOString();

/** A new evidence request for the organization's vendor, and its link's token. */
async function evidenceRequest(): Promise<{ id: string; token: string }> {
  const res = await t.rest("POST", "/v1/evidence-requests", {
    key: org.apiKey,
    body: { vendorId: org.vendorIds[0], title: "SOC 2", recipientEmail: "s@vendor.example", dueAt: dueIn5Days() },
  });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id, token: String(res.body.url).split("/").pop() as string };
}

/** An upload through a link, its bytes in the store. */
async function linkUpload(token: string): Promise<string> {
  const bytes = new TextEncoder().encode("%PDF-1.7\n");
  const res = await t.rest("POST", "/v1/attachment-uploads", {
    headers: { "x-evidence-request-token": token },
    body: {
      fileName: "r.pdf",
      fileType: "application/pdf",
      size: bytes.length,
      sha256: "Bxb5Jkyf4Z9ddFUnYQfz3cwdNJf2PWBomnNViuihv14=",
    },
  });
  expect(res.status, res.text).toBe(201);
  const put = await t.app.fetch(new Request(res.body.uploadUrl, { method: "PUT", headers: res.body.headers, body: bytes }));
  expect(put.status).toBeLessThan(300);
  return res.body.id;
}

/** A request whose recipient has submitted a file: what accept and reject decide. */
async function submittedRequest(): Promise<string> {
  const { id, token } = await evidenceRequest();
  const res = await t.rest("POST", "/v1/evidence-requests/current/submission", {
    headers: { "x-evidence-request-token": token },
    body: { uploadIds: [await linkUpload(token)] },
  });
  expect(res.status, res.text).toBe(200);
  return id;
}

const onRequest =
  (make: () => Promise<string>, rest: (id: string) => [string, string, unknown?], gql: string) => async (): Promise<Call> => {
    const [a, b] = [await make(), await make()];
    return { rest: rest(a), gql: [gql, { id: b }] };
  };
const newRequestId = async () => (await evidenceRequest()).id;

Object.assign(operations, {
  "Mutation.createEvidenceRequest": {
    permission: "vendor:update",
    call: () => {
      const args = { vendorId: org.vendorIds[0], title: "SOC 2", recipientEmail: "s@vendor.example", dueAt: dueIn5Days() };
      return {
        rest: ["POST", "/v1/evidence-requests", args],
        gql: [
          "mutation($vendorId: ID!, $title: String!, $recipientEmail: String!, $dueAt: DateTime!) { createEvidenceRequest(vendorId: $vendorId, title: $title, recipientEmail: $recipientEmail, dueAt: $dueAt) { id } }",
          args,
        ],
      };
    },
  },
  "Query.evidenceRequests": {
    permission: "vendor:read",
    alsoBy: ["control:read"],
    call: () => ({ rest: ["GET", "/v1/evidence-requests"], gql: ["{ evidenceRequests { nextCursor } }", {}] }),
  },
  "Query.evidenceRequest": {
    permission: "vendor:read",
    alsoBy: ["control:read"],
    call: onRequest(
      newRequestId,
      (id) => ["GET", `/v1/evidence-requests/${id}`],
      "query($id: ID!) { evidenceRequest(id: $id) { id } }",
    ),
  },
  "Mutation.cancelEvidenceRequest": {
    permission: "vendor:update",
    call: onRequest(
      newRequestId,
      (id) => ["POST", `/v1/evidence-requests/${id}/cancel`],
      "mutation($id: ID!) { cancelEvidenceRequest(id: $id) { id } }",
    ),
  },
  "Mutation.resendEvidenceRequest": {
    permission: "vendor:update",
    call: onRequest(
      newRequestId,
      (id) => ["POST", `/v1/evidence-requests/${id}/resend`],
      "mutation($id: ID!) { resendEvidenceRequest(id: $id) { url } }",
    ),
  },
  "Mutation.acceptEvidenceRequest": {
    permission: "vendor:update",
    call: onRequest(
      submittedRequest,
      (id) => ["POST", `/v1/evidence-requests/${id}/accept`],
      "mutation($id: ID!) { acceptEvidenceRequest(id: $id) { status } }",
    ),
  },
  "Mutation.rejectEvidenceRequest": {
    permission: "vendor:update",
    call: onRequest(
      submittedRequest,
      (id) => ["POST", `/v1/evidence-requests/${id}/reject`, { reason: "older report" }],
      'mutation($id: ID!) { rejectEvidenceRequest(id: $id, reason: "older report") { status } }',
    ),
  },
  "Query.currentEvidenceRequest": {
    permission: "vendor:read",
    linkOnly: true,
    call: () => ({ rest: ["GET", "/v1/evidence-requests/current"], gql: ["{ currentEvidenceRequest { title } }", {}] }),
  },
  "Mutation.submitEvidenceRequest": {
    permission: "vendor:update",
    linkOnly: true,
    call: async (who) => {
      const uploadIds = who.link ? [await linkUpload(who.link)] : ["upl_none"];
      return {
        rest: ["POST", "/v1/evidence-requests/current/submission", { uploadIds }],
        gql: ["mutation($ids: [ID!]!) { submitEvidenceRequest(uploadIds: $ids) { status } }", { ids: uploadIds }],
      };
    },
  },
} satisfies typeof operations);

/** Frameworks of the organization: one adopted for good (applicability), one adopted and withdrawn by the calls. */
let frameworksMade:
  | Promise<{ adopted: Awaited<ReturnType<typeof makeFramework>>; moving: Awaited<ReturnType<typeof makeFramework>> }>
  | undefined;
const frameworks = () => {
  frameworksMade ??= (async () => {
    const adopted = await makeFramework(t.db, { organizationId: org.organizationId, groups: 1, perGroup: 2 });
    await adopt(t.db, org.organizationId, adopted.id);
    return { adopted, moving: await makeFramework(t.db, { groups: 1, perGroup: 1 }) };
  })();
  return frameworksMade;
};

Object.assign(operations, {
  "Query.frameworks": {
    permission: "framework:read",
    call: () => ({ rest: ["GET", "/v1/frameworks"], gql: ["{ frameworks { nextCursor } }", {}] }),
  },
  "Query.framework": {
    permission: "framework:read",
    call: async () => {
      const { adopted } = await frameworks();
      return {
        rest: ["GET", `/v1/frameworks/${adopted.id}`],
        gql: ["query($id: ID!) { framework(id: $id) { id readiness { ready } } }", { id: adopted.id }],
      };
    },
  },
  "Query.frameworkRequirements": {
    permission: "framework:read",
    call: async () => {
      const { adopted } = await frameworks();
      return {
        rest: ["GET", `/v1/frameworks/${adopted.id}/requirements`],
        gql: ["query($id: ID!) { frameworkRequirements(id: $id) { items { status { state } } } }", { id: adopted.id }],
      };
    },
  },
  "Mutation.adoptFramework": {
    permission: "framework:manage",
    call: async () => {
      const { moving } = await frameworks();
      return {
        rest: ["POST", `/v1/frameworks/${moving.id}/adoption`],
        gql: ["mutation($id: ID!) { adoptFramework(frameworkId: $id) { id } }", { id: moving.id }],
      };
    },
  },
  "Mutation.withdrawFramework": {
    permission: "framework:manage",
    call: async () => {
      const { moving } = await frameworks();
      return {
        rest: ["DELETE", `/v1/frameworks/${moving.id}/adoption`],
        gql: ["mutation($id: ID!) { withdrawFramework(frameworkId: $id) { id } }", { id: moving.id }],
      };
    },
  },
  "Mutation.setRequirementApplicability": {
    permission: "framework:manage",
    call: async () => {
      const { adopted } = await frameworks();
      return {
        rest: [
          "PUT",
          `/v1/requirements/${adopted.requirements[0]}/applicability`,
          { applicable: false, justification: "Out of scope" },
        ],
        gql: [
          "mutation($id: ID!) { setRequirementApplicability(requirementId: $id, applicable: true) { id } }",
          { id: adopted.requirements[1] },
        ],
      };
    },
  },
} satisfies typeof operations);

Object.assign(operations, {
  "Query.controls": {
    permission: "control:read",
    withoutPermission: "allowed",
    call: () => ({ rest: ["GET", "/v1/controls"], gql: ["{ controls { nextCursor } }", {}] }),
  },
  "Query.control": {
    permission: "control:read",
    withoutPermission: 404,
    call: () => ({
      rest: ["GET", `/v1/controls/${controlId}`],
      gql: ["query($id: ID!) { control(id: $id) { id } }", { id: controlId }],
    }),
  },
  "Query.controlEvidence": {
    permission: "control:read",
    withoutPermission: 404,
    call: () => ({
      rest: ["GET", `/v1/controls/${controlId}/evidence`],
      gql: ["query($id: ID!) { controlEvidence(controlId: $id) { nextCursor } }", { id: controlId }],
    }),
  },
  "Query.evidence": {
    permission: "control:read",
    withoutPermission: 404,
    call: async () => {
      const id = await evidenceRow("accepted");
      return { rest: ["GET", `/v1/evidence/${id}`], gql: ["query($id: ID!) { evidence(id: $id) { id } }", { id }] };
    },
  },
  "Mutation.createControl": {
    permission: "control:update",
    call: () => ({
      rest: ["POST", "/v1/controls", { code: `P-${unique()}`, name: "C" }],
      gql: ['mutation($code: String!) { createControl(code: $code, name: "C") { id } }', { code: `G-${unique()}` }],
    }),
  },
  "Mutation.updateControl": {
    permission: "control:update",
    call: () => ({
      rest: ["PATCH", `/v1/controls/${controlId}`, { name: "Renamed" }],
      gql: ['mutation($id: ID!) { updateControl(id: $id, name: "Renamed again") { id } }', { id: controlId }],
    }),
  },
  "Mutation.deleteControl": {
    permission: "control:update",
    call: async () => {
      const [a, b] = [await newControl(), await newControl()];
      return {
        rest: ["DELETE", `/v1/controls/${a}`],
        gql: ["mutation($id: ID!) { deleteControl(id: $id) { deletedId } }", { id: b }],
      };
    },
  },
  "Mutation.mapControl": {
    permission: "control:update",
    call: () => ({
      rest: ["POST", `/v1/controls/${controlId}/requirements`, { requirementIds: [requirementId] }],
      gql: [
        "mutation($id: ID!, $r: [ID!]!) { mapControl(controlId: $id, requirementIds: $r) { id } }",
        { id: controlId, r: [requirementId] },
      ],
    }),
  },
  "Mutation.unmapControl": {
    permission: "control:update",
    call: async () => {
      const [a, b] = [await newControl(true), await newControl(true)];
      return {
        rest: ["DELETE", `/v1/controls/${a}/requirements/${requirementId}`],
        gql: [
          "mutation($id: ID!, $r: ID!) { unmapControl(controlId: $id, requirementId: $r) { id } }",
          { id: b, r: requirementId },
        ],
      };
    },
  },
  "Mutation.linkControl": {
    permission: "control:update",
    call: () => ({
      rest: ["POST", `/v1/controls/${controlId}/links`, { taskIds: [org.taskIds[0]] }],
      gql: [
        "mutation($id: ID!, $t: [ID!]) { linkControl(controlId: $id, taskIds: $t) { id } }",
        { id: controlId, t: [org.taskIds[0]] },
      ],
    }),
  },
  "Mutation.unlinkControl": {
    permission: "control:update",
    call: () => ({
      rest: ["DELETE", `/v1/controls/${controlId}/links?taskIds=${org.taskIds[1]}`],
      gql: [
        "mutation($id: ID!, $t: [ID!]) { unlinkControl(controlId: $id, taskIds: $t) { id } }",
        { id: controlId, t: [org.taskIds[1]] },
      ],
    }),
  },
  "Mutation.addEvidence": {
    permission: "control:update",
    withoutPermission: 404,
    passes: 404,
    call: () => ({
      rest: ["POST", `/v1/controls/${controlId}/evidence`, { uploadId: "upl_missing" }],
      gql: ['mutation($id: ID!) { addEvidence(controlId: $id, uploadId: "upl_missing") { id } }', { id: controlId }],
    }),
  },
  "Query.vendorEvidence": {
    permission: "vendor:read",
    call: () => ({
      rest: ["GET", `/v1/vendors/${org.vendorIds[0]}/evidence`],
      gql: ["query($id: ID!) { vendorEvidence(vendorId: $id) { nextCursor } }", { id: org.vendorIds[0] }],
    }),
  },
  "Mutation.addVendorEvidence": {
    permission: "vendor:update",
    passes: 404,
    call: () => ({
      rest: ["POST", `/v1/vendors/${org.vendorIds[0]}/evidence`, { uploadId: "upl_missing" }],
      gql: ['mutation($id: ID!) { addVendorEvidence(vendorId: $id, uploadId: "upl_missing") { id } }', { id: org.vendorIds[0] }],
    }),
  },
  "Mutation.acceptEvidence": {
    permission: "control:update",
    call: async () => {
      const [a, b] = [await evidenceRow("submitted"), await evidenceRow("submitted")];
      return {
        rest: ["POST", `/v1/evidence/${a}/accept`],
        gql: ["mutation($id: ID!) { acceptEvidence(id: $id) { id } }", { id: b }],
      };
    },
  },
  "Mutation.rejectEvidence": {
    permission: "control:update",
    call: async () => {
      const [a, b] = [await evidenceRow("submitted"), await evidenceRow("submitted")];
      return {
        rest: ["POST", `/v1/evidence/${a}/reject`, { reason: "Blurry" }],
        gql: ['mutation($id: ID!) { rejectEvidence(id: $id, reason: "Blurry") { id } }', { id: b }],
      };
    },
  },
  "Mutation.deleteEvidence": {
    permission: "control:update",
    call: async () => {
      const [a, b] = [await evidenceRow("accepted"), await evidenceRow("accepted")];
      return {
        rest: ["DELETE", `/v1/evidence/${a}`],
        gql: ["mutation($id: ID!) { deleteEvidence(id: $id) { deletedId } }", { id: b }],
      };
    },
  },
} satisfies typeof operations);

/** A control nobody owns (so an employee's call on it is a 404), mapped to the matrix's requirement when asked. */
async function newControl(mapped = false): Promise<string> {
  const id = newId("ctl");
  await t.db.control.create({ data: { id, organizationId: org.organizationId, code: `M-${unique()}`, name: "Matrix" } });
  if (mapped)
    await t.db.controlRequirement.create({ data: { organizationId: org.organizationId, controlId: id, requirementId } });
  return id;
}

/** Evidence of the matrix's control with a file row of its own (its object is never read). */
async function evidenceRow(status: "submitted" | "accepted"): Promise<string> {
  const attachmentId = newId("att");
  const id = newId("evd");
  await t.db.attachment.create({
    data: {
      id: attachmentId,
      organizationId: org.organizationId,
      name: "e.pdf",
      type: "application/pdf",
      size: 1,
      sha256: "0".repeat(64),
      store: "database",
      objectKey: randomBytes(16).toString("hex"),
    },
  });
  await t.db.evidence.create({
    data: { id, organizationId: org.organizationId, controlId, attachmentId, collectedAt: new Date(), status },
  });
  return id;
}

async function commentBy(userId: string): Promise<string> {
  const res = await t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: { content: "mine", entityId: org.taskIds[0], entityType: "task", userId },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function taskItem(): Promise<string> {
  const res = await t.rest("POST", "/v1/task-management", {
    key: org.apiKey,
    body: { title: "Doomed", entityId: org.vendorIds[0], entityType: "vendor" },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function draftVersion(): Promise<string> {
  const res = await t.rest("POST", `/v1/policies/${org.policyIds[1]}/versions`, { key: org.apiKey, body: {} });
  expect(res.status).toBe(201);
  return res.body.versionId;
}

/** A version in review whose approver is the caller when the caller may approve, else the owner. */
async function versionInReview(who: Who): Promise<string> {
  const versionId = await draftVersion();
  const role = who.memberId ? (await t.db.member.findUniqueOrThrow({ where: { id: who.memberId } })).role : null;
  const approverId = role && rolePermissions[role].includes("policy:update") ? who.memberId : org.memberIds[0];
  const res = await t.rest("POST", `/v1/policies/${org.policyIds[1]}/versions/${versionId}/submit`, {
    key: org.apiKey,
    body: { approverId },
  });
  expect(res.status).toBe(200);
  return versionId;
}

type Credential = { name: string; headers: () => Record<string, string>; holds: (p: Permission) => boolean; who: Who };
const credentials: Credential[] = [];

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
  const comment = await t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: {
      content: "x",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: org.userIds[0],
      attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: "YQ==" }],
    },
  });
  attachmentId = comment.body.attachments[0].id;
  const frameworkId = newId("fw");
  requirementId = newId("req");
  await t.db.framework.create({
    data: {
      id: frameworkId,
      organizationId: org.organizationId,
      key: frameworkId,
      name: "Matrix",
      version: "1",
      requirements: { create: [{ id: requirementId, ref: "M-1", title: "M", position: 0 }] },
    },
  });
  controlId = await newControl();
  for (const role of Object.keys(rolePermissions) as MemberRole[]) {
    const { userId, memberId } = await createUser(t.db, {
      email: `${role}.${unique()}@example.com`,
      name: role,
      organizationId: org.organizationId,
      role,
    });
    const { token } = await createSession(t.db, userId, 3_600_000);
    credentials.push({
      name: `a session of a ${role}`,
      headers: () => ({ authorization: `Bearer ${token}`, "x-organization-id": org.organizationId }),
      holds: (p) => rolePermissions[role].includes(p),
      who: { userId, memberId: memberId ?? undefined },
    });
  }
});
afterAll(() => t.close());

describe("permissions", () => {
  it("the matrix covers every REST route", () => {
    expect(Object.keys(operations).sort()).toEqual(Object.keys(restRoutes).sort());
  });

  it.each(Object.keys(rolePermissions))("grants and refuses by role: %s", async (role) => {
    const credential = credentials.find((c) => c.name.endsWith(` ${role}`)) as Credential;
    for (const [field, { permission, call, personal, linkOnly, withoutPermission, passes }] of Object.entries(operations)) {
      const holds = personal || credential.holds(permission);
      // Scoped to the controls they own: a person who reads no control otherwise (a reader of every control is refused the change).
      const scoped = withoutPermission && !credential.holds("control:read");
      const expected = linkOnly
        ? "unauthenticated"
        : holds
          ? (passes ?? true)
          : scoped
            ? withoutPermission === "allowed"
              ? true
              : 404
            : false;
      await expectOutcome(field, await call(credential.who), credential.headers(), expected);
    }
  });

  it("grants an API key exactly its scopes", async () => {
    for (const [field, { permission, call, approverOnly, personal, passes, alsoBy, orAlone, linkOnly }] of Object.entries(
      operations,
    )) {
      // Granting a role needs every permission of that role: createMember makes an employee.
      const grants = field === "Mutation.createMember" ? rolePermissions.employee : [];
      const only = await t.keyWith(org.organizationId, [permission, ...grants]);
      const allowed = linkOnly ? "unauthenticated" : !approverOnly && !personal && (passes ?? true);
      await expectOutcome(field, await call({}), { "x-api-key": only.key }, allowed);
      for (const other of orAlone ?? []) {
        const otherOnly = await t.keyWith(org.organizationId, [other, ...grants]);
        await expectOutcome(field, await call({}), { "x-api-key": otherOnly.key }, allowed);
      }
      const allBut = await t.keyWith(
        org.organizationId,
        permissions.filter((p) => p !== permission && !alsoBy?.includes(p)),
      );
      await expectOutcome(field, await call({}), { "x-api-key": allBut.key }, linkOnly ? "unauthenticated" : false);
    }
  });

  it("an evidence request's link token runs the link's three operations, and is 401 on every other", async () => {
    const takesLink = new Set([
      "Query.currentEvidenceRequest",
      "Mutation.submitEvidenceRequest",
      "Mutation.createAttachmentUpload",
    ]);
    const shared = await evidenceRequest();
    for (const [field, { call }] of Object.entries(operations)) {
      if (!takesLink.has(field)) {
        // Refused before its arguments matter: one link for all, and both transports at once.
        await expectOutcome(field, await call({}), { "x-evidence-request-token": shared.token }, "unauthenticated");
        continue;
      }
      // A link of its own per transport: a submission ends what the link takes.
      for (const transport of ["rest", "gql"] as const) {
        const { token } = await evidenceRequest();
        const made = await call({ link: token });
        const headers = { "x-evidence-request-token": token };
        const [method, path, body] = made.rest;
        const answer =
          transport === "rest"
            ? await t.rest(method, path, { headers, body })
            : await t.gql(made.gql[0], made.gql[1], { headers });
        const code = transport === "rest" ? answer.body?.code : answer.body.errors?.[0]?.extensions?.code;
        const label = `${field} over ${transport}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`;
        expect(answer.status, label).toBeLessThan(300);
        expect(code, label).toBeUndefined();
      }
    }
  });
});

/**
 * Every field of the graph (contract section 7), reached through a root field guarded by
 * `parent`. Where `permission` differs from `parent`, a caller holding only `parent` gets the rest
 * of the answer with null and FORBIDDEN at `path`.
 */
const graphFields: Record<
  string,
  {
    parent: Permission | null;
    permission: Permission | null;
    query: () => [string, Record<string, unknown>];
    path: (string | number)[];
  }
> = {
  "Task.comments": {
    parent: "task:read",
    permission: "comment:read",
    query: () => ["query($id: ID!) { task(taskId: $id) { id comments { totalCount } } }", { id: org.taskIds[0] }],
    path: ["task", "comments"],
  },
  "Vendor.comments": {
    parent: "vendor:read",
    permission: "comment:read",
    query: () => ["query($id: ID!) { node(id: $id) { id ... on Vendor { comments { totalCount } } } }", { id: org.vendorIds[0] }],
    path: ["node", "comments"],
  },
  "Risk.comments": {
    parent: "risk:read",
    permission: "comment:read",
    query: () => ["query($id: ID!) { node(id: $id) { id ... on Risk { comments { totalCount } } } }", { id: org.riskIds[0] }],
    path: ["node", "comments"],
  },
  "Policy.comments": {
    parent: "policy:read",
    permission: "comment:read",
    query: () => ["query($id: ID!) { policy(id: $id) { id comments { totalCount } } }", { id: org.policyIds[0] }],
    path: ["policy", "comments"],
  },
  "Vendor.taskItems": {
    parent: "vendor:read",
    permission: "task:read",
    query: () => [
      "query($id: ID!) { nodes(ids: [$id]) { id ... on Vendor { taskItems(status: todo) { totalCount } } } }",
      { id: org.vendorIds[0] },
    ],
    path: ["nodes", 0, "taskItems"],
  },
  "Risk.taskItems": {
    parent: "risk:read",
    permission: "task:read",
    query: () => ["query($id: ID!) { node(id: $id) { id ... on Risk { taskItems { totalCount } } } }", { id: org.riskIds[0] }],
    path: ["node", "taskItems"],
  },
  "Vendor.taskItemStats": {
    parent: "vendor:read",
    permission: "task:read",
    query: () => ["query($id: ID!) { node(id: $id) { id ... on Vendor { taskItemStats { total } } } }", { id: org.vendorIds[0] }],
    path: ["node", "taskItemStats"],
  },
  "Risk.taskItemStats": {
    parent: "risk:read",
    permission: "task:read",
    query: () => ["query($id: ID!) { node(id: $id) { id ... on Risk { taskItemStats { total } } } }", { id: org.riskIds[0] }],
    path: ["node", "taskItemStats"],
  },
  "Policy.currentVersion, Policy.versions, PolicyVersion.policy, PolicyVersion.sourceVersion": {
    parent: "policy:read",
    permission: "policy:read",
    query: () => [
      "query($id: ID!) { policy(id: $id) { currentVersion { id } versions { totalCount items { policy { id } sourceVersion { id } } } } }",
      { id: org.policyIds[0] },
    ],
    path: ["policy"],
  },
  "Comment.entity (task)": {
    parent: "comment:read",
    permission: "task:read",
    query: () => [
      "query($id: ID!) { comments(entityId: $id, entityType: task) { items { id entity { __typename } } } }",
      { id: org.taskIds[0] },
    ],
    path: ["comments", "items", 0, "entity"],
  },
  "Comment.contextUrl, Attachment.description, Comment.author": {
    parent: "comment:read",
    permission: "comment:read",
    query: () => [
      "query($id: ID!) { comments(entityId: $id, entityType: task) { totalCount items { contextUrl attachments { description } } } }",
      { id: org.taskIds[0] },
    ],
    path: ["comments"],
  },
  "Author.member (directory: id and name)": {
    parent: "comment:read",
    permission: null,
    query: () => [
      "query($id: ID!) { comments(entityId: $id, entityType: task) { items { id author { member { id name } } } } }",
      { id: org.taskIds[0] },
    ],
    path: ["comments", "items", 0, "author", "member", "name"],
  },
  "Author.member.role (beyond the directory)": {
    parent: "comment:read",
    permission: "member:read",
    query: () => [
      "query($id: ID!) { comments(entityId: $id, entityType: task) { items { id author { member { id role } } } } }",
      { id: org.taskIds[0] },
    ],
    path: ["comments", "items", 0, "author", "member", "role"],
  },
  "Task.assignee (directory: id and name)": {
    parent: "task:read",
    permission: null,
    query: () => ["query($id: ID!) { task(taskId: $id) { id assignee { id name } } }", { id: org.taskIds[0] }],
    path: ["task", "assignee"],
  },
  "TaskItem.entity (vendor)": {
    parent: "task:read",
    permission: "vendor:read",
    query: () => [
      "query($id: ID!) { taskItems(entityId: $id, entityType: vendor) { totalCount items { id entity { __typename } } } }",
      { id: org.vendorIds[0] },
    ],
    path: ["taskItems", "items", 0, "entity"],
  },
  "AuditEvent.actor (directory: id and name)": {
    parent: "audit:read",
    permission: null,
    query: () => ["{ auditEvents(limit: 1) { totalCount items { id actor { id name } } } }", {}],
    path: ["auditEvents", "items", 0, "actor"],
  },
  "Member.devices": {
    parent: null,
    permission: "member:read",
    query: () => ["query($id: ID!) { member(id: $id) { id name devices { name } } }", { id: org.memberIds[0] }],
    path: ["member", "devices"],
  },
  "Query.tasks totalCount": {
    parent: "task:read",
    permission: "task:read",
    query: () => ["{ tasks { totalCount } }", {}],
    path: ["tasks"],
  },
  "Query.viewer": {
    parent: null,
    permission: null,
    query: () => ["{ viewer { organization { id } permissions organizations { id } member { id } user { id } } }", {}],
    path: ["viewer"],
  },
  "Query.nodes (a member: its role beyond the directory)": {
    parent: null,
    permission: "member:read",
    query: () => ["query($id: ID!) { nodes(ids: [$id]) { id ... on Member { name role } } }", { id: org.memberIds[0] }],
    path: ["nodes", 0, "role"],
  },
};

describe("permissions of the graph", () => {
  it.each(Object.keys(rolePermissions))("grants and refuses every new field by role: %s", async (role) => {
    const credential = credentials.find((c) => c.name.endsWith(` ${role}`)) as Credential;
    for (const [field, spec] of Object.entries(graphFields)) {
      await expectFieldOutcome(field, spec, credential.headers(), credential.holds);
    }
  });

  it("grants a limited API key the fields its scopes allow, and refuses the others at their paths", async () => {
    for (const [field, spec] of Object.entries(graphFields)) {
      const needed = [spec.parent, spec.permission].filter((p): p is Permission => p !== null);
      const both = await t.keyWith(org.organizationId, needed.length ? needed : ["audit:read"]);
      await expectFieldOutcome(field, spec, { "x-api-key": both.key }, (p) => needed.includes(p));
      if (spec.parent && spec.permission && spec.parent !== spec.permission) {
        const parentOnly = await t.keyWith(org.organizationId, [spec.parent]);
        await expectFieldOutcome(field, spec, { "x-api-key": parentOnly.key }, (p) => p === spec.parent);
      }
      if (spec.permission && !spec.parent) {
        const other = await t.keyWith(org.organizationId, [permissions.find((p) => p !== spec.permission) as Permission]);
        await expectFieldOutcome(field, spec, { "x-api-key": other.key }, (p) => p !== spec.permission);
      }
    }
  });

  it("answers the created version on createPolicyVersion only with policy:read, refusing it at its path", async () => {
    const query = "mutation($id: ID!) { createPolicyVersion(id: $id) { version policyVersion { id } } }";
    const both = await t.keyWith(org.organizationId, ["policy:update", "policy:read"]);
    const allowed = await t.gql(query, { id: org.policyIds[1] }, { key: both.key });
    expect(allowed.body.errors).toBeUndefined();
    expect(allowed.body.data.createPolicyVersion.policyVersion.id).toMatch(/^pv_/);
    const updateOnly = await t.keyWith(org.organizationId, ["policy:update"]);
    const refused = await t.gql(query, { id: org.policyIds[1] }, { key: updateOnly.key });
    expect(refused.body.errors[0]).toMatchObject({
      path: ["createPolicyVersion", "policyVersion"],
      extensions: { code: "FORBIDDEN" },
    });
  });
});

function at(data: unknown, path: (string | number)[]): unknown {
  return path.reduce<unknown>((value, key) => (value as Record<string | number, unknown> | null)?.[key], data);
}

async function expectFieldOutcome(
  field: string,
  spec: (typeof graphFields)[string],
  headers: Record<string, string>,
  holds: (p: Permission) => boolean,
) {
  const [query, variables] = spec.query();
  const res = await t.gql(query, variables, { headers });
  const label = `${field}: ${JSON.stringify(res.body).slice(0, 300)}`;
  expect(res.status, label).toBe(200);
  const parentAllowed = !spec.parent || holds(spec.parent);
  const fieldAllowed = !spec.permission || holds(spec.permission);
  if (parentAllowed && fieldAllowed) {
    expect(res.body.errors, label).toBeUndefined();
    expect(at(res.body.data, spec.path), label).not.toBeUndefined();
  } else if (!parentAllowed) {
    expect(res.body.errors?.[0]?.extensions?.code, label).toBe("FORBIDDEN");
  } else {
    // Refused at the field alone: the rest of the answer stands.
    // One error per refused field (one per item of a list), each at the field's path.
    const shape = (path: (string | number)[]) => path.map((p) => (typeof p === "number" ? "#" : p)).join(".");
    expect(res.body.errors[0], label).toMatchObject({ path: spec.path, extensions: { code: "FORBIDDEN" } });
    for (const error of res.body.errors) {
      expect(error.extensions.code, label).toBe("FORBIDDEN");
      expect(shape(error.path), label).toBe(shape(spec.path));
    }
    expect(at(res.body.data, spec.path), label).toBeNull();
    expect(at(res.body.data, spec.path.slice(0, -1)), label).not.toBeNull();
  }
}

/** `true`: allowed; `false`: refused (403); 404: past the permission check, as missing; "unauthenticated": 401. */
async function expectOutcome(
  field: string,
  call: Call,
  headers: Record<string, string>,
  allowed: boolean | 404 | "unauthenticated",
) {
  const [method, path, body] = call.rest;
  const rest = await t.rest(method, path, { headers, body });
  const gql = await t.gql(call.gql[0], call.gql[1], { headers });
  const gqlCode = gql.body.errors?.[0]?.extensions?.code;
  const label = `${field} (${allowed === 404 ? "404" : allowed ? "allowed" : "refused"}): REST ${rest.status} ${rest.text.slice(0, 200)} / GraphQL ${JSON.stringify(gql.body).slice(0, 200)}`;
  if (allowed === 404) {
    expect(rest.status, label).toBe(404);
    expect(gqlCode, label).toBe("NOT_FOUND");
  } else if (allowed === "unauthenticated") {
    expect(rest.status, label).toBe(401);
    expect(rest.body.code, label).toBe("UNAUTHENTICATED");
    expect(gqlCode, label).toBe("UNAUTHENTICATED");
  } else if (allowed) {
    expect(rest.status, label).toBeLessThan(300);
    expect(gqlCode, label).toBeUndefined();
  } else {
    expect(rest.status, label).toBe(403);
    expect(rest.body.code, label).toBe("FORBIDDEN");
    expect(gqlCode, label).toBe("FORBIDDEN");
  }
}
