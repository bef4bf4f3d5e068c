import { listLoader } from "../../graphql/lists.js";
import { type RecordQuery, recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { policyVersionList } from "./policies.service.js";

/** Policies and their versions, for one request of one organization. */
export function createPolicyLoaders(db: Db, organizationId: string) {
  const findVersions = (ids: string[], query: RecordQuery) =>
    db.policyVersion.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } });
  return {
    byId: recordLoader((ids: string[], query: RecordQuery) =>
      db.policy.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } }),
    ),
    versionById: recordLoader(findVersions),
    /** Pages of versions of many policies, as policyVersions, with their counts. */
    versionPages: listLoader(db, organizationId, policyVersionList, findVersions),
  };
}
