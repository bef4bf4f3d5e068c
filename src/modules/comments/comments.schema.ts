import { builder } from "../../builder.js";
import { authorize } from "../../context.js";
import { CommentEntityType as CommentEntityTypeValues } from "../../generated/prisma/enums.js";
import { commonLimits, limited } from "../../limits.js";
import { definePage, itemsQuery, pageArgs } from "../../page.schema.js";
import { commentLimits } from "./comments.service.js";

export const CommentEntityType = builder.enumType(CommentEntityTypeValues, {
  name: "CommentEntityType",
  description: "The kind of record a comment is on; entityId names a record of this kind.",
  values: {
    task: { description: "A task (tsk_...)" },
    vendor: { description: "A vendor (vnd_...)" },
    risk: { description: "A risk (rsk_...)" },
    policy: { description: "A policy (pol_...)" },
  },
});

const Author = builder.prismaObject("Member", {
  variant: "Author",
  description: "The author of a comment.",
  select: { userId: true, isActive: true, user: { select: { name: true, email: true, image: true } } },
  fields: (t) => ({
    id: t.exposeID("userId", { description: "The author's user id" }),
    name: t.string({ description: "The author's name", resolve: (member) => member.user.name }),
    email: t.string({ description: "The author's e-mail address", resolve: (member) => member.user.email }),
    image: t.string({ nullable: true, description: "URL of the author's picture", resolve: (member) => member.user.image }),
    deactivated: t.boolean({
      description: "True when the author is no longer an active member",
      resolve: (member) => !member.isActive,
    }),
  }),
});

builder.prismaObject("Attachment", {
  description: "Metadata of a file attached to a comment; download the bytes at /v1/attachments/{id}.",
  select: { id: true },
  fields: (t) => ({
    id: t.exposeID("id", { description: "Attachment id; download the bytes at /v1/attachments/{id}" }),
    name: t.exposeString("name", { description: "The file name supplied on upload" }),
    type: t.exposeString("type", { description: "The media type supplied on upload" }),
    size: t.exposeInt("size", { description: "Size in bytes" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the file was uploaded" }),
  }),
});

const Comment = builder.prismaObject("Comment", {
  description: "A comment on a task, vendor, risk or policy.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Comment id" }),
    content: t.exposeString("content", { description: "The comment text, as written (1 to 2000 characters)" }),
    author: t.relation("author", { type: Author, description: "Who wrote the comment" }),
    attachments: t.relation("attachments", {
      description: "Metadata of the attached files, oldest first; empty when there are none",
      query: { orderBy: [{ createdAt: "asc" }, { id: "asc" }] },
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the comment was written" }),
  }),
});

const AttachmentInput = builder.inputType("AttachmentInput", {
  description: "A file to attach, sent inline as base64.",
  fields: (t) => ({
    fileName: t.string({ required: true, ...limited("File name", commentLimits.fileName) }),
    fileType: t.string({ required: true, ...limited("Media type (type/subtype) of the file", commentLimits.fileType) }),
    fileData: t.string({ required: true, ...limited("The file content", commentLimits.fileData) }),
    description: t.string(limited("Free text describing the file", commentLimits.attachmentDescription)),
    userId: t.id(limited("Uploader's user id; default: the comment's author. Must be an active member", commonLimits.id)),
  }),
});

builder.mutationField("createComment", (t) =>
  t.prismaField({
    type: "Comment",
    description: "Create a comment on an entity, with optional attachments. Needs `comment:create`.",
    args: {
      content: t.arg.string({ required: true, ...limited("Comment text", commentLimits.content) }),
      entityId: t.arg.id({ required: true, ...limited("Id of the entity commented on", commonLimits.id) }),
      entityType: t.arg({ type: CommentEntityType, required: true, description: "The kind of record entityId names" }),
      contextUrl: t.arg.string(
        limited("URL of the page the comment was made on, for notification deep links", commentLimits.contextUrl),
      ),
      attachments: t.arg({ type: [AttachmentInput], ...limited("Files to attach, 25 MiB together", commentLimits.attachments) }),
      userId: t.arg.id(
        limited("The author's user id: required with an API key, ignored with a user credential", commonLimits.id),
      ),
    },
    resolve: (query, _root, args, ctx) => ctx.services.comments.create(authorize(ctx, "comment:create"), args, query),
  }),
);

const CommentPage = definePage("Comment", Comment);

builder.queryField("comments", (t) =>
  t.field({
    type: CommentPage,
    description: "Comments on an entity, newest first, with authors and attachment metadata. Needs `comment:read`.",
    args: {
      entityId: t.arg.id({ required: true, ...limited("Id of the entity", commonLimits.id) }),
      entityType: t.arg({ type: CommentEntityType, required: true, description: "The kind of record entityId names" }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) =>
      ctx.services.comments.list(authorize(ctx, "comment:read"), args, itemsQuery(ctx, info, "Comment")),
  }),
);

const AttachmentContent = builder
  .objectRef<{ id: string; name: string; type: string; size: number; createdAt: Date; contentBase64: string }>(
    "AttachmentContent",
  )
  .implement({
    description: "An attachment with its bytes. Over REST, GET /v1/attachments/{id} answers with the bytes themselves.",
    fields: (t) => ({
      id: t.exposeID("id", { description: "Attachment id" }),
      name: t.exposeString("name", { description: "The file name supplied on upload" }),
      type: t.exposeString("type", { description: "The media type supplied on upload" }),
      size: t.exposeInt("size", { description: "Size in bytes" }),
      createdAt: t.expose("createdAt", { type: "DateTime", description: "When the file was uploaded" }),
      contentBase64: t.exposeString("contentBase64", { description: "The file content, standard base64" }),
    }),
  });

builder.queryField("attachment", (t) =>
  t.field({
    type: AttachmentContent,
    description: "Download an attachment of a comment. Needs `comment:read`.",
    args: { id: t.arg.id({ required: true, description: "The attachment id" }) },
    resolve: (_root, args, ctx) => ctx.services.comments.attachment(authorize(ctx, "comment:read"), args.id),
  }),
);

builder.subscriptionType({
  description: "Live events, over server-sent events (Accept: text/event-stream) on POST /graphql.",
});

builder.subscriptionField("commentAdded", (t) =>
  t.prismaField({
    type: "Comment",
    description: "Each new comment on the entity, as it is created (server-sent events). Needs `comment:read`.",
    args: {
      entityId: t.arg.id({ required: true, description: "Id of the entity" }),
      entityType: t.arg({ type: CommentEntityType, required: true, description: "The kind of record entityId names" }),
    },
    subscribe: (_root, args, ctx) => ctx.services.comments.subscribe(authorize(ctx, "comment:read"), args),
    resolve: (query, event, _args, ctx) =>
      ctx.services.comments.byId(authorize(ctx, "comment:read"), (event as { id: string }).id, query),
  }),
);
