import { type FieldMapper, MapperKind, mapSchema } from "@graphql-tools/utils";
import { defaultFieldResolver, type GraphQLFieldResolver, type GraphQLSchema } from "graphql";
import type { RequestAuth } from "../auth/actor.js";
import type { AuthState } from "../auth/caller.js";
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

/** A request's loaders, for its caller's organization (none to batch for an anonymous caller). */
export function loadersFor(db: Db, auth: AuthState): Loaders {
  return createLoaders(db, "caller" in auth ? auth.caller.organizationId : "");
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
