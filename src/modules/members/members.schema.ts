import type { GraphQLResolveInfo } from "graphql";
import { authenticated, authorize, can } from "../../auth/actor.js";
import { Department as DepartmentValues, MemberRole as MemberRoleValues } from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import type { Context } from "../../graphql/context.js";
import { Node } from "../../graphql/node.schema.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs, searchField } from "../../graphql/page.schema.js";
import { ForbiddenError } from "../../platform/errors.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly, nonNullOverRest } from "../../rest/rest-schema.js";
import { memberLimits, memberList } from "./members.service.js";

export const MemberRole = builder.enumType(MemberRoleValues, {
  name: "MemberRole",
  description:
    "What a member may do: owner and admin everything, auditor read and comment, employee and contractor read tasks and comment",
  values: {
    owner: { description: "Everything, including making others owners; an organization always keeps one active owner" },
    admin: { description: "Everything, except making someone an owner or changing an owner" },
    auditor: { description: "Reads everything and comments; changes nothing else" },
    employee: { description: "Reads tasks and comments, and writes comments" },
    contractor: {
      description: "Like employee (reads tasks and comments, writes comments), for people from outside the organization",
    },
  },
});
export const Department = builder.enumType(DepartmentValues, {
  name: "Department",
  description: "The member's department",
  values: {
    none: { description: "No department (the default)" },
    admin: { description: "Administration" },
    gov: { description: "Governance (governance, risk and compliance)" },
    hr: { description: "Human resources" },
    it: { description: "Information technology" },
    itsm: { description: "IT service management" },
    qms: { description: "Quality management (quality management system)" },
  },
});

const User = builder.prismaObject("User", {
  description: "A person's account; one user can be a member of several organizations.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "User id" }),
    name: t.exposeString("name", { description: "The person's name" }),
    email: t.exposeString("email", { description: "E-mail address, lower-case" }),
    emailVerified: t.exposeBoolean("emailVerified", { description: "True once the address has been confirmed" }),
    image: t.exposeString("image", { nullable: true, description: "URL of the user's picture" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the account was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the account last changed" }),
    lastLogin: t.expose("lastLogin", { type: "DateTime", nullable: true, description: "Last sign-in; null if never" }),
  }),
});

/**
 * The directory: any credential of the organization reads a member's id and name (who is assigned,
 * who approves, who wrote). The rest of a member needs `member:read`, except the caller's own
 * membership, and the member a mutation answers to a caller allowed to write members.
 */
function mayReadMember(ctx: Context, member: { userId: string }, info: GraphQLResolveInfo): boolean {
  if (can(ctx, "member:read")) return true;
  if ("caller" in ctx.auth && ctx.auth.caller.userId !== null && ctx.auth.caller.userId === member.userId) return true;
  return info.operation.operation === "mutation" && (can(ctx, "member:update") || can(ctx, "member:create"));
}

/** A field beyond the directory: its value, or FORBIDDEN at its path. */
function guarded<T>(ctx: Context, member: { userId: string }, info: GraphQLResolveInfo, value: T): T {
  if (!mayReadMember(ctx, member, info)) {
    throw new ForbiddenError(`Reading ${info.fieldName} of a member needs the permission member:read`);
  }
  return value;
}

const beyondDirectory = "Needs `member:read` (or being this member): without it, null with FORBIDDEN here";

export const Member = builder.prismaObject("Member", {
  description: `A person's membership of the organization. Any credential of the organization reads its id and name (a directory); ${beyondDirectory.replace("Needs", "the other fields need")}.`,
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Member id" }),
    name: t.string({
      ...graphOnly,
      description: "The person's display name (their user's name); readable by any credential of the organization",
      select: { user: { select: { name: true } } },
      resolve: (member) => member.user.name,
    }),
    organizationId: t.id({
      nullable: true,
      ...nonNullOverRest,
      description: `The organization. ${beyondDirectory}`,
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.organizationId),
    }),
    userId: t.id({
      nullable: true,
      ...nonNullOverRest,
      description: `The member's user account. ${beyondDirectory}`,
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.userId),
    }),
    role: t.field({
      type: MemberRole,
      nullable: true,
      ...nonNullOverRest,
      description: `The member's role in the organization. ${beyondDirectory}`,
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.role),
    }),
    createdAt: t.field({
      type: "DateTime",
      nullable: true,
      ...nonNullOverRest,
      description: `When the person joined the organization. ${beyondDirectory}`,
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.createdAt),
    }),
    department: t.field({
      type: Department,
      nullable: true,
      ...nonNullOverRest,
      description: `The member's department; none by default. ${beyondDirectory}`,
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.department),
    }),
    jobTitle: t.string({
      nullable: true,
      description: `Job title; null when not set. ${beyondDirectory}`,
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.jobTitle),
    }),
    isActive: t.boolean({
      nullable: true,
      ...nonNullOverRest,
      description: `False once the member is deactivated: they can no longer sign in here. ${beyondDirectory}`,
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.isActive),
    }),
    deviceLabelId: t.int({
      nullable: true,
      description: `Label of the member's managed devices in the device-management system; null when unlinked. ${beyondDirectory}`,
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.deviceLabelId),
    }),
    user: t.field({
      type: User,
      nullable: true,
      ...nonNullOverRest,
      description: `The member's user account. ${beyondDirectory}`,
      select: (_args, _ctx, nestedSelection) => ({ user: nestedSelection(true) }),
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.user),
    }),
    devices: t.field({
      type: [Device],
      nullable: true,
      ...graphOnly,
      description: `The member's managed devices, oldest first. ${beyondDirectory}`,
      select: (_args, _ctx, nestedSelection) => ({
        devices: nestedSelection({ orderBy: [{ createdAt: "asc" }, { id: "asc" }] }),
      }),
      resolve: (m, _a, ctx, info) => guarded(ctx, m, info, m.devices),
    }),
  }),
});

const Device = builder.prismaObject("Device", {
  description: "A managed device of a member.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Device id" }),
    name: t.exposeString("name", { description: "The device's name" }),
    platform: t.exposeString("platform", {
      nullable: true,
      description: "Operating system, e.g. macos, linux; null when unknown",
    }),
    serialNumber: t.exposeString("serialNumber", { nullable: true, description: "Serial number; null when unknown" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the device was registered" }),
  }),
});

builder.mutationField("unlinkDevice", (t) =>
  t.prismaField({
    type: "Member",
    description:
      "Unlink the member's managed devices: clears deviceLabelId and removes their device records (and, when configured, their hosts in the device-management system). Idempotent. An owner's devices only by an owner (or an API key holding every permission). Needs `member:update`.",
    args: { id: t.arg.id({ required: true, description: "The member id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.members.unlinkDevice(authorize(ctx, "member:update"), args.id, query),
  }),
);

const MemberConnection = defineConnection("Member", Member);

const memberListArgs = listArgs("Member", memberList, {
  description: "Which members a list shows.",
  fields: (t) => ({
    role: t.field({ type: [MemberRole], required: { list: false, items: true }, ...anyOf("Only members with these roles") }),
    department: t.field({
      type: [Department],
      required: { list: false, items: true },
      ...anyOf("Only members of these departments"),
    }),
    isActive: t.boolean({ description: "true: only active members; false: only deactivated ones" }),
    ...dateBounds(t, "members", true),
    search: searchField(t, "name or e-mail address"),
  }),
});

builder.queryField("members", (t) =>
  t.field({
    type: MemberConnection,
    nullable: true,
    description:
      "The organization's members, active and deactivated, filtered and sorted (default newest first), with their totalCount. Needs `member:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: memberListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.members.list(authorize(ctx, "member:read"), args, itemsQuery(ctx, info, "Member")),
  }),
);

builder.queryField("member", (t) =>
  t.prismaField({
    type: "Member",
    nullable: true,
    description:
      "Get a member by id. Any credential of the organization reads its id and name; the other fields need `member:read` (null with FORBIDDEN without it). Over GraphQL a missing member is null with its error; REST answers 404, or 403 without `member:read`.",
    args: { id: t.arg.id({ required: true, description: "The member id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.members.get(authenticated(ctx), args.id, query),
  }),
);

builder.mutationField("createMember", (t) =>
  t.prismaField({
    type: "Member",
    description:
      "Add a person to the organization. Creates their user account when the e-mail address is new and reuses it (keeping its name) otherwise, answering as for a new account either way; 409 when they are already a member. Granting a role needs every permission of that role, and only an owner (or an API key) can add an owner. Needs `member:create`.",
    args: {
      email: t.arg.string({ required: true, ...limited("E-mail address; stored lower-cased", memberLimits.email) }),
      name: t.arg.string({ required: true, ...limited("The person's name for a new account", commonLimits.name) }),
      role: t.arg({ type: MemberRole, required: true, description: "Role in the organization" }),
      department: t.arg({ type: Department, description: "Department; default none" }),
      jobTitle: t.arg.string(limited("Job title", memberLimits.jobTitle)),
      deviceLabelId: t.arg.int(
        limited("Label of the member's devices in the device-management system", memberLimits.deviceLabelId),
      ),
    },
    resolve: (query, _root, args, ctx) => ctx.services.members.create(authorize(ctx, "member:create"), args, query),
  }),
);

builder.mutationField("updateMember", (t) =>
  t.prismaField({
    type: "Member",
    description:
      "Change a member. An omitted field stays as it is; null clears jobTitle or deviceLabelId. Granting a role needs every permission of that role; only an owner (or an API key holding every permission) can make someone an owner or change an owner, and the last active owner cannot be demoted or deactivated (409). Needs `member:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The member id" }),
      role: t.arg({ type: MemberRole, description: "New role" }),
      department: t.arg({ type: Department, description: "New department" }),
      jobTitle: t.arg.string(limited("New job title; null clears it", memberLimits.jobTitle)),
      isActive: t.arg.boolean({ description: "False deactivates the member, true reactivates them" }),
      deviceLabelId: t.arg.int(limited("New device label; null clears it", memberLimits.deviceLabelId)),
    },
    resolve: (query, _root, { id, ...args }, ctx) =>
      ctx.services.members.update(authorize(ctx, "member:update"), id, args, query),
  }),
);
