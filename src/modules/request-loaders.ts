import type { Db } from "./db/database.js";
import { lazily } from "./loaders.js";
import { createCommentLoaders } from "./modules/comments/comments.loaders.js";
import { createMemberLoaders } from "./modules/members/members.loaders.js";
import { createPolicyLoaders } from "./modules/policies/policies.loaders.js";
import { createRiskLoaders } from "./modules/risks/risks.loaders.js";
import { createTaskItemLoaders } from "./modules/task-items/task-items.loaders.js";
import { createTaskLoaders } from "./modules/tasks/tasks.loaders.js";
import { createVendorLoaders } from "./modules/vendors/vendors.loaders.js";

/**
 * The DataLoaders of one request, each batch restricted to the caller's organization. Never
 * shared between requests: their caches would leak records across callers.
 */
export function createLoaders(db: Db, organizationId: string) {
  return lazily({
    comments: () => createCommentLoaders(db, organizationId),
    members: () => createMemberLoaders(db, organizationId),
    policies: () => createPolicyLoaders(db, organizationId),
    risks: () => createRiskLoaders(db, organizationId),
    taskItems: () => createTaskItemLoaders(db, organizationId),
    tasks: () => createTaskLoaders(db, organizationId),
    vendors: () => createVendorLoaders(db, organizationId),
  });
}

export type Loaders = ReturnType<typeof createLoaders>;
