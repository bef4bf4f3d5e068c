import { authorize, can } from "../../auth/actor.js";
import {
  RiskCategory as RiskCategoryValues,
  RiskStatus as RiskStatusValues,
  RiskTreatment as RiskTreatmentValues,
} from "../../generated/prisma/enums.js";
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
import { riskLimits, riskList } from "./risks.service.js";

export const RiskStatus = builder.enumType(RiskStatusValues, {
  name: "RiskStatus",
  description: "Where a risk stands",
  values: {
    open: { description: "Identified and not yet dealt with (the default)" },
    pending: { description: "A treatment is under way" },
    closed: { description: "Dealt with" },
    archived: { description: "No longer relevant; kept for the record" },
  },
});

export const RiskCategory = builder.enumType(RiskCategoryValues, {
  name: "RiskCategory",
  description: "The area a risk belongs to",
  values: {
    operations: { description: "Operations" },
    technology: { description: "Technology" },
    legal: { description: "Legal and regulatory" },
    finance: { description: "Finance" },
    people: { description: "People" },
    other: { description: "Anything else (the default)" },
  },
});

export const RiskTreatment = builder.enumType(RiskTreatmentValues, {
  name: "RiskTreatment",
  description: "How the organization deals with a risk",
  values: {
    accept: { description: "Accept it as it is" },
    mitigate: { description: "Reduce its likelihood or impact" },
    transfer: { description: "Pass it on, e.g. to an insurer or a vendor" },
    avoid: { description: "Stop the activity that causes it" },
  },
});

const Risk = builder.prismaObject("Risk", {
  description: "A risk the organization tracks.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Risk id" }),
    title: t.exposeString("title", { description: "The risk's title" }),
    description: t.exposeString("description", { nullable: true, description: "Longer text; null when not set" }),
    status: t.expose("status", { type: RiskStatus, description: "Where the risk stands" }),
    category: t.expose("category", { type: RiskCategory, description: "The area the risk belongs to" }),
    likelihood: t.exposeInt("likelihood", { description: "How likely the risk is, 1 (rare) to 5 (almost certain)" }),
    impact: t.exposeInt("impact", { description: "How bad it would be, 1 (negligible) to 5 (severe)" }),
    score: t.exposeInt("score", { description: "likelihood x impact, 1 to 25; derived, never written" }),
    treatment: t.expose("treatment", {
      type: RiskTreatment,
      nullable: true,
      description: "How the risk is dealt with; null until decided",
    }),
    assigneeId: t.exposeID("assigneeId", {
      nullable: true,
      description: "Member id of the person responsible (the risk owner); null when unassigned",
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
      status: t.arg({ type: RiskStatus, description: "Status; default open" }),
      category: t.arg({ type: RiskCategory, description: "Category; default other" }),
      likelihood: t.arg.int(limited("Likelihood; default 1", riskLimits.rating)),
      impact: t.arg.int(limited("Impact; default 1", riskLimits.rating)),
      treatment: t.arg({ type: RiskTreatment, description: "Treatment; default none" }),
      assigneeId: t.arg.id({ description: "Member id of the person responsible: an active member of the organization" }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.risks.create(authorize(ctx, "risk:create"), args, query),
  }),
);

const RiskConnection = defineConnection("Risk", Risk);

const riskListArgs = listArgs("Risk", riskList, {
  description: "Which risks a list shows.",
  fields: (t) => ({
    status: t.field({ type: [RiskStatus], required: { list: false, items: true }, ...anyOf("Only risks in these statuses") }),
    category: t.field({
      type: [RiskCategory],
      required: { list: false, items: true },
      ...anyOf("Only risks of these categories"),
    }),
    assigneeId: assigneeField(t),
    minScore: t.int(limited("Only risks whose score is at least this", riskLimits.score)),
    ...dateBounds(t, "risks", true),
    search: searchField(t, "title"),
  }),
});

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
    type: RiskConnection,
    nullable: true,
    description:
      "The organization's risks, filtered and sorted (default newest first), with their totalCount. Needs `risk:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: riskListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.risks.list(authorize(ctx, "risk:read"), args, itemsQuery(ctx, info, "Risk")),
  }),
);

builder.mutationField("updateRisk", (t) =>
  t.prismaField({
    type: "Risk",
    description:
      "Change a risk. An omitted argument keeps its value; null clears description, treatment and assigneeId. The score follows likelihood and impact. At least one argument besides id is needed. Needs `risk:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The risk id" }),
      title: t.arg.string(limited("New title; null is refused", commonLimits.name)),
      description: t.arg.string(limited("New description; null clears it", commonLimits.freeText)),
      status: t.arg({ type: RiskStatus, description: "New status; null is refused" }),
      category: t.arg({ type: RiskCategory, description: "New category; null is refused" }),
      likelihood: t.arg.int(limited("New likelihood; null is refused", riskLimits.rating)),
      impact: t.arg.int(limited("New impact; null is refused", riskLimits.rating)),
      treatment: t.arg({ type: RiskTreatment, description: "New treatment; null clears it" }),
      assigneeId: t.arg.id({
        description: "Member id of the new person responsible (an active member of the organization); null unassigns",
      }),
    },
    resolve: (query, _root, { id, ...args }, ctx) => ctx.services.risks.update(authorize(ctx, "risk:update"), id, args, query),
  }),
);
