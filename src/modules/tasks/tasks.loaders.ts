import type { Task } from "../../generated/prisma/client.js";
import { recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { recordsByKey } from "../../platform/db/graph-reader.js";

/** Tasks by id, for one request of one organization. */
export function createTaskLoaders(db: Db, organizationId: string) {
  return {
    byId: recordLoader(recordsByKey<Task>("Task", db, organizationId)),
  };
}
