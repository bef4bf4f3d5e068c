import { authorize } from "../../auth/actor.js";
import { builder } from "../../graphql/builder.js";
import { Node } from "../../graphql/node.schema.js";
import { definePage, itemsQuery, pageArgs } from "../../graphql/page.schema.js";
import { commonLimits, limited } from "../../platform/limits.js";

const Vendor = builder.prismaObject("Vendor", {
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
      name: t.arg.string({ required: true, ...limited("Name", commonLimits.name) }),
      description: t.arg.string(limited("Longer text", commonLimits.freeText)),
    },
    resolve: (query, _root, args, ctx) => ctx.services.vendors.create(authorize(ctx, "vendor:create"), args, query),
  }),
);

const VendorPage = definePage("Vendor", Vendor);

builder.queryField("vendor", (t) =>
  t.prismaField({
    type: "Vendor",
    nullable: true,
    description:
      "Get a vendor by id. Needs `vendor:read`. Over GraphQL a missing or refused vendor is null with its error, so the other fields of the request still answer; REST answers 404 or 403.",
    args: { id: t.arg.id({ required: true, description: "The vendor id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.vendors.get(authorize(ctx, "vendor:read"), args.id, query),
  }),
);

builder.queryField("vendors", (t) =>
  t.field({
    type: VendorPage,
    nullable: true,
    description:
      "The organization's vendors, newest first. Needs `vendor:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: { ...pageArgs },
    resolve: (_root, args, ctx, info) =>
      ctx.services.vendors.list(authorize(ctx, "vendor:read"), args, itemsQuery(ctx, info, "Vendor")),
  }),
);

builder.mutationField("updateVendor", (t) =>
  t.prismaField({
    type: "Vendor",
    description:
      "Change a vendor. An omitted argument keeps its value; null clears the description. At least one argument besides id is needed. Needs `vendor:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The vendor id" }),
      name: t.arg.string(limited("New name; null is refused", commonLimits.name)),
      description: t.arg.string(limited("New description; null clears it", commonLimits.freeText)),
    },
    resolve: (query, _root, { id, ...args }, ctx) =>
      ctx.services.vendors.update(authorize(ctx, "vendor:update"), id, args, query),
  }),
);
