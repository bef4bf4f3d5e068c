import { builder } from "../../builder.js";
import { authorize } from "../../context.js";
import { commonLimits, limited } from "../../limits.js";

builder.prismaObject("Risk", {
  description: "A risk the organization tracks.",
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
