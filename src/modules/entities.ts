import type { Db } from "../platform/db/database.js";
import { NotFoundError } from "../platform/errors.js";

export type EntityType = "task" | "vendor" | "risk" | "policy";

const labels: Record<EntityType, string> = { task: "Task", vendor: "Vendor", risk: "Risk", policy: "Policy" };

/** 404 unless the entity exists in the organization (another organization's record looks missing). */
export async function assertEntityExists(db: Db, organizationId: string, type: EntityType, id: string): Promise<void> {
  const where = { id, organizationId };
  const select = { id: true };
  const found =
    type === "task"
      ? await db.task.findUnique({ where, select })
      : type === "vendor"
        ? await db.vendor.findUnique({ where, select })
        : type === "risk"
          ? await db.risk.findUnique({ where, select })
          : await db.policy.findUnique({ where, select });
  if (!found) throw new NotFoundError(labels[type], id);
}

type MemberReader = { member: Pick<Db["member"], "findUnique"> };

/** 404 unless `memberId` names an active member of the organization (assignees, approvers). */
export async function assertActiveMember(db: MemberReader, organizationId: string, memberId: string): Promise<void> {
  const member = await db.member.findUnique({ where: { id: memberId, organizationId, isActive: true }, select: { id: true } });
  if (!member) throw new NotFoundError("Active member", memberId);
}
