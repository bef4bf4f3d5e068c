import { builder } from "../../builder.js";
import { authorize } from "../../context.js";
import { Node } from "../../node.schema.js";

builder.prismaObject("Vendor", {
  description: "A third party the organization depends on.",
  interfaces: [Node],
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
      name: t.arg.string({ required: true, description: "Name, 1 to 255 characters" }),
      description: t.arg.string({ description: "Longer text, at most 10000 characters" }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.vendors.create(authorize(ctx, "vendor:create"), args, query),
  }),
);
