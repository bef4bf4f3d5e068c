import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { rolePermissions } from "../../auth/permissions.js";
import { Prisma } from "../../generated/prisma/client.js";
import { Department, MemberRole } from "../../generated/prisma/enums.js";
import {
  column,
  containsPattern,
  dateBoundRules,
  dateSortKeys,
  equals,
  type FilterRule,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  oneOf,
} from "../../graphql/lists.js";
import type { RecordQuery } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { ConflictError, ForbiddenError, NotFoundError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, integer, limit, text } from "../../platform/limits.js";
import { notNull, parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, changesBetween, writeAuditEvent } from "../audit/audit.service.js";
import type { DeviceManagement } from "./device-management.js";

type MemberQuery = { select?: Prisma.MemberSelect; include?: Prisma.MemberInclude };

/** A member's name and e-mail address are their user's (served by the user table's trigram indexes). */
const searchUser: FilterRule = ((term: string) => {
  const pattern = containsPattern(term);
  return Prisma.sql`${column("userId")} IN (
    SELECT u."id" FROM "User" u WHERE u."name" ILIKE ${pattern} OR u."email" ILIKE ${pattern})`;
}) as FilterRule;

/** The organization's members: what `members` filters and sorts by. */
export const memberList: ListSpec = {
  table: "Member",
  parent: [],
  filters: {
    role: oneOf("role", '"MemberRole"'),
    department: oneOf("department", '"Department"'),
    isActive: equals("isActive", "boolean"),
    ...dateBoundRules(true),
    search: searchUser,
  },
  orders: {
    ...dateSortKeys(true),
    name: { sql: Prisma.sql`(SELECT u."name" FROM "User" u WHERE u."id" = t."userId")`, sqlType: "text", kind: "text" },
  },
  defaultOrder: newestFirst,
};

export const memberLimits = {
  email: limit({ maxLength: 254, format: "email", trim: true }),
  jobTitle: limit({ minLength: 1, maxLength: 255, trim: true }),
  deviceLabelId: limit({ minimum: 0, maximum: 2_147_483_647 }),
};

const name = text(commonLimits.name);
const jobTitle = text(memberLimits.jobTitle);
const deviceLabelId = integer(memberLimits.deviceLabelId);

const createInput = z.object({
  email: text(memberLimits.email).toLowerCase(),
  name,
  role: z.enum(MemberRole),
  // On create a null means "not given": the default applies.
  department: z.enum(Department).nullish(),
  jobTitle: jobTitle.nullish(),
  deviceLabelId: deviceLabelId.nullish(),
});

const updateInput = z
  .object({
    role: z.enum(MemberRole, notNull).optional(),
    department: z.enum(Department, notNull).optional(),
    jobTitle: jobTitle.nullish(),
    isActive: z.boolean(notNull).optional(),
    deviceLabelId: deviceLabelId.nullish(),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), "give at least one field to change");

export type CreateMemberArgs = WithNulls<z.input<typeof createInput>>;
export type UpdateMemberArgs = WithNulls<z.input<typeof updateInput>>;

type LockedMember = {
  id: string;
  userId: string;
  role: MemberRole;
  department: Department;
  jobTitle: string | null;
  isActive: boolean;
  deviceLabelId: number | null;
};

/** The caller's role in the organization, or null for an API key (which holds explicit scopes instead). */
async function callerRole(tx: Prisma.TransactionClient, actor: Actor): Promise<MemberRole | null> {
  if (actor.userId === null) return null;
  const member = await tx.member.findUnique({
    where: { organizationId_userId: { organizationId: actor.organizationId, userId: actor.userId } },
    select: { role: true },
  });
  return member?.role ?? null;
}

/**
 * Granting a role needs every permission of that role (a key with member:update alone cannot make
 * an administrator), and only an owner among users can make an owner.
 */
async function assertMayGrant(tx: Prisma.TransactionClient, actor: Actor, role: MemberRole) {
  if (role === "owner" && actor.userId !== null && (await callerRole(tx, actor)) !== "owner") {
    throw new ForbiddenError("Only an owner can make someone an owner");
  }
  const missing = rolePermissions[role].filter((p) => !actor.permissions.has(p));
  if (missing.length)
    throw new ForbiddenError(`Granting the role ${role} needs every permission of it; missing ${missing.join(", ")}`);
}

/** Every operation on an owner's membership needs an owner, or a key holding every owner permission. */
async function assertMayActOnOwner(tx: Prisma.TransactionClient, actor: Actor) {
  if (
    actor.userId !== null
      ? (await callerRole(tx, actor)) !== "owner"
      : rolePermissions.owner.some((p) => !actor.permissions.has(p))
  ) {
    throw new ForbiddenError("Only an owner can change an owner's membership");
  }
}

/**
 * The answer to adding an account that already existed, shown as if it were new: the name the
 * caller gave and no sign-in, verification, picture or dates of the account. Whether the e-mail had
 * an account, and what another organization stored about it, stay unknown to the caller.
 */
function asIfNew<M extends { createdAt: Date }>(member: M, name: string): M {
  const user = (member as { user?: Record<string, unknown> }).user;
  if (!user) return member;
  const view: Record<string, unknown> = { name, emailVerified: false, image: null, lastLogin: null };
  view.createdAt = member.createdAt;
  view.updatedAt = member.createdAt;
  const shown = { ...user };
  for (const [key, value] of Object.entries(view)) if (key in shown) shown[key] = value;
  return { ...member, user: shown };
}

export function createMemberService(db: Db, deviceManagement: DeviceManagement | undefined) {
  return {
    async list(actor: Actor, args: ListArgs, query: MemberQuery) {
      return listPage(db, actor.organizationId, memberList, { ...args, query }, (ids, q: RecordQuery) =>
        db.member.findMany({ ...(q as MemberQuery), where: { id: { in: ids }, organizationId: actor.organizationId } }),
      );
    },

    async get(actor: Actor, id: string, query: MemberQuery) {
      const member = await db.member.findUnique({ ...query, where: { id, organizationId: actor.organizationId } });
      if (!member) throw new NotFoundError("Member", id);
      return member;
    },

    /** Adds a person to the organization, creating their user account when the e-mail is new. */
    async create(actor: Actor, args: CreateMemberArgs, query: MemberQuery) {
      const input = parseInput(createInput, args);
      return db.$transaction(async (tx) => {
        await assertMayGrant(tx, actor, input.role);
        const existed = (await tx.user.count({ where: { email: input.email } })) > 0;
        // An existing account keeps its name: one organization must not rename a user of others.
        const user = await tx.user.upsert({
          where: { email: input.email },
          create: { id: newId("usr"), email: input.email, name: input.name },
          update: {},
          select: { id: true },
        });
        const existing = await tx.member.findUnique({
          where: { organizationId_userId: { organizationId: actor.organizationId, userId: user.id } },
          select: { id: true },
        });
        if (existing) throw new ConflictError(`${input.email} is already a member of this organization (${existing.id})`);
        const member = await tx.member.create({
          ...query,
          data: {
            id: newId("mem"),
            organizationId: actor.organizationId,
            userId: user.id,
            role: input.role,
            department: input.department ?? "none",
            jobTitle: input.jobTitle ?? null,
            deviceLabelId: input.deviceLabelId ?? null,
          },
        });
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "member.created",
            { type: "member", id: member.id },
            {
              userId: user.id,
              email: input.email,
              role: input.role,
              department: member.department,
              jobTitle: member.jobTitle,
              deviceLabelId: member.deviceLabelId,
            },
          ),
        );
        return existed ? asIfNew(member, input.name) : member;
      });
    },

    /**
     * Changes the given fields. The target and the organization's active owners are locked (in id
     * order, so concurrent updates cannot deadlock) so that the recorded `from` values are exact and
     * two owners demoting each other cannot leave the organization without an owner.
     */
    async update(actor: Actor, id: string, args: UpdateMemberArgs, query: MemberQuery) {
      const input = parseInput(updateInput, args);
      return db.$transaction(async (tx) => {
        const locked = await tx.$queryRaw<LockedMember[]>`
          SELECT "id", "userId", "role"::text AS "role", "department"::text AS "department", "jobTitle", "isActive", "deviceLabelId"
          FROM "Member"
          WHERE "organizationId" = ${actor.organizationId} AND ("id" = ${id} OR ("role" = 'owner' AND "isActive"))
          ORDER BY "id"
          FOR UPDATE`;
        const current = locked.find((m) => m.id === id);
        if (!current) throw new NotFoundError("Member", id);

        const { changes, data } = changesBetween(current, input);
        if (Object.keys(changes).length === 0) {
          return tx.member.findUniqueOrThrow({ ...query, where: { id } });
        }

        if (changes.role) await assertMayGrant(tx, actor, changes.role.to as MemberRole);
        if (current.role === "owner") await assertMayActOnOwner(tx, actor);
        const losesOwner = current.role === "owner" && current.isActive && (changes.role || changes.isActive);
        if (losesOwner && !locked.some((m) => m.id !== id && m.role === "owner" && m.isActive)) {
          throw new ConflictError("The organization must keep at least one active owner");
        }

        const updated = await tx.member.update({
          ...query,
          where: { id, organizationId: actor.organizationId },
          data,
        });
        await writeAuditEvent(
          tx,
          auditEvent(actor, "member.updated", { type: "member", id }, { changes } as Prisma.InputJsonValue),
        );
        return updated;
      });
    },

    /**
     * Clears the member's device label and removes their device records. The device-management
     * system is called first: if it fails, nothing changes here and the call can be retried.
     */
    async unlinkDevice(actor: Actor, id: string, query: MemberQuery) {
      const where = { id, organizationId: actor.organizationId };
      const member = await db.member.findUnique({ where, select: { deviceLabelId: true, role: true } });
      if (!member) throw new NotFoundError("Member", id);
      if (member.role === "owner") await assertMayActOnOwner(db, actor);
      const hostsRemoved =
        member.deviceLabelId !== null && deviceManagement ? await deviceManagement.removeHostsWithLabel(member.deviceLabelId) : 0;
      return db.$transaction(async (tx) => {
        const devices = await tx.device.deleteMany({ where: { memberId: id, organizationId: actor.organizationId } });
        const previous = await tx.member.findUnique({ where, select: { deviceLabelId: true } });
        if (!previous) throw new NotFoundError("Member", id);
        const updated = await tx.member.update({ ...query, where, data: { deviceLabelId: null } });
        if (previous.deviceLabelId !== null || devices.count > 0) {
          await writeAuditEvent(
            tx,
            auditEvent(
              actor,
              "member.device_unlinked",
              { type: "member", id },
              {
                previousDeviceLabelId: previous.deviceLabelId,
                devicesRemoved: devices.count,
                hostsRemoved,
              },
            ),
          );
        }
        return updated;
      });
    },
  };
}
