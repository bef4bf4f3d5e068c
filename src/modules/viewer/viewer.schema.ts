import { type Actor, authenticated } from "../../auth/actor.js";
import { builder } from "../../graphql/builder.js";

builder.prismaObject("Organization", {
  description: "An organization: the tenant every record belongs to.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Organization id; send it as X-Organization-Id with a user credential" }),
    name: t.exposeString("name", { description: "The organization's name" }),
  }),
});

export const Viewer = builder.objectRef<Actor>("Viewer").implement({
  description: "Who is calling: the organization, the member and user behind a user credential, and what they may do.",
  fields: (t) => ({
    organization: t.prismaField({
      type: "Organization",
      description: "The organization this request acts in",
      resolve: (query, caller, _args, ctx) => ctx.services.viewer.organization(caller, query),
    }),
    member: t.prismaField({
      type: "Member",
      nullable: true,
      description: "The caller's membership of the organization; null for an API key",
      resolve: (query, caller, _args, ctx) => ctx.services.viewer.member(caller, query),
    }),
    user: t.prismaField({
      type: "User",
      nullable: true,
      description: "The caller's user account; null for an API key",
      resolve: (query, caller, _args, ctx) => ctx.services.viewer.user(caller, query),
    }),
    permissions: t.stringList({
      description: "The permissions (`resource:action`) this credential holds, sorted",
      resolve: (caller) => [...caller.permissions].sort(),
    }),
    organizations: t.prismaField({
      type: ["Organization"],
      description:
        "The organizations the user is an active member of, by name (choose one with X-Organization-Id); for an API key, its own",
      resolve: (query, caller, _args, ctx) => ctx.services.viewer.organizations(caller, query),
    }),
    credential: t.string({
      description: "How the caller authenticated: apiKey, jwt or session",
      resolve: (caller) => caller.kind,
    }),
  }),
});

builder.queryField("viewer", (t) =>
  t.field({
    type: Viewer,
    description: "Who is calling, with any credential: what a client needs to start.",
    resolve: (_root, _args, ctx) => authenticated(ctx),
  }),
);
