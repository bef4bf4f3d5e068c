import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import { VendorCategory, VendorStatus } from "../../generated/prisma/enums.js";
import {
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
import { commonLimits, limit, text } from "../../platform/limits.js";
import { notNull, parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, changesBetween, writeAuditEvent } from "../audit/audit.service.js";
import { assertActiveMember } from "../entities.js";
import type { Notifier } from "../notifications/notifications.service.js";

type VendorQuery = { select?: Prisma.VendorSelect; include?: Prisma.VendorInclude };

export const vendorLimits = {
  website: limit({ maxLength: 2048, format: "uri", pattern: "^[Hh][Tt][Tt][Pp][Ss]://", patternHint: "an absolute https URL" }),
};

/** Vendors' scalar columns by id (row-by-id.ts): what `findMany` returns without a selection. */
export const vendorRows = rowByIdReader<Prisma.VendorGetPayload<object>>("Vendor", Object.values(Prisma.VendorScalarFieldEnum));

/** The organization's vendors: what `vendors` filters and sorts by. */
export const vendorList: ListSpec = {
  rowsInline: true,
  table: "Vendor",
  parent: [],
  filters: {
    status: oneOf("status", '"VendorStatus"'),
    category: oneOf("category", '"VendorCategory"'),
    assigneeId: idOrNone("assigneeId"),
    ...dateBoundRules(true),
    search: search("name"),
  },
  orders: {
    ...dateSortKeys(true),
    name: sortBy.text("name"),
    status: sortBy.enum("status", '"VendorStatus"', Object.values(VendorStatus)),
  },
  defaultOrder: newestFirst,
};

const status = z.enum(VendorStatus, notNull);
const category = z.enum(VendorCategory, notNull);
const website = text(vendorLimits.website);
const assigneeId = text(commonLimits.id);

const createInput = z.object({
  name: text(commonLimits.name),
  description: text(commonLimits.freeText).nullish(),
  // On create a null means "not given": the default applies.
  status: status.nullish(),
  category: category.nullish(),
  website: website.nullish(),
  assigneeId: assigneeId.nullish(),
});

/** Absent leaves a field as it is; null clears description, website and assigneeId and is refused for the others. */
const updateInput = z
  .object({
    name: text(commonLimits.name).optional(),
    description: text(commonLimits.freeText).nullish(),
    status: status.optional(),
    category: category.optional(),
    website: website.nullish(),
    assigneeId: assigneeId.nullish(),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), "give at least one field to change");

export type CreateVendorArgs = WithNulls<z.input<typeof createInput>>;
export type UpdateVendorArgs = WithNulls<z.input<typeof updateInput>>;

type Editable = {
  name: string;
  description: string | null;
  status: VendorStatus;
  category: VendorCategory;
  website: string | null;
  assigneeId: string | null;
};

export function createVendorService(db: Db, notifier: Notifier) {
  return {
    async create(actor: Actor, args: CreateVendorArgs, query: VendorQuery) {
      const input = parseInput(createInput, args);
      const id = newId("vnd");
      return notifier.transaction(db, actor, async (tx, notify) => {
        if (input.assigneeId) await assertActiveMember(tx, actor.organizationId, input.assigneeId);
        const data = {
          name: input.name,
          description: input.description ?? null,
          status: input.status ?? "not_assessed",
          category: input.category ?? "other",
          website: input.website ?? null,
          assigneeId: input.assigneeId ?? null,
        };
        const vendor = await tx.vendor.create({
          ...query,
          data: { id, organizationId: actor.organizationId, ...data },
        });
        const { description: _description, ...recorded } = data;
        await writeAuditEvent(tx, auditEvent(actor, "vendor.created", { type: "vendor", id }, recorded));
        await notify({ reason: "assigned", recipientIds: [data.assigneeId], entity: { type: "vendor", id } });
        return vendor;
      });
    },

    async get(actor: Actor, id: string, query: VendorQuery) {
      const vendor = await db.vendor.findUnique({ ...query, where: { id, organizationId: actor.organizationId } });
      if (!vendor) throw new NotFoundError("Vendor", id);
      return vendor;
    },

    /** The organization's vendors, filtered and sorted (default newest first). */
    async list(actor: Actor, args: ListArgs, query: VendorQuery) {
      const rows = rowsByIds(vendorRows, db, actor.organizationId);
      return listPage(db, actor.organizationId, vendorList, { ...args, query }, rows);
    },

    /** Changes the given fields under the row's lock, so that the audit event's `from` values are exact. */
    async update(actor: Actor, id: string, args: UpdateVendorArgs, query: VendorQuery) {
      const input = parseInput(updateInput, args);
      return notifier.transaction(db, actor, async (tx, notify) => {
        const [current] = await tx.$queryRaw<Editable[]>`
          SELECT "name", "description", "status"::text AS "status", "category"::text AS "category", "website", "assigneeId"
          FROM "Vendor"
          WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
        if (!current) throw new NotFoundError("Vendor", id);
        if (input.assigneeId) await assertActiveMember(tx, actor.organizationId, input.assigneeId);
        const { changes, data } = changesBetween(current, input as Partial<Editable>);
        const where = { id, organizationId: actor.organizationId };
        if (Object.keys(changes).length === 0) return tx.vendor.findUniqueOrThrow({ ...query, where });
        const updated = await tx.vendor.update({ ...query, where, data });
        await writeAuditEvent(
          tx,
          auditEvent(actor, "vendor.updated", { type: "vendor", id }, { changes } as Prisma.InputJsonValue),
        );
        if (changes.assigneeId)
          await notify({ reason: "assigned", recipientIds: [data.assigneeId], entity: { type: "vendor", id } });
        return updated;
      });
    },
  };
}
