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

type VendorQuery = { select?: Prisma.VendorSelect; include?: Prisma.VendorInclude };

const createInput = z.object({
  name: text(commonLimits.name),
  description: text(commonLimits.freeText).nullish(),
});

/** Absent leaves a field as it is; null clears the description and is refused for the name. */
const updateInput = z
  .object({
    name: text(commonLimits.name).optional(),
    description: text(commonLimits.freeText).nullish(),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), "give at least one field to change");

export type CreateVendorArgs = z.input<typeof createInput>;
export type UpdateVendorArgs = WithNulls<z.input<typeof updateInput>>;

export function createVendorService(db: Db) {
  return {
    async create(actor: Actor, args: CreateVendorArgs, query: VendorQuery) {
      const input = parseInput(createInput, args);
      return db.$transaction(async (tx) => {
        const vendor = await tx.vendor.create({
          ...query,
          data: {
            id: newId("vnd"),
            organizationId: actor.organizationId,
            name: input.name,
            description: input.description ?? null,
          },
        });
        await tx.auditEvent.create({
          data: auditEvent(actor, "vendor.created", { type: "vendor", id: vendor.id }, { name: input.name }),
        });
        return vendor;
      });
    },

    async get(actor: Actor, id: string, query: VendorQuery) {
      const vendor = await db.vendor.findUnique({ ...query, where: { id, organizationId: actor.organizationId } });
      if (!vendor) throw new NotFoundError("Vendor", id);
      return vendor;
    },

    /** The organization's vendors, newest first. */
    async list(actor: Actor, args: PageArgs, query: VendorQuery) {
      const page = pageQuery(args, ["createdAt", "id"]);
      const rows = await db.vendor.findMany({
        ...withKeys(query, page.keys),
        where: { organizationId: actor.organizationId, ...page.where },
        orderBy: page.orderBy,
        take: page.take,
      });
      return toPage(rows, page);
    },

    /** Changes the given fields under the row's lock, so that the audit event's `from` values are exact. */
    async update(actor: Actor, id: string, args: UpdateVendorArgs, query: VendorQuery) {
      const input = parseInput(updateInput, args);
      return db.$transaction(async (tx) => {
        const [current] = await tx.$queryRaw<{ name: string; description: string | null }[]>`
          SELECT "name", "description" FROM "Vendor"
          WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
        if (!current) throw new NotFoundError("Vendor", id);
        const { changes, data } = changesBetween(current, input);
        const where = { id, organizationId: actor.organizationId };
        if (Object.keys(changes).length === 0) return tx.vendor.findUniqueOrThrow({ ...query, where });
        const updated = await tx.vendor.update({ ...query, where, data });
        await tx.auditEvent.create({
          data: auditEvent(actor, "vendor.updated", { type: "vendor", id }, { changes } as Prisma.InputJsonValue),
        });
        return updated;
      });
    },
  };
}
