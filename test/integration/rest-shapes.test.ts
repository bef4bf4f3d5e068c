import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { newId } from "../../src/platform/ids.js";
import { restRoutes } from "../../src/rest/routes.js";
import { makeFramework } from "../helpers/frameworks.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

// The keys of every REST answer, recorded before GraphQL gained relations (contract section 7):
// REST keeps the shapes of sections 3 and 5, so a relation or a graph-only field that leaks into
// Sofa's generated selections fails here. RECORD_REST_SHAPES=1 rewrites the file, deliberately.
const shapesFile = new URL("./rest-shapes.json", import.meta.url);

let t: TestApp;
let org: SeedResult;

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
});
afterAll(() => t.close());

/** The keys of a JSON value, recursively (scalars and null alike are "value"); a list by the union of its items' shapes. */
function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) {
    const merged: Record<string, unknown> = {};
    for (const item of value) {
      const shape = shapeOf(item);
      if (shape && typeof shape === "object") Object.assign(merged, shape);
      else return [shape];
    }
    return [merged];
  }
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, shapeOf((value as Record<string, unknown>)[k])]),
    );
  }
  // Keys are the contract here, not values: whether a nullable field is null depends on the data.
  return value === undefined ? "undefined" : "value";
}

/** One successful call of every REST route, by the GraphQL field it serves. */
async function callEveryRoute(): Promise<Record<string, { status: number; shape: unknown }>> {
  const key = org.apiKey;
  const comment = await t.rest("POST", "/v1/comments", {
    key,
    body: {
      content: "shape",
      entityId: org.vendorIds[0],
      entityType: "vendor",
      userId: org.userIds[0],
      contextUrl: "https://app.example/vendors/1",
      attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: "YQ==", description: "stored" }],
    },
  });
  // The owner approves in person: a review step needs a user credential.
  const session = await createSession(t.db, org.userIds[0] as string, 3_600_000);
  const approver = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
  // biome-ignore lint/suspicious/noExplicitAny: a REST answer
  let draft: { body: any } = { body: {} };
  let framework = { id: "", requirements: [] as string[] };
  const calls: Record<string, () => Promise<{ status: number; body: unknown }>> = {
    "Mutation.createComment": async () => comment,
    "Mutation.unlinkDevice": () => t.rest("PATCH", `/v1/people/${org.memberIds[1]}/unlink-device`, { key }),
    "Mutation.createPolicyVersion": () =>
      t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions`, { key, body: { changelog: "c" } }),
    "Mutation.createPolicy": () => t.rest("POST", "/v1/policies", { key, body: { name: "P", content: [] } }),
    "Query.policy": () => t.rest("GET", `/v1/policies/${org.policyIds[0]}`, { key }),
    "Query.policyVersions": () => t.rest("GET", `/v1/policies/${org.policyIds[0]}/versions`, { key }),
    "Query.taskItemStats": () =>
      t.rest("GET", `/v1/task-management/stats?entityId=${org.vendorIds[0]}&entityType=vendor`, { key }),
    "Mutation.createTaskItem": () =>
      t.rest("POST", "/v1/task-management", { key, body: { title: "I", entityId: org.vendorIds[0], entityType: "vendor" } }),
    "Query.taskItems": () => t.rest("GET", `/v1/task-management?entityId=${org.vendorIds[0]}&entityType=vendor`, { key }),
    "Mutation.updateTaskItem": () =>
      t.rest("PATCH", `/v1/task-management/${org.taskItemIds[0]}`, { key, body: { priority: "high" } }),
    "Query.task": () => t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key }),
    "Mutation.createMember": () =>
      t.rest("POST", "/v1/people", { key, body: { email: `shape.${Date.now()}@example.com`, name: "S", role: "employee" } }),
    "Query.members": () => t.rest("GET", "/v1/people", { key }),
    "Query.member": () => t.rest("GET", `/v1/people/${org.memberIds[0]}`, { key }),
    "Mutation.updateMember": () => t.rest("PATCH", `/v1/people/${org.memberIds[0]}`, { key, body: { jobTitle: "CEO" } }),
    "Mutation.createTask": () => t.rest("POST", "/v1/tasks", { key, body: { title: "T", description: "d" } }),
    "Query.tasks": () => t.rest("GET", "/v1/tasks", { key }),
    "Mutation.updateTask": () => t.rest("PATCH", `/v1/tasks/${org.taskIds[0]}`, { key, body: { status: "done" } }),
    "Mutation.createVendor": () => t.rest("POST", "/v1/vendors", { key, body: { name: "V", description: "d" } }),
    "Mutation.createRisk": () => t.rest("POST", "/v1/risks", { key, body: { title: "R", description: "d" } }),
    "Query.comments": () => t.rest("GET", `/v1/comments?entityId=${org.vendorIds[0]}&entityType=vendor`, { key }),
    "Query.attachment": async () => {
      const res = await t.rest("GET", `/v1/attachments/${comment.body.attachments[0].id}`, { key });
      return { status: res.status, body: res.text };
    },
    "Query.attachmentDownloadUrl": () => t.rest("GET", `/v1/attachments/${comment.body.attachments[0].id}/download-url`, { key }),
    "Mutation.createAttachmentUpload": () =>
      t.rest("POST", "/v1/attachment-uploads", {
        key,
        body: { fileName: "a.txt", fileType: "text/plain", size: 1, sha256: "ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs=" },
      }),
    "Query.auditEvents": () => t.rest("GET", "/v1/audit-events?limit=3", { key }),
    "Query.verifyAuditTrail": () => t.rest("GET", "/v1/audit/verify", { key }),
    "Mutation.createAuditCheckpoint": () => t.rest("POST", "/v1/audit/checkpoints", { key }),
    "Query.auditCheckpoints": () => t.rest("GET", "/v1/audit/checkpoints", { key }),
    "Query.vendors": () => t.rest("GET", "/v1/vendors", { key }),
    "Query.vendor": () => t.rest("GET", `/v1/vendors/${org.vendorIds[0]}`, { key }),
    "Mutation.updateVendor": () => t.rest("PATCH", `/v1/vendors/${org.vendorIds[0]}`, { key, body: { name: "V2" } }),
    "Query.risks": () => t.rest("GET", "/v1/risks", { key }),
    "Query.risk": () => t.rest("GET", `/v1/risks/${org.riskIds[0]}`, { key }),
    "Mutation.updateRisk": () => t.rest("PATCH", `/v1/risks/${org.riskIds[0]}`, { key, body: { title: "R2" } }),
    "Query.policies": () => t.rest("GET", "/v1/policies", { key }),
    "Mutation.updatePolicy": () => t.rest("PATCH", `/v1/policies/${org.policyIds[0]}`, { key, body: { name: "P2" } }),
    "Mutation.updateComment": () =>
      t.rest("PATCH", `/v1/comments/${comment.body.id}`, { key, body: { content: "edited", userId: org.userIds[0] } }),
    "Mutation.submitPolicyVersion": async () => {
      draft = await t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions`, { key, body: { changelog: "review" } });
      return t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions/${draft.body.versionId}/submit`, {
        key,
        body: { approverId: org.memberIds[0] },
      });
    },
    "Mutation.rejectPolicyVersion": () =>
      t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions/${draft.body.versionId}/reject`, {
        headers: approver,
        body: { reason: "not yet" },
      }),
    "Mutation.approvePolicyVersion": async () => {
      await t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions/${draft.body.versionId}/submit`, {
        key,
        body: { approverId: org.memberIds[0] },
      });
      return t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions/${draft.body.versionId}/approve`, { headers: approver });
    },
    "Mutation.deleteComment": () => t.rest("DELETE", `/v1/comments/${comment.body.id}?userId=${org.userIds[0]}`, { key }),
    "Mutation.deleteTaskItem": () => t.rest("DELETE", `/v1/task-management/${org.taskItemIds[0]}`, { key }),
    // An inbox is personal: the owner's own, which the review steps above wrote to.
    "Query.notifications": () => t.rest("GET", "/v1/notifications", { headers: approver }),
    "Mutation.markNotificationsRead": () => t.rest("POST", "/v1/notifications/read", { headers: approver, body: { all: true } }),
    "Query.notificationPreferences": () => t.rest("GET", "/v1/notifications/preferences", { headers: approver }),
    "Mutation.updateNotificationPreferences": () =>
      t.rest("PATCH", "/v1/notifications/preferences", { headers: approver, body: { email: { mention: false } } }),
    "Mutation.adoptFramework": async () => {
      framework = await makeFramework(t.db, { organizationId: org.organizationId, groups: 1, perGroup: 2 });
      return t.rest("POST", `/v1/frameworks/${framework.id}/adoption`, { key });
    },
    "Query.frameworks": () => t.rest("GET", `/v1/frameworks?adopted=true`, { key }),
    "Query.framework": () => t.rest("GET", `/v1/frameworks/${framework.id}`, { key }),
    "Query.frameworkRequirements": () => t.rest("GET", `/v1/frameworks/${framework.id}/requirements`, { key }),
    "Mutation.setRequirementApplicability": () =>
      t.rest("PUT", `/v1/requirements/${framework.requirements[0]}/applicability`, {
        key,
        body: { applicable: false, justification: "Not in scope" },
      }),
    "Mutation.withdrawFramework": () => t.rest("DELETE", `/v1/frameworks/${framework.id}/adoption`, { key }),
    "Mutation.createWebhookEndpoint": async () => {
      hook = await t.rest("POST", "/v1/webhook-endpoints", { key, body: { url: "https://hooks.example.com/a" } });
      return hook;
    },
    "Query.webhookEndpoints": () => t.rest("GET", "/v1/webhook-endpoints", { key }),
    "Query.webhookEndpoint": () => t.rest("GET", `/v1/webhook-endpoints/${hook.body.id}`, { key }),
    "Mutation.updateWebhookEndpoint": () =>
      t.rest("PATCH", `/v1/webhook-endpoints/${hook.body.id}`, { key, body: { description: "d" } }),
    "Mutation.rotateWebhookEndpointSecret": () => t.rest("POST", `/v1/webhook-endpoints/${hook.body.id}/rotate-secret`, { key }),
    // An address no attempt may reach: the test answers at once, with its failure recorded.
    "Mutation.sendTestWebhook": async () => {
      await t.db.webhookEndpoint.update({ where: { id: hook.body.id }, data: { url: "https://203.0.113.10/hook" } });
      return t.rest("POST", `/v1/webhook-endpoints/${hook.body.id}/test`, { key });
    },
    "Query.webhookDeliveries": () => t.rest("GET", `/v1/webhook-endpoints/${hook.body.id}/deliveries`, { key }),
    "Mutation.replayWebhookEndpoint": () =>
      t.rest("POST", `/v1/webhook-endpoints/${hook.body.id}/replay`, { key, body: { since: "2026-01-01T00:00:00Z" } }),
    "Mutation.redeliverWebhook": async () => {
      const delivery = await t.db.webhookDelivery.findFirstOrThrow({
        where: { endpointId: hook.body.id, eventType: { not: "webhook.test" } },
      });
      return t.rest("POST", `/v1/webhook-deliveries/${delivery.id}/redeliver`, { key });
    },
    "Mutation.deleteWebhookEndpoint": () => t.rest("DELETE", `/v1/webhook-endpoints/${hook.body.id}`, { key }),
    "Mutation.createEvidenceRequest": async () => {
      const due = new Date(Date.now() + 5 * 86_400_000).toISOString();
      request = await t.rest("POST", "/v1/evidence-requests", {
        key,
        body: { vendorId: org.vendorIds[0], title: "SOC 2", recipientEmail: "a@vendor.example", dueAt: due },
      });
      return request;
    },
    "Query.evidenceRequests": () => t.rest("GET", "/v1/evidence-requests", { key }),
    "Query.evidenceRequest": () => t.rest("GET", `/v1/evidence-requests/${request.body.id}`, { key }),
    "Query.currentEvidenceRequest": () => t.rest("GET", "/v1/evidence-requests/current", { headers: linkToken() }),
    "Mutation.submitEvidenceRequest": () => submitThroughLink(),
    "Mutation.rejectEvidenceRequest": () =>
      t.rest("POST", `/v1/evidence-requests/${request.body.id}/reject`, { key, body: { reason: "older report" } }),
    "Mutation.resendEvidenceRequest": async () => {
      const resent = await t.rest("POST", `/v1/evidence-requests/${request.body.id}/resend`, { key });
      request.body.url = resent.body.url;
      return resent;
    },
    "Mutation.acceptEvidenceRequest": async () => {
      await submitThroughLink();
      return t.rest("POST", `/v1/evidence-requests/${request.body.id}/accept`, { key });
    },
    "Mutation.cancelEvidenceRequest": async () => {
      const other = await t.rest("POST", "/v1/evidence-requests", {
        key,
        body: { vendorId: org.vendorIds[0], title: "x", recipientEmail: "b@vendor.example", dueAt: request.body.dueAt },
      });
      return t.rest("POST", `/v1/evidence-requests/${other.body.id}/cancel`, { key });
    },
    "Mutation.createControl": async () => {
      ctl = await t.rest("POST", "/v1/controls", {
        key,
        body: { code: `SHAPE-${Date.now()}`, name: "C", description: "d", ownerId: org.memberIds[0], evidenceEveryDays: 90 },
      });
      return ctl;
    },
    "Query.controls": () => t.rest("GET", "/v1/controls", { key }),
    "Query.control": () => t.rest("GET", `/v1/controls/${ctl.body.id}`, { key }),
    "Mutation.updateControl": () => t.rest("PATCH", `/v1/controls/${ctl.body.id}`, { key, body: { name: "C2" } }),
    "Mutation.mapControl": async () => {
      const frameworkId = newId("fw");
      requirementId = newId("req");
      await t.db.framework.create({
        data: {
          id: frameworkId,
          organizationId: org.organizationId,
          key: frameworkId,
          name: "F",
          version: "1",
          requirements: { create: [{ id: requirementId, ref: "R-1", title: "R", position: 0 }] },
        },
      });
      return t.rest("POST", `/v1/controls/${ctl.body.id}/requirements`, { key, body: { requirementIds: [requirementId] } });
    },
    "Mutation.unmapControl": () => t.rest("DELETE", `/v1/controls/${ctl.body.id}/requirements/${requirementId}`, { key }),
    "Mutation.linkControl": () =>
      t.rest("POST", `/v1/controls/${ctl.body.id}/links`, {
        key,
        body: { policyIds: [org.policyIds[0]], taskIds: [org.taskIds[0]] },
      }),
    "Mutation.unlinkControl": () => t.rest("DELETE", `/v1/controls/${ctl.body.id}/links?taskIds=${org.taskIds[0]}`, { key }),
    "Mutation.addEvidence": async () =>
      (evd = await t.rest("POST", `/v1/controls/${ctl.body.id}/evidence`, {
        key,
        body: { uploadId: await uploaded(), description: "d", collectedAt: "2026-01-01T00:00:00.000Z" },
      })),
    "Query.controlEvidence": () => t.rest("GET", `/v1/controls/${ctl.body.id}/evidence`, { key }),
    "Query.evidence": () => t.rest("GET", `/v1/evidence/${evd.body.id}`, { key }),
    "Mutation.addVendorEvidence": async () =>
      t.rest("POST", `/v1/vendors/${org.vendorIds[0]}/evidence`, {
        key,
        body: { uploadId: await uploaded(), validUntil: "2030-01-01T00:00:00.000Z" },
      }),
    "Query.vendorEvidence": () => t.rest("GET", `/v1/vendors/${org.vendorIds[0]}/evidence`, { key }),
    "Mutation.acceptEvidence": async () => {
      await t.db.evidence.update({ where: { id: evd.body.id }, data: { status: "submitted" } });
      return t.rest("POST", `/v1/evidence/${evd.body.id}/accept`, { key });
    },
    "Mutation.rejectEvidence": async () => {
      await t.db.evidence.update({ where: { id: evd.body.id }, data: { status: "submitted" } });
      return t.rest("POST", `/v1/evidence/${evd.body.id}/reject`, { key, body: { reason: "no" } });
    },
    "Mutation.deleteEvidence": () => t.rest("DELETE", `/v1/evidence/${evd.body.id}`, { key }),
    "Mutation.deleteControl": () => t.rest("DELETE", `/v1/controls/${ctl.body.id}`, { key }),
    // Last: their audit events would otherwise be the newest that Query.auditEvents shows.
    "Mutation.importFramework": () =>
      t.rest("POST", "/v1/frameworks", {
        key,
        body: {
          format: "json",
          document: JSON.stringify({ key: "own", name: "Own", version: "1", requirements: [{ ref: "A", title: "A" }] }),
        },
      }),
    "Mutation.importRequirementMapping": () =>
      t.rest("POST", "/v1/frameworks/mappings", {
        key,
        body: {
          document: JSON.stringify({
            source: "own",
            target: "soc2-tsc-2017",
            mappings: [{ sourceRef: "A", targetRef: "CC1.1", relationship: "equal" }],
          }),
        },
      }),
  };
  let ctl = { body: { id: "" } } as Awaited<ReturnType<TestApp["rest"]>>;
  let evd = { body: { id: "" } } as Awaited<ReturnType<TestApp["rest"]>>;
  let requirementId = "";
  /** An upload of the key with its bytes sent: its id. */
  const uploaded = async () => {
    const bytes = Buffer.from("%PDF-1.7\nshape\n");
    const created = await t.rest("POST", "/v1/attachment-uploads", {
      key,
      body: {
        fileName: "e.pdf",
        fileType: "application/pdf",
        size: bytes.length,
        sha256: createHash("sha256").update(bytes).digest("base64"),
      },
    });
    await t.app.fetch(
      new Request(created.body.uploadUrl, { method: "PUT", headers: created.body.headers, body: new Uint8Array(bytes) }),
    );
    return created.body.id as string;
  };
  let request = { body: {} } as Awaited<ReturnType<TestApp["rest"]>>;
  const linkToken = () => ({ "x-evidence-request-token": String(request.body.url).split("/").pop() as string });
  /** One file sent through the request's link: an upload, its bytes, the submission. */
  async function submitThroughLink() {
    const bytes = new TextEncoder().encode("%PDF-1.7 shape");
    const sha256 = Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("base64");
    const upload = await t.rest("POST", "/v1/attachment-uploads", {
      headers: linkToken(),
      body: { fileName: "r.pdf", fileType: "application/pdf", size: bytes.length, sha256 },
    });
    await t.app.fetch(new Request(upload.body.uploadUrl, { method: "PUT", headers: upload.body.headers, body: bytes }));
    return t.rest("POST", "/v1/evidence-requests/current/submission", {
      headers: linkToken(),
      body: { uploadIds: [upload.body.id], note: "n" },
    });
  }
  const answers: Record<string, { status: number; shape: unknown }> = {};
  let hook = { body: { id: "" } } as Awaited<ReturnType<TestApp["rest"]>>;
  for (const [field, call] of Object.entries(calls)) {
    const res = await call();
    answers[field] = { status: res.status, shape: shapeOf(res.body) };
  }
  return answers;
}

describe("REST answers", () => {
  it("keep the keys they had before the graph grew, on every route", async () => {
    const answers = await callEveryRoute();
    expect(Object.keys(answers).sort()).toEqual(Object.keys(restRoutes).sort());
    if (process.env.RECORD_REST_SHAPES === "1") await writeFile(shapesFile, `${JSON.stringify(answers, null, 2)}\n`);
    const recorded = JSON.parse(await readFile(shapesFile, "utf8"));
    expect(answers).toEqual(recorded);
  });
});
