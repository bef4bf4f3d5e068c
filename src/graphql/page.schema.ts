import { collectSubFields } from "@graphql-tools/utils";
import type { ObjectRef } from "@pothos/core";
import { queryFromInfo } from "@pothos/plugin-prisma";
import { type FieldNode, type GraphQLObjectType, type GraphQLResolveInfo, getNamedType, isObjectType } from "graphql";
import { commonLimits, limited, listLimits } from "../platform/limits.js";
import { graphOnly } from "../rest/rest-schema.js";
import { builder } from "./builder.js";
import type { Context } from "./context.js";
import { countWithPage, type ListSpec } from "./lists.js";
import type { Edge, Page, PageInfo as PageInfoShape } from "./pagination.js";
import { readPath } from "./read-path.js";

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
    // A filter field without a rule would answer 500 on first use: refuse to build such a schema.
    fields: ((t: InputFields) => {
      const fields = filter.fields(t);
      const unruled = Object.keys(fields).filter((name) => !spec.filters[name]);
      if (unruled.length) throw new Error(`${typeName}Filter has fields its list has no rule for: ${unruled.join(", ")}`);
      return fields;
    }) as never,
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
    first: t.int(
      relayOnly(
        limited(
          "Relay: page size when paging forward; default 20. Not with limit, cursor, last or before",
          commonLimits.pageSize,
        ),
      ),
    ),
    after: t.string(
      relayOnly(
        limited(
          "Relay: the records after this cursor (an edge's cursor or pageInfo.endCursor, asked for with the same filter and orderBy). Not with limit, cursor, last or before",
          commonLimits.cursor,
        ),
      ),
    ),
    last: t.int(
      relayOnly(
        limited(
          "Relay: page size when paging backward, the last records of the list (or those right before `before`), in the list's order; default 20. Not with limit, cursor, first or after",
          commonLimits.pageSize,
        ),
      ),
    ),
    before: t.string(
      relayOnly(
        limited(
          "Relay: the records right before this cursor (an edge's cursor or pageInfo.startCursor, asked for with the same filter and orderBy). Not with limit, cursor, first or after",
          commonLimits.cursor,
        ),
      ),
    ),
    filter: t.field({ type: Filter, description: "Only the records that match every field given" }),
    orderBy: t.field({ type: OrderBy, description: `The order of the list; default ${field} ${direction}` }),
  }));
}

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** An argument of the graph alone: REST keeps its own paging (limit, cursor) and never shows these. */
function relayOnly<T extends { extensions: Record<string, unknown> }>(options: T): T {
  return { ...options, extensions: { ...options.extensions, ...graphOnly.extensions } };
}

export const PageInfo = builder.objectRef<PageInfoShape>("PageInfo").implement({
  description: "Where a page of a list stands (Relay's PageInfo)",
  fields: (t) => ({
    hasNextPage: t.exposeBoolean("hasNextPage", {
      description:
        "More records follow this page's last one. Exact when paging forward; when paging backward, true whenever `before` was given",
    }),
    hasPreviousPage: t.exposeBoolean("hasPreviousPage", {
      description:
        "More records come before this page's first one. Exact when paging backward; when paging forward, true whenever `after` (or `cursor`) was given",
    }),
    startCursor: t.exposeString("startCursor", {
      nullable: true,
      description: "The cursor of the page's first record; null on an empty page. Pass as `before` for the records before it",
    }),
    endCursor: t.exposeString("endCursor", {
      nullable: true,
      description: "The cursor of the page's last record; null on an empty page. Pass as `after` for the records after it",
    }),
  }),
});

/**
 * `<Type>Connection`: a page of `<Type>` records both as `items`/`nextCursor` (what REST answers,
 * under the name `<Type>Page`) and as Relay's `edges`/`pageInfo`, which normalized client caches
 * merge with their stock helpers.
 */
export function defineConnection<Item extends object>(itemTypeName: string, itemRef: ObjectRef<Types, Item>) {
  const EdgeRef = builder.objectRef<Edge<Item>>(`${itemTypeName}Edge`).implement({
    description: `One ${itemTypeName} record of a page, with its cursor`,
    fields: (t) => ({
      cursor: t.exposeString("cursor", {
        description: "This record's place in the list: pass as `after` or `before` with the same filter and orderBy",
      }),
      node: t.field({ type: itemRef, description: `The ${itemTypeName} record`, resolve: (edge) => edge.node as never }),
    }),
  });
  return builder.objectRef<Page<Item>>(`${itemTypeName}Connection`).implement({
    description: `A page of ${itemTypeName} records, in the order asked for.`,
    extensions: { restName: `${itemTypeName}Page` },
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
      edges: t.field({
        ...graphOnly,
        type: [EdgeRef],
        description:
          "The records of this page with their cursors, in the list's order (the same records as `items`; at most `first` or `last`). `nextCursor` is `pageInfo.endCursor` when `pageInfo.hasNextPage`",
        resolve: (page) => page.edges,
      }),
      pageInfo: t.field({
        ...graphOnly,
        type: PageInfo,
        description: "Whether more records come before or after this page, and the cursors of its ends",
        resolve: (page) => page.pageInfo,
      }),
    }),
  });
}

/** Where a field stands in the answer, list indices left out: every row of a list shares it. */
function fieldPlace(path: GraphQLResolveInfo["path"] | undefined): string {
  let place = "";
  for (let link = path; link; link = link.prev) if (typeof link.key === "string") place = `${link.key}.${place}`;
  return place;
}

/** Each request's planned page selections, by the field's nodes, then its parent type and place (see itemsQuery). */
const plannedSelections = new WeakMap<object, WeakMap<GraphQLResolveInfo["fieldNodes"], Map<string, RecordQuery>>>();

type RecordQuery = { select?: object; include?: object };

/**
 * The Prisma selection for the page's records, selected as `items` or as `edges { node }` or both,
 * so a page costs one query whatever is selected. Planned once per field of the document and
 * request, not once per parent: the 50 vendors of a page ask for their comments with one selection
 * (the executor hands every row of a list the same field nodes; the variables and the caller are
 * the request's), so the 49 after the first reuse its plan, and the loaders group the parents by
 * that one object instead of writing each parent's selection out as text.
 */
export function itemsQuery(ctx: Context, info: GraphQLResolveInfo, typeName: string): RecordQuery {
  return planned(ctx, info, "items", () => {
    const query = queryFromInfo({ context: ctx, info, typeName, paths: [["items"], ["edges", "node"]] });
    // A root list then reads its count in the page's statement (lists.ts, listPage).
    if (selectedBelow(info).has("totalCount")) countWithPage(query);
    return query;
  });
}

/**
 * The Prisma selection for the records a list field (not a page) returns, planned once per field
 * of the document and request as itemsQuery's: the 100 requirements of a framework's page ask for
 * their controls with one selection, planned once.
 */
export function fieldQuery(ctx: Context, info: GraphQLResolveInfo, typeName: string): RecordQuery {
  return planned(ctx, info, "field", () => queryFromInfo({ context: ctx, info, typeName }));
}

/** selectedBelow's answers, per request (its variables decide `@skip` and `@include`), field of the document and path. */
const selectedNames = new WeakMap<object, WeakMap<readonly FieldNode[], Map<string, ReadonlySet<string>>>>();

/**
 * The names of the fields the field's selection asks for, at `path` below it (a field of a field:
 * ["status"]), as the executor collects them (`collectSubFields`: fragments, and `@skip` and
 * `@include` with this request's variables). A loader that can read more in its own statement, or
 * take a value from one already read, asks before it does. Worked out once per request, field of
 * the document and path (the executor hands every row of a list the same field nodes).
 */
export function selectedBelow(info: GraphQLResolveInfo, path: readonly string[] = []): ReadonlySet<string> {
  let byNodes = selectedNames.get(info.variableValues);
  if (!byNodes) {
    byNodes = new WeakMap();
    selectedNames.set(info.variableValues, byNodes);
  }
  let byPath = byNodes.get(info.fieldNodes);
  if (!byPath) {
    byPath = new Map();
    byNodes.set(info.fieldNodes, byPath);
  }
  const key = path.join(".");
  let names = byPath.get(key);
  if (!names) {
    names = collectedNames(info, path);
    byPath.set(key, names);
  }
  return names;
}

function collectedNames(info: GraphQLResolveInfo, path: readonly string[]): ReadonlySet<string> {
  const collect = (type: GraphQLObjectType, nodes: FieldNode[]) =>
    collectSubFields(info.schema, info.fragments, info.variableValues, type, nodes).fields;
  let type = getNamedType(info.returnType);
  let nodes = info.fieldNodes as FieldNode[];
  for (const name of path) {
    const field = isObjectType(type) ? type.getFields()[name] : undefined;
    if (!field || !isObjectType(type)) return new Set();
    nodes = [...collect(type, nodes).values()].flat().filter((node) => node.name.value === name);
    type = getNamedType(field.type);
  }
  if (!isObjectType(type) || nodes.length === 0) return new Set();
  return new Set([...collect(type, nodes).values()].map((found) => found[0]?.name.value as string));
}

/** Whether the field's selection asks for the field `name` directly: selectedBelow. */
export const selectsField = (info: GraphQLResolveInfo, name: string) => selectedBelow(info).has(name);

function planned(ctx: Context, info: GraphQLResolveInfo, kind: string, plan: () => unknown): RecordQuery {
  if (readPath.reference) return plan() as RecordQuery;
  let byNodes = plannedSelections.get(ctx);
  if (!byNodes) {
    byNodes = new WeakMap();
    plannedSelections.set(ctx, byNodes);
  }
  let known = byNodes.get(info.fieldNodes);
  if (!known) {
    known = new Map();
    byNodes.set(info.fieldNodes, known);
  }
  const key = `${kind}:${info.parentType.name}@${fieldPlace(info.path)}`;
  let query = known.get(key);
  if (!query) {
    query = plan() as RecordQuery;
    known.set(key, query);
  }
  return query;
}
