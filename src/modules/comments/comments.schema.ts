import { authorize, can } from "../../auth/actor.js";
import { CommentEntityType as CommentEntityTypeValues } from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { Node, objectRefOf } from "../../graphql/node.schema.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs } from "../../graphql/page.schema.js";
import { nodeTypeOf } from "../../platform/ids.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { referencedRecord } from "../request-loaders.js";
import { attachmentLimits, commentLimits, commentList, type DeletedComment } from "./comments.service.js";
import { MAX_MENTIONS, mentionedIds } from "./mentions.js";

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

const CommentEntity = builder.unionType("CommentEntity", {
  description: "What a comment can be on.",
  types: [objectRefOf("Task"), objectRefOf("Vendor"), objectRefOf("Risk"), objectRefOf("Policy")],
  resolveType: (entity) => nodeTypeOf((entity as { id: string }).id),
});

const Author = builder.prismaObject("Member", {
  variant: "Author",
  description: "The author of a comment.",
  select: { userId: true, isActive: true, user: { select: { name: true, email: true, image: true } } },
  fields: (t) => ({
    id: t.exposeID("userId", { description: "The author's user id" }),
    name: t.string({ description: "The author's name", resolve: (member) => member.user.name }),
    email: t.string({
      nullable: true,
      description:
        "The author's e-mail address: null without `member:read` (but for the caller's own comments), as for a member's other fields beyond id and name",
      resolve: (member, _args, ctx) => {
        if (can(ctx, "member:read")) return member.user.email;
        const own = "caller" in ctx.auth && ctx.auth.caller.userId !== null && ctx.auth.caller.userId === member.userId;
        return own ? member.user.email : null;
      },
    }),
    image: t.string({ nullable: true, description: "URL of the author's picture", resolve: (member) => member.user.image }),
    deactivated: t.boolean({
      description: "True when the author is no longer an active member",
      resolve: (member) => !member.isActive,
    }),
    member: t.prismaField({
      type: "Member",
      nullable: true,
      ...graphOnly,
      description:
        "The author's membership, as the people routes take member ids. Any credential reads its id and name; its other fields need `member:read`",
      resolve: (query, author, _args, ctx) => ctx.loaders.members.byUserId.load({ id: author.userId, query }),
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
    description: t.exposeString("description", {
      nullable: true,
      ...graphOnly,
      description: "The description given on upload; null when none",
    }),
  }),
});

const Comment = builder.prismaObject("Comment", {
  description: "A comment on a task, vendor, risk or policy.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Comment id" }),
    content: t.exposeString("content", { description: "The comment text, as written (1 to 2000 characters)" }),
    author: t.relation("author", { type: Author, description: "Who wrote the comment" }),
    attachments: t.relation("attachments", {
      description: "Metadata of the attached files, oldest first; empty when there are none",
      query: { orderBy: [{ createdAt: "asc" }, { id: "asc" }] },
      extensions: { listMax: attachmentLimits.count },
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the comment was written" }),
    mentions: t.prismaField({
      type: ["Member"],
      ...graphOnly,
      description:
        "The members of the organization the comment mentions, in the order they first appear: mention nodes of TipTap/ProseMirror JSON content and `@[Display name](mem_…)` markup in plain text. Ids that name no member of the organization are left out. Any credential reads their id and name",
      select: { content: true },
      extensions: { ...graphOnly.extensions, listMax: MAX_MENTIONS },
      resolve: async (query, comment, _args, ctx) => {
        const found = await Promise.all(mentionedIds(comment.content).map((id) => ctx.loaders.members.byId.load({ id, query })));
        return found.filter((member) => member !== null) as never;
      },
    }),
    contextUrl: t.exposeString("contextUrl", {
      nullable: true,
      ...graphOnly,
      description: "The page the comment was made on, as given on creation; null when none",
    }),
    entity: t.field({
      type: CommentEntity,
      nullable: true,
      ...graphOnly,
      description:
        "The task, vendor, risk or policy commented on. Needs that type's `:read` permission: without it, null with FORBIDDEN here",
      resolve: (comment, _args, ctx) => referencedRecord(ctx, comment.entityType, comment.entityId),
    }),
  }),
});

const AttachmentInput = builder.inputType("AttachmentInput", {
  description: "A file to attach, sent inline as base64.",
  fields: (t) => ({
    fileName: t.string({ required: true, ...limited("File name", commentLimits.fileName) }),
    fileType: t.string({ required: true, ...limited("Media type (type/subtype) of the file", commentLimits.fileType) }),
    fileData: t.string({ required: true, ...limited("The file content", commentLimits.fileData) }),
    description: t.string(limited("Free text describing the file", commentLimits.attachmentDescription)),
    userId: t.id(
      limited(
        "Uploader's user id, with an API key (default: the comment's author; must be an active member); ignored with a user credential: the caller uploads",
        commonLimits.id,
      ),
    ),
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

builder.mutationField("updateComment", (t) =>
  t.prismaField({
    type: "Comment",
    description:
      "Replace the text of a comment. Only its author: a user credential that is the author, or an API key naming the author in userId. Needs `comment:create`.",
    args: {
      id: t.arg.id({ required: true, description: "The comment id" }),
      content: t.arg.string({ required: true, ...limited("New text", commentLimits.content) }),
      userId: t.arg.id({ description: "The author's user id: required with an API key, ignored with a user credential" }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.comments.update(authorize(ctx, "comment:create"), args, query),
  }),
);

const DeleteCommentPayload = builder.objectRef<DeletedComment>("DeleteCommentPayload").implement({
  description:
    "A deleted comment: its id, to evict it from a cache, and the record it was on, whose comments page and totalCount to refresh.",
  fields: (t) => ({
    deletedId: t.exposeID("deletedId", { description: "Id of the deleted comment" }),
    entity: t.field({
      type: CommentEntity,
      nullable: true,
      ...graphOnly,
      description:
        "The task, vendor, risk or policy the comment was on, as it is after the delete. Needs that type's `:read` permission: without it, null with FORBIDDEN here",
      resolve: (deleted, _args, ctx) => referencedRecord(ctx, deleted.entityType, deleted.entityId),
    }),
  }),
});

builder.mutationField("deleteComment", (t) =>
  t.field({
    type: DeleteCommentPayload,
    description:
      "Delete a comment with its attachments; answers its id and the record it was on (over REST: 204 with no body). Only its author, as for updateComment. Needs `comment:create`.",
    args: {
      id: t.arg.id({ required: true, description: "The comment id" }),
      userId: t.arg.id({
        description: "The author's user id: required with an API key (REST: ?userId=), ignored with a user credential",
      }),
    },
    resolve: (_root, args, ctx) => ctx.services.comments.delete(authorize(ctx, "comment:create"), args),
  }),
);

const CommentConnection = defineConnection("Comment", Comment);

const commentListArgs = listArgs("Comment", commentList, {
  description: "Which comments of a record a list shows.",
  fields: (t) => ({
    authorId: t.idList({
      required: { list: false, items: true },
      ...anyOf("Only comments by these authors: user ids, as Comment.author.id answers"),
    }),
    ...dateBounds(t, "comments", false),
  }),
});

for (const [model, entityType] of [
  ["Task", "task"],
  ["Vendor", "vendor"],
  ["Risk", "risk"],
  ["Policy", "policy"],
] as const) {
  builder.prismaObjectField(model, "comments", (t) =>
    t.field({
      type: CommentConnection,
      nullable: true,
      ...graphOnly,
      description:
        "Comments on this record, filtered (default newest first), as the `comments` query. Needs `comment:read`: without it, null with FORBIDDEN here",
      args: commentListArgs,
      resolve: (parent, args, ctx, info) => {
        authorize(ctx, "comment:read");
        return ctx.loaders.comments.pages.load({
          ...args,
          parent: [entityType, parent.id],
          query: itemsQuery(ctx, info, "Comment"),
        });
      },
    }),
  );
}

builder.queryField("comments", (t) =>
  t.field({
    type: CommentConnection,
    nullable: true,
    description:
      "Comments on an entity, filtered (default newest first), with authors, attachment metadata and their totalCount. Needs `comment:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: {
      entityId: t.arg.id({ required: true, ...limited("Id of the entity", commonLimits.id) }),
      entityType: t.arg({ type: CommentEntityType, required: true, description: "The kind of record entityId names" }),
      ...commentListArgs,
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
    resolve: (query, event, _args, ctx) => {
      const actor = authorize(ctx, "comment:read");
      return ctx.services.comments.byId(actor, (event as { id: string }).id, query);
    },
  }),
);

builder.subscriptionField("commentUpdated", (t) =>
  t.prismaField({
    type: "Comment",
    description: "Each edit of a comment on the entity, as it is after the edit (server-sent events). Needs `comment:read`.",
    args: {
      entityId: t.arg.id({ required: true, description: "Id of the entity" }),
      entityType: t.arg({ type: CommentEntityType, required: true, description: "The kind of record entityId names" }),
    },
    subscribe: (_root, args, ctx) => ctx.services.comments.subscribeUpdated(authorize(ctx, "comment:read"), args),
    resolve: (query, event, _args, ctx) => {
      const actor = authorize(ctx, "comment:read");
      return ctx.services.comments.byId(actor, (event as { id: string }).id, query);
    },
  }),
);

builder.subscriptionField("commentDeleted", (t) =>
  t.field({
    type: DeleteCommentPayload,
    description:
      "Each comment deleted from the entity: its id and the entity as it is after the delete (server-sent events). Needs `comment:read`.",
    args: {
      entityId: t.arg.id({ required: true, description: "Id of the entity" }),
      entityType: t.arg({ type: CommentEntityType, required: true, description: "The kind of record entityId names" }),
    },
    subscribe: (_root, args, ctx) => ctx.services.comments.subscribeDeleted(authorize(ctx, "comment:read"), args),
    resolve: (event, _args, ctx) => {
      authorize(ctx, "comment:read");
      return event as DeletedComment;
    },
  }),
);
