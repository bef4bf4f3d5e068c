import type { Db } from "../db/database.js";
import { NotFoundError } from "../errors.js";

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
