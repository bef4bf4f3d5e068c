import type { Actor } from "../../auth/actor.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { type PageArgs, pageQuery, toPage, withKeys } from "../../graphql/pagination.js";
import type { Db } from "../../platform/db/database.js";
import { newId } from "../../platform/ids.js";

/** The audit row for a change; callers write it in the same transaction as the change. */
export function auditEvent(
  actor: Actor,
  action: string,
  entity: { type: string; id: string },
  data?: Prisma.InputJsonValue,
): Prisma.AuditEventUncheckedCreateInput {
  return {
    id: newId("aud"),
    organizationId: actor.organizationId,
    actorUserId: actor.userId,
    actorApiKeyId: actor.apiKeyId,
    action,
    entityType: entity.type,
    entityId: entity.id,
    data,
    requestId: actor.requestId,
  };
}

export function createAuditService(db: Db) {
  return {
    /** The organization's audit trail, newest first. */
    async list(actor: Actor, args: PageArgs, query: { select?: Prisma.AuditEventSelect }) {
      const page = pageQuery(args, ["createdAt", "id"]);
      const rows = await db.auditEvent.findMany({
        ...withKeys(query, page.keys),
        where: { organizationId: actor.organizationId, ...page.where },
        orderBy: page.orderBy,
        take: page.take,
      });
      return {
        ...toPage(rows, page),
        totalCount: () => db.auditEvent.count({ where: { organizationId: actor.organizationId } }),
      };
    },
  };
}

export type Changes = Record<string, { from: unknown; to: unknown }>;

/** The fields `input` sets to a new value: `changes` for the audit event, `data` for the update. */
export function changesBetween<T extends object>(current: T, input: Partial<T>): { changes: Changes; data: Partial<T> } {
  const changes: Changes = {};
  const data: Partial<T> = {};
  for (const key of Object.keys(input) as (keyof T & string)[]) {
    const to = input[key];
    if (to === undefined || to === current[key]) continue;
    changes[key] = { from: current[key], to };
    data[key] = to;
  }
  return { changes, data };
}
