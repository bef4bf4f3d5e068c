import { describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { DUE_NOTICE_MS, runStatusPass } from "../../src/modules/frameworks/frameworks.jobs.js";
import { newId } from "../../src/platform/ids.js";
import { openFixture } from "../helpers/fixtures.js";
import { makeControl, makeEvidence, makeFramework, makeTask } from "../helpers/frameworks.js";

/**
 * Time and writes move readiness, and each move is recorded once: `control.status_changed` in the
 * organization's audit chain (a webhook event too), the owner told in the inbox. The job runs on a
 * clock the tests move (`runStatusPass(db, notifier, now)`), never by waiting.
 */
const { t } = await openFixture({ organizations: 0 });
const day = 86_400_000;

async function freshOrg() {
  const org = await t.seedOrg();
  // An endpoint listening to control events, which no attempt reaches: its deliveries are the webhook events.
  const endpointId = newId("whe");
  await t.db.webhookEndpoint.create({
    data: {
      id: endpointId,
      organizationId: org.organizationId,
      url: "https://203.0.113.10/hook",
      secret: "whsec_AAAA",
      eventTypes: ["control.*"],
    },
  });
  return { ...org, endpointId, owner: org.memberIds[3] as string };
}

const statusEvents = (organizationId: string) =>
  t.db.auditEvent.findMany({
    where: { organizationId, action: "control.status_changed" },
    orderBy: { sequence: "asc" },
    select: { id: true, entityId: true, actorApiKeyId: true, requestId: true, data: true },
  });

const notificationsOf = (recipientId: string) =>
  t.db.notification.findMany({
    where: { recipientId },
    orderBy: { createdAt: "asc" },
    select: { reason: true, entityType: true, entityId: true },
  });

const runPass = (now: Date) => runStatusPass(t.db, t.app.services.notifier, now);

describe("writes that change a control's state", () => {
  it("a task marked done, then not done: each change recorded in the task's transaction, a webhook event, the owner told", async () => {
    const org = await freshOrg();
    const taskId = await makeTask(t.db, org.organizationId, "todo");
    const controlId = await makeControl(t.db, org.organizationId, { taskIds: [taskId], ownerId: org.owner });
    const done = await t.rest("PATCH", `/v1/tasks/${taskId}`, { key: org.apiKey, body: { status: "done" } });
    expect(done.status).toBe(200);
    let events = await statusEvents(org.organizationId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ entityId: controlId, data: { from: "not_ready", to: "ready", reasons: [] } });
    const taskEvent = await t.db.auditEvent.findFirstOrThrow({
      where: { organizationId: org.organizationId, action: "task.updated", entityId: taskId },
    });
    expect(events[0]?.requestId).toBe(taskEvent.requestId);
    expect(events[0]?.actorApiKeyId).toBe(taskEvent.actorApiKeyId);
    expect((await t.db.control.findUniqueOrThrow({ where: { id: controlId } })).recordedState).toBe("ready");
    // Nothing changes state: nothing recorded.
    await t.rest("PATCH", `/v1/tasks/${taskId}`, { key: org.apiKey, body: { title: "Renamed" } });
    expect(await statusEvents(org.organizationId)).toHaveLength(1);
    const undone = await t.gql(
      `mutation($id: ID!) { updateTask(taskId: $id, status: in_progress) { id } }`,
      { id: taskId },
      { key: org.apiKey },
    );
    expect(undone.body.errors).toBeUndefined();
    events = await statusEvents(org.organizationId);
    expect(events.map((e) => e.data)).toEqual([
      { from: "not_ready", to: "ready", reasons: [] },
      { from: "ready", to: "not_ready", reasons: [{ code: "task_not_done", entityType: "task", entityId: taskId }] },
    ]);
    expect(await notificationsOf(org.owner)).toEqual([
      { reason: "control_not_ready", entityType: "control", entityId: controlId },
    ]);
    const deliveries = await t.db.webhookDelivery.findMany({
      where: { endpointId: org.endpointId },
      select: { eventId: true, eventType: true },
    });
    expect(deliveries.map((d) => d.eventId).sort()).toEqual(events.map((e) => e.id).sort());
    expect(new Set(deliveries.map((d) => d.eventType))).toEqual(new Set(["control.status_changed"]));
    // The job finds nothing left to record.
    await runPass(new Date());
    expect(await statusEvents(org.organizationId)).toHaveLength(2);
  });

  it("a policy version approved and made current makes the policy's controls ready", async () => {
    const org = await freshOrg();
    const policyId = newId("pol");
    await t.db.policy.create({
      data: { id: policyId, organizationId: org.organizationId, name: "Draft", status: "draft", lastVersionNumber: 0 },
    });
    const controlId = await makeControl(t.db, org.organizationId, { policyIds: [policyId] });
    const version = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: { changelog: "First" } });
    expect(version.status).toBe(201);
    const submitted = await t.rest("POST", `/v1/policies/${policyId}/versions/${version.body.versionId}/submit`, {
      key: org.apiKey,
      body: { approverId: org.memberIds[0] },
    });
    expect(submitted.status).toBe(200);
    expect(await statusEvents(org.organizationId)).toEqual([]);
    const session = await createSession(t.db, org.userIds[0] as string, 3_600_000);
    const approved = await t.rest("POST", `/v1/policies/${policyId}/versions/${version.body.versionId}/approve`, {
      headers: { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId },
    });
    expect(approved.status).toBe(200);
    const events = await statusEvents(org.organizationId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ entityId: controlId, data: { from: "not_ready", to: "ready" } });
  });
});

describe("the controls' own writes", () => {
  it("linking a done task, unlinking it, and deleting accepted evidence each record the change; the owner hears of not_ready", async () => {
    const org = await freshOrg();
    const done = await makeTask(t.db, org.organizationId, "done");
    const created = await t.rest("POST", "/v1/controls", {
      key: org.apiKey,
      body: { code: "AC-01", name: "Access reviews", ownerId: org.owner },
    });
    expect(created.status).toBe(201);
    const controlId = created.body.id as string;
    expect(created.body.status).toEqual({
      state: "not_ready",
      reasons: [{ code: "no_links", entityType: null, entityId: null }],
      evidenceDueAt: null,
    });
    // A new control is not ready, as never recorded: nothing to record.
    expect(await statusEvents(org.organizationId)).toEqual([]);
    const linked = await t.rest("POST", `/v1/controls/${controlId}/links`, { key: org.apiKey, body: { taskIds: [done] } });
    expect(linked.status).toBe(200);
    expect(linked.body.status.state).toBe("ready");
    const unlinked = await t.rest("DELETE", `/v1/controls/${controlId}/links?taskIds=${done}`, { key: org.apiKey });
    expect(unlinked.status).toBe(200);
    const evidenceId = await makeEvidence(t.db, org.organizationId, controlId, { validUntil: null });
    await runPass(new Date());
    const deleted = await t.rest("DELETE", `/v1/evidence/${evidenceId}`, { key: org.apiKey });
    expect(deleted.status).toBe(204);
    expect((await statusEvents(org.organizationId)).map((e) => [e.data, e.requestId !== null])).toEqual([
      [{ from: "not_ready", to: "ready", reasons: [] }, true],
      [{ from: "ready", to: "not_ready", reasons: [{ code: "no_links", entityType: null, entityId: null }] }, true],
      [{ from: "not_ready", to: "ready", reasons: [] }, false],
      [{ from: "ready", to: "not_ready", reasons: [{ code: "no_links", entityType: null, entityId: null }] }, true],
    ]);
    expect(await notificationsOf(org.owner)).toEqual([
      { reason: "control_not_ready", entityType: "control", entityId: controlId },
      { reason: "control_not_ready", entityType: "control", entityId: controlId },
    ]);
  });
});

describe("who sees a requirement's controls", () => {
  it("a person without control:read sees the controls they own, and no other", async () => {
    const org = await freshOrg();
    const fw = await makeFramework(t.db, { groups: 1, perGroup: 1 });
    const requirementId = fw.requirements[0] as string;
    const mine = await makeControl(t.db, org.organizationId, {
      requirementIds: [requirementId],
      ownerId: org.owner,
      code: "MINE-1",
    });
    await makeControl(t.db, org.organizationId, { requirementIds: [requirementId], ownerId: org.memberIds[0], code: "OTHER-1" });
    const session = await createSession(t.db, org.userIds[3] as string, 3_600_000);
    const headers = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
    const query = `query($id: ID!) { control(id: $id) { code requirements { items { ref controls { id code status { state } } } } } }`;
    const asEmployee = await t.gql(query, { id: mine }, { headers });
    expect(asEmployee.body.errors).toBeUndefined();
    expect(asEmployee.body.data.control.requirements.items).toEqual([
      { ref: "G1.1", controls: [{ id: mine, code: "MINE-1", status: { state: "not_ready" } }] },
    ]);
    const asKey = await t.gql(query, { id: mine }, { key: org.apiKey });
    expect(asKey.body.data.control.requirements.items[0].controls.map((c: { code: string }) => c.code)).toEqual([
      "MINE-1",
      "OTHER-1",
    ]);
  });
});

describe("the status job", () => {
  it("records evidence expiring once, tells the owner 14 days before, once per evidenceDueAt, and when it went not_ready", async () => {
    const org = await freshOrg();
    const now = Date.now();
    const taskId = await makeTask(t.db, org.organizationId, "done");
    const controlId = await makeControl(t.db, org.organizationId, {
      taskIds: [taskId],
      ownerId: org.owner,
      evidenceEveryDays: 90,
    });
    const validUntil = new Date(now + 30 * day);
    const evidenceId = await makeEvidence(t.db, org.organizationId, controlId, { validUntil });
    // Ready since the evidence was added (written straight to the table here): the job records it.
    await runPass(new Date(now));
    expect((await statusEvents(org.organizationId)).map((e) => e.data)).toEqual([
      { from: "not_ready", to: "ready", reasons: [] },
    ]);
    expect(await notificationsOf(org.owner)).toEqual([]);
    // 15 days later: due in 15 days, not yet told.
    await runPass(new Date(now + 15 * day));
    expect(await notificationsOf(org.owner)).toEqual([]);
    // 17 days later: due within 14 days, told once, however often the job runs.
    await runPass(new Date(now + 17 * day));
    await runPass(new Date(now + 18 * day));
    expect(await notificationsOf(org.owner)).toEqual([{ reason: "evidence_due", entityType: "control", entityId: controlId }]);
    expect((await t.db.control.findUniqueOrThrow({ where: { id: controlId } })).dueNoticeFor?.toISOString()).toBe(
      validUntil.toISOString(),
    );
    // Past validUntil: not_ready, recorded once even when two passes run at once.
    const later = new Date(validUntil.getTime() + day);
    await Promise.all([runPass(later), runPass(later)]);
    await runPass(later);
    const events = await statusEvents(org.organizationId);
    expect(events.map((e) => e.data)).toEqual([
      { from: "not_ready", to: "ready", reasons: [] },
      { from: "ready", to: "not_ready", reasons: [{ code: "evidence_expired", entityType: "evidence", entityId: evidenceId }] },
    ]);
    expect(events[1]).toMatchObject({ actorApiKeyId: null, requestId: null });
    expect(await notificationsOf(org.owner)).toEqual([
      { reason: "evidence_due", entityType: "control", entityId: controlId },
      { reason: "control_not_ready", entityType: "control", entityId: controlId },
    ]);
    // New evidence: ready again at the next pass, and a new evidenceDueAt is told of again when it comes due.
    const renewed = new Date(later.getTime() + 10 * day);
    await makeEvidence(t.db, org.organizationId, controlId, { validUntil: renewed });
    await runPass(later);
    expect((await statusEvents(org.organizationId)).at(-1)?.data).toMatchObject({ from: "not_ready", to: "ready" });
    expect((await notificationsOf(org.owner)).at(-1)).toEqual({
      reason: "evidence_due",
      entityType: "control",
      entityId: controlId,
    });
    expect(renewed.getTime() - later.getTime()).toBeLessThan(DUE_NOTICE_MS);
  });

  it("records nothing for a new control that is not ready: a control never recorded counts as not_ready", async () => {
    const org = await freshOrg();
    await makeControl(t.db, org.organizationId, { ownerId: org.owner });
    await runPass(new Date());
    expect(await statusEvents(org.organizationId)).toEqual([]);
    expect(await notificationsOf(org.owner)).toEqual([]);
  });
});

describe("notification preferences", () => {
  it("has e-mail switches for control_not_ready and evidence_due, on by default", async () => {
    const org = await freshOrg();
    const session = await createSession(t.db, org.userIds[3] as string, 3_600_000);
    const headers = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
    const before = await t.rest("GET", "/v1/notifications/preferences", { headers });
    expect(before.status).toBe(200);
    expect(before.body.email).toMatchObject({ control_not_ready: true, evidence_due: true });
    const changed = await t.rest("PATCH", "/v1/notifications/preferences", { headers, body: { email: { evidence_due: false } } });
    expect(changed.status).toBe(200);
    expect(changed.body.email).toMatchObject({ control_not_ready: true, evidence_due: false });
    const row = await t.db.notificationPreference.findUniqueOrThrow({ where: { memberId: org.owner } });
    expect(row.emailEvidenceDue).toBe(false);
  });
});
