import type { Db } from "../../db/database.js";
import { type RecordQuery, recordLoader } from "../../loaders.js";

/** Tasks by id, for one request of one organization. */
export function createTaskLoaders(db: Db, organizationId: string) {
  return {
    byId: recordLoader((ids: string[], query: RecordQuery) =>
      db.task.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } }),
    ),
  };
}
