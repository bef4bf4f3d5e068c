import { authorize } from "../../auth/actor.js";
import { Department as DepartmentValues, MemberRole as MemberRoleValues } from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { Node } from "../../graphql/node.schema.js";
import { definePage, itemsQuery, pageArgs } from "../../graphql/page.schema.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { memberLimits } from "./members.service.js";

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

builder.prismaObject("User", {
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

export const Member = builder.prismaObject("Member", {
  description: "A person's membership of the organization.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Member id" }),
    organizationId: t.exposeID("organizationId", { description: "The organization" }),
    userId: t.exposeID("userId", { description: "The member's user account" }),
    role: t.expose("role", { type: MemberRole, description: "The member's role in the organization" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the person joined the organization" }),
    department: t.expose("department", { type: Department, description: "The member's department; none by default" }),
    jobTitle: t.exposeString("jobTitle", { nullable: true, description: "Job title; null when not set" }),
    isActive: t.exposeBoolean("isActive", {
      description: "False once the member is deactivated: they can no longer sign in here",
    }),
    deviceLabelId: t.exposeInt("deviceLabelId", {
      nullable: true,
      description: "Label of the member's managed devices in the device-management system; null when unlinked",
    }),
    user: t.relation("user", { description: "The member's user account" }),
    devices: t.relation("devices", {
      ...graphOnly,
      description: "The member's managed devices, oldest first",
      query: { orderBy: [{ createdAt: "asc" }, { id: "asc" }] },
    }),
  }),
});

builder.prismaObject("Device", {
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

const MemberPage = definePage("Member", Member);

builder.queryField("members", (t) =>
  t.field({
    type: MemberPage,
    nullable: true,
    description:
      "The organization's members, active and deactivated, newest first. Needs `member:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: { ...pageArgs },
    resolve: (_root, args, ctx, info) =>
      ctx.services.members.list(authorize(ctx, "member:read"), args, itemsQuery(ctx, info, "Member")),
  }),
);

builder.queryField("member", (t) =>
  t.prismaField({
    type: "Member",
    nullable: true,
    description:
      "Get a member by id. Needs `member:read`. Over GraphQL a missing or refused member is null with its error; REST answers 404 or 403.",
    args: { id: t.arg.id({ required: true, description: "The member id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.members.get(authorize(ctx, "member:read"), args.id, query),
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
