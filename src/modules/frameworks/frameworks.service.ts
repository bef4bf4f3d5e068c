import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma, type Requirement } from "../../generated/prisma/client.js";
import {
  column,
  dateBoundRules,
  dateSortKeys,
  type FilterRule,
  idOrNone,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  search,
  sortBy,
} from "../../graphql/lists.js";
import type { RecordQuery } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { scalarColumns, selectsScalarsOnly } from "../../platform/db/graph-reader.js";
import { readRows } from "../../platform/db/row-by-id.js";
import { BadUserInputError, ConflictError, NotFoundError } from "../../platform/errors.js";
import { limit, text } from "../../platform/limits.js";
import { parseInput } from "../../platform/validation.js";
import { auditEvent, writeAuditEvent } from "../audit/audit.service.js";
import { requirementStateIn } from "./frameworks.readiness.js";

const { sql } = Prisma;

type FrameworkQuery = { select?: Prisma.FrameworkSelect; include?: Prisma.FrameworkInclude };
type RequirementQuery = { select?: Prisma.RequirementSelect; include?: Prisma.RequirementInclude };

export const frameworkLimits = {
  justification: limit({ minLength: 1, maxLength: 2000, trim: true, notBlank: true }),
};

/** The frameworks an organization sees: the shipped ones and its own. */
export const visibleFrameworks = (organizationId: string): Prisma.FrameworkWhereInput => ({
  OR: [{ organizationId: null }, { organizationId }],
});

/**
 * Requirement's scalar columns, as Prisma reads them (text, integer and boolean: both ways give the
 * same values): a page's 100 requirements by a fixed statement cost less than through `findMany`.
 */
const requirementColumns = () => Prisma.raw(scalarColumns("Requirement", "r").select);

/** The frameworks an organization sees (table alias `alias`): the shipped ones and its own. */
export const visibleSql = (organizationId: string, alias: string) =>
  sql`(${Prisma.raw(`${alias}."organizationId"`)} IS NULL OR ${Prisma.raw(`${alias}."organizationId"`)} = ${organizationId})`;

const adopted: FilterRule = ((value: boolean, { organizationId }: { organizationId: string }) =>
  sql`${Prisma.raw(value ? "" : "NOT ")}EXISTS (SELECT 1 FROM "FrameworkAdoption" a WHERE a."organizationId" = ${organizationId} AND a."frameworkId" = t."id")`) as FilterRule;

/** The frameworks an organization sees, shipped and its own: what `frameworks` filters and sorts by. */
export const frameworkList: ListSpec = {
  table: "Framework",
  parent: [],
  scope: (organizationId) => visibleSql(organizationId, "t"),
  filters: {
    adopted,
    ...dateBoundRules(true),
    search: search("key", "name"),
  },
  orders: {
    ...dateSortKeys(true),
    name: sortBy.text("name"),
    key: sortBy.text("key"),
  },
  defaultOrder: newestFirst,
};

const applicable: FilterRule = ((value: boolean, { organizationId }: { organizationId: string }) =>
  sql`${Prisma.raw(value ? "NOT " : "")}EXISTS (SELECT 1 FROM "RequirementApplicability" ra WHERE ra."organizationId" = ${organizationId} AND ra."requirementId" = ${column("id")} AND NOT ra."applicable")`) as FilterRule;

const requirementState: FilterRule = ((values: readonly string[], { organizationId }: { organizationId: string }) =>
  requirementStateIn(organizationId, values)) as FilterRule;

/** A framework's requirements, in catalog order: what `Framework.requirements` filters by. */
export const requirementList: ListSpec = {
  rowsInline: true,
  table: "Requirement",
  parent: [{ name: "frameworkId", sqlType: "text" }],
  scope: (organizationId) => sql`t."frameworkId" IN (SELECT f."id" FROM "Framework" f WHERE ${visibleSql(organizationId, "f")})`,
  filters: {
    status: requirementState,
    applicable,
    parentId: idOrNone("parentId"),
    assessable: ((value: boolean) => sql`${column("assessable")} = ${value}`) as FilterRule,
    search: search("ref", "title"),
  },
  orders: { position: sortBy.int("position") },
  defaultOrder: { field: "position", direction: "asc" },
};

const applicabilityInput = z
  .object({
    applicable: z.boolean(),
    justification: text(frameworkLimits.justification).nullish(),
  })
  .superRefine((input, issues) => {
    if (!input.applicable && !input.justification) {
      issues.addIssue({
        code: "custom",
        path: ["justification"],
        message: "is required when the requirement is not applicable: say why it does not apply",
      });
    }
  });

export type ApplicabilityArgs = { applicable: boolean; justification?: string | null };

/** The framework's rows, if the organization sees it (shipped, or its own). */
async function visibleFramework(db: Db | Prisma.TransactionClient, organizationId: string, id: string) {
  const framework = await db.framework.findFirst({
    where: { id, ...visibleFrameworks(organizationId) },
    select: { id: true, key: true, name: true, version: true },
  });
  if (!framework) throw new NotFoundError("Framework", id);
  return framework;
}

export function createFrameworkService(db: Db) {
  const frameworksByIds = (organizationId: string) => (ids: string[], query: RecordQuery) =>
    db.framework.findMany({
      ...(query as FrameworkQuery),
      where: { id: { in: ids }, ...visibleFrameworks(organizationId) },
    });
  const requirementsByIds = (organizationId: string) => (ids: string[], query: RecordQuery) =>
    selectsScalarsOnly(query)
      ? readRows<Requirement>(
          db,
          sql`SELECT ${requirementColumns()} FROM "Requirement" r JOIN "Framework" f ON f."id" = r."frameworkId"
              WHERE r."id" = ANY(${ids}::text[]) AND ${visibleSql(organizationId, "f")}`,
        )
      : db.requirement.findMany({
          ...(query as RequirementQuery),
          where: { id: { in: ids }, framework: visibleFrameworks(organizationId) },
        });

  return {
    frameworksByIds,
    requirementsByIds,

    async get(actor: Actor, id: string, query: FrameworkQuery) {
      const framework = await db.framework.findFirst({ ...query, where: { id, ...visibleFrameworks(actor.organizationId) } });
      if (!framework) throw new NotFoundError("Framework", id);
      return framework;
    },

    /** The frameworks the organization sees, filtered and sorted (default newest first). */
    list(actor: Actor, args: ListArgs, query: FrameworkQuery) {
      return listPage(db, actor.organizationId, frameworkList, { ...args, query }, frameworksByIds(actor.organizationId));
    },

    /** A framework's requirements (REST's `GET /v1/frameworks/{id}/requirements`): 404 for a framework the organization does not see. */
    async requirements(actor: Actor, frameworkId: string, args: ListArgs, query: RequirementQuery) {
      await visibleFramework(db, actor.organizationId, frameworkId);
      return listPage(
        db,
        actor.organizationId,
        requirementList,
        { ...args, parent: [frameworkId], query },
        requirementsByIds(actor.organizationId),
      );
    },

    async getRequirement(actor: Actor, id: string, query: RequirementQuery) {
      const requirement = await db.requirement.findFirst({
        ...query,
        where: { id, framework: visibleFrameworks(actor.organizationId) },
      });
      if (!requirement) throw new NotFoundError("Requirement", id);
      return requirement;
    },

    /** Adopts a framework; adopting one already adopted changes nothing and records nothing. */
    async adopt(actor: Actor, frameworkId: string, query: FrameworkQuery) {
      return db.$transaction(async (tx) => {
        const framework = await visibleFramework(tx, actor.organizationId, frameworkId);
        const inserted = await tx.$executeRaw`
          INSERT INTO "FrameworkAdoption" ("organizationId", "frameworkId") VALUES (${actor.organizationId}, ${frameworkId})
          ON CONFLICT DO NOTHING`;
        if (inserted > 0) {
          const { id: _id, ...recorded } = framework;
          await writeAuditEvent(tx, auditEvent(actor, "framework.adopted", { type: "framework", id: frameworkId }, recorded));
        }
        return tx.framework.findUniqueOrThrow({ ...query, where: { id: frameworkId } });
      });
    },

    /**
     * Withdraws an adoption: the framework's readiness and statement of applicability are no longer
     * shown. Controls, their maps and the applicability rows stay (adopting again restores the
     * statement). Withdrawing one not adopted changes nothing and records nothing.
     */
    async withdraw(actor: Actor, frameworkId: string, query: FrameworkQuery) {
      return db.$transaction(async (tx) => {
        const framework = await visibleFramework(tx, actor.organizationId, frameworkId);
        const removed = await tx.frameworkAdoption.deleteMany({ where: { organizationId: actor.organizationId, frameworkId } });
        if (removed.count > 0) {
          const { id: _id, ...recorded } = framework;
          await writeAuditEvent(tx, auditEvent(actor, "framework.withdrawn", { type: "framework", id: frameworkId }, recorded));
        }
        return tx.framework.findUniqueOrThrow({ ...query, where: { id: frameworkId } });
      });
    },

    /**
     * The statement of applicability, one requirement at a time: a requirement of an adopted
     * framework is applicable unless this says otherwise, with a justification. A group (not
     * assessable) takes none: 400. A framework not adopted: 409.
     */
    async setApplicability(actor: Actor, requirementId: string, args: ApplicabilityArgs, query: RequirementQuery) {
      const input = parseInput(applicabilityInput, args);
      return db.$transaction(async (tx) => {
        const requirement = await tx.requirement.findFirst({
          where: { id: requirementId, framework: visibleFrameworks(actor.organizationId) },
          select: { id: true, ref: true, frameworkId: true, assessable: true },
        });
        if (!requirement) throw new NotFoundError("Requirement", requirementId);
        if (!requirement.assessable) {
          throw new BadUserInputError(
            `${requirement.ref} is a group, which is not assessed: set the applicability of its requirements`,
            [{ path: "requirementId", message: "is a group (not assessable)" }],
          );
        }
        const adoption = await tx.frameworkAdoption.findUnique({
          where: { organizationId_frameworkId: { organizationId: actor.organizationId, frameworkId: requirement.frameworkId } },
          select: { frameworkId: true },
        });
        if (!adoption) throw new ConflictError("The framework is not adopted: adopt it before setting its applicability");
        const [previous] = await tx.$queryRaw<{ applicable: boolean; justification: string | null }[]>`
          SELECT "applicable", "justification" FROM "RequirementApplicability"
          WHERE "organizationId" = ${actor.organizationId} AND "requirementId" = ${requirementId} FOR UPDATE`;
        const justification = input.justification ?? null;
        await tx.requirementApplicability.upsert({
          where: { organizationId_requirementId: { organizationId: actor.organizationId, requirementId } },
          create: { organizationId: actor.organizationId, requirementId, applicable: input.applicable, justification },
          update: { applicable: input.applicable, justification },
        });
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "requirement.applicability_set",
            { type: "requirement", id: requirementId },
            {
              frameworkId: requirement.frameworkId,
              ref: requirement.ref,
              applicable: input.applicable,
              justification,
              from: previous ?? { applicable: true, justification: null },
            },
          ),
        );
        return tx.requirement.findUniqueOrThrow({ ...query, where: { id: requirementId } });
      });
    },
  };
}

export type FrameworkService = ReturnType<typeof createFrameworkService>;
