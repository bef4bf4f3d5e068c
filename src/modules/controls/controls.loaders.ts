import type { Policy } from "../../generated/prisma/client.js";
import { listLoader } from "../../graphql/lists.js";
import type { Db } from "../../platform/db/database.js";
import { recordsByKey, rowsByIds } from "../../platform/db/graph-reader.js";
import { taskById } from "../tasks/tasks.service.js";
import {
  controlRows,
  controlsOfPolicy,
  controlsOfTask,
  policiesOfControl,
  requirementsOfControl,
  tasksOfControl,
} from "./controls.service.js";

/** Pages through the links of controls, policies and tasks, for one request of one organization, with their counts. */
export function createControlLoaders(db: Db, organizationId: string) {
  const controls = rowsByIds(controlRows, db, organizationId);
  return {
    ofTask: listLoader(db, organizationId, controlsOfTask, controls),
    ofPolicy: listLoader(db, organizationId, controlsOfPolicy, controls),
    policies: listLoader(db, organizationId, policiesOfControl, recordsByKey<Policy>("Policy", db, organizationId)),
    tasks: listLoader(db, organizationId, tasksOfControl, rowsByIds(taskById, db, organizationId)),
    // The ids come from the organization's own maps; a requirement may be shipped (no organization).
    requirements: listLoader(db, organizationId, requirementsOfControl, (ids, query) =>
      db.requirement.findMany({ ...(query as object), where: { id: { in: ids } } }),
    ),
  };
}
