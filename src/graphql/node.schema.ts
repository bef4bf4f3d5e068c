import type { ObjectRef } from "@pothos/core";
import { getRefFromModel } from "@pothos/plugin-prisma";
import { authenticated, authorize } from "../auth/actor.js";
import type { Permission } from "../auth/permissions.js";
import { BadUserInputError } from "../platform/errors.js";
import { type NodeTypeName, nodeTypeOf } from "../platform/ids.js";
import { builder } from "./builder.js";
import type { Context } from "./context.js";

/**
 * Whoever may read a type reads it through node and nodes too. Members are a directory: any
 * credential reads their id and name, and each other field checks `member:read` itself.
 */
const readPermission: Record<NodeTypeName, Permission | null> = {
  Task: "task:read",
  TaskItem: "task:read",
  Vendor: "vendor:read",
  Risk: "risk:read",
  Policy: "policy:read",
  PolicyVersion: "policy:read",
  Member: null,
  Comment: "comment:read",
};

export const nodesLimit = 100;

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** The object type plugin-prisma registered for a model, for unions of records. */
export const objectRefOf = (model: NodeTypeName) =>
  getRefFromModel(model, builder, "object") as unknown as ObjectRef<Types, { id: string }>;

export const Node = builder.interfaceRef<{ id: string }>("Node").implement({
  description:
    "A record with a globally unique id. Ids carry their type as a prefix (tsk_, vnd_, ...), so clients that normalise by id (Relay, urql graphcache, Apollo) need no configuration.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Globally unique id; its prefix names the type" }),
  }),
  resolveType: (node) => nodeTypeOf(node.id),
});

/** The record an id names, through the loader of its type: null when missing or another organization's. */
export async function loadNode(ctx: Context, id: string): Promise<{ id: string } | null> {
  const type = nodeTypeOf(id);
  if (!type) return null;
  const permission = readPermission[type];
  if (permission) authorize(ctx, permission);
  const { loaders } = ctx;
  const byType: Record<NodeTypeName, () => Promise<{ id: string } | null>> = {
    Task: () => loaders.tasks.byId.load({ id }),
    TaskItem: () => loaders.taskItems.byId.load({ id }),
    Vendor: () => loaders.vendors.byId.load({ id }),
    Risk: () => loaders.risks.byId.load({ id }),
    Policy: () => loaders.policies.byId.load({ id }),
    PolicyVersion: () => loaders.policies.versionById.load({ id }),
    Member: () => loaders.members.byId.load({ id }),
    Comment: () => loaders.comments.byId.load({ id }),
  };
  return byType[type]();
}

builder.queryField("node", (t) =>
  t.field({
    type: Node,
    nullable: true,
    description:
      "The record with this id, of any Node type. Null when it is missing or belongs to another organization; FORBIDDEN without the type's `:read` permission.",
    args: { id: t.arg.id({ required: true, description: "A Node id, e.g. tsk_..., vnd_..." }) },
    resolve: (_root, args, ctx) => {
      authenticated(ctx);
      return loadNode(ctx, args.id);
    },
  }),
);

builder.queryField("nodes", (t) =>
  t.field({
    type: [Node],
    nullable: { list: false, items: true },
    description: `The records with these ids (at most ${nodesLimit}), in the order asked, loaded in one statement per type. A missing or foreign id gives null; an id of a type the caller may not read gives null with FORBIDDEN at its index.`,
    args: { ids: t.arg.idList({ required: true, description: `Node ids, at most ${nodesLimit}` }) },
    resolve: (_root, args, ctx) => {
      authenticated(ctx);
      if (args.ids.length > nodesLimit) {
        throw new BadUserInputError(`ids must hold at most ${nodesLimit} ids`, [
          { path: "ids", message: `must hold at most ${nodesLimit} ids` },
        ]);
      }
      return args.ids.map((id) => loadNode(ctx, id).catch((error: Error) => error)) as never;
    },
  }),
);
