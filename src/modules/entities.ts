import type { Db } from "../platform/db/database.js";
import { NotFoundError } from "../platform/errors.js";

export type EntityType = "task" | "vendor" | "risk" | "policy";

const labels: Record<EntityType, string> = { task: "Task", vendor: "Vendor", risk: "Risk", policy: "Policy" };
const tables: Record<EntityType, string> = { task: "Task", vendor: "Vendor", risk: "Risk", policy: "Policy" };

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

/** The active member acting on a record, with what a comment's answer shows of its author. */
export type ActingMember = { id: string; userId: string; user: { name: string; email: string; image: string | null } };

/**
 * The active member acting as `userId` on a record of the organization, in one statement: 404 when
 * the record is not there (checked first, as `assertEntityExists` does), then when the user is not
 * an active member. What a write on a record by someone asks before its transaction (a comment's
 * author), one round trip instead of two; with the user's name, e-mail and picture, so that the
 * write's answer needs no read-back of its author.
 */
export async function activeMemberOn(
  db: Db,
  organizationId: string,
  type: EntityType,
  id: string,
  userId: string,
): Promise<ActingMember> {
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const [row] = await db.$queryRawUnsafe<ActingRow[]>(
    `WITH ${actingMemberCtes(param, organizationId, type, id, userId)}
SELECT ${ACTING_MEMBER_ANSWER} FROM (SELECT 1) AS one LEFT JOIN actor ON TRUE`,
    ...values,
  );
  if (!row) throw new NotFoundError(labels[type], id);
  return actingMemberOf(row, type, id, userId);
}

/**
 * activeMemberOn's question as CTEs of a write's own statement, its values as `param` placeholders:
 * "target" has a row when the record is in the organization, "actor" when `userId` is an active
 * member of it (its member id, the user's name, e-mail and picture). `actingMemberOf` reads the
 * statement's answer of them.
 */
export function actingMemberCtes(
  param: (value: unknown) => string,
  organizationId: string,
  type: EntityType,
  id: string,
  userId: string,
): string {
  const organization = param(organizationId);
  return `target AS (
  SELECT 1 FROM "${tables[type]}" WHERE "id" = ${param(id)} AND "organizationId" = ${organization}
), actor AS (
  SELECT m."id", u."name", u."email", u."image" FROM "Member" m JOIN "User" u ON u."id" = m."userId"
  WHERE m."organizationId" = ${organization} AND m."userId" = ${param(userId)} AND m."isActive"
)`;
}

/** What a statement answers of actingMemberCtes (ACTING_MEMBER_ANSWER, read with "actor" left-joined). */
export type ActingRow = {
  found: boolean;
  memberId: string | null;
  name: string | null;
  email: string | null;
  image: string | null;
};
export const ACTING_MEMBER_ANSWER = `EXISTS (SELECT 1 FROM target) AS "found", actor."id" AS "memberId", actor."name", actor."email", actor."image"`;

/** The acting member from an ActingRow; 404 as activeMemberOn. */
export function actingMemberOf(row: ActingRow, type: EntityType, id: string, userId: string): ActingMember {
  if (!row.found) throw new NotFoundError(labels[type], id);
  if (!row.memberId) throw new NotFoundError("Active member with user id", userId);
  return { id: row.memberId, userId, user: { name: row.name as string, email: row.email as string, image: row.image } };
}

type MemberReader = { member: Pick<Db["member"], "findUnique"> };

/** 404 unless `memberId` names an active member of the organization (assignees, approvers). */
export async function assertActiveMember(db: MemberReader, organizationId: string, memberId: string): Promise<void> {
  const member = await db.member.findUnique({ where: { id: memberId, organizationId, isActive: true }, select: { id: true } });
  if (!member) throw new NotFoundError("Active member", memberId);
}
