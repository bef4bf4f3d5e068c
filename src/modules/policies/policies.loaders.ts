import type { Policy, PolicyVersion } from "../../generated/prisma/client.js";
import { listLoader } from "../../graphql/lists.js";
import { recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { recordsByKey } from "../../platform/db/graph-reader.js";
import { policyVersionList } from "./policies.service.js";

/** Policies and their versions, for one request of one organization. */
export function createPolicyLoaders(db: Db, organizationId: string) {
  const findVersions = recordsByKey<PolicyVersion>("PolicyVersion", db, organizationId);
  return {
    byId: recordLoader(recordsByKey<Policy>("Policy", db, organizationId)),
    versionById: recordLoader(findVersions),
    /** Pages of versions of many policies, as policyVersions, with their counts. */
    versionPages: listLoader(db, organizationId, policyVersionList, findVersions),
  };
}
