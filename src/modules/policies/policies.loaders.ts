import DataLoader from "dataloader";
import { pageLoader, type RecordQuery, recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";

/** Policies and their versions, for one request of one organization. */
export function createPolicyLoaders(db: Db, organizationId: string) {
  const findVersions = (ids: string[], query: RecordQuery) =>
    db.policyVersion.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } });
  return {
    byId: recordLoader((ids: string[], query: RecordQuery) =>
      db.policy.findMany({ ...(query as object), where: { id: { in: ids }, organizationId } }),
    ),
    versionById: recordLoader(findVersions),
    /** Pages of versions of many policies, highest number first, as policyVersions. */
    versionPages: pageLoader(
      db,
      organizationId,
      { table: "PolicyVersion", parent: [{ name: "policyId", sqlType: "text" }], keys: [{ name: "version", sqlType: "int" }] },
      findVersions,
    ),
    versionCounts: new DataLoader<string, number>(async (policyIds) => {
      const groups = await db.policyVersion.groupBy({
        by: ["policyId"],
        where: { organizationId, policyId: { in: [...policyIds] } },
        _count: { _all: true },
      });
      const counts = new Map(groups.map((g) => [g.policyId, g._count._all]));
      return policyIds.map((id) => counts.get(id) ?? 0);
    }),
  };
}
