import type { ObjectRef } from "@pothos/core";
import { queryFromInfo } from "@pothos/plugin-prisma";
import type { GraphQLResolveInfo } from "graphql";
import { commonLimits, limited, listLimits } from "../platform/limits.js";
import { graphOnly } from "../rest/rest-schema.js";
import { builder } from "./builder.js";
import type { Context } from "./context.js";
import type { ListSpec } from "./lists.js";
import type { Page } from "./pagination.js";

export const OrderDirection = builder.enumType("OrderDirection", {
  description: "Which way a list is sorted; nulls come last either way, ties are broken on id",
  values: {
    asc: { description: "Smallest, earliest or first in the alphabet or enum first" },
    desc: { description: "Largest, latest or last first" },
  },
});

type InputFields = Parameters<Parameters<typeof builder.inputType>[1]["fields"]>[0];

/** Filter fields most lists share: creation (and change) bounds, exclusive. */
export function dateBounds(t: InputFields, what: string, updated: boolean) {
  return {
    createdAfter: t.field({ type: "DateTime", description: `Only ${what} created strictly after this instant` }),
    createdBefore: t.field({ type: "DateTime", description: `Only ${what} created strictly before this instant` }),
    ...(updated
      ? {
          updatedAfter: t.field({ type: "DateTime", description: `Only ${what} last changed strictly after this instant` }),
          updatedBefore: t.field({ type: "DateTime", description: `Only ${what} last changed strictly before this instant` }),
        }
      : {}),
  };
}

/** A filter field that takes a list of enum values or ids (at most 100). */
export const anyOf = (description: string) => limited(`${description}; any of the values`, listLimits.values);

/** `search`: case-insensitive, anywhere in the text. */
export const searchField = (t: InputFields, where: string) =>
  t.string(limited(`Only records whose ${where} contains this text, case-insensitive (REST: q)`, listLimits.search));

/** `assigneeId`: member ids, and null for "unassigned". */
export const assigneeField = (t: InputFields) =>
  t.idList({
    required: { list: false, items: false },
    ...limited(
      "Only records assigned to one of these members; a null element (REST: none) also matches unassigned records",
      listLimits.values,
    ),
  });

/**
 * `limit`, `cursor`, `filter` (input `<Type>Filter`) and `orderBy` (input `<Type>OrderBy`, its
 * fields those the spec can sort by) of a list.
 */
export function listArgs(
  typeName: string,
  spec: ListSpec,
  filter: { description: string; fields: (t: InputFields) => Record<string, unknown> },
) {
  const OrderField = builder.enumType(`${typeName}OrderField`, {
    description: `What a ${typeName} list can be sorted by`,
    values: Object.fromEntries(Object.keys(spec.orders).map((f) => [f, { description: `By ${f}` }])),
  });
  const OrderBy = builder.inputType(`${typeName}OrderBy`, {
    description: `The order of a ${typeName} list (REST: sort=field or sort=-field for descending); ties are broken on id`,
    fields: (t) => ({
      field: t.field({ type: OrderField, required: true, description: "The field to sort by" }),
      direction: t.field({ type: OrderDirection, required: true, description: "asc or desc" }),
    }),
  });
  const Filter = builder.inputType(`${typeName}Filter`, {
    description: `${filter.description} Fields combine with AND; a field left out or null does not filter.`,
    fields: filter.fields as never,
  });
  const { field, direction } = spec.defaultOrder;
  return builder.args((t) => ({
    limit: t.int(limited("Page size; default 20", commonLimits.pageSize)),
    cursor: t.string(
      limited(
        "nextCursor of the previous page, asked for with the same filter and orderBy; omit for the first page",
        commonLimits.cursor,
      ),
    ),
    filter: t.field({ type: Filter, description: "Only the records that match every field given" }),
    orderBy: t.field({ type: OrderBy, description: `The order of the list; default ${field} ${direction}` }),
  }));
}

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** `{items, nextCursor}` of the given item type. */
export function definePage<Item extends object>(itemTypeName: string, itemRef: ObjectRef<Types, Item>) {
  return builder.objectRef<Page<Item>>(`${itemTypeName}Page`).implement({
    description: `A page of ${itemTypeName} records, in the order asked for.`,
    fields: (t) => ({
      items: t.field({
        type: [itemRef],
        description: "The records of this page, at most `limit`, in the list's order",
        resolve: (page) => page.items,
      }),
      nextCursor: t.string({
        nullable: true,
        description: "Pass as `cursor` to get the next page; null on the last page",
        resolve: (page) => page.nextCursor,
      }),
      totalCount: t.int({
        ...graphOnly,
        description: "How many records the whole list has with its filter, over all pages; counted only when selected",
        resolve: (page) => page.totalCount(),
      }),
    }),
  });
}

/** The Prisma selection for the page's items, so a page costs one query whatever is selected. */
export function itemsQuery(ctx: Context, info: GraphQLResolveInfo, typeName: string) {
  return queryFromInfo({ context: ctx, info, typeName, path: ["items"] }) as { select?: object; include?: object };
}
