import { asRecipient, authenticated, authorize, authorizeAny, can, isRecipient } from "../../auth/actor.js";
import { CommentEntityType as CommentEntityTypeValues } from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import type { Context } from "../../graphql/context.js";
import { Node, objectRefOf } from "../../graphql/node.schema.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs } from "../../graphql/page.schema.js";
import { nodeTypeOf } from "../../platform/ids.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { referencedRecord } from "../request-loaders.js";
import {
  type AttachmentUploadTicket,
  BASE64_CONTENT_MAX_BYTES,
  MAX_PENDING_UPLOADS,
  uploadLimits,
} from "./attachments.service.js";
import {
  attachmentLimits,
  commentAuthorSelect,
  commentLimits,
  commentList,
  type DeletedComment,
  withAuthor,
} from "./comments.service.js";
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
  select: commentAuthorSelect,
  fields: (t) => ({
    // Resolved, not exposed: plugin-prisma checks that an exposed field of a type with a `select`
    // was loaded, and an author is always read whole with its comment (Comment's `include`).
    id: t.id({ description: "The author's user id", resolve: (member) => member.userId }),
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

/** The service's origin as this request reached it: the URLs it signs itself start with it (unless PUBLIC_URL is set). */
export const originOf = (ctx: object): string | undefined => {
  const request = (ctx as { request?: Request }).request;
  return request ? new URL(request.url).origin : undefined;
};

builder.prismaObject("Attachment", {
  description:
    "Metadata of a file attached to a comment. Download the bytes by the credential-free URL attachmentDownloadUrl answers (GET /v1/attachments/{id}/download-url), or stream them with a credential from GET /v1/attachments/{id}.",
  select: { id: true },
  fields: (t) => ({
    id: t.exposeID("id", { description: "Attachment id; download the bytes at /v1/attachments/{id}" }),
    name: t.exposeString("name", { description: "The file name supplied on upload" }),
    type: t.exposeString("type", { description: "The media type supplied on upload" }),
    size: t.exposeInt("size", { description: "Size in bytes" }),
    sha256: t.exposeString("sha256", {
      description:
        "SHA-256 of the bytes, lowercase hex; the comment's audit event records it too, so the audit chain vouches for the file",
    }),
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
  // The author is read with every comment (a join to the member and the user in the statement that
  // reads the comments), and `author` answers from it as a plain field: as a relation, plugin-prisma
  // looked up the field's loaded selection by its response path for every comment of a page (8 %
  // of a vendor page's CPU, bench/results/2026-12-04-tenth.md).
  include: withAuthor.include,
  fields: (t) => ({
    id: t.exposeID("id", { description: "Comment id" }),
    content: t.exposeString("content", { description: "The comment text, as written (1 to 2000 characters)" }),
    author: t.field({ type: Author, description: "Who wrote the comment", resolve: (comment) => comment.author }),
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
  description:
    "A file to attach: either its bytes inline as base64 (`fileData`, at most 10 MiB) or an upload whose bytes were sent to the URL createAttachmentUpload answered (`uploadId`), never both.",
  fields: (t) => ({
    fileName: t.string(
      limited(
        "File name: required with fileData; with uploadId the upload's, and if given it must be the same",
        commentLimits.fileName,
      ),
    ),
    fileType: t.string(
      limited(
        "Media type (type/subtype) of the file: required with fileData; with uploadId the upload's, and if given it must be the same",
        commentLimits.fileType,
      ),
    ),
    fileData: t.string(limited("The file content inline; leave out with uploadId", commentLimits.fileData)),
    uploadId: t.id(
      limited(
        "An upload of this caller (createAttachmentUpload), not expired, not attached yet, whose bytes the store holds exactly as declared; leave out with fileData",
        uploadLimits.uploadId,
      ),
    ),
    description: t.string(limited("Free text describing the file", commentLimits.attachmentDescription)),
    userId: t.id(
      limited(
        "Uploader's user id, with an API key (default: the comment's author; must be an active member); ignored with a user credential: the caller uploads",
        commonLimits.id,
      ),
    ),
  }),
});

const AttachmentUpload = builder.objectRef<AttachmentUploadTicket>("AttachmentUpload").implement({
  description:
    "Where to send one file's bytes: PUT them to uploadUrl with exactly these headers before expiresAt, then attach the upload to a comment by its id (createComment's attachments[].uploadId).",
  fields: (t) => ({
    id: t.exposeID("id", { description: "The upload's id (upl_...), for createComment's attachments[].uploadId" }),
    uploadUrl: t.exposeString("uploadUrl", {
      description:
        "The URL that admits the bytes: the object store's own (a presigned URL) or the service's (/attachment-objects/...). It needs no credential and admits only the declared size, type and SHA-256",
    }),
    method: t.exposeString("method", { description: "The HTTP method to send the bytes with: always PUT" }),
    headers: t.field({
      type: "HttpHeaders",
      description:
        "Headers to send with the bytes, exactly: Content-Type, Content-Length and x-amz-checksum-sha256 (the declared type, size and SHA-256), and If-None-Match: * (a URL writes once: an object is never changed)",
      resolve: (ticket) => ticket.headers,
    }),
    expiresAt: t.expose("expiresAt", {
      type: "DateTime",
      description:
        "Until when uploadUrl admits the bytes (ATTACHMENT_UPLOAD_TTL_SECONDS, 900 by default); the upload must be attached before then",
    }),
  }),
});

/** An upload becomes a comment's attachment or an evidence item: either purpose admits it. */
const uploadPermissions = ["comment:create", "control:update", "vendor:update"] as const;

builder.mutationField("createAttachmentUpload", (t) =>
  t.field({
    type: AttachmentUpload,
    description: `Start a direct upload: answers a URL the client sends the file's bytes to, straight to the attachment store, for files up to ATTACHMENT_MAX_BYTES (100 MiB by default; 10 MiB on the database store). The same file rules as inline attachments hold (evidence file names and types only; executables refused, also by their first bytes when attached). A caller (the person behind a user credential, or the API key) holds at most ${MAX_PENDING_UPLOADS} uploads not yet attached and not expired: past that, 409. Needs one of \`comment:create\` (for a comment), \`control:update\` or \`vendor:update\` (for evidence; a control's owner adds evidence with \`comment:create\`); or, with an evidence request's link token (X-Evidence-Request-Token) as the only credential, an upload for that request's submission (at most 20 files not yet submitted; 409 while its files await review).`,
    args: {
      fileName: t.arg.string({ required: true, ...limited("File name", commentLimits.fileName) }),
      fileType: t.arg.string({ required: true, ...limited("Media type (type/subtype) of the file", commentLimits.fileType) }),
      size: t.arg.int({
        required: true,
        ...limited(
          "Size of the file in bytes; at most ATTACHMENT_MAX_BYTES (100 MiB by default, 10 MiB on the database store)",
          uploadLimits.size,
        ),
      }),
      sha256: t.arg.string({ required: true, ...limited("SHA-256 of the bytes", uploadLimits.sha256) }),
    },
    resolve: (_root, args, ctx) =>
      isRecipient(ctx)
        ? ctx.services.evidenceRequests.createUpload(asRecipient(ctx), args, originOf(ctx))
        : ctx.services.comments.attachments.createUpload(authorizeAny(ctx, uploadPermissions), args, originOf(ctx)),
  }),
);

builder.mutationField("createComment", (t) =>
  t.prismaField({
    type: "Comment",
    description:
      "Create a comment on an entity, with optional attachments. The comment, its attachments and its audit event (which records each file's SHA-256) commit together; when the attachment store is unavailable, a comment with files answers 503 with Retry-After and nothing is written. Needs `comment:create`.",
    args: {
      content: t.arg.string({ required: true, ...limited("Comment text", commentLimits.content) }),
      entityId: t.arg.id({ required: true, ...limited("Id of the entity commented on", commonLimits.id) }),
      entityType: t.arg({ type: CommentEntityType, required: true, description: "The kind of record entityId names" }),
      contextUrl: t.arg.string(
        limited("URL of the page the comment was made on, for notification deep links", commentLimits.contextUrl),
      ),
      attachments: t.arg({
        type: [AttachmentInput],
        ...limited(
          "Files to attach: inline (fileData, 25 MiB together) or uploaded first (uploadId, up to ATTACHMENT_MAX_BYTES each)",
          commentLimits.attachments,
        ),
      }),
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

type StoredAttachment = Awaited<ReturnType<Context["services"]["comments"]["attachments"]["find"]>>;

const AttachmentContent = builder.objectRef<StoredAttachment>("AttachmentContent").implement({
  description: "An attachment with its bytes. Over REST, GET /v1/attachments/{id} answers with the bytes themselves, streamed.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Attachment id" }),
    name: t.exposeString("name", { description: "The file name supplied on upload" }),
    type: t.exposeString("type", { description: "The media type supplied on upload" }),
    size: t.exposeInt("size", { description: "Size in bytes" }),
    sha256: t.exposeString("sha256", { description: "SHA-256 of the bytes, lowercase hex" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the file was uploaded" }),
    contentBase64: t.string({
      description: `The file content, standard base64, for files of at most ${BASE64_CONTENT_MAX_BYTES} bytes (10 MiB, the inline limit): a GraphQL answer is one JSON document held whole in memory on both ends, a third larger than the file. A larger file is an error here (BAD_USER_INPUT): fetch it from attachmentDownloadUrl's URL, or stream it from GET /v1/attachments/{id}. Select only the metadata to read no bytes at all`,
      resolve: (attachment, _args, ctx) => ctx.services.comments.attachments.contentBase64(attachment),
    }),
  }),
});

builder.queryField("attachment", (t) =>
  t.field({
    type: AttachmentContent,
    description:
      "Download an attachment: a comment's needs `comment:read`; an evidence file needs what reading its evidence needs (`control:read`, or owning the control; `vendor:read` for a vendor's).",
    args: { id: t.arg.id({ required: true, description: "The attachment id" }) },
    resolve: (_root, args, ctx) => ctx.services.comments.attachments.find(authenticated(ctx), args.id),
  }),
);

export const AttachmentDownloadUrl = builder.objectRef<{ url: string; expiresAt: Date }>("AttachmentDownloadUrl").implement({
  description: "A URL that serves an attachment's bytes without a credential, until it expires.",
  fields: (t) => ({
    url: t.exposeString("url", {
      description:
        "GET it for the bytes, with the stored media type and Content-Disposition: attachment and the file name (RFC 6266, UTF-8 names as filename*). Altered or expired, it is refused (403). Anyone holding it can download until expiresAt: hand it only to the person it is for",
    }),
    expiresAt: t.expose("expiresAt", {
      type: "DateTime",
      description: "Until when the URL serves the bytes (ATTACHMENT_DOWNLOAD_TTL_SECONDS, 300 by default, at most 3600)",
    }),
  }),
});

builder.queryField("attachmentDownloadUrl", (t) =>
  t.field({
    type: AttachmentDownloadUrl,
    description:
      "A credential-free URL for an attachment's bytes, valid a few minutes, served by the attachment store (or by the service for the filesystem and database stores). Generated on demand, not stored. A comment's attachment needs `comment:read`; an evidence file needs what reading its evidence needs (`control:read`, or owning the control; `vendor:read` for a vendor's).",
    args: { id: t.arg.id({ required: true, ...limited("The attachment id", commonLimits.id) }) },
    resolve: (_root, args, ctx) => ctx.services.comments.attachments.downloadUrl(authenticated(ctx), args.id, originOf(ctx)),
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
