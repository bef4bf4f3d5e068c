import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import { RiskCategory, RiskStatus, RiskTreatment } from "../../generated/prisma/enums.js";
import {
  atLeast,
  dateBoundRules,
  dateSortKeys,
  idOrNone,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  oneOf,
  search,
  sortBy,
} from "../../graphql/lists.js";
import type { Db } from "../../platform/db/database.js";
import { rowsByIds } from "../../platform/db/graph-reader.js";
import { rowByIdReader } from "../../platform/db/row-by-id.js";
import { NotFoundError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, integer, limit, text } from "../../platform/limits.js";
import { notNull, parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, changesBetween, writeAuditEvent } from "../audit/audit.service.js";
import { assertActiveMember } from "../entities.js";
import type { Notifier } from "../notifications/notifications.service.js";

type RiskQuery = { select?: Prisma.RiskSelect; include?: Prisma.RiskInclude };

export const riskLimits = {
  /** likelihood and impact. */
  rating: limit({ minimum: 1, maximum: 5 }),
  /** minScore: a score is likelihood x impact. */
  score: limit({ minimum: 1, maximum: 25 }),
};

/** Risks' scalar columns by id (row-by-id.ts): what `findMany` returns without a selection. */
export const riskRows = rowByIdReader<Prisma.RiskGetPayload<object>>("Risk", Object.values(Prisma.RiskScalarFieldEnum));

/** The organization's risks: what `risks` filters and sorts by. */
export const riskList: ListSpec = {
  rowsInline: true,
  table: "Risk",
  parent: [],
  filters: {
    status: oneOf("status", '"RiskStatus"'),
    category: oneOf("category", '"RiskCategory"'),
    assigneeId: idOrNone("assigneeId"),
    minScore: atLeast("score"),
    ...dateBoundRules(true),
    search: search("title"),
  },
  orders: {
    ...dateSortKeys(true),
    title: sortBy.text("title"),
    status: sortBy.enum("status", '"RiskStatus"', Object.values(RiskStatus)),
    score: sortBy.int("score"),
  },
  defaultOrder: newestFirst,
};

const status = z.enum(RiskStatus, notNull);
const category = z.enum(RiskCategory, notNull);
const treatment = z.enum(RiskTreatment, notNull);
const rating = integer(riskLimits.rating);
const assigneeId = text(commonLimits.id);

const createInput = z.object({
  title: text(commonLimits.name),
  description: text(commonLimits.freeText).nullish(),
  // On create a null means "not given": the default applies.
  status: status.nullish(),
  category: category.nullish(),
  likelihood: rating.nullish(),
  impact: rating.nullish(),
  treatment: treatment.nullish(),
  assigneeId: assigneeId.nullish(),
});

/** Absent leaves a field as it is; null clears description, treatment and assigneeId and is refused for the others. */
const updateInput = z
  .object({
    title: text(commonLimits.name).optional(),
    description: text(commonLimits.freeText).nullish(),
    status: status.optional(),
    category: category.optional(),
    likelihood: rating.optional(),
    impact: rating.optional(),
    treatment: treatment.nullish(),
    assigneeId: assigneeId.nullish(),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), "give at least one field to change");

export type CreateRiskArgs = WithNulls<z.input<typeof createInput>>;
export type UpdateRiskArgs = WithNulls<z.input<typeof updateInput>>;

type Editable = {
  title: string;
  description: string | null;
  status: RiskStatus;
  category: RiskCategory;
  likelihood: number;
  impact: number;
  score: number;
  treatment: RiskTreatment | null;
  assigneeId: string | null;
};

export function createRiskService(db: Db, notifier: Notifier) {
  return {
    async create(actor: Actor, args: CreateRiskArgs, query: RiskQuery) {
      const input = parseInput(createInput, args);
      const id = newId("rsk");
      return notifier.transaction(db, actor, async (tx, notify) => {
        if (input.assigneeId) await assertActiveMember(tx, actor.organizationId, input.assigneeId);
        const likelihood = input.likelihood ?? 1;
        const impact = input.impact ?? 1;
        const data = {
          title: input.title,
          description: input.description ?? null,
          status: input.status ?? "open",
          category: input.category ?? "other",
          likelihood,
          impact,
          score: likelihood * impact,
          treatment: input.treatment ?? null,
          assigneeId: input.assigneeId ?? null,
        };
        const risk = await tx.risk.create({
          ...query,
          data: { id, organizationId: actor.organizationId, ...data },
        });
        const { description: _description, ...recorded } = data;
        await writeAuditEvent(tx, auditEvent(actor, "risk.created", { type: "risk", id }, recorded));
        await notify({ reason: "assigned", recipientIds: [data.assigneeId], entity: { type: "risk", id } });
        return risk;
      });
    },

    async get(actor: Actor, id: string, query: RiskQuery) {
      const risk = await db.risk.findUnique({ ...query, where: { id, organizationId: actor.organizationId } });
      if (!risk) throw new NotFoundError("Risk", id);
      return risk;
    },

    /** The organization's risks, filtered and sorted (default newest first). */
    async list(actor: Actor, args: ListArgs, query: RiskQuery) {
      const rows = rowsByIds(riskRows, db, actor.organizationId);
      return listPage(db, actor.organizationId, riskList, { ...args, query }, rows);
    },

    /** Changes the given fields under the row's lock; the score follows likelihood and impact. */
    async update(actor: Actor, id: string, args: UpdateRiskArgs, query: RiskQuery) {
      const input = parseInput(updateInput, args);
      return notifier.transaction(db, actor, async (tx, notify) => {
        const [current] = await tx.$queryRaw<Editable[]>`
          SELECT "title", "description", "status"::text AS "status", "category"::text AS "category",
                 "likelihood", "impact", "score", "treatment"::text AS "treatment", "assigneeId"
          FROM "Risk"
          WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
        if (!current) throw new NotFoundError("Risk", id);
        if (input.assigneeId) await assertActiveMember(tx, actor.organizationId, input.assigneeId);
        const score = (input.likelihood ?? current.likelihood) * (input.impact ?? current.impact);
        const { changes, data } = changesBetween(current, { ...(input as Partial<Editable>), score });
        const where = { id, organizationId: actor.organizationId };
        if (Object.keys(changes).length === 0) return tx.risk.findUniqueOrThrow({ ...query, where });
        const updated = await tx.risk.update({ ...query, where, data });
        await writeAuditEvent(tx, auditEvent(actor, "risk.updated", { type: "risk", id }, { changes } as Prisma.InputJsonValue));
        if (changes.assigneeId)
          await notify({ reason: "assigned", recipientIds: [data.assigneeId], entity: { type: "risk", id } });
        return updated;
      });
    },
  };
}
