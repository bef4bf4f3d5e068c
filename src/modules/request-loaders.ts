import { lazily } from "../graphql/loaders.js";
import type { Db } from "../platform/db/database.js";
import { createCommentLoaders } from "./comments/comments.loaders.js";
import { createMemberLoaders } from "./members/members.loaders.js";
import { createPolicyLoaders } from "./policies/policies.loaders.js";
import { createRiskLoaders } from "./risks/risks.loaders.js";
import { createTaskItemLoaders } from "./task-items/task-items.loaders.js";
import { createTaskLoaders } from "./tasks/tasks.loaders.js";
import { createVendorLoaders } from "./vendors/vendors.loaders.js";

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

/**
 * A subscription resolves every event on the context it started with: each event gets new
 * loaders, so that it reads the records as they are now, never from an earlier event's cache.
 */
export function renewLoaders(ctx: { loaders: Loaders; services: { db: Db } }, organizationId: string) {
  ctx.loaders = createLoaders(ctx.services.db, organizationId);
}
