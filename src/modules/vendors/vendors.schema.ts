import { authorize, can } from "../../auth/actor.js";
import { VendorCategory as VendorCategoryValues, VendorStatus as VendorStatusValues } from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { Node } from "../../graphql/node.schema.js";
import {
  anyOf,
  assigneeField,
  dateBounds,
  defineConnection,
  itemsQuery,
  listArgs,
  searchField,
} from "../../graphql/page.schema.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { Member } from "../members/members.schema.js";
import { vendorLimits, vendorList } from "./vendors.service.js";

export const VendorStatus = builder.enumType(VendorStatusValues, {
  name: "VendorStatus",
  description: "How far the vendor's assessment has got",
  values: {
    not_assessed: { description: "Not yet assessed (the default)" },
    in_progress: { description: "Being assessed" },
    assessed: { description: "Assessment finished" },
  },
});

export const VendorCategory = builder.enumType(VendorCategoryValues, {
  name: "VendorCategory",
  description: "What the vendor provides",
  values: {
    cloud: { description: "Cloud hosting or platform" },
    infrastructure: { description: "Infrastructure: network, data centre, hardware" },
    software_as_a_service: { description: "Software as a service" },
    finance: { description: "Finance: banking, payments, accounting" },
    marketing: { description: "Marketing" },
    hr: { description: "Human resources: payroll, recruiting, benefits" },
    other: { description: "Anything else (the default)" },
  },
});

const Vendor = builder.prismaObject("Vendor", {
  description: "A third party the organization depends on.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Vendor id" }),
    name: t.exposeString("name", { description: "The vendor's name" }),
    description: t.exposeString("description", { nullable: true, description: "Longer text; null when not set" }),
    status: t.expose("status", { type: VendorStatus, description: "How far the vendor's assessment has got" }),
    category: t.expose("category", { type: VendorCategory, description: "What the vendor provides" }),
    website: t.exposeString("website", { nullable: true, description: "The vendor's website (https); null when not set" }),
    assigneeId: t.exposeID("assigneeId", {
      nullable: true,
      description: "Member id of the person responsible; null when unassigned",
    }),
    assignee: t.field({
      type: Member,
      nullable: true,
      ...graphOnly,
      description:
        "The member responsible; null when unassigned. Needs `member:read`: without it, null with a FORBIDDEN error at this path. Not in REST answers.",
      select: (_args, ctx, nestedSelection) => (can(ctx, "member:read") ? { assignee: nestedSelection(true) } : {}),
      resolve: (parent, _args, ctx) => {
        authorize(ctx, "member:read");
        return (parent as { assignee?: unknown }).assignee as never;
      },
    }),
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
      status: t.arg({ type: VendorStatus, description: "Assessment status; default not_assessed" }),
      category: t.arg({ type: VendorCategory, description: "What the vendor provides; default other" }),
      website: t.arg.string(limited("The vendor's website", vendorLimits.website)),
      assigneeId: t.arg.id({ description: "Member id of the person responsible: an active member of the organization" }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.vendors.create(authorize(ctx, "vendor:create"), args, query),
  }),
);

const VendorConnection = defineConnection("Vendor", Vendor);

const vendorListArgs = listArgs("Vendor", vendorList, {
  description: "Which vendors a list shows.",
  fields: (t) => ({
    status: t.field({ type: [VendorStatus], required: { list: false, items: true }, ...anyOf("Only vendors in these statuses") }),
    category: t.field({
      type: [VendorCategory],
      required: { list: false, items: true },
      ...anyOf("Only vendors of these categories"),
    }),
    assigneeId: assigneeField(t),
    ...dateBounds(t, "vendors", true),
    search: searchField(t, "name"),
  }),
});

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
    type: VendorConnection,
    nullable: true,
    description:
      "The organization's vendors, filtered and sorted (default newest first), with their totalCount. Needs `vendor:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: vendorListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.vendors.list(authorize(ctx, "vendor:read"), args, itemsQuery(ctx, info, "Vendor")),
  }),
);

builder.mutationField("updateVendor", (t) =>
  t.prismaField({
    type: "Vendor",
    description:
      "Change a vendor. An omitted argument keeps its value; null clears description, website and assigneeId. At least one argument besides id is needed. Needs `vendor:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The vendor id" }),
      name: t.arg.string(limited("New name; null is refused", commonLimits.name)),
      description: t.arg.string(limited("New description; null clears it", commonLimits.freeText)),
      status: t.arg({ type: VendorStatus, description: "New assessment status; null is refused" }),
      category: t.arg({ type: VendorCategory, description: "New category; null is refused" }),
      website: t.arg.string(limited("New website; null clears it", vendorLimits.website)),
      assigneeId: t.arg.id({
        description: "Member id of the new person responsible (an active member of the organization); null unassigns",
      }),
    },
    resolve: (query, _root, { id, ...args }, ctx) =>
      ctx.services.vendors.update(authorize(ctx, "vendor:update"), id, args, query),
  }),
);
