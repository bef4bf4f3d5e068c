import { authorize } from "../../auth/actor.js";
import { builder } from "../../graphql/builder.js";
import { Node } from "../../graphql/node.schema.js";
import { definePage, itemsQuery, pageArgs } from "../../graphql/page.schema.js";
import { commonLimits, limited } from "../../platform/limits.js";

const Risk = builder.prismaObject("Risk", {
  description: "A risk the organization tracks.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Risk id" }),
    title: t.exposeString("title", { description: "The risk's title" }),
    description: t.exposeString("description", { nullable: true, description: "Longer text; null when not set" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the risk was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the risk last changed" }),
  }),
});

builder.mutationField("createRisk", (t) =>
  t.prismaField({
    type: "Risk",
    description: "Create a risk. Needs `risk:create`.",
    args: {
      title: t.arg.string({ required: true, ...limited("Title", commonLimits.name) }),
      description: t.arg.string(limited("Longer text", commonLimits.freeText)),
    },
    resolve: (query, _root, args, ctx) => ctx.services.risks.create(authorize(ctx, "risk:create"), args, query),
  }),
);

const RiskPage = definePage("Risk", Risk);

builder.queryField("risk", (t) =>
  t.prismaField({
    type: "Risk",
    nullable: true,
    description:
      "Get a risk by id. Needs `risk:read`. Over GraphQL a missing or refused risk is null with its error, so the other fields of the request still answer; REST answers 404 or 403.",
    args: { id: t.arg.id({ required: true, description: "The risk id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.risks.get(authorize(ctx, "risk:read"), args.id, query),
  }),
);

builder.queryField("risks", (t) =>
  t.field({
    type: RiskPage,
    nullable: true,
    description:
      "The organization's risks, newest first. Needs `risk:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: { ...pageArgs },
    resolve: (_root, args, ctx, info) =>
      ctx.services.risks.list(authorize(ctx, "risk:read"), args, itemsQuery(ctx, info, "Risk")),
  }),
);

builder.mutationField("updateRisk", (t) =>
  t.prismaField({
    type: "Risk",
    description:
      "Change a risk. An omitted argument keeps its value; null clears the description. At least one argument besides id is needed. Needs `risk:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The risk id" }),
      title: t.arg.string(limited("New title; null is refused", commonLimits.name)),
      description: t.arg.string(limited("New description; null clears it", commonLimits.freeText)),
    },
    resolve: (query, _root, { id, ...args }, ctx) => ctx.services.risks.update(authorize(ctx, "risk:update"), id, args, query),
  }),
);
