import { type RecordQuery, recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";

/** Risks by id, for one request of one organization. */
export function createRiskLoaders(db: Db, organizationId: string) {
  return {
    byId: recordLoader((ids: string[], query: RecordQuery) =>
      db.risk.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } }),
    ),
  };
}
