import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { type PageArgs, pageQuery, toPage, withKeys } from "../../graphql/pagination.js";
import type { Db } from "../../platform/db/database.js";
import { NotFoundError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, text } from "../../platform/limits.js";
import { parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, changesBetween } from "../audit/audit.service.js";

type RiskQuery = { select?: Prisma.RiskSelect; include?: Prisma.RiskInclude };

const createInput = z.object({
  title: text(commonLimits.name),
  description: text(commonLimits.freeText).nullish(),
});

/** Absent leaves a field as it is; null clears the description and is refused for the title. */
const updateInput = z
  .object({
    title: text(commonLimits.name).optional(),
    description: text(commonLimits.freeText).nullish(),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), "give at least one field to change");

export type CreateRiskArgs = z.input<typeof createInput>;
export type UpdateRiskArgs = WithNulls<z.input<typeof updateInput>>;

export function createRiskService(db: Db) {
  return {
    async create(actor: Actor, args: CreateRiskArgs, query: RiskQuery) {
      const input = parseInput(createInput, args);
      return db.$transaction(async (tx) => {
        const risk = await tx.risk.create({
          ...query,
          data: {
            id: newId("rsk"),
            organizationId: actor.organizationId,
            title: input.title,
            description: input.description ?? null,
          },
        });
        await tx.auditEvent.create({
          data: auditEvent(actor, "risk.created", { type: "risk", id: risk.id }, { title: input.title }),
        });
        return risk;
      });
    },

    async get(actor: Actor, id: string, query: RiskQuery) {
      const risk = await db.risk.findUnique({ ...query, where: { id, organizationId: actor.organizationId } });
      if (!risk) throw new NotFoundError("Risk", id);
      return risk;
    },

    /** The organization's risks, newest first. */
    async list(actor: Actor, args: PageArgs, query: RiskQuery) {
      const page = pageQuery(args, ["createdAt", "id"]);
      const rows = await db.risk.findMany({
        ...withKeys(query, page.keys),
        where: { organizationId: actor.organizationId, ...page.where },
        orderBy: page.orderBy,
        take: page.take,
      });
      return toPage(rows, page);
    },

    /** Changes the given fields under the row's lock, so that the audit event's `from` values are exact. */
    async update(actor: Actor, id: string, args: UpdateRiskArgs, query: RiskQuery) {
      const input = parseInput(updateInput, args);
      return db.$transaction(async (tx) => {
        const [current] = await tx.$queryRaw<{ title: string; description: string | null }[]>`
          SELECT "title", "description" FROM "Risk"
          WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
        if (!current) throw new NotFoundError("Risk", id);
        const { changes, data } = changesBetween(current, input);
        const where = { id, organizationId: actor.organizationId };
        if (Object.keys(changes).length === 0) return tx.risk.findUniqueOrThrow({ ...query, where });
        const updated = await tx.risk.update({ ...query, where, data });
        await tx.auditEvent.create({
          data: auditEvent(actor, "risk.updated", { type: "risk", id }, { changes } as Prisma.InputJsonValue),
        });
        return updated;
      });
    },
  };
}
