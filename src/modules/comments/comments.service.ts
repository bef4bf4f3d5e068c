import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { type Comment, Prisma } from "../../generated/prisma/client.js";
import type { CommentEntityType } from "../../generated/prisma/enums.js";
import {
  column,
  dateBoundRules,
  dateSortKeys,
  type FilterRule,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
} from "../../graphql/lists.js";
import type { RecordQuery } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { requestTransaction } from "../../platform/db/request-transaction.js";
import { writeText } from "../../platform/db/row-by-id.js";
import { AppError, BadUserInputError, ForbiddenError, NotFoundError } from "../../platform/errors.js";
import type { CommentDeletedEvent, CommentEvent, Events } from "../../platform/events.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, decodedSize, limit, list, text } from "../../platform/limits.js";
import { parseInput } from "../../platform/validation.js";
import { withAuditEvent } from "../audit/audit.chain.js";
import { auditEvent, writeAuditEvent } from "../audit/audit.service.js";
import {
  ACTING_MEMBER_ANSWER,
  type ActingMember,
  type ActingRow,
  actingMemberCtes,
  actingMemberOf,
  activeMemberOn,
  assertEntityExists,
} from "../entities.js";
import type { Notifier } from "../notifications/notifications.service.js";
import { scheduleObjectDeletions } from "./attachments.jobs.js";
import {
  type AttachmentService,
  attachmentFileLimits,
  type StoredFile,
  UPLOAD_TAKEN,
  uploadLimits,
} from "./attachments.service.js";
import { mentionedIds } from "./mentions.js";

const MiB = 1024 * 1024;
export const attachmentLimits = { count: 10, bytesEach: 10 * MiB, bytesTotal: 25 * MiB };

export const commentLimits = {
  content: limit({ minLength: 1, maxLength: 2000, notBlank: true }),
  contextUrl: limit({
    maxLength: 2048,
    format: "uri",
    pattern: "^[Hh][Tt][Tt][Pp][Ss]?://",
    patternHint: "an absolute http(s) URL",
  }),
  attachments: limit({ maxItems: attachmentLimits.count }),
  fileName: attachmentFileLimits.fileName,
  fileType: attachmentFileLimits.fileType,
  fileData: limit({ minLength: 1, base64: { maxBytes: attachmentLimits.bytesEach } }),
  attachmentDescription: limit({ maxLength: 500 }),
};

const attachmentInput = z.object({
  fileName: text(commentLimits.fileName).nullish(),
  fileType: text(commentLimits.fileType).nullish(),
  fileData: text(commentLimits.fileData).nullish(),
  uploadId: text(uploadLimits.uploadId).nullish(),
  description: text(commentLimits.attachmentDescription).nullish(),
  userId: text(commonLimits.id).nullish(),
});

const createCommentInput = z.object({
  content: text(commentLimits.content),
  entityId: text(commonLimits.id),
  entityType: z.enum(["task", "vendor", "risk", "policy"]),
  contextUrl: text(commentLimits.contextUrl).nullish(),
  attachments: list(attachmentInput, commentLimits.attachments)
    .refine(
      (items) => items.reduce((sum, a) => sum + (a.fileData ? decodedSize(a.fileData) : 0), 0) <= attachmentLimits.bytesTotal,
      "fileData must decode to at most 25 MiB together",
    )
    .nullish(),
  userId: text(commonLimits.id).nullish(),
});

const actingUser = z.object({ userId: text(commonLimits.id).nullish() });
const updateCommentInput = actingUser.extend({ content: text(commentLimits.content) });

/** What remains of a deleted comment: its id and the record it was on, whose comments changed. */
export type DeletedComment = { deletedId: string; entityType: CommentEntityType; entityId: string };

export type CreateCommentArgs = z.input<typeof createCommentInput>;
type CommentQuery = { select?: Prisma.CommentSelect; include?: Prisma.CommentInclude };

/**
 * Whether a new comment's answer can be made of its inserted row, its author as checked before the
 * transaction and no files, instead of read back: when the GraphQL selection includes no relation
 * but those two (`Comment.author` selects only the user id, whether the member is active and the
 * user's name, e-mail and picture; `attachments` is empty). Other relations are read back.
 */
function answerWithoutReadBack(query: CommentQuery, files: number): boolean {
  return (
    files === 0 && !query.select && Object.keys(query.include ?? {}).every((name) => name === "author" || name === "attachments")
  );
}

/**
 * What a comment's author is read as, with every comment (the GraphQL type Comment's `include`):
 * the user id, whether the member is active, and the user's name, e-mail and picture.
 */
export const commentAuthorSelect = {
  userId: true,
  isActive: true,
  user: { select: { name: true, email: true, image: true } },
} as const satisfies Prisma.MemberSelect;

/** The query part that reads a comment with its author: the GraphQL type Comment's `include`, and its loaders' default. */
export const withAuthor = { include: { author: { select: commentAuthorSelect } } } as const;

/** A comment as the GraphQL type reads it: with its author. */
export type CommentWithAuthor = Prisma.CommentGetPayload<typeof withAuthor>;

/** An active acting member as a comment's author is read (commentAuthorSelect). */
const asAuthor = (member: ActingMember) => ({ userId: member.userId, isActive: true, user: member.user });

/** Comments by these authors, named by user id as `Comment.author.id` answers. */
const authorId: FilterRule = ((userIds: readonly string[], { organizationId }) =>
  userIds.length
    ? Prisma.sql`${column("authorId")} IN (
        SELECT m."id" FROM "Member" m
        WHERE m."organizationId" = ${organizationId} AND m."userId" IN (${Prisma.join(userIds.map((id) => Prisma.sql`${id}::text`))}))`
    : Prisma.sql`FALSE`) as FilterRule;

/** The comments of one record: what `comments` and `<Type>.comments` filter and sort by. */
export const commentList: ListSpec = {
  rowsInline: true,
  table: "Comment",
  parent: [
    { name: "entityType", sqlType: '"CommentEntityType"' },
    { name: "entityId", sqlType: "text" },
  ],
  filters: { authorId, ...dateBoundRules(false) },
  orders: dateSortKeys(false),
  defaultOrder: newestFirst,
};

type EntityArgs = { entityId: string; entityType: string };

const listInput = z.object({
  entityId: text(commonLimits.id),
  entityType: z.enum(["task", "vendor", "risk", "policy"]),
});

export function createCommentService(db: Db, events: Events, notifier: Notifier, attachments: AttachmentService) {
  /** The active member acting as `userId` in the organization; 404 otherwise. */
  async function activeMemberId(organizationId: string, userId: string): Promise<string> {
    const member = await db.member.findUnique({
      where: { organizationId_userId: { organizationId, userId }, isActive: true },
      select: { id: true },
    });
    if (!member) throw new NotFoundError("Active member with user id", userId);
    return member.id;
  }

  /** The user acting: the caller, or with an API key the `userId` it names (required). */
  function actingUserId(actor: Actor, userId: string | null | undefined): string {
    const acting = actor.userId ?? userId;
    if (!acting) {
      throw new BadUserInputError("userId is required when authenticating with an API key", [
        { path: "userId", message: "is required when authenticating with an API key" },
      ]);
    }
    return acting;
  }

  /**
   * The comment, when the acting user wrote it: 404 when it is not in the organization, 403 when
   * someone else did. With an API key the named user must be an active member, as on create.
   */
  async function ownComment(actor: Actor, id: string, userId: string | null | undefined) {
    const acting = actingUserId(actor, userId);
    const comment = await db.comment.findUnique({
      where: { id, organizationId: actor.organizationId },
      select: {
        id: true,
        content: true,
        entityType: true,
        entityId: true,
        contextUrl: true,
        authorId: true,
        author: { select: { userId: true } },
        attachments: { select: { id: true, name: true, type: true, size: true, sha256: true, store: true, objectKey: true } },
      },
    });
    if (!comment) throw new NotFoundError("Comment", id);
    if (!actor.userId) await activeMemberId(actor.organizationId, acting);
    if (comment.author.userId !== acting) throw new ForbiddenError("Only the author of a comment can edit or delete it");
    return comment;
  }

  /**
   * A comment without files or mentions, outside an idempotent request's transaction: the record's
   * and the author's checks, the comment, its audit event with its place in the chain and its
   * webhook deliveries in one statement, atomic without BEGIN and COMMIT (withAuditEvent), which
   * answers the comment with its author, or why there is none (a missing record, an author who is
   * not an active member: 404 as activeMemberOn). The chain's head is locked for this statement
   * alone. Every other comment takes the transaction in `create`.
   */
  async function insertPlainComment(
    actor: Actor,
    input: {
      id: string;
      content: string;
      entityType: CommentEntityType;
      entityId: string;
      contextUrl?: string | null;
      authorUserId: string;
    },
    data: Prisma.InputJsonValue,
  ) {
    const { sql, values } = withAuditEvent(
      auditEvent(actor, "comment.created", { type: "comment", id: input.id }, data),
      (param) => ({
        ctes: `${actingMemberCtes(param, actor.organizationId, input.entityType, input.entityId, input.authorUserId)}, change AS (
  INSERT INTO "Comment" ("id", "organizationId", "entityType", "entityId", "content", "authorId", "apiKeyId", "contextUrl")
  SELECT ${param(input.id)}, ${param(actor.organizationId)}, ${param(input.entityType)}::"CommentEntityType", ${param(input.entityId)},
         ${param(input.content)}, actor."id", ${param(actor.apiKeyId)}, ${param(input.contextUrl ?? null)}
  FROM actor WHERE EXISTS (SELECT 1 FROM target)
  RETURNING *
)`,
        answer: `SELECT ${ACTING_MEMBER_ANSWER}, change.*
FROM (SELECT 1) AS one LEFT JOIN actor ON TRUE LEFT JOIN change ON TRUE`,
      }),
      // The text differs only by the kind of record commented on.
      `comment on ${input.entityType}`,
    );
    const [row] = await writeText<Comment & ActingRow>(db, sql, values);
    if (!row) throw new Error("createComment: the statement answered no row");
    const author = actingMemberOf(row, input.entityType, input.entityId, input.authorUserId);
    const { found: _found, memberId: _memberId, name: _name, email: _email, image: _image, ...comment } = row;
    return { ...comment, author: asAuthor(author), attachments: [] };
  }

  /** Live streams of the record's comments hear of a new one (once it has committed). */
  function publishCreated(actor: Actor, comment: { id: string; entityType: CommentEntityType; entityId: string }) {
    events.publish("comment.created", actor.organizationId, {
      id: comment.id,
      organizationId: actor.organizationId,
      entityType: comment.entityType,
      entityId: comment.entityId,
    });
  }

  /** The events of one entity of the caller's organization (404 when it is not there). */
  async function entityStream<Event extends { entityType: string; entityId: string }>(
    actor: Actor,
    args: EntityArgs,
    source: (organizationId: string, where: (event: Event) => boolean) => AsyncIterable<Event>,
  ) {
    const input = parseInput(listInput, args);
    await assertEntityExists(db, actor.organizationId, input.entityType, input.entityId);
    return source(actor.organizationId, (event) => event.entityType === input.entityType && event.entityId === input.entityId);
  }

  return {
    async create(actor: Actor, args: CreateCommentArgs, query: CommentQuery) {
      const input = parseInput(createCommentInput, args);
      const items = input.attachments ?? [];

      // With an API key the author is named in the body; with a user credential it is the caller.
      const authorUserId = actor.userId ?? input.userId;
      if (!authorUserId) {
        throw new BadUserInputError("userId is required when authenticating with an API key", [
          { path: "userId", message: "is required when authenticating with an API key" },
        ]);
      }
      const id = newId("cmt");
      const auditData = (files: { id: string; name: string; type: string; size: number; sha256: string }[]) => ({
        entityType: input.entityType,
        entityId: input.entityId,
        // The chain vouches for each file's bytes by their SHA-256.
        attachments: files.map((a) => ({ id: a.id, name: a.name, type: a.type, size: a.size, sha256: a.sha256 })),
        contextUrl: input.contextUrl ?? null,
      });
      if (!items.length && !mentionedIds(input.content).length && !requestTransaction() && answerWithoutReadBack(query, 0)) {
        // Nothing but the comment and its event: one statement (see insertPlainComment).
        const comment = await insertPlainComment(actor, { ...input, id, authorUserId }, auditData([]));
        publishCreated(actor, comment);
        return comment;
      }
      const author = await activeMemberOn(db, actor.organizationId, input.entityType, input.entityId, authorUserId);
      const authorId = author.id;
      // The uploader is the caller under a user credential, as the author is: an attachment's
      // `userId` names another uploader only for an API key, which acts for someone.
      const uploaderOf = (a: { userId?: string | null }) => (actor.userId ? null : (a.userId ?? null));
      const uploaderIds = new Map<string, string>();
      for (const a of items) {
        const uploaderUserId = uploaderOf(a);
        if (uploaderUserId && !uploaderIds.has(uploaderUserId))
          uploaderIds.set(uploaderUserId, await activeMemberId(actor.organizationId, uploaderUserId));
      }

      // Everything the store must do, before the transaction: inline bytes written, uploads' bytes checked.
      const files: StoredFile[] = items.length ? await attachments.prepare(actor, items) : [];
      const rows = files.map((file) => ({ ...file, id: newId("att") }));
      // One transaction: the comment, its attachments' rows, the uploads it attaches, the audit row
      // and the mentions' notifications, or none of them.
      let comment: Awaited<ReturnType<typeof db.comment.create>>;
      try {
        comment = await notifier.transaction(
          db,
          { organizationId: actor.organizationId, memberId: authorId },
          async (tx, notify) => {
            const data = {
              id,
              organizationId: actor.organizationId,
              entityType: input.entityType as CommentEntityType,
              entityId: input.entityId,
              content: input.content,
              authorId,
              apiKeyId: actor.apiKeyId,
              contextUrl: input.contextUrl ?? null,
            };
            // Without files, the answer is the inserted row with the author checked before the
            // transaction: no read-back of what this statement has just written.
            const created = answerWithoutReadBack(query, rows.length)
              ? {
                  ...(await tx.comment.create({ data })),
                  author: asAuthor(author),
                  attachments: [],
                }
              : await tx.comment.create({
                  ...query,
                  data: {
                    ...data,
                    attachments: {
                      create: rows.map((a) => ({
                        id: a.id,
                        organizationId: actor.organizationId,
                        name: a.name,
                        type: a.type,
                        size: a.size,
                        sha256: a.sha256,
                        store: a.store,
                        objectKey: a.objectKey,
                        description: a.description,
                        uploaderId: uploaderIds.get(uploaderOf(a) ?? "") ?? authorId,
                      })),
                    },
                  },
                });
            // An upload attaches once: of two comments racing for it, the second finds it taken.
            for (const a of rows) {
              if (!a.uploadId) continue;
              const taken = await tx.attachmentUpload.updateMany({
                where: { id: a.uploadId, attachmentId: null },
                data: { attachmentId: a.id },
              });
              if (taken.count !== 1) {
                throw new AppError("CONFLICT", `attachments.${a.index}.uploadId: ${UPLOAD_TAKEN}`, [
                  { path: `attachments.${a.index}.uploadId`, message: UPLOAD_TAKEN },
                ]);
              }
            }
            // Notifications first: the audit event locks the organization's chain head until the commit.
            await notify({
              reason: "mention",
              recipientIds: mentionedIds(input.content),
              entity: { type: input.entityType, id: input.entityId },
              commentId: id,
              contextUrl: input.contextUrl,
            });
            await writeAuditEvent(tx, auditEvent(actor, "comment.created", { type: "comment", id }, auditData(rows)));
            return created;
          },
        );
      } catch (error) {
        // Inline bytes written for a comment that did not commit go; an upload's stay for a retry (or the sweeper).
        await attachments.discard(files.filter((f) => !f.uploadId));
        throw error;
      }
      publishCreated(actor, comment);
      return comment;
    },

    /** The author replaces the text; the audit event keeps the text it replaced. */
    async update(actor: Actor, args: { id: string; content: string; userId?: string | null }, query: CommentQuery) {
      const input = parseInput(updateCommentInput, { content: args.content, userId: args.userId });
      const comment = await ownComment(actor, args.id, input.userId);
      const where = { id: comment.id, organizationId: actor.organizationId };
      if (comment.content === input.content) return db.comment.findUniqueOrThrow({ ...query, where });
      const event = {
        id: comment.id,
        organizationId: actor.organizationId,
        entityType: comment.entityType,
        entityId: comment.entityId,
      };
      const before = new Set(mentionedIds(comment.content));
      const added = mentionedIds(input.content).filter((memberId) => !before.has(memberId));
      const author = { organizationId: actor.organizationId, memberId: comment.authorId };
      const updated = await notifier.transaction(db, author, async (tx, notify) => {
        const changed = await tx.comment.update({ ...query, where, data: { content: input.content } });
        await notify({
          reason: "mention",
          recipientIds: added,
          entity: { type: comment.entityType, id: comment.entityId },
          commentId: comment.id,
          contextUrl: comment.contextUrl,
        });
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "comment.updated",
            { type: "comment", id: comment.id },
            { changes: { content: { from: comment.content, to: input.content } } },
          ),
        );
        return changed;
      });
      events.publish("comment.updated", actor.organizationId, event);
      return updated;
    },

    /**
     * The author removes the comment with its attachments' rows in one transaction, which schedules
     * their objects' deletion for after the commit; the audit event keeps what was deleted, the text
     * included.
     */
    async delete(actor: Actor, args: { id: string; userId?: string | null }): Promise<DeletedComment> {
      const input = parseInput(actingUser, { userId: args.userId });
      const comment = await ownComment(actor, args.id, input.userId);
      await db.$transaction(async (tx) => {
        // The objects go once this commits (attachments.jobs.ts): never while a committed row names them.
        await scheduleObjectDeletions(tx, comment.attachments);
        await tx.attachment.deleteMany({ where: { commentId: comment.id, organizationId: actor.organizationId } });
        await tx.comment.delete({ where: { id: comment.id, organizationId: actor.organizationId }, select: { id: true } });
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "comment.deleted",
            { type: "comment", id: comment.id },
            {
              content: comment.content,
              entityType: comment.entityType,
              entityId: comment.entityId,
              authorId: comment.authorId,
              authorUserId: comment.author.userId,
              attachments: comment.attachments.map(({ id, name, type, size, sha256 }) => ({ id, name, type, size, sha256 })),
            },
          ),
        );
      });
      const deleted = { deletedId: comment.id, entityType: comment.entityType, entityId: comment.entityId };
      events.publish("comment.deleted", actor.organizationId, { ...deleted, organizationId: actor.organizationId });
      return deleted;
    },

    async list(
      actor: Actor,
      { entityId, entityType, ...args }: { entityId: string; entityType: string } & ListArgs,
      query: CommentQuery,
    ) {
      const input = parseInput(listInput, { entityId, entityType });
      await assertEntityExists(db, actor.organizationId, input.entityType, input.entityId);
      return listPage(
        db,
        actor.organizationId,
        commentList,
        { ...args, parent: [input.entityType, input.entityId], query },
        // The query includes the author: the GraphQL type Comment includes it whatever is selected.
        (ids, q: RecordQuery) =>
          db.comment.findMany({
            ...(q as CommentQuery),
            where: { id: { in: ids }, organizationId: actor.organizationId },
          }) as Promise<CommentWithAuthor[]>,
      );
    },

    /** New comments on one entity of the caller's organization, as they are created. */
    subscribe: (actor: Actor, args: EntityArgs) =>
      entityStream<CommentEvent>(actor, args, (organizationId, where) =>
        events.subscribe("comment.created", organizationId, where),
      ),

    /** Edits of the comments on one entity, as they are saved. */
    subscribeUpdated: (actor: Actor, args: EntityArgs) =>
      entityStream<CommentEvent>(actor, args, (organizationId, where) =>
        events.subscribe("comment.updated", organizationId, where),
      ),

    /** Deletes of the comments on one entity. */
    subscribeDeleted: (actor: Actor, args: EntityArgs) =>
      entityStream<CommentDeletedEvent>(actor, args, (organizationId, where) =>
        events.subscribe("comment.deleted", organizationId, where),
      ),

    async byId(actor: Actor, id: string, query: CommentQuery) {
      const comment = await db.comment.findUnique({ ...query, where: { id, organizationId: actor.organizationId } });
      if (!comment) throw new NotFoundError("Comment", id);
      return comment;
    },

    /** Uploads, download URLs and the stored bytes of attachments (attachments.service.ts). */
    attachments,
  };
}
