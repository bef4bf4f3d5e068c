import { authorize } from "../../auth/actor.js";
import { builder } from "../../graphql/builder.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs, searchField } from "../../graphql/page.schema.js";
import { selectsScalarsOnly } from "../../platform/db/graph-reader.js";
import { NotFoundError } from "../../platform/errors.js";
import { commonLimits, limited, listLimits } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { frameworkLimits, frameworkList, requirementList } from "./frameworks.service.js";

/** How many controls of a requirement the query cost estimate counts (query-cost.ts). */
export const REQUIREMENT_CONTROLS_COST = 10;

export const RequirementState = builder.enumType("RequirementState", {
  description: "Where a requirement of an adopted framework stands (contract section 16)",
  values: {
    not_applicable: { description: "Marked not applicable in the statement of applicability, with a justification" },
    unmapped: { description: "No control maps to it, and no mapping gives it a state" },
    ready: { description: "Every control mapped to it is ready" },
    partial: { description: "Some of the controls mapped to it are ready (or a subset/intersect mapping caps it here)" },
    not_ready: { description: "None of the controls mapped to it is ready" },
  },
});

export const ControlState = builder.enumType("ControlState", {
  description: "Whether a control is ready (contract section 16)",
  values: {
    ready: {
      description:
        "It has a linked policy, task or accepted evidence; every linked policy has a published current version, every linked task is done, and evidence, when required, is valid",
    },
    not_ready: { description: "Anything else: its reasons say what is missing" },
  },
});

export const Framework = builder.prismaObject("Framework", {
  description:
    "A catalog of requirements the organization can work toward: shipped with the service (the same for every organization) or the organization's own.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Framework id (fw_...)" }),
    key: t.exposeString("key", { description: "Unique among the frameworks an organization sees, e.g. nist-sp-800-53-rev5" }),
    name: t.exposeString("name", { description: "The framework's name" }),
    version: t.exposeString("version", { description: "The catalog's version; a new version is a new framework" }),
    source: t.exposeString("source", { nullable: true, description: "Who publishes it, with a URL" }),
    license: t.exposeString("license", { nullable: true, description: "The licence of the catalog's content" }),
    custom: t.boolean({
      description: "True for the organization's own framework; false for one shipped with the service",
      select: { organizationId: true },
      resolve: (framework) => framework.organizationId !== null,
    }),
    requirementCount: t.exposeInt("requirementCount", { description: "How many requirements it has, groups included" }),
    adopted: t.boolean({
      description: "Whether the organization works toward it (adoptFramework)",
      resolve: (framework, _args, ctx) => ctx.loaders.frameworks.adopted.load(framework.id),
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the framework was installed or imported" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the framework last changed" }),
  }),
});

export const Requirement = builder.prismaObject("Requirement", {
  description: "One requirement of a framework, or a group of them (a family, a category).",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Requirement id (req_...)" }),
    frameworkId: t.exposeID("frameworkId", { description: "The framework it belongs to" }),
    ref: t.exposeString("ref", { description: "The catalog's own id: AC-2, AC-2(1), A.5.15, CC6.1, GV.OC-01" }),
    title: t.exposeString("title", { description: "A short title" }),
    description: t.exposeString("description", {
      nullable: true,
      description: "The standard's text; null in a shipped outline until an operator imports the full catalog",
    }),
    parentId: t.exposeID("parentId", { nullable: true, description: "The group or control it belongs to; null at the top" }),
    assessable: t.exposeBoolean("assessable", { description: "False for groups and families, which are not assessed" }),
    position: t.exposeInt("position", { description: "Its place in the catalog's order" }),
    framework: t.field({
      type: Framework,
      ...graphOnly,
      description: "The framework it belongs to",
      select: { frameworkId: true },
      resolve: async (requirement, _args, ctx) =>
        (await ctx.loaders.frameworks.byId.load({ id: requirement.frameworkId })) as NonNullable<unknown> as never,
    }),
    applicability: t.field({
      type: Applicability,
      nullable: true,
      description:
        "Whether it applies to the organization (the statement of applicability): applicable unless setRequirementApplicability said otherwise. Null for a group and in a framework not adopted",
      select: { frameworkId: true, assessable: true },
      resolve: async (requirement, _args, ctx) => {
        if (!requirement.assessable || !(await ctx.loaders.frameworks.adopted.load(requirement.frameworkId))) return null;
        return (await ctx.loaders.frameworks.applicability.load(requirement.id)) ?? { applicable: true, justification: null };
      },
    }),
  }),
});

builder.prismaObjectField(Requirement, "parent", (t) =>
  t.field({
    type: Requirement,
    nullable: true,
    ...graphOnly,
    description: "The group or control it belongs to; null at the top",
    select: { parentId: true },
    resolve: (requirement, _args, ctx) =>
      requirement.parentId ? (ctx.loaders.frameworks.requirementById.load({ id: requirement.parentId }) as never) : null,
  }),
);

const Applicability = builder
  .objectRef<{ applicable: boolean; justification: string | null }>("RequirementApplicability")
  .implement({
    description: "A requirement's line in the statement of applicability",
    fields: (t) => ({
      applicable: t.exposeBoolean("applicable", { description: "Whether the requirement applies to the organization" }),
      justification: t.exposeString("justification", {
        nullable: true,
        description: "Why it does (or does not) apply; always given when not applicable",
      }),
    }),
  });

const FrameworkConnection = defineConnection("Framework", Framework);
export const RequirementConnection = defineConnection("Requirement", Requirement);

const frameworkListArgs = listArgs("Framework", frameworkList, {
  description: "Which frameworks a list shows.",
  fields: (t) => ({
    adopted: t.boolean({ description: "Only frameworks the organization adopted (true) or not (false)" }),
    ...dateBounds(t, "frameworks", true),
    search: searchField(t, "key or name"),
  }),
});

export const requirementListArgs = listArgs("Requirement", requirementList, {
  description: "Which requirements of a framework a list shows.",
  fields: (t) => ({
    status: t.field({
      type: [RequirementState],
      required: { list: false, items: true },
      ...anyOf("Only requirements in these states (an adopted framework's assessable requirements)"),
    }),
    applicable: t.boolean({
      description: "Only requirements that apply to the organization (true) or were marked not applicable (false)",
    }),
    parentId: t.idList({
      required: { list: false, items: false },
      ...limited(
        "Only requirements under one of these groups or controls; a null element (REST: none) also matches those at the top",
        listLimits.values,
      ),
    }),
    assessable: t.boolean({ description: "Only requirements that are assessed (true) or only groups (false)" }),
    search: searchField(t, "ref or title"),
  }),
});

builder.prismaObjectField(Framework, "requirements", (t) =>
  t.field({
    type: RequirementConnection,
    ...graphOnly,
    description:
      "The framework's requirements in catalog order (position), filtered, as frameworkRequirements (GET /v1/frameworks/{id}/requirements)",
    args: requirementListArgs,
    resolve: (framework, args, ctx, info) =>
      ctx.loaders.frameworks.requirementPages.load({
        ...args,
        parent: [framework.id],
        query: itemsQuery(ctx, info, "Requirement"),
      }),
  }),
);

builder.queryField("frameworks", (t) =>
  t.field({
    type: FrameworkConnection,
    nullable: true,
    description:
      "The frameworks the organization sees (those shipped with the service and its own), filtered and sorted (default newest first), with their totalCount. Needs `framework:read`. Over GraphQL a refused list is null with its error; REST answers 403.",
    args: frameworkListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.frameworks.list(authorize(ctx, "framework:read"), args, itemsQuery(ctx, info, "Framework")),
  }),
);

builder.queryField("framework", (t) =>
  t.prismaField({
    type: "Framework",
    nullable: true,
    description:
      "A framework by id: shipped, or the organization's own (another organization's is not found). Needs `framework:read`. Over GraphQL a missing or refused framework is null with its error; REST answers 404 or 403.",
    args: { id: t.arg.id({ required: true, description: "The framework id" }) },
    resolve: async (query, _root, args, ctx) => {
      const actor = authorize(ctx, "framework:read");
      if (!selectsScalarsOnly(query)) return ctx.services.frameworks.get(actor, args.id, query);
      // Its scalar fields alone (a framework's page): the row and its adoption in one statement.
      const framework = await ctx.loaders.frameworks.withAdoption.load(args.id);
      if (!framework) throw new NotFoundError("Framework", args.id);
      return framework;
    },
  }),
);

builder.queryField("frameworkRequirements", (t) =>
  t.field({
    type: RequirementConnection,
    nullable: true,
    description:
      "A framework's requirements in catalog order, filtered, with their totalCount (as Framework.requirements). Needs `framework:read`. Over GraphQL a refused list is null with its error; REST answers 404 or 403.",
    args: { id: t.arg.id({ required: true, description: "The framework id" }), ...requirementListArgs },
    resolve: (_root, { id, ...args }, ctx, info) =>
      ctx.services.frameworks.requirements(authorize(ctx, "framework:read"), id, args, itemsQuery(ctx, info, "Requirement")),
  }),
);

builder.mutationField("adoptFramework", (t) =>
  t.prismaField({
    type: "Framework",
    description:
      "Work toward a framework: its requirements become applicable and its readiness is shown. Adopting one already adopted changes nothing. Needs `framework:manage`.",
    args: { frameworkId: t.arg.id({ required: true, ...limited("The framework id", commonLimits.id) }) },
    resolve: (query, _root, args, ctx) =>
      ctx.services.frameworks.adopt(authorize(ctx, "framework:manage"), args.frameworkId, query),
  }),
);

builder.mutationField("withdrawFramework", (t) =>
  t.prismaField({
    type: "Framework",
    description:
      "Stop working toward a framework: its readiness and statement of applicability are no longer shown; controls, their maps and links stay, and adopting it again restores its statement of applicability. Withdrawing one not adopted changes nothing. Needs `framework:manage`.",
    args: { frameworkId: t.arg.id({ required: true, ...limited("The framework id", commonLimits.id) }) },
    resolve: (query, _root, args, ctx) =>
      ctx.services.frameworks.withdraw(authorize(ctx, "framework:manage"), args.frameworkId, query),
  }),
);

builder.mutationField("setRequirementApplicability", (t) =>
  t.prismaField({
    type: "Requirement",
    description:
      "Say whether a requirement of an adopted framework applies to the organization (the statement of applicability). `justification` is required when it does not. A group takes none (400: set its requirements); a framework not adopted is a 409. Needs `framework:manage`.",
    args: {
      requirementId: t.arg.id({ required: true, ...limited("The requirement id", commonLimits.id) }),
      applicable: t.arg.boolean({ required: true, description: "Whether the requirement applies" }),
      justification: t.arg.string(
        limited("Why it does or does not apply; required when not applicable", frameworkLimits.justification),
      ),
    },
    resolve: (query, _root, { requirementId, ...args }, ctx) =>
      ctx.services.frameworks.setApplicability(authorize(ctx, "framework:manage"), requirementId, args, query),
  }),
);
