import { MapperKind, mapSchema } from "@graphql-tools/utils";
import { defaultFieldResolver, type GraphQLFieldResolver, type GraphQLSchema } from "graphql";
import type { RequestAuth } from "../auth/actor.js";
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

/**
 * The mutations of one document run one after the other, and each answers with records as its
 * change left them. A later one must not answer from what an earlier one's answer put in the
 * loaders' caches (its entity's comment page, say, read before the later change): every root
 * mutation field starts with new loaders. A query keeps one set for the whole request, which is
 * what batching across its fields needs.
 */
export function freshLoadersPerMutation(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.MUTATION_ROOT_FIELD]: (field) => {
      const resolve: GraphQLFieldResolver<unknown, RequestAuth & { loaders: Loaders; services: { db: Db } }> =
        field.resolve ?? defaultFieldResolver;
      return {
        ...field,
        resolve: (source, args, ctx, info) => {
          renewLoaders(ctx, "caller" in ctx.auth ? ctx.auth.caller.organizationId : "");
          return resolve(source, args, ctx, info);
        },
      };
    },
  });
}
