import DataLoader from "dataloader";
import type { CommentEntityType } from "../../generated/prisma/enums.js";
import { pageLoader, type RecordQuery, recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";

type Entity = { entityType: CommentEntityType; entityId: string };

/** Comments of many entities for one request of one organization. */
export function createCommentLoaders(db: Db, organizationId: string) {
  const find = (ids: string[], query: RecordQuery) =>
    db.comment.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } });
  return {
    byId: recordLoader(find),
    /** Pages of comments, newest first, each entity with its own limit and cursor. */
    pages: pageLoader(
      db,
      organizationId,
      {
        table: "Comment",
        parent: [
          { name: "entityType", sqlType: '"CommentEntityType"' },
          { name: "entityId", sqlType: "text" },
        ],
        keys: [
          { name: "createdAt", sqlType: "timestamp(3)" },
          { name: "id", sqlType: "text" },
        ],
      },
      find,
    ),
    /** How many comments each entity has: one grouped statement. */
    counts: new DataLoader<Entity, number, string>(
      async (entities) => {
        const groups = await db.comment.groupBy({
          by: ["entityType", "entityId"],
          where: { organizationId, OR: byType(entities) },
          _count: { _all: true },
        });
        const counts = new Map(groups.map((g) => [`${g.entityType}:${g.entityId}`, g._count._all]));
        return entities.map((e) => counts.get(`${e.entityType}:${e.entityId}`) ?? 0);
      },
      { cacheKeyFn: (e) => `${e.entityType}:${e.entityId}` },
    ),
  };
}

/** `(entityType, entityId) in (...)` as Prisma can say it: one `entityId in` per type. */
export function byType<T extends string>(entities: readonly { entityType: T; entityId: string }[]) {
  const ids = new Map<T, string[]>();
  for (const e of entities) ids.set(e.entityType, [...(ids.get(e.entityType) ?? []), e.entityId]);
  return [...ids].map(([entityType, entityIds]) => ({ entityType, entityId: { in: entityIds } }));
}

export type CommentLoaders = ReturnType<typeof createCommentLoaders>;
