import { listLoader } from "../../graphql/lists.js";
import type { Db } from "../../platform/db/database.js";
import { rowsByIds } from "../../platform/db/graph-reader.js";
import { controlEvidenceList, evidenceRows, vendorEvidenceList } from "./evidence.service.js";

/** Pages of evidence of many controls or vendors, for one request of one organization, with their counts. */
export function createEvidenceLoaders(db: Db, organizationId: string) {
  const rows = rowsByIds(evidenceRows, db, organizationId);
  return {
    controlPages: listLoader(db, organizationId, controlEvidenceList, rows),
    vendorPages: listLoader(db, organizationId, vendorEvidenceList, rows),
  };
}
