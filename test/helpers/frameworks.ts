import { randomBytes } from "node:crypto";
import type { Db } from "../../src/platform/db/database.js";
import { newId } from "../../src/platform/ids.js";

/**
 * Catalogs and controls written straight to the tables, for tests of reading and readiness (the
 * import and the control operations have tests of their own). A catalog: a group per letter and
 * `perGroup` requirements under each, refs `G1`, `G1.1`, ...
 */
export async function makeFramework(
  db: Db,
  options: { organizationId?: string | null; groups?: number; perGroup?: number; key?: string; name?: string } = {},
): Promise<{ id: string; key: string; groups: string[]; requirements: string[]; byRef: Map<string, string> }> {
  const id = newId("fw");
  const key = options.key ?? `test-${randomBytes(4).toString("hex")}`;
  const groups = options.groups ?? 2;
  const perGroup = options.perGroup ?? 3;
  const rows: {
    id: string;
    frameworkId: string;
    ref: string;
    title: string;
    parentId: string | null;
    assessable: boolean;
    position: number;
  }[] = [];
  const groupIds: string[] = [];
  const requirementIds: string[] = [];
  let position = 0;
  for (let g = 1; g <= groups; g++) {
    const groupId = newId("req");
    groupIds.push(groupId);
    rows.push({
      id: groupId,
      frameworkId: id,
      ref: `G${g}`,
      title: `Group ${g}`,
      parentId: null,
      assessable: false,
      position: position++,
    });
    for (let r = 1; r <= perGroup; r++) {
      const requirementId = newId("req");
      requirementIds.push(requirementId);
      rows.push({
        id: requirementId,
        frameworkId: id,
        ref: `G${g}.${r}`,
        title: `Requirement ${g}.${r}`,
        parentId: groupId,
        assessable: true,
        position: position++,
      });
    }
  }
  await db.framework.create({
    data: {
      id,
      organizationId: options.organizationId ?? null,
      key,
      name: options.name ?? `Test framework ${key}`,
      version: "1",
      source: "Tests",
      requirementCount: rows.length,
    },
  });
  await db.requirement.createMany({ data: rows });
  return { id, key, groups: groupIds, requirements: requirementIds, byRef: new Map(rows.map((r) => [r.ref, r.id])) };
}

/** A control of the organization, mapped to `requirementIds`, linked to `policyIds` and `taskIds`. */
export async function makeControl(
  db: Db,
  organizationId: string,
  options: {
    requirementIds?: string[];
    policyIds?: string[];
    taskIds?: string[];
    ownerId?: string | null;
    evidenceEveryDays?: number | null;
    code?: string;
  } = {},
): Promise<string> {
  const id = newId("ctl");
  await db.control.create({
    data: {
      id,
      organizationId,
      code: options.code ?? `C-${randomBytes(4).toString("hex")}`,
      name: "A control",
      ownerId: options.ownerId ?? null,
      evidenceEveryDays: options.evidenceEveryDays ?? null,
    },
  });
  if (options.requirementIds?.length) {
    await db.controlRequirement.createMany({
      data: options.requirementIds.map((requirementId) => ({ organizationId, controlId: id, requirementId })),
    });
  }
  if (options.policyIds?.length) {
    await db.controlPolicy.createMany({
      data: options.policyIds.map((policyId) => ({ organizationId, controlId: id, policyId })),
    });
  }
  if (options.taskIds?.length) {
    await db.controlTask.createMany({ data: options.taskIds.map((taskId) => ({ organizationId, controlId: id, taskId })) });
  }
  return id;
}

/** A task of the organization in `status`. */
export async function makeTask(
  db: Db,
  organizationId: string,
  status: "todo" | "done" | "in_progress" = "todo",
): Promise<string> {
  const id = newId("tsk");
  await db.task.create({ data: { id, organizationId, title: `Task ${id}`, status } });
  return id;
}

/** Accepted (or other) evidence of a control, with an attachment row (metadata only). */
export async function makeEvidence(
  db: Db,
  organizationId: string,
  controlId: string,
  options: { validUntil?: Date | null; status?: "accepted" | "submitted" | "rejected"; collectedAt?: Date } = {},
): Promise<string> {
  const attachmentId = newId("att");
  await db.attachment.create({
    data: {
      id: attachmentId,
      organizationId,
      name: "evidence.pdf",
      type: "application/pdf",
      size: 1,
      store: "database",
      objectKey: randomBytes(16).toString("hex"),
      sha256: "0".repeat(64),
    },
  });
  const id = newId("evd");
  await db.evidence.create({
    data: {
      id,
      organizationId,
      controlId,
      attachmentId,
      collectedAt: options.collectedAt ?? new Date(Date.now() - 86_400_000),
      validUntil: options.validUntil === undefined ? null : options.validUntil,
      status: options.status ?? "accepted",
    },
  });
  return id;
}

/** Adopts a framework for the organization, straight in the table. */
export async function adopt(db: Db, organizationId: string, frameworkId: string): Promise<void> {
  await db.frameworkAdoption.create({ data: { organizationId, frameworkId } });
}

/** A mapping between two requirements (`source` rel `target`), shipped (organizationId null) or the organization's. */
export async function mapRequirements(
  db: Db,
  sourceId: string,
  targetId: string,
  relationship: "equal" | "subset" | "superset" | "intersect",
  organizationId: string | null = null,
): Promise<void> {
  await db.requirementMapping.create({ data: { id: newId("rmp"), organizationId, sourceId, targetId, relationship } });
}
