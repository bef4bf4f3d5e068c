import type { Vendor } from "../../generated/prisma/client.js";
import { recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { recordsByKey } from "../../platform/db/graph-reader.js";

/** Vendors by id, for one request of one organization. */
export function createVendorLoaders(db: Db, organizationId: string) {
  return {
    byId: recordLoader(recordsByKey<Vendor>("Vendor", db, organizationId)),
  };
}
