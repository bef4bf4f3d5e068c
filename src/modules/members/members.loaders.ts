import type { Member } from "../../generated/prisma/client.js";
import { recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { recordsByKey } from "../../platform/db/graph-reader.js";

/** Members by id and by user id, for one request of one organization. */
export function createMemberLoaders(db: Db, organizationId: string) {
  return {
    byId: recordLoader(recordsByKey<Member>("Member", db, organizationId)),
    /** A user's membership of the organization (audit actors, comment authors). */
    byUserId: recordLoader(recordsByKey<Member>("Member", db, organizationId, "userId"), "userId"),
  };
}
