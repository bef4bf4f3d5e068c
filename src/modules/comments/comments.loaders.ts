import { listLoader } from "../../graphql/lists.js";
import { type RecordQuery, recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { commentList } from "./comments.service.js";

/** Comments of many entities for one request of one organization. */
export function createCommentLoaders(db: Db, organizationId: string) {
  const find = (ids: string[], query: RecordQuery) =>
    db.comment.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } });
  return {
    byId: recordLoader(find),
    /** Pages of comments of many records, each with its own limit, cursor, filter and order, with their counts. */
    pages: listLoader(db, organizationId, commentList, find),
  };
}

/** `(entityType, entityId) in (...)` as Prisma can say it: one `entityId in` per type. */
export function byType<T extends string>(entities: readonly { entityType: T; entityId: string }[]) {
  const ids = new Map<T, string[]>();
  for (const e of entities) ids.set(e.entityType, [...(ids.get(e.entityType) ?? []), e.entityId]);
  return [...ids].map(([entityType, entityIds]) => ({ entityType, entityId: { in: entityIds } }));
}

export type CommentLoaders = ReturnType<typeof createCommentLoaders>;
