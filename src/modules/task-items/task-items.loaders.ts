import DataLoader from "dataloader";
import type { TaskItemEntityType, TaskItemStatus } from "../../generated/prisma/enums.js";
import { listLoader } from "../../graphql/lists.js";
import { recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { rowsByIds } from "../../platform/db/graph-reader.js";
import { readText } from "../../platform/db/row-by-id.js";
import { type TaskItemStats, taskItemList, taskItemRows } from "./task-items.service.js";

type Entity = { entityType: TaskItemEntityType; entityId: string };

/** Each entity's task items counted by status: one fixed statement however many entities. */
const STATS_SQL = `SELECT t."entityType"::text AS "entityType", t."entityId", t."status"::text AS "status", count(*)::int AS "n"
FROM "TaskItem" t
WHERE t."organizationId" = $1
  AND (t."entityType", t."entityId") IN (SELECT * FROM unnest($2::text[]::"TaskItemEntityType"[], $3::text[]))
GROUP BY t."entityType", t."entityId", t."status"`;

/** Task items and their statistics for many vendors and risks, for one request of one organization. */
export function createTaskItemLoaders(db: Db, organizationId: string) {
  const find = rowsByIds(taskItemRows, db, organizationId);
  return {
    byId: recordLoader(find),
    /** Pages of task items of many vendors and risks, each with its own limit, cursor, filter and order, with their counts. */
    pages: listLoader(db, organizationId, taskItemList, find),
    /** Statistics of many entities in one grouped statement. */
    stats: new DataLoader<Entity, TaskItemStats, string>(
      async (entities) => {
        const groups = await readText<{ entityType: string; entityId: string; status: TaskItemStatus; n: number }>(
          db,
          STATS_SQL,
          [organizationId, entities.map((e) => e.entityType), entities.map((e) => e.entityId)],
        );
        const stats = new Map<string, TaskItemStats>();
        for (const e of entities) stats.set(`${e.entityType}:${e.entityId}`, emptyStats());
        for (const g of groups) {
          const s = stats.get(`${g.entityType}:${g.entityId}`);
          if (!s) continue;
          s.byStatus[g.status] = g.n;
          s.total += g.n;
        }
        return entities.map((e) => stats.get(`${e.entityType}:${e.entityId}`) ?? emptyStats());
      },
      { cacheKeyFn: (e) => `${e.entityType}:${e.entityId}` },
    ),
  };
}

function emptyStats(): TaskItemStats {
  const byStatus: Record<TaskItemStatus, number> = { todo: 0, in_progress: 0, in_review: 0, done: 0, canceled: 0 };
  return { total: 0, byStatus };
}

export type TaskItemLoaders = ReturnType<typeof createTaskItemLoaders>;
