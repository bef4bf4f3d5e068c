import type { Risk } from "../../generated/prisma/client.js";
import { recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { recordsByKey } from "../../platform/db/graph-reader.js";

/** Risks by id, for one request of one organization. */
export function createRiskLoaders(db: Db, organizationId: string) {
  return {
    byId: recordLoader(recordsByKey<Risk>("Risk", db, organizationId)),
  };
}
