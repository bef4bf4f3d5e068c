import { type RecordQuery, recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";

/** Members by id and by user id, for one request of one organization. */
export function createMemberLoaders(db: Db, organizationId: string) {
  return {
    byId: recordLoader((ids: string[], query: RecordQuery) =>
      db.member.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } }),
    ),
    /** A user's membership of the organization (audit actors, comment authors). */
    byUserId: recordLoader(
      (userIds: string[], query: RecordQuery) =>
        db.member.findMany({ ...(query as object), where: { userId: { in: userIds }, organizationId } }),
      "userId",
    ),
  };
}
