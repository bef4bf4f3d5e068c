import { type RecordQuery, recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";

/** Tasks by id, for one request of one organization. */
export function createTaskLoaders(db: Db, organizationId: string) {
  return {
    byId: recordLoader((ids: string[], query: RecordQuery) =>
      db.task.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } }),
    ),
  };
}
