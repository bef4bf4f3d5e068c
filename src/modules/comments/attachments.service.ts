import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { z } from "zod";
import type { Actor, RecipientActor } from "../../auth/actor.js";
import {
  type AttachmentStore,
  base64ToHex,
  newObjectKey,
  ObjectMismatchError,
  type StoreKind,
  StoreUnavailableError,
} from "../../platform/attachments/store.js";
import { DEFAULT_UNATTACHED_MAX_BYTES, MAX_ATTACHMENT_BYTES } from "../../platform/config.js";
import type { Db } from "../../platform/db/database.js";
import {
  AppError,
  BadUserInputError,
  ConflictError,
  type ErrorDetail,
  ForbiddenError,
  NotFoundError,
} from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, integer, limit, text } from "../../platform/limits.js";
import { parseInput } from "../../platform/validation.js";
import { executableReason, safeFileNamePattern } from "./attachment-rules.js";
import { scheduleObjectDeletions } from "./attachments.jobs.js";

const MiB = 1024 * 1024;

/** The attachment store and its settings (ATTACHMENT_*), as the comments service uses them. */
export type AttachmentSettings = {
  /** Where new objects go (ATTACHMENT_STORE). */
  store: AttachmentStore;
  /** The store of each kind an attachment row may name (rows keep theirs until moved); undefined when not configured. */
  storeOf: (kind: StoreKind) => AttachmentStore | undefined;
  /** ATTACHMENT_MAX_BYTES: the largest upload (10 MiB at most on the database store). */
  maxBytes: number;
  /** ATTACHMENT_UPLOAD_TTL_SECONDS: how long an upload URL admits the bytes. */
  uploadTtlSeconds: number;
  /** ATTACHMENT_DOWNLOAD_TTL_SECONDS: how long a download URL serves them. */
  downloadTtlSeconds: number;
  /** ATTACHMENT_UNATTACHED_MAX_BYTES: what an organization's uploads not yet attached may declare together. */
  unattachedMaxBytes?: number;
};

/** Uploads a caller may hold not yet attached (and not expired). */
export const MAX_PENDING_UPLOADS = 100;
/** The refusal of an upload already attached, to a comment or as evidence: each upload is used once. */
export const UPLOAD_TAKEN = "this upload is already attached: an upload is used once";
/** The largest attachment `attachment(id) { contentBase64 }` answers over GraphQL: the inline limit. */
export const BASE64_CONTENT_MAX_BYTES = 10 * MiB;

export const attachmentFileLimits = {
  fileName: limit({
    minLength: 1,
    maxLength: 255,
    pattern: safeFileNamePattern,
    patternHint: "a plain file name: no path separators, quotes or control characters",
  }),
  fileType: limit({
    maxLength: 255,
    pattern: "^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$",
    patternHint: "a media type such as application/pdf",
  }),
};

export const uploadLimits = {
  size: limit({ minimum: 1, maximum: MAX_ATTACHMENT_BYTES }),
  // 32 bytes in standard base64: 42 characters, one whose last 2 bits are zero, and one "=".
  sha256: limit({
    minLength: 44,
    maxLength: 44,
    pattern: "^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$",
    patternHint: "the standard base64 of the 32-byte SHA-256 of the bytes (44 characters), as x-amz-checksum-sha256 carries it",
  }),
  uploadId: commonLimits.id,
};

const createUploadInput = z.object({
  fileName: text(attachmentFileLimits.fileName),
  fileType: text(attachmentFileLimits.fileType),
  size: integer(uploadLimits.size),
  sha256: text(uploadLimits.sha256),
});

export type CreateUploadArgs = z.input<typeof createUploadInput>;

/** The answer to createAttachmentUpload: where and how to send the bytes. */
export type AttachmentUploadTicket = {
  id: string;
  uploadUrl: string;
  method: "PUT";
  headers: Record<string, string>;
  expiresAt: Date;
};

/** An attachment's bytes in a store, ready to be named by a row in the comment's transaction. */
export type StoredFile = {
  index: number;
  name: string;
  type: string;
  size: number;
  sha256: string;
  store: StoreKind;
  objectKey: string;
  description: string | null;
  userId: string | null;
  /** The upload it came from; null for inline bytes. */
  uploadId: string | null;
};

/** One item of createComment's `attachments`, after its own checks. */
export type AttachmentItem = {
  fileName?: string | null;
  fileType?: string | null;
  fileData?: string | null;
  uploadId?: string | null;
  description?: string | null;
  userId?: string | null;
};

/** Where an item sits in the request: `attachments.<index>` of createComment, or the argument's own place (an evidence's upload). */
export type ItemPath = (index: number, field?: string) => string;
const inAttachments: ItemPath = (index, field) => (field ? `attachments.${index}.${field}` : `attachments.${index}`);

const itemError = (code: "BAD_USER_INPUT" | "CONFLICT" | "NOT_FOUND", path: string, message: string) => {
  const details: ErrorDetail[] = [{ path, message }];
  return new AppError(code, `${path}: ${message}`, details);
};

/** Whether the file name or type is refused, and which of the two to name. */
function refusedFile(fileName: string, fileType: string): { field: "fileName" | "fileType"; reason: string } | null {
  const byName = executableReason(fileName, "application/octet-stream", new Uint8Array());
  if (byName) return { field: "fileName", reason: byName };
  const byType = executableReason(fileName, fileType, new Uint8Array());
  return byType ? { field: "fileType", reason: byType } : null;
}

/** The first bytes of a stream (at most `count`), after which it is closed. */
async function firstBytes(body: NodeJS.ReadableStream, count: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  const readable = body as Readable;
  try {
    for await (const chunk of readable) {
      chunks.push(Buffer.from(chunk as Uint8Array));
      length += (chunk as Uint8Array).length;
      if (length >= count) break;
    }
  } finally {
    readable.destroy?.();
  }
  return Buffer.concat(chunks).subarray(0, count);
}

/** Bytes an executable's signature needs to be recognised (attachment-rules.ts): at most 4. */
const SIGNATURE_BYTES = 8;

/**
 * Whether the caller may read an evidence file (an attachment no comment holds): the evidence
 * module's rule (evidence.service.ts), given here so that the comments module needs no import of it.
 */
export type EvidenceFileAccess = (actor: Actor, attachmentId: string) => Promise<boolean>;

type UploadOwner =
  | { memberId: string; apiKeyId: null; evidenceRequestId?: undefined }
  | { memberId: null; apiKeyId: string; evidenceRequestId?: undefined }
  | { memberId: null; apiKeyId: null; evidenceRequestId: string };

export function createAttachmentService(db: Db, settings: AttachmentSettings, evidenceFileReadable?: EvidenceFileAccess) {
  /**
   * The caller an upload belongs to: the member behind a user credential, or the API key itself, or
   * the evidence request whose link made it (its recipient has neither member nor key).
   */
  async function callerOf(actor: Actor | RecipientActor): Promise<UploadOwner> {
    if ("evidenceRequestId" in actor) return { memberId: null, apiKeyId: null, evidenceRequestId: actor.evidenceRequestId };
    if (actor.apiKeyId && !actor.userId) return { memberId: null, apiKeyId: actor.apiKeyId };
    const member = await db.member.findUnique({
      where: { organizationId_userId: { organizationId: actor.organizationId, userId: actor.userId as string } },
      select: { id: true },
    });
    if (!member) throw new NotFoundError("Member with user id", actor.userId as string);
    return { memberId: member.id, apiKeyId: null };
  }

  /** The store an attachment row names; 503 when this replica has no such store configured. */
  function storeNamed(kind: string): AttachmentStore {
    const store = settings.storeOf(kind as StoreKind);
    if (!store) throw new StoreUnavailableError(`The attachment store "${kind}" is not configured on this replica`);
    return store;
  }

  /** Removes objects that no row names, written for a request refused before its transaction; else the deletion job does. */
  async function discardUnnamed(files: StoredFile[]) {
    const left: StoredFile[] = [];
    await Promise.all(
      files.map((f) =>
        storeNamed(f.store)
          .delete(f.objectKey)
          .catch(() => left.push(f)),
      ),
    );
    if (left.length) await scheduleObjectDeletions(db, left).catch(() => {});
  }

  /**
   * Hands the objects written for a comment whose transaction failed to the deletion job
   * (attachments.jobs.ts), which deletes each only if no committed row names it: a commit whose
   * answer was lost may have committed after all. When even that cannot be written (the database
   * is down), the objects stay, unnamed: a few stray bytes rather than evidence lost.
   */
  async function discard(files: StoredFile[]) {
    await scheduleObjectDeletions(db, files).catch(() => {});
  }

  /**
   * An attachment of the caller's organization that the caller may read: a comment's with
   * `comment:read`, an evidence file by the evidence's own rule (control:read in scope, or
   * vendor:read). 403 without `comment:read` unless the evidence's rule admits the caller, else 404.
   */
  async function readableAttachment(actor: Actor, id: string) {
    const attachment = await db.attachment.findUnique({
      where: { id, organizationId: actor.organizationId },
      select: {
        id: true,
        name: true,
        type: true,
        size: true,
        sha256: true,
        store: true,
        objectKey: true,
        createdAt: true,
        commentId: true,
      },
    });
    if (attachment && attachment.commentId === null && (await evidenceFileReadable?.(actor, id))) return attachment;
    if (!actor.permissions.has("comment:read")) throw new ForbiddenError("This operation needs the permission comment:read");
    if (!attachment || attachment.commentId === null) throw new NotFoundError("Attachment", id);
    return attachment;
  }

  function sign(attachment: { name: string; type: string; store: string; objectKey: string }, origin?: string) {
    return storeNamed(attachment.store).signDownload(attachment.objectKey, {
      fileName: attachment.name,
      type: attachment.type,
      expiresInSeconds: settings.downloadTtlSeconds,
      origin,
    });
  }

  /** The stored bytes of an attachment as a stream; a committed row whose object is gone is a defect (500, logged). */
  async function openObject(attachment: { id: string; store: string; objectKey: string }) {
    const opened = await storeNamed(attachment.store).open(attachment.objectKey);
    if (!opened) throw new Error(`The object of attachment ${attachment.id} is missing from the ${attachment.store} store`);
    return opened;
  }

  return {
    settings,
    discard,

    /**
     * A URL the caller sends one file's bytes to (createAttachmentUpload); the caller holds at most
     * `most` uploads not yet attached (an evidence request's link: its own smaller limit).
     */
    async createUpload(
      actor: Actor | RecipientActor,
      args: CreateUploadArgs,
      origin?: string,
      most = MAX_PENDING_UPLOADS,
    ): Promise<AttachmentUploadTicket> {
      const input = parseInput(createUploadInput, args);
      const refused = refusedFile(input.fileName, input.fileType);
      if (refused)
        throw new BadUserInputError(`${refused.field}: ${refused.reason}`, [{ path: refused.field, message: refused.reason }]);
      const { store, maxBytes } = settings;
      if (input.size > maxBytes) {
        const message = `must be at most ${maxBytes} bytes (ATTACHMENT_MAX_BYTES, on the ${store.kind} store)`;
        throw new BadUserInputError(`size: ${message}`, [{ path: "size", message }]);
      }
      const caller = await callerOf(actor);
      const type = input.fileType.toLowerCase();
      const sha256 = base64ToHex(input.sha256);
      const objectKey = newObjectKey();
      const signed = await store.signUpload(objectKey, {
        size: input.size,
        type,
        sha256,
        expiresInSeconds: settings.uploadTtlSeconds,
        origin,
      });
      const id = newId("upl");
      await db.$transaction(async (tx) => {
        // An organization's uploads are counted and added one request at a time, so both limits hold under a race.
        const organizationKey = `attachment-uploads:${actor.organizationId}`;
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${organizationKey}, 0))`;
        const pending = await tx.attachmentUpload.count({
          where: { organizationId: actor.organizationId, ...caller, attachmentId: null, expiresAt: { gt: new Date() } },
        });
        if (pending >= most) {
          throw new ConflictError(
            caller.evidenceRequestId
              ? `This request holds ${pending} files not yet submitted, the most it takes: submit them, or wait until their URLs expire`
              : `You hold ${pending} uploads not yet attached, the most allowed: attach them to a comment, or wait until their URLs expire`,
          );
        }
        // Expired ones count until swept (an hour later): their objects take the space until then.
        const unattachedMax = settings.unattachedMaxBytes ?? DEFAULT_UNATTACHED_MAX_BYTES;
        const unattached = await tx.attachmentUpload.aggregate({
          where: { organizationId: actor.organizationId, attachmentId: null },
          _sum: { size: true },
        });
        if ((unattached._sum.size ?? 0) + input.size > unattachedMax) {
          throw new ConflictError(
            `This organization's uploads not yet attached declare ${unattached._sum.size ?? 0} bytes; ${input.size} more would pass the ${unattachedMax} allowed (ATTACHMENT_UNATTACHED_MAX_BYTES): attach them, or wait until those never attached are swept (an hour after their URLs expire)`,
          );
        }
        await tx.attachmentUpload.create({
          data: {
            id,
            organizationId: actor.organizationId,
            ...caller,
            fileName: input.fileName,
            fileType: type,
            size: input.size,
            sha256,
            store: store.kind,
            objectKey,
            expiresAt: signed.expiresAt,
          },
          select: { id: true },
        });
      });
      return { id, uploadUrl: signed.url, method: signed.method, headers: signed.headers, expiresAt: signed.expiresAt };
    },

    /**
     * Puts each item's bytes in a store, or checks that the store holds its upload's declared bytes:
     * everything createComment needs of the store, before its transaction. Refusals name the item;
     * the store failing is a 503. Objects written here are removed when a later item fails.
     */
    async prepare(
      actor: Actor | RecipientActor,
      items: AttachmentItem[],
      itemPath: ItemPath = inAttachments,
    ): Promise<StoredFile[]> {
      for (const [index, item] of items.entries()) {
        const inline = item.fileData !== undefined && item.fileData !== null;
        const upload = item.uploadId !== undefined && item.uploadId !== null;
        if (inline === upload) {
          throw itemError(
            "BAD_USER_INPUT",
            itemPath(index),
            "give either fileData (the bytes inline) or uploadId (an upload's id), not both or neither",
          );
        }
        if (inline && (!item.fileName || !item.fileType)) {
          const field = item.fileName ? "fileType" : "fileName";
          throw itemError("BAD_USER_INPUT", itemPath(index, field), "is required with fileData");
        }
      }
      const uploadIds = items.flatMap((item) => (item.uploadId ? [item.uploadId] : []));
      const repeated = uploadIds.find((id, i) => uploadIds.indexOf(id) !== i);
      if (repeated) {
        const index = items.findLastIndex((item) => item.uploadId === repeated);
        throw itemError(
          "BAD_USER_INPUT",
          itemPath(index, "uploadId"),
          "names an upload another item of this comment already attaches",
        );
      }
      const uploads = uploadIds.length
        ? await db.attachmentUpload.findMany({ where: { id: { in: uploadIds }, organizationId: actor.organizationId } })
        : [];
      const caller = uploads.length ? await callerOf(actor) : null;
      const now = Date.now();
      // Refusals that need no store first: a missing, foreign, expired or attached upload, a refused file.
      for (const [index, item] of items.entries()) {
        if (item.uploadId) {
          const found = uploads.find((u) => u.id === item.uploadId);
          if (
            !found ||
            found.memberId !== caller?.memberId ||
            found.apiKeyId !== caller?.apiKeyId ||
            found.evidenceRequestId !== (caller?.evidenceRequestId ?? null)
          ) {
            throw itemError("NOT_FOUND", itemPath(index, "uploadId"), `upload ${JSON.stringify(item.uploadId)} was not found`);
          }
          if (found.attachmentId) throw itemError("CONFLICT", itemPath(index, "uploadId"), UPLOAD_TAKEN);
          if (found.expiresAt.getTime() <= now) {
            throw itemError(
              "BAD_USER_INPUT",
              itemPath(index, "uploadId"),
              "this upload expired: create a new one and send the bytes again",
            );
          }
          for (const field of ["fileName", "fileType"] as const) {
            const declared = field === "fileName" ? found.fileName : found.fileType;
            const given = item[field];
            if (given && (field === "fileType" ? given.toLowerCase() : given) !== declared) {
              throw itemError(
                "BAD_USER_INPUT",
                itemPath(index, field),
                `differs from the upload's ${JSON.stringify(declared)}: leave it out`,
              );
            }
          }
        } else {
          // The signature is in the first bytes: 12 base64 characters are 9 of them (the file is decoded once, when stored).
          const head = Buffer.from((item.fileData as string).slice(0, 12), "base64");
          const refused = executableReason(item.fileName as string, item.fileType as string, head);
          if (refused) throw itemError("BAD_USER_INPUT", itemPath(index), refused);
        }
      }

      const written: StoredFile[] = [];
      try {
        const files: StoredFile[] = [];
        for (const [index, item] of items.entries()) {
          const common = { index, description: item.description ?? null, userId: item.userId ?? null };
          const found = item.uploadId ? uploads.find((u) => u.id === item.uploadId) : undefined;
          if (found) {
            const store = storeNamed(found.store);
            const facts = await store.digest(found.objectKey);
            if (!facts || facts.size !== found.size || facts.sha256 !== found.sha256) {
              const message = facts
                ? "the store holds other bytes than the upload declared (size or SHA-256)"
                : "the store holds no bytes for this upload yet: send them to its uploadUrl first";
              throw itemError("BAD_USER_INPUT", itemPath(index), message);
            }
            const opened = await store.open(found.objectKey);
            const refused =
              opened && executableReason(found.fileName, found.fileType, await firstBytes(opened.body, SIGNATURE_BYTES));
            if (refused) throw itemError("BAD_USER_INPUT", itemPath(index), refused);
            files.push({
              ...common,
              name: found.fileName,
              type: found.fileType,
              size: found.size,
              sha256: found.sha256,
              store: found.store as StoreKind,
              objectKey: found.objectKey,
              uploadId: found.id,
            });
          } else {
            const bytes = Buffer.from(item.fileData as string, "base64");
            const file: StoredFile = {
              ...common,
              name: item.fileName as string,
              type: (item.fileType as string).toLowerCase(),
              size: bytes.length,
              sha256: createHash("sha256").update(bytes).digest("hex"),
              store: settings.store.kind,
              objectKey: newObjectKey(),
              uploadId: null,
            };
            await settings.store.put(file.objectKey, Readable.from([bytes]), {
              size: file.size,
              sha256: file.sha256,
              type: file.type,
            });
            written.push(file);
            files.push(file);
          }
        }
        return files;
      } catch (error) {
        await discardUnnamed(written);
        if (error instanceof ObjectMismatchError) throw new Error(`The store refused bytes it was given whole: ${error.message}`);
        throw error;
      }
    },

    /** A credential-free URL serving an attachment's bytes for a few minutes (attachmentDownloadUrl). */
    async downloadUrl(actor: Actor, id: string, origin?: string): Promise<{ url: string; expiresAt: Date }> {
      return sign(await readableAttachment(actor, id), origin);
    },

    /** The download URL of an attachment already read by a caller who may read it (an evidence's file). */
    sign,

    /** An attachment's metadata, with a way to read its bytes from the store. */
    async find(actor: Actor, id: string) {
      const { commentId: _commentId, ...attachment } = await readableAttachment(actor, id);
      return attachment;
    },

    /**
     * The bytes as base64, for GraphQL's `contentBase64`: only up to BASE64_CONTENT_MAX_BYTES, since
     * they are held in memory; larger files are fetched by URL or streamed over REST.
     */
    async contentBase64(attachment: { id: string; size: number; store: string; objectKey: string }): Promise<string> {
      if (attachment.size > BASE64_CONTENT_MAX_BYTES) {
        throw new BadUserInputError(
          `This attachment is ${attachment.size} bytes: contentBase64 is answered up to ${BASE64_CONTENT_MAX_BYTES} bytes (10 MiB). Fetch the bytes from attachmentDownloadUrl, or stream them from GET /v1/attachments/{id}`,
          [{ path: "contentBase64", message: `answered only for attachments of at most ${BASE64_CONTENT_MAX_BYTES} bytes` }],
        );
      }
      const { body } = await openObject(attachment);
      const chunks: Buffer[] = [];
      for await (const chunk of body as Readable) chunks.push(Buffer.from(chunk as Uint8Array));
      return Buffer.concat(chunks).toString("base64");
    },

    open: openObject,
  };
}

export type AttachmentService = ReturnType<typeof createAttachmentService>;

/** The strong ETag of an attachment's bytes: their SHA-256 (base64url, which fits the ETag header's 64 characters). */
export const attachmentEtag = (sha256Hex: string) => `"${Buffer.from(sha256Hex, "hex").toString("base64url")}"`;
