import { type FieldMapper, MapperKind, mapSchema } from "@graphql-tools/utils";
import { defaultFieldResolver, type GraphQLFieldResolver, type GraphQLSchema } from "graphql";
import { authorize, type RequestAuth } from "../auth/actor.js";
import type { AuthState } from "../auth/caller.js";
import type { Permission } from "../auth/permissions.js";
import { lazily } from "../graphql/loaders.js";
import type { Db } from "../platform/db/database.js";
import { createCommentLoaders } from "./comments/comments.loaders.js";
import { createControlLoaders } from "./controls/controls.loaders.js";
import { createEvidenceLoaders } from "./evidence/evidence.loaders.js";
import { createFrameworkLoaders } from "./frameworks/frameworks.loaders.js";
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
    controls: () => createControlLoaders(db, organizationId),
    frameworks: () => createFrameworkLoaders(db, organizationId),
    evidence: () => createEvidenceLoaders(db, organizationId),
    members: () => createMemberLoaders(db, organizationId),
    policies: () => createPolicyLoaders(db, organizationId),
    risks: () => createRiskLoaders(db, organizationId),
    taskItems: () => createTaskItemLoaders(db, organizationId),
    tasks: () => createTaskLoaders(db, organizationId),
    vendors: () => createVendorLoaders(db, organizationId),
  });
}

export type Loaders = ReturnType<typeof createLoaders>;

/** A request's loaders, for its caller's organization (none to batch for an anonymous caller). */
export function loadersFor(db: Db, auth: AuthState): Loaders {
  return createLoaders(db, "caller" in auth ? auth.caller.organizationId : "");
}

/** The kinds of record an `entityType` + `entityId` reference can name (comments, task items, notifications). */
export type ReferencedType = "task" | "task_item" | "vendor" | "risk" | "policy";

export function isReferencedType(type: string): type is ReferencedType {
  return Object.hasOwn(referenceReadPermission, type);
}

/** The permission that reads a referenced record of each kind. */
export const referenceReadPermission: Record<ReferencedType, Permission> = {
  task: "task:read",
  task_item: "task:read",
  vendor: "vendor:read",
  risk: "risk:read",
  policy: "policy:read",
};

/**
 * The record a reference names, as it is now (null once deleted), through this request's loaders,
 * when the caller may read its type (else FORBIDDEN).
 */
export function referencedRecord(ctx: RequestAuth & { loaders: Loaders }, type: ReferencedType, id: string) {
  authorize(ctx, referenceReadPermission[type]);
  const { loaders } = ctx;
  const byType = {
    task: loaders.tasks,
    task_item: loaders.taskItems,
    vendor: loaders.vendors,
    risk: loaders.risks,
    policy: loaders.policies,
  }[type];
  return byType.byId.load({ id }) as Promise<never>;
}

/**
 * A query keeps one set of loaders for the whole request, which is what batching across its fields
 * needs. Root fields that answer after a change start with new ones, so that they never answer
 * from what was cached before it:
 * - each root mutation field: the mutations of one document run one after the other, and a later
 *   one must not answer from what an earlier one's answer put in the caches (its entity's comment
 *   page, say, read before the later change);
 * - each event of a subscription: it resolves every event on the context it started with, and each
 *   event must read the records as they are now.
 */
export function freshLoadersPerChange(schema: GraphQLSchema): GraphQLSchema {
  const renewing: FieldMapper = (field) => {
    const resolve: GraphQLFieldResolver<unknown, RequestAuth & { loaders: Loaders; services: { db: Db } }> =
      field.resolve ?? defaultFieldResolver;
    return {
      ...field,
      resolve: (source, args, ctx, info) => {
        ctx.loaders = loadersFor(ctx.services.db, ctx.auth);
        return resolve(source, args, ctx, info);
      },
    };
  };
  return mapSchema(schema, { [MapperKind.MUTATION_ROOT_FIELD]: renewing, [MapperKind.SUBSCRIPTION_ROOT_FIELD]: renewing });
}
