import { authorize } from "../../auth/actor.js";
import {
  PolicyStatus as PolicyStatusValues,
  PolicyVersionStatus as PolicyVersionStatusValues,
} from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { Node } from "../../graphql/node.schema.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs, searchField } from "../../graphql/page.schema.js";
import { NotFoundError } from "../../platform/errors.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { policyLimits, policyList, policyVersionList } from "./policies.service.js";

export const PolicyStatus = builder.enumType(PolicyStatusValues, {
  name: "PolicyStatus",
  description: "Where a policy stands in its review.",
  values: {
    draft: { description: "Not yet in force: no version has been published" },
    needs_review: { description: "A version waits for its approver" },
    published: { description: "In force: currentVersionId names the published version that applies; none is in review" },
  },
});
export const PolicyVersionStatus = builder.enumType(PolicyVersionStatusValues, {
  name: "PolicyVersionStatus",
  description: "Where a policy version stands in its review.",
  values: {
    draft: { description: "A working copy (new, or sent back by the approver): editable, not in force" },
    in_review: { description: "Submitted, waiting for its approver" },
    published: { description: "Approved text; never changes again. The policy's current version is a published one" },
  },
});

const policyVersionListArgs = listArgs("PolicyVersion", policyVersionList, {
  description: "Which versions of a policy a list shows.",
  fields: (t) => ({
    status: t.field({
      type: [PolicyVersionStatus],
      required: { list: false, items: true },
      ...anyOf("Only versions in these statuses"),
    }),
    ...dateBounds(t, "versions", false),
  }),
});

export const Policy = builder.prismaObject("Policy", {
  description: "A policy of the organization. Its text lives in versions; currentVersionId names the one in force.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Unique policy identifier" }),
    name: t.exposeString("name", { description: "Name, 1 to 255 characters" }),
    description: t.exposeString("description", {
      nullable: true,
      description: "What the policy covers, at most 10000 characters",
    }),
    status: t.expose("status", { type: PolicyStatus, description: "Whether the policy is published" }),
    currentVersionId: t.exposeID("currentVersionId", {
      nullable: true,
      description: "Id of the version in force; see policyVersions (GET /v1/policies/{id}/versions)",
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the policy was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the policy last changed" }),
    currentVersion: t.relation("currentVersion", {
      nullable: true,
      ...graphOnly,
      description: "The version in force; null while none is",
    }),
    versions: t.field({
      type: PolicyVersionConnection,
      ...graphOnly,
      description:
        "The policy's versions, filtered and sorted (default highest version number first), as the `policyVersions` query",
      args: policyVersionListArgs,
      resolve: (policy, args, ctx, info) =>
        ctx.loaders.policies.versionPages.load({ ...args, parent: [policy.id], query: itemsQuery(ctx, info, "PolicyVersion") }),
    }),
  }),
});

const PolicyVersion = builder.prismaObject("PolicyVersion", {
  description: "One numbered version of a policy's text.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Unique version identifier" }),
    version: t.exposeInt("version", { description: "The version number: per policy, from 1, consecutive, never reused" }),
    status: t.expose("status", { type: PolicyVersionStatus, description: "draft, in_review or published" }),
    approverId: t.exposeID("approverId", {
      nullable: true,
      description: "Member id of the approver named when the version was submitted; null before that",
    }),
    approver: t.relation("approver", {
      nullable: true,
      ...graphOnly,
      description:
        "The approver named when the version was submitted; null before that. Any credential reads its id and name; its other fields need `member:read`",
    }),
    rejectionReason: t.exposeString("rejectionReason", {
      nullable: true,
      description: "Why the approver sent the version back to draft; null unless it was rejected since its last submit",
    }),
    publishedAt: t.expose("publishedAt", {
      type: "DateTime",
      nullable: true,
      description: "When the version was approved and published; null until then",
    }),
    changelog: t.exposeString("changelog", { nullable: true, description: "What changed in this version" }),
    content: t.expose("content", { type: "JSON", description: "The policy text as a rich-text JSON document" }),
    sourceVersionId: t.exposeID("sourceVersionId", {
      nullable: true,
      description: "The version this one was copied from; null for version 1",
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the version was created" }),
    createdBy: t.prismaField({
      type: "Member",
      nullable: true,
      ...graphOnly,
      description:
        "The member who created the version; null when an API key alone created it (or for a user no longer a member). Any credential reads its id and name; its other fields need `member:read`",
      select: { createdByUserId: true },
      resolve: (query, version, _args, ctx) =>
        version.createdByUserId ? ctx.loaders.members.byUserId.load({ id: version.createdByUserId, query }) : null,
    }),
    submittedBy: t.prismaField({
      type: "Member",
      nullable: true,
      ...graphOnly,
      description:
        "The member who last submitted the version for review; null before a submit, or when an API key alone submitted it. Neither this member nor `createdBy` may approve it (four eyes). Any credential reads its id and name; its other fields need `member:read`",
      select: { submittedByUserId: true },
      resolve: (query, version, _args, ctx) =>
        version.submittedByUserId ? ctx.loaders.members.byUserId.load({ id: version.submittedByUserId, query }) : null,
    }),
    policy: t.relation("policy", { ...graphOnly, description: "The policy this is a version of" }),
    sourceVersion: t.prismaField({
      type: "PolicyVersion",
      nullable: true,
      ...graphOnly,
      description: "The version this one was copied from; null for version 1",
      resolve: (query, version, _args, ctx) =>
        version.sourceVersionId ? ctx.loaders.policies.versionById.load({ id: version.sourceVersionId, query }) : null,
    }),
  }),
});

const PolicyVersionConnection = defineConnection("PolicyVersion", PolicyVersion);

const PolicyVersionCreated = builder.objectRef<{ versionId: string; version: number }>("PolicyVersionCreated").implement({
  description: "The draft version just created.",
  fields: (t) => ({
    versionId: t.exposeID("versionId", { description: "Id of the new version (pv_...)" }),
    version: t.exposeInt("version", { description: "The version number: per policy, from 1, consecutive, never reused" }),
    policyVersion: t.prismaField({
      type: "PolicyVersion",
      ...graphOnly,
      description: "The version just created (GraphQL only: REST answers {versionId, version}). Needs `policy:read`",
      resolve: async (query, created, _args, ctx) => {
        authorize(ctx, "policy:read");
        const version = await ctx.loaders.policies.versionById.load({ id: created.versionId, query });
        if (!version) throw new NotFoundError("Policy version", created.versionId);
        return version;
      },
    }),
  }),
});

builder.mutationField("createPolicyVersion", (t) =>
  t.field({
    type: PolicyVersionCreated,
    description: "Create a new draft version of a policy, copying the source version's content. Needs `policy:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The policy id" }),
      sourceVersionId: t.arg.id(
        limited("Version to base the new one on; default: the policy's current version", commonLimits.id),
      ),
      changelog: t.arg.string(limited("What changes in this version", commonLimits.freeText)),
    },
    resolve: (_root, args, ctx) =>
      ctx.services.policies.createVersion(authorize(ctx, "policy:update"), args.id, {
        sourceVersionId: args.sourceVersionId,
        changelog: args.changelog,
      }),
  }),
);

builder.mutationField("createPolicy", (t) =>
  t.prismaField({
    type: "Policy",
    description:
      "Create a policy. It is published, with version 1 (published) holding `content` as its current version. Needs `policy:create`.",
    args: {
      name: t.arg.string({ required: true, ...limited("Name", commonLimits.name) }),
      description: t.arg.string(limited("What the policy covers", commonLimits.freeText)),
      content: t.arg({ type: "JSON", description: "The text of version 1: a rich-text JSON array or object; default []" }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.policies.create(authorize(ctx, "policy:create"), args, query),
  }),
);

builder.queryField("policy", (t) =>
  t.prismaField({
    type: "Policy",
    nullable: true,
    description:
      "Get a policy by id. Needs `policy:read`. Over GraphQL a missing or refused policy is null with its error; REST answers 404 or 403.",
    args: { id: t.arg.id({ required: true, description: "The policy id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.policies.get(authorize(ctx, "policy:read"), args.id, query),
  }),
);

builder.queryField("policyVersions", (t) =>
  t.field({
    type: PolicyVersionConnection,
    nullable: true,
    description:
      "The versions of a policy, filtered and sorted (default highest version number first), with their totalCount. Needs `policy:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: { id: t.arg.id({ required: true, description: "The policy id" }), ...policyVersionListArgs },
    resolve: (_root, args, ctx, info) =>
      ctx.services.policies.versions(authorize(ctx, "policy:read"), args, itemsQuery(ctx, info, "PolicyVersion")),
  }),
);

export const PolicyConnection = defineConnection("Policy", Policy);

export const policyListArgs = listArgs("Policy", policyList, {
  description: "Which policies a list shows.",
  fields: (t) => ({
    status: t.field({
      type: [PolicyStatus],
      required: { list: false, items: true },
      ...anyOf("Only policies in these statuses"),
    }),
    awaitingApprovalBy: t.id({
      description:
        'A member id: only policies with a version in review that names this member as its approver ("waiting for my approval")',
    }),
    ...dateBounds(t, "policies", true),
    search: searchField(t, "name"),
  }),
});

builder.queryField("policies", (t) =>
  t.field({
    type: PolicyConnection,
    nullable: true,
    description:
      "The organization's policies, filtered and sorted (default newest first), with their totalCount. Needs `policy:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: policyListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.policies.list(authorize(ctx, "policy:read"), args, itemsQuery(ctx, info, "Policy")),
  }),
);

builder.mutationField("updatePolicy", (t) =>
  t.prismaField({
    type: "Policy",
    description:
      "Change a policy's name or description; its text changes through new versions and their review. An omitted argument keeps its value; null clears the description. Needs `policy:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The policy id" }),
      name: t.arg.string(limited("New name; null is refused", commonLimits.name)),
      description: t.arg.string(limited("New description; null clears it", commonLimits.freeText)),
    },
    resolve: (query, _root, { id, ...args }, ctx) =>
      ctx.services.policies.update(authorize(ctx, "policy:update"), id, args, query),
  }),
);

builder.mutationField("submitPolicyVersion", (t) =>
  t.prismaField({
    type: "PolicyVersion",
    description:
      "Submit a draft version for review: it becomes in_review and the policy needs_review until the approver approves or rejects it. Needs `policy:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The policy id" }),
      versionId: t.arg.id({ required: true, description: "The draft version to submit" }),
      approverId: t.arg.id({
        required: true,
        description:
          "Member id of the approver: an active member of the organization whose role may update policies, and neither the version's creator nor its submitter (four eyes: 400 otherwise)",
      }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.policies.submitVersion(authorize(ctx, "policy:update"), args, query),
  }),
);

builder.mutationField("approvePolicyVersion", (t) =>
  t.prismaField({
    type: "PolicyVersion",
    description:
      "Approve a version in review: it is published and becomes the policy's current version. Only the approver named on submit, with a user credential, and never the version's creator or submitter (four eyes: 403). Needs `policy:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The policy id" }),
      versionId: t.arg.id({ required: true, description: "The version in review" }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.policies.approveVersion(authorize(ctx, "policy:update"), args, query),
  }),
);

builder.mutationField("rejectPolicyVersion", (t) =>
  t.prismaField({
    type: "PolicyVersion",
    description:
      "Reject a version in review: it goes back to draft with the reason. Only the approver named on submit, with a user credential, and never the version's creator or submitter (four eyes: 403). Needs `policy:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The policy id" }),
      versionId: t.arg.id({ required: true, description: "The version in review" }),
      reason: t.arg.string({ required: true, ...limited("Why the version goes back to draft", policyLimits.rejectionReason) }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.policies.rejectVersion(authorize(ctx, "policy:update"), args, query),
  }),
);

builder.subscriptionField("policyChanged", (t) =>
  t.prismaField({
    type: "Policy",
    description:
      "The policy as it is after each change: its name or description, a new version, a review step (submit, approve, reject). Server-sent events. Needs `policy:read`.",
    args: { id: t.arg.id({ required: true, description: "The policy id" }) },
    subscribe: (_root, args, ctx) => ctx.services.policies.subscribe(authorize(ctx, "policy:read"), args.id),
    resolve: (query, _event, args, ctx) => {
      const actor = authorize(ctx, "policy:read");
      return ctx.services.policies.get(actor, args.id, query);
    },
  }),
);
