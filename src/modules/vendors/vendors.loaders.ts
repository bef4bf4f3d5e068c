import { type RecordQuery, recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";

/** Vendors by id, for one request of one organization. */
export function createVendorLoaders(db: Db, organizationId: string) {
  return {
    byId: recordLoader((ids: string[], query: RecordQuery) =>
      db.vendor.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } }),
    ),
  };
}
