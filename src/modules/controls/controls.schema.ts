import type { GraphQLResolveInfo } from "graphql";
import { authenticated, authorize } from "../../auth/actor.js";
import { builder } from "../../graphql/builder.js";
import type { Context } from "../../graphql/context.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs, searchField } from "../../graphql/page.schema.js";
import { commonLimits, limited, listLimits } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { ControlState, RequirementConnection, requirementListArgs } from "../frameworks/frameworks.schema.js";
import { Member } from "../members/members.schema.js";
import { PolicyConnection, policyListArgs } from "../policies/policies.schema.js";
import { TaskConnection, taskListArgs } from "../tasks/tasks.schema.js";
import { controlLimits, controlList, type DeletedControl } from "./controls.service.js";

export const Control = builder.prismaObject("Control", {
  description:
    "One of the organization's own controls: what it does to meet requirements, backed by policies, tasks and evidence.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Control id (ctl_...)" }),
    code: t.exposeString("code", { description: "Unique in the organization, e.g. AC-01" }),
    name: t.exposeString("name", { description: "The control's name" }),
    description: t.exposeString("description", { nullable: true, description: "Longer text; null when not set" }),
    ownerId: t.exposeID("ownerId", { nullable: true, description: "Member id of the control's owner; null when none" }),
    evidenceEveryDays: t.exposeInt("evidenceEveryDays", {
      nullable: true,
      description: "How old, in days, the newest accepted evidence may be; null when no evidence is required",
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the control was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the control last changed" }),
    // Joined into the parent's statement, as Task.assignee is.
    owner: t.field({
      type: Member,
      nullable: true,
      ...graphOnly,
      description:
        "The member who owns the control; null when none. Any credential reads its id and name; its other fields need `member:read`. Not in REST answers.",
      select: (_args, _ctx, nestedSelection) => ({ owner: nestedSelection(true) }),
      resolve: (parent) => (parent as { owner?: unknown }).owner as never,
    }),
    requirements: t.field({
      type: RequirementConnection,
      ...graphOnly,
      description:
        "The requirements the control is mapped to, of any framework, filtered as a framework's (default: in the order they were mapped). Not in REST answers.",
      args: requirementListArgs,
      resolve: (control, args, ctx, info) =>
        ctx.loaders.controls.requirements.load({ ...args, parent: [control.id], query: itemsQuery(ctx, info, "Requirement") }),
    }),
    policies: t.field({
      type: PolicyConnection,
      nullable: true,
      ...graphOnly,
      description:
        "The policies linked to the control, filtered and sorted as `policies` (default newest first). Needs `policy:read`: without it, null with FORBIDDEN here. Not in REST answers.",
      args: policyListArgs,
      resolve: (control, args, ctx, info) => {
        authorize(ctx, "policy:read");
        return ctx.loaders.controls.policies.load({ ...args, parent: [control.id], query: itemsQuery(ctx, info, "Policy") });
      },
    }),
    tasks: t.field({
      type: TaskConnection,
      nullable: true,
      ...graphOnly,
      description:
        "The tasks linked to the control, filtered and sorted as `tasks` (default newest first). Needs `task:read`: without it, null with FORBIDDEN here. Not in REST answers.",
      args: taskListArgs,
      resolve: (control, args, ctx, info) => {
        authorize(ctx, "task:read");
        return ctx.loaders.controls.tasks.load({ ...args, parent: [control.id], query: itemsQuery(ctx, info, "Task") });
      },
    }),
  }),
});

const ControlConnection = defineConnection("Control", Control);

const controlListArgs = listArgs("Control", controlList, {
  description: "Which controls a list shows.",
  fields: (t) => ({
    ownerId: t.idList({
      required: { list: false, items: false },
      ...limited(
        "Only controls owned by one of these members; a null element (REST: none) also matches controls without an owner",
        listLimits.values,
      ),
    }),
    frameworkId: t.idList({
      required: { list: false, items: true },
      ...limited("Only controls mapped to a requirement of one of these frameworks", listLimits.values),
    }),
    state: t.field({
      type: [ControlState],
      required: { list: false, items: true },
      ...anyOf("Only controls in these states now (readiness)"),
    }),
    evidenceDueBefore: t.field({
      type: "DateTime",
      description:
        "Only controls whose accepted evidence stops counting (evidenceDueAt) strictly before this instant; a control without one never matches",
    }),
    ...dateBounds(t, "controls", true),
    search: searchField(t, "code or name"),
  }),
});

/** The controls a task or policy backs, with `control:read` (a control's owner reads theirs through `controls`). */
const backedControls = (what: string, loader: "ofTask" | "ofPolicy") =>
  ({
    type: ControlConnection,
    nullable: true,
    ...graphOnly,
    description: `The controls this ${what} backs, filtered and sorted as \`controls\` (default newest first). Needs \`control:read\`: without it, null with FORBIDDEN here. Not in REST answers.`,
    args: controlListArgs,
    resolve: (parent: { id: string }, args: object, ctx: Context, info: GraphQLResolveInfo) => {
      authorize(ctx, "control:read");
      return ctx.loaders.controls[loader].load({ ...args, parent: [parent.id], query: itemsQuery(ctx, info, "Control") });
    },
  }) as never;

builder.prismaObjectField("Task", "controls", (t) => t.field(backedControls("task", "ofTask")));
builder.prismaObjectField("Policy", "controls", (t) => t.field(backedControls("policy", "ofPolicy")));

const DeleteControlPayload = builder.objectRef<DeletedControl>("DeleteControlPayload").implement({
  description: "A deleted control: its id, to evict it from a cache.",
  fields: (t) => ({
    deletedId: t.exposeID("deletedId", { description: "Id of the deleted control" }),
  }),
});

const readers =
  "Needs `control:read`; a member without it (an employee, a contractor) reads the controls they own, and any other control is a 404 to them.";

builder.queryField("control", (t) =>
  t.prismaField({
    type: "Control",
    nullable: true,
    description: `Get a control by id. ${readers} Over GraphQL a missing or refused control is null with its error; REST answers 404 or 403.`,
    args: { id: t.arg.id({ required: true, description: "The control id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.controls.get(authenticated(ctx), args.id, query),
  }),
);

builder.queryField("controls", (t) =>
  t.field({
    type: ControlConnection,
    nullable: true,
    description: `The organization's controls, filtered and sorted (default newest first), with their totalCount. ${readers} Over GraphQL a refused list is null with its error; REST answers 403.`,
    args: controlListArgs,
    resolve: (_root, args, ctx, info) => ctx.services.controls.list(authenticated(ctx), args, itemsQuery(ctx, info, "Control")),
  }),
);

const updaters = "Needs `control:update`.";

builder.mutationField("createControl", (t) =>
  t.prismaField({
    type: "Control",
    description: `Create a control; its code must be unique in the organization (409 otherwise). ${updaters}`,
    args: {
      code: t.arg.string({ required: true, ...limited("Code, unique in the organization", controlLimits.code) }),
      name: t.arg.string({ required: true, ...limited("Name", commonLimits.name) }),
      description: t.arg.string(limited("Longer text", commonLimits.freeText)),
      ownerId: t.arg.id({ description: "Member id of the owner: an active member of the organization" }),
      evidenceEveryDays: t.arg.int(
        limited("How old, in days, the newest accepted evidence may be; default none", controlLimits.evidenceEveryDays),
      ),
    },
    resolve: (query, _root, args, ctx) => ctx.services.controls.create(authorize(ctx, "control:update"), args, query),
  }),
);

builder.mutationField("updateControl", (t) =>
  t.prismaField({
    type: "Control",
    description: `Change a control. An omitted argument keeps its value; null clears description, ownerId and evidenceEveryDays. At least one argument besides id is needed. ${updaters}`,
    args: {
      id: t.arg.id({ required: true, description: "The control id" }),
      code: t.arg.string(limited("New code, unique in the organization; null is refused", controlLimits.code)),
      name: t.arg.string(limited("New name; null is refused", commonLimits.name)),
      description: t.arg.string(limited("New description; null clears it", commonLimits.freeText)),
      ownerId: t.arg.id({ description: "Member id of the new owner (an active member of the organization); null clears it" }),
      evidenceEveryDays: t.arg.int(limited("New evidence period in days; null clears it", controlLimits.evidenceEveryDays)),
    },
    resolve: (query, _root, { id, ...args }, ctx) =>
      ctx.services.controls.update(authorize(ctx, "control:update"), id, args, query),
  }),
);

builder.mutationField("deleteControl", (t) =>
  t.field({
    type: DeleteControlPayload,
    description: `Delete a control with its maps, links and evidence (the evidence files' objects are deleted once the deletion has committed); over REST, 204. ${updaters}`,
    args: { id: t.arg.id({ required: true, description: "The control id" }) },
    resolve: (_root, args, ctx) => ctx.services.controls.delete(authorize(ctx, "control:update"), args.id),
  }),
);

builder.mutationField("mapControl", (t) =>
  t.prismaField({
    type: "Control",
    description: `Map a control to requirements of any framework the organization sees (shipped, or its own); requirements already mapped stay (idempotent). Answers the control. Another organization's requirement is a 404. ${updaters}`,
    args: {
      controlId: t.arg.id({ required: true, description: "The control id" }),
      requirementIds: t.arg.idList({ required: true, ...limited("Requirement ids", controlLimits.requirementIds) }),
    },
    resolve: (query, _root, args, ctx) =>
      ctx.services.controls.map(authorize(ctx, "control:update"), args.controlId, args.requirementIds, query),
  }),
);

builder.mutationField("unmapControl", (t) =>
  t.prismaField({
    type: "Control",
    description: `Remove a control's map to one requirement (404 when it is not mapped). Answers the control. ${updaters}`,
    args: {
      controlId: t.arg.id({ required: true, description: "The control id" }),
      requirementId: t.arg.id({ required: true, description: "The requirement id" }),
    },
    resolve: (query, _root, args, ctx) =>
      ctx.services.controls.unmap(authorize(ctx, "control:update"), args.controlId, args.requirementId, query),
  }),
);

const linkArgs = (t: Parameters<Parameters<typeof builder.mutationField>[1]>[0], verb: string) => ({
  controlId: t.arg.id({ required: true, description: "The control id" }),
  policyIds: t.arg.idList({ ...limited(`Policy ids to ${verb}`, controlLimits.policyIds) }),
  taskIds: t.arg.idList({ ...limited(`Task ids to ${verb}`, controlLimits.taskIds) }),
});

builder.mutationField("linkControl", (t) =>
  t.prismaField({
    type: "Control",
    description: `Link policies and tasks of the organization to a control; links already there stay (idempotent). Another organization's id is a 404. Answers the control. ${updaters}`,
    args: linkArgs(t, "link"),
    resolve: (query, _root, { controlId, ...args }, ctx) =>
      ctx.services.controls.link(authorize(ctx, "control:update"), controlId, args, query),
  }),
);

builder.mutationField("unlinkControl", (t) =>
  t.prismaField({
    type: "Control",
    description: `Remove links to policies and tasks; ids not linked are left alone, another organization's are a 404. Answers the control. ${updaters}`,
    args: linkArgs(t, "unlink"),
    resolve: (query, _root, { controlId, ...args }, ctx) =>
      ctx.services.controls.unlink(authorize(ctx, "control:update"), controlId, args, query),
  }),
);
