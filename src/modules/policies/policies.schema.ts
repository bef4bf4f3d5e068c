import { builder } from "../../builder.js";
import { authorize } from "../../context.js";
import {
  PolicyStatus as PolicyStatusValues,
  PolicyVersionStatus as PolicyVersionStatusValues,
} from "../../generated/prisma/enums.js";
import { commonLimits, limited } from "../../limits.js";
import { definePage, itemsQuery, pageArgs } from "../../page.schema.js";

export const PolicyStatus = builder.enumType(PolicyStatusValues, {
  name: "PolicyStatus",
  description: "Whether a policy is published.",
  values: {
    draft: { description: "Not yet in force: no version has been published" },
    published: { description: "In force: currentVersionId names the published version that applies" },
  },
});
export const PolicyVersionStatus = builder.enumType(PolicyVersionStatusValues, {
  name: "PolicyVersionStatus",
  description: "Whether a policy version is a draft or published.",
  values: {
    draft: { description: "A working copy: editable, not in force" },
    published: { description: "Approved text; the policy's current version is a published one" },
  },
});

builder.prismaObject("Policy", {
  description: "A policy of the organization. Its text lives in versions; currentVersionId names the one in force.",
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
  }),
});

const PolicyVersion = builder.prismaObject("PolicyVersion", {
  description: "One numbered version of a policy's text.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Unique version identifier" }),
    version: t.exposeInt("version", { description: "The version number: per policy, from 1, consecutive, never reused" }),
    status: t.expose("status", { type: PolicyVersionStatus, description: "Draft or published" }),
    changelog: t.exposeString("changelog", { nullable: true, description: "What changed in this version" }),
    content: t.expose("content", { type: "JSON", description: "The policy text as a rich-text JSON document" }),
    sourceVersionId: t.exposeID("sourceVersionId", {
      nullable: true,
      description: "The version this one was copied from; null for version 1",
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the version was created" }),
  }),
});

const PolicyVersionPage = definePage("PolicyVersion", PolicyVersion);

const PolicyVersionCreated = builder.objectRef<{ versionId: string; version: number }>("PolicyVersionCreated").implement({
  description: "The draft version just created.",
  fields: (t) => ({
    versionId: t.exposeID("versionId", { description: "Id of the new version (pv_...)" }),
    version: t.exposeInt("version", { description: "The version number: per policy, from 1, consecutive, never reused" }),
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
    description: "Get a policy by id. Needs `policy:read`.",
    args: { id: t.arg.id({ required: true, description: "The policy id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.policies.get(authorize(ctx, "policy:read"), args.id, query),
  }),
);

builder.queryField("policyVersions", (t) =>
  t.field({
    type: PolicyVersionPage,
    description: "The versions of a policy, highest version number first. Needs `policy:read`.",
    args: { id: t.arg.id({ required: true, description: "The policy id" }), ...pageArgs },
    resolve: (_root, args, ctx, info) =>
      ctx.services.policies.versions(authorize(ctx, "policy:read"), args, itemsQuery(ctx, info, "PolicyVersion")),
  }),
);
