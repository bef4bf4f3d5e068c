import { builder } from "../../builder.js";
import { authorize } from "../../context.js";
import { commonLimits, limited } from "../../limits.js";

builder.prismaObject("Vendor", {
  description: "A third party the organization depends on.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Vendor id" }),
    name: t.exposeString("name", { description: "The vendor's name" }),
    description: t.exposeString("description", { nullable: true, description: "Longer text; null when not set" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the vendor was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the vendor last changed" }),
  }),
});

builder.mutationField("createVendor", (t) =>
  t.prismaField({
    type: "Vendor",
    description: "Create a vendor. Needs `vendor:create`.",
    args: {
      name: t.arg.string({ required: true, ...limited("Name", commonLimits.name) }),
      description: t.arg.string(limited("Longer text", commonLimits.freeText)),
    },
    resolve: (query, _root, args, ctx) => ctx.services.vendors.create(authorize(ctx, "vendor:create"), args, query),
  }),
);
