import { permissions } from "../auth/permissions.js";
import { writeAuditEvent } from "../modules/audit/audit.service.js";
import type { Db } from "../platform/db/database.js";
import { newId } from "../platform/ids.js";
import { createApiKey, createOrganization, createUser, operatorAudit } from "./admin.service.js";

export type SeedResult = {
  organizationId: string;
  apiKey: string;
  apiKeyId: string;
  userIds: string[];
  memberIds: string[];
  taskIds: string[];
  vendorIds: string[];
  riskIds: string[];
  policyIds: string[];
  taskItemIds: string[];
};

const people = [
  { name: "Ada Owner", role: "owner", deviceLabelId: 101 },
  { name: "Grace Admin", role: "admin", deviceLabelId: 102 },
  { name: "Alan Auditor", role: "auditor", deviceLabelId: null },
  { name: "Edsger Employee", role: "employee", deviceLabelId: 104 },
] as const;

/** A new demo organization with a little of everything, and an API key holding every scope. */
export async function seedDemo(db: Db, name = "Demo Workspace"): Promise<SeedResult> {
  const org = await createOrganization(db, name);
  const organizationId = org.id;
  const suffix = organizationId.slice(-6);
  const userIds: string[] = [];
  const memberIds: string[] = [];
  for (const person of people) {
    const email = `${person.name.split(" ")[0]?.toLowerCase()}.${suffix}@demo.example`;
    const { userId, memberId } = await createUser(db, {
      email,
      name: person.name,
      organizationId,
      role: person.role,
      deviceLabelId: person.deviceLabelId,
    });
    userIds.push(userId);
    memberIds.push(memberId as string);
  }
  await db.device.createMany({
    data: [
      { id: newId("dev"), organizationId, memberId: memberIds[0] as string, name: "Ada's MacBook", platform: "macos" },
      { id: newId("dev"), organizationId, memberId: memberIds[1] as string, name: "Grace's ThinkPad", platform: "linux" },
    ],
  });
  const tasks = [
    { title: "Review access controls", status: "in_progress", description: "Quarterly review of production access." },
    { title: "Rotate encryption keys", status: "todo", description: null },
    { title: "Publish incident response plan", status: "done", description: "Approved by the security team." },
  ] as const;
  const taskIds = tasks.map(() => newId("tsk"));
  await db.task.createMany({
    data: tasks.map((t, i) => ({
      id: taskIds[i] as string,
      organizationId,
      ...t,
      taskTemplateId: i === 0 ? "tmpl_access_review" : null,
    })),
  });
  const vendorIds = [newId("vnd"), newId("vnd")];
  await db.vendor.createMany({
    data: [
      { id: vendorIds[0] as string, organizationId, name: "CloudHost Inc.", description: "Infrastructure provider" },
      { id: vendorIds[1] as string, organizationId, name: "MailCo", description: "Transactional e-mail" },
    ],
  });
  const riskIds = [newId("rsk")];
  await db.risk.create({
    data: {
      id: riskIds[0] as string,
      organizationId,
      title: "Data loss at a vendor",
      description: "Backups held by one provider",
    },
  });
  const items = [
    { entityId: vendorIds[0], entityType: "vendor", title: "Collect SOC 2 report", status: "done" },
    { entityId: vendorIds[0], entityType: "vendor", title: "Review DPA", status: "in_review" },
    { entityId: vendorIds[0], entityType: "vendor", title: "Check sub-processors", status: "todo" },
    { entityId: riskIds[0], entityType: "risk", title: "Second backup region", status: "in_progress" },
  ] as const;
  const taskItemIds = items.map(() => newId("tski"));
  await db.taskItem.createMany({
    data: items.map((item, i) => ({ id: taskItemIds[i] as string, organizationId, ...item, entityId: item.entityId as string })),
  });
  const policyIds: string[] = [];
  const policyVersions: { policyId: string; versionId: string }[] = [];
  for (const policy of [
    { name: "Information Security Policy", text: "All staff protect company information." },
    { name: "Acceptable Use Policy", text: "Company devices are for business use." },
  ]) {
    const policyId = newId("pol");
    const versionId = newId("pv");
    const content = [{ type: "paragraph", content: [{ type: "text", text: policy.text }] }];
    await db.$transaction([
      db.policy.create({ data: { id: policyId, organizationId, name: policy.name, status: "published", lastVersionNumber: 1 } }),
      db.policyVersion.create({
        data: { id: versionId, organizationId, policyId, version: 1, status: "published", content, changelog: "Initial version" },
      }),
      db.policy.update({ where: { id: policyId }, data: { currentVersionId: versionId } }),
    ]);
    policyIds.push(policyId);
    policyVersions.push({ policyId, versionId });
  }
  // Every create writes an audit event (docs/audit.md), demo data too: the history screens show it.
  // Members, the organization and the key are audited by the operator actions that made them.
  const events = [
    ...tasks.map((task, i) =>
      operatorAudit(
        organizationId,
        "task.created",
        { type: "task", id: taskIds[i] as string },
        {
          title: task.title,
          status: task.status,
          taskTemplateId: i === 0 ? "tmpl_access_review" : null,
        },
      ),
    ),
    operatorAudit(organizationId, "vendor.created", { type: "vendor", id: vendorIds[0] as string }, { name: "CloudHost Inc." }),
    operatorAudit(organizationId, "vendor.created", { type: "vendor", id: vendorIds[1] as string }, { name: "MailCo" }),
    operatorAudit(organizationId, "risk.created", { type: "risk", id: riskIds[0] as string }, { title: "Data loss at a vendor" }),
    ...items.map((item, i) =>
      operatorAudit(
        organizationId,
        "task_item.created",
        { type: "task_item", id: taskItemIds[i] as string },
        {
          title: item.title,
          entityId: item.entityId as string,
          entityType: item.entityType,
          status: item.status,
        },
      ),
    ),
    ...policyVersions.map(({ policyId, versionId }) =>
      operatorAudit(organizationId, "policy.created", { type: "policy", id: policyId }, { versionId, version: 1 }),
    ),
  ];
  // Through writeAuditEvent, as every audit event: each takes its place in the organization's chain.
  await db.$transaction(async (tx) => {
    for (const event of events) await writeAuditEvent(tx, event);
  });
  const { id: apiKeyId, key } = await createApiKey(db, {
    organizationId,
    name: "Demo key",
    scopes: [...permissions],
    createdBy: "seed",
  });
  return { organizationId, apiKey: key, apiKeyId, userIds, memberIds, taskIds, vendorIds, riskIds, policyIds, taskItemIds };
}
