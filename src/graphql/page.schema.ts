import type { ObjectRef } from "@pothos/core";
import { queryFromInfo } from "@pothos/plugin-prisma";
import type { GraphQLResolveInfo } from "graphql";
import { commonLimits, limited } from "../platform/limits.js";
import { graphOnly } from "../rest/rest-schema.js";
import { builder } from "./builder.js";
import type { Context } from "./context.js";
import type { Page } from "./pagination.js";

/** `limit` and `cursor`, the arguments of every list. */
export const pageArgs = builder.args((t) => ({
  limit: t.int(limited("Page size; default 20", commonLimits.pageSize)),
  cursor: t.string(limited("nextCursor of the previous page; omit for the first page", commonLimits.cursor)),
}));

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** `{items, nextCursor}` of the given item type. */
export function definePage<Item extends object>(itemTypeName: string, itemRef: ObjectRef<Types, Item>) {
  return builder.objectRef<Page<Item>>(`${itemTypeName}Page`).implement({
    description: `A page of ${itemTypeName} records, newest first.`,
    fields: (t) => ({
      items: t.field({
        type: [itemRef],
        description: "The records of this page, at most `limit`, newest first",
        resolve: (page) => page.items,
      }),
      nextCursor: t.string({
        nullable: true,
        description: "Pass as `cursor` to get the next page; null on the last page",
        resolve: (page) => page.nextCursor,
      }),
      totalCount: t.int({
        ...graphOnly,
        description: "How many records the whole list has, over all pages; counted only when selected",
        resolve: (page) => {
          if (!page.totalCount) throw new Error(`${itemTypeName}Page has no count`);
          return page.totalCount();
        },
      }),
    }),
  });
}

/** The Prisma selection for the page's items, so a page costs one query whatever is selected. */
export function itemsQuery(ctx: Context, info: GraphQLResolveInfo, typeName: string) {
  return queryFromInfo({ context: ctx, info, typeName, path: ["items"] }) as { select?: object; include?: object };
}
