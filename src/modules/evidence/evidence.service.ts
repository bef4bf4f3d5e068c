import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { EvidenceStatus } from "../../generated/prisma/enums.js";
import {
  bound,
  dateBoundRules,
  dateSortKeys,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  oneOf,
  type SortKey,
  sortBy,
} from "../../graphql/lists.js";
import type { Db } from "../../platform/db/database.js";
import { rowsByIds } from "../../platform/db/graph-reader.js";
import { rowByIdReader } from "../../platform/db/row-by-id.js";
import { AppError, BadUserInputError, ConflictError, ForbiddenError, NotFoundError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { limit, text } from "../../platform/limits.js";
import { parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, writeAuditEvent } from "../audit/audit.service.js";
import { scheduleObjectDeletions } from "../comments/attachments.jobs.js";
import { type AttachmentService, type StoredFile, UPLOAD_TAKEN, uploadLimits } from "../comments/attachments.service.js";
import { callerMemberId, controlScope, inScope, type Recorder, recordControlStates } from "../controls/controls.service.js";
import type { Notifier } from "../notifications/notifications.service.js";

type EvidenceQuery = { select?: Prisma.EvidenceSelect; include?: Prisma.EvidenceInclude };
type Tx = Prisma.TransactionClient;

const DAY_MS = 86_400_000;

export const evidenceLimits = {
  description: limit({ maxLength: 2000 }),
  rejectionReason: limit({ minLength: 1, maxLength: 2000, trim: true }),
};

// Creating evidence --------------------------------------------------------------------------------

/** What evidence is about: one control or one vendor. */
export type EvidenceTarget = { controlId: string; vendorId?: undefined } | { vendorId: string; controlId?: undefined };

export type NewEvidence = {
  /** Who the `evidence.added` events name (an Actor; the outside party of an evidence request has neither user nor key). */
  recorder: Recorder;
  target: EvidenceTarget;
  /** The files, each already in its store (the attachment service's `prepare`): one evidence item each. */
  files: StoredFile[];
  status: EvidenceStatus;
  /** The member who added it; also the files' uploader. Null for an API key or an outside party. */
  submittedById?: string | null;
  /** The outside party's e-mail (an evidence request's recipient). */
  submittedByEmail?: string | null;
  evidenceRequestId?: string | null;
  description?: string | null;
  /** When the evidence was produced; default now; never in the future (400). */
  collectedAt?: Date | null;
  /** Until when it counts; default collectedAt + the control's evidenceEveryDays, else null. */
  validUntil?: Date | null;
  /** The clock of the change (tests move it); default now. */
  now?: Date;
};

/** One evidence item as written: enough for an answer's read-back and the caller's own events. */
export type CreatedEvidence = {
  id: string;
  attachmentId: string;
  sha256: string;
  controlId: string | null;
  vendorId: string | null;
  status: EvidenceStatus;
};

/** The file as audit events carry it: the chain vouches for the bytes by their SHA-256 (hex). */
const fileOf = (a: { id: string; name: string; type: string; size: number; sha256: string }) => ({
  id: a.id,
  name: a.name,
  type: a.type,
  size: a.size,
  sha256: a.sha256,
});

/**
 * Turns stored files into evidence, in the caller's transaction: the attachments' rows (no
 * comment; the uploader is the submitting member, or none), each upload marked attached (an upload
 * attaches once: 409 when another change took it), one evidence row per file, an `evidence.added`
 * audit event per item carrying the file's sha256, and, for accepted evidence of a control, the
 * control's state change. 404 when the control or vendor is not the recorder's organization's.
 * Shared by addEvidence / addVendorEvidence and by evidence requests (section 17).
 */
export async function createEvidenceFromUploads(tx: Tx, input: NewEvidence): Promise<CreatedEvidence[]> {
  const { recorder, target, files } = input;
  const organizationId = recorder.organizationId;
  const now = input.now ?? new Date();
  let everyDays: number | null = null;
  if (target.controlId !== undefined) {
    // The control's lock first, as every other write of a control takes it: the evidence rows'
    // foreign key would otherwise take a share lock first, and two additions at once would deadlock
    // on the upgrade in recordControlStates.
    const [control] = await tx.$queryRaw<{ evidenceEveryDays: number | null }[]>`
      SELECT "evidenceEveryDays" FROM "Control"
      WHERE "id" = ${target.controlId} AND "organizationId" = ${organizationId} FOR UPDATE`;
    if (!control) throw new NotFoundError("Control", target.controlId);
    everyDays = control.evidenceEveryDays;
  } else {
    const vendorId = target.vendorId as string;
    const vendor = await tx.vendor.findUnique({ where: { id: vendorId, organizationId }, select: { id: true } });
    if (!vendor) throw new NotFoundError("Vendor", vendorId);
  }
  const collectedAt = input.collectedAt ?? now;
  if (collectedAt.getTime() > now.getTime()) {
    throw new BadUserInputError("collectedAt: must not be in the future", [
      { path: "collectedAt", message: "must not be in the future" },
    ]);
  }
  const validUntil = input.validUntil ?? (everyDays === null ? null : new Date(collectedAt.getTime() + everyDays * DAY_MS));
  const submittedById = input.submittedById ?? null;
  const rows = files.map((file) => ({ file, attachmentId: newId("att"), evidenceId: newId("evd") }));
  await tx.attachment.createMany({
    data: rows.map(({ file, attachmentId }) => ({
      id: attachmentId,
      organizationId,
      commentId: null,
      name: file.name,
      type: file.type,
      size: file.size,
      sha256: file.sha256,
      store: file.store,
      objectKey: file.objectKey,
      description: file.description,
      uploaderId: submittedById,
    })),
  });
  for (const { file, attachmentId } of rows) {
    if (!file.uploadId) continue;
    const taken = await tx.attachmentUpload.updateMany({
      where: { id: file.uploadId, attachmentId: null },
      data: { attachmentId },
    });
    if (taken.count !== 1) {
      throw new AppError("CONFLICT", `uploadId: ${UPLOAD_TAKEN}`, [{ path: "uploadId", message: UPLOAD_TAKEN }]);
    }
  }
  const common = {
    organizationId,
    controlId: target.controlId ?? null,
    vendorId: target.vendorId ?? null,
    description: input.description ?? null,
    collectedAt,
    validUntil,
    status: input.status,
    submittedById,
    submittedByEmail: input.submittedByEmail ?? null,
    evidenceRequestId: input.evidenceRequestId ?? null,
  };
  await tx.evidence.createMany({
    data: rows.map(({ evidenceId, attachmentId }) => ({ ...common, id: evidenceId, attachmentId, createdAt: now })),
  });
  if (target.controlId !== undefined && input.status === "accepted") await recordControlStates(tx, recorder, [target.controlId]);
  for (const { file, evidenceId, attachmentId } of rows) {
    await writeAuditEvent(
      tx,
      auditEvent(
        recorder,
        "evidence.added",
        { type: "evidence", id: evidenceId },
        {
          controlId: common.controlId,
          vendorId: common.vendorId,
          status: input.status,
          collectedAt: collectedAt.toISOString(),
          validUntil: validUntil?.toISOString() ?? null,
          submittedByEmail: common.submittedByEmail,
          evidenceRequestId: common.evidenceRequestId,
          attachment: fileOf({ ...file, id: attachmentId }),
          sha256: file.sha256,
        },
      ),
    );
  }
  return rows.map(({ file, evidenceId, attachmentId }) => ({
    id: evidenceId,
    attachmentId,
    sha256: file.sha256,
    controlId: common.controlId,
    vendorId: common.vendorId,
    status: input.status,
  }));
}

// Reading evidence ---------------------------------------------------------------------------------

const evidenceOrders: Record<string, SortKey> = {
  ...dateSortKeys(false),
  collectedAt: sortBy.timestamp("collectedAt"),
  validUntil: { ...sortBy.timestamp("validUntil"), nullable: true },
};
const evidenceFilters = {
  status: oneOf("status", '"EvidenceStatus"'),
  ...dateBoundRules(false),
  validBefore: bound("validUntil", "timestamp(3)", "before"),
  validAfter: bound("validUntil", "timestamp(3)", "after"),
};

/** A control's evidence: what `Control.evidence` and `controlEvidence` filter and sort by. */
export const controlEvidenceList: ListSpec = {
  table: "Evidence",
  parent: [{ name: "controlId", sqlType: "text" }],
  filters: evidenceFilters,
  orders: evidenceOrders,
  defaultOrder: newestFirst,
};

/** A vendor's evidence: what `Vendor.evidence` and `vendorEvidence` filter and sort by. */
export const vendorEvidenceList: ListSpec = { ...controlEvidenceList, parent: [{ name: "vendorId", sqlType: "text" }] };

/** Evidence's scalar columns by id (row-by-id.ts). */
export const evidenceRows = rowByIdReader<Prisma.EvidenceGetPayload<object>>(
  "Evidence",
  Object.values(Prisma.EvidenceScalarFieldEnum),
);

/** Whether the caller reads evidence about this control or vendor: the control in its scope, or `vendor:read`. */
async function mayRead(
  db: Db,
  actor: Actor,
  about: { controlId: string | null; vendorId: string | null; ownerId?: string | null },
) {
  if (about.vendorId) return actor.permissions.has("vendor:read");
  return inScope(await controlScope(db, actor), { ownerId: about.ownerId ?? null });
}

/**
 * The evidence rule for files (attachments.service.ts): a file no comment holds is readable by
 * whoever reads its evidence. An API key or person with no way to read controls nor vendors reads none.
 */
export type EvidenceOutcome = { status: "accepted" } | { status: "rejected"; reason: string };

/**
 * Writes the review of evidence items that await it, in the caller's transaction: each item's
 * status, reviewer and time, and its `evidence.accepted` / `evidence.rejected` event with the
 * file's sha256 (`extra` adds to every event, e.g. the evidence request it came through). The
 * caller has locked the rows, checked who may decide, and records the control states after.
 */
export async function writeEvidenceReviews(
  tx: Tx,
  actor: Actor,
  items: { id: string; controlId: string | null; vendorId: string | null; attachmentId: string; sha256: string }[],
  outcome: EvidenceOutcome,
  reviewedById: string | null,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const reviewedAt = new Date();
  for (const item of items) {
    await tx.evidence.update({
      where: { id: item.id, organizationId: actor.organizationId },
      data: {
        status: outcome.status,
        reviewedById,
        reviewedAt,
        rejectionReason: outcome.status === "rejected" ? outcome.reason : null,
      },
      select: { id: true },
    });
    await writeAuditEvent(
      tx,
      auditEvent(
        actor,
        `evidence.${outcome.status}`,
        { type: "evidence", id: item.id },
        {
          controlId: item.controlId,
          vendorId: item.vendorId,
          attachmentId: item.attachmentId,
          sha256: item.sha256,
          ...extra,
          ...(outcome.status === "rejected" ? { reason: outcome.reason } : {}),
        },
      ),
    );
  }
}

export function evidenceFileReadable(db: Db) {
  return async (actor: Actor, attachmentId: string): Promise<boolean> => {
    const evidence = await db.evidence.findFirst({
      where: { attachmentId, organizationId: actor.organizationId },
      select: { controlId: true, vendorId: true, control: { select: { ownerId: true } } },
    });
    if (!evidence) return false;
    try {
      return await mayRead(db, actor, { ...evidence, ownerId: evidence.control?.ownerId });
    } catch (error) {
      if (error instanceof ForbiddenError) return false;
      throw error;
    }
  };
}

// Inputs -------------------------------------------------------------------------------------------

const addInput = z.object({
  uploadId: text(uploadLimits.uploadId),
  description: text(evidenceLimits.description).nullish(),
  collectedAt: z.date().nullish(),
  validUntil: z.date().nullish(),
});
export type AddEvidenceArgs = WithNulls<z.input<typeof addInput>>;

const rejectInput = z.object({ reason: text(evidenceLimits.rejectionReason) });

/** What an evidence's deletion answers: its id and what it was about (over REST, 204). */
export type DeletedEvidence = { deletedId: string; controlId: string | null; vendorId: string | null };

type LockedEvidence = {
  id: string;
  controlId: string | null;
  vendorId: string | null;
  status: EvidenceStatus;
  submittedById: string | null;
  attachmentId: string;
  sha256: string;
  store: string;
  objectKey: string;
  ownerId: string | null;
};

/** The permission that decides on evidence about this: control:update, or vendor:update for a vendor's. */
const deciding = (evidence: { vendorId: string | null }) => (evidence.vendorId ? "vendor:update" : "control:update");

export function createEvidenceService(db: Db, notifier: Notifier, attachments: AttachmentService) {
  /** The evidence under its row's lock, with its file; 404 when it is not the organization's or not in the caller's reach. */
  async function locked(tx: Tx, actor: Actor, evidenceId: string): Promise<LockedEvidence> {
    if (!actor.permissions.has("control:update") && !actor.permissions.has("vendor:update")) {
      throw new ForbiddenError("This operation needs the permission control:update (vendor:update for a vendor's evidence)");
    }
    const [evidence] = await tx.$queryRaw<LockedEvidence[]>`
      SELECT e."id", e."controlId", e."vendorId", e."status"::text AS "status", e."submittedById", e."attachmentId",
             a."sha256", a."store", a."objectKey", c."ownerId"
      FROM "Evidence" e
      JOIN "Attachment" a ON a."id" = e."attachmentId"
      LEFT JOIN "Control" c ON c."id" = e."controlId"
      WHERE e."id" = ${evidenceId} AND e."organizationId" = ${actor.organizationId}
      FOR UPDATE OF e`;
    if (!evidence) throw new NotFoundError("Evidence", evidenceId);
    const permission = deciding(evidence);
    if (!actor.permissions.has(permission)) {
      // Out of the caller's reach it is missing; within it, the decision needs the permission.
      if (!(await mayRead(db, actor, evidence).catch(() => false))) throw new NotFoundError("Evidence", evidenceId);
      throw new ForbiddenError(`This operation needs the permission ${permission}`);
    }
    return evidence;
  }

  const readBack = (tx: Tx, actor: Actor, evidenceId: string, query: EvidenceQuery) =>
    tx.evidence.findUniqueOrThrow({ ...query, where: { id: evidenceId, organizationId: actor.organizationId } });

  /** Adds one file as evidence, `status` decided by the caller; 503 when the store is down, nothing written. */
  async function add(actor: Actor, target: EvidenceTarget, status: EvidenceStatus, args: AddEvidenceArgs, query: EvidenceQuery) {
    const input = parseInput(addInput, args);
    // Another organization's control or vendor is a 404 before the store is asked about the upload.
    const found =
      target.controlId !== undefined
        ? await db.control.findUnique({
            where: { id: target.controlId, organizationId: actor.organizationId },
            select: { id: true },
          })
        : await db.vendor.findUnique({
            where: { id: target.vendorId, organizationId: actor.organizationId },
            select: { id: true },
          });
    if (!found)
      throw new NotFoundError(
        target.controlId !== undefined ? "Control" : "Vendor",
        (target.controlId ?? target.vendorId) as string,
      );
    const submittedById = await callerMemberId(db, actor);
    const files = await attachments.prepare(actor, [{ uploadId: input.uploadId }], () => "uploadId");
    return notifier.transaction(db, actor, async (tx) => {
      const [created] = await createEvidenceFromUploads(tx, {
        recorder: actor,
        target,
        files,
        status,
        submittedById,
        description: input.description,
        collectedAt: input.collectedAt,
        validUntil: input.validUntil,
      });
      return readBack(tx, actor, (created as CreatedEvidence).id, query);
    });
  }

  /** Accepts or rejects submitted evidence, never by the member who submitted it. */
  async function decide(actor: Actor, evidenceId: string, outcome: EvidenceOutcome, query: EvidenceQuery) {
    return notifier.transaction(db, actor, async (tx) => {
      const evidence = await locked(tx, actor, evidenceId);
      if (evidence.status !== "submitted") {
        throw new ConflictError(`Evidence ${evidenceId} is ${evidence.status}: only submitted evidence is accepted or rejected`);
      }
      const reviewerId = await callerMemberId(tx, actor);
      if (evidence.submittedById && reviewerId === evidence.submittedById) {
        throw new ForbiddenError("You submitted this evidence: another member with the permission reviews it");
      }
      await writeEvidenceReviews(tx, actor, [evidence], outcome, reviewerId);
      if (evidence.controlId) await recordControlStates(tx, actor, [evidence.controlId]);
      return readBack(tx, actor, evidenceId, query);
    });
  }

  return {
    /**
     * Evidence for a control: accepted with `control:update`; submitted when its owner adds it
     * without that permission. Anyone else: 404 when the control is out of their reach, else 403.
     */
    async addToControl(actor: Actor, controlId: string, args: AddEvidenceArgs, query: EvidenceQuery) {
      let status: EvidenceStatus = "accepted";
      if (!actor.permissions.has("control:update")) {
        const scope = await controlScope(db, actor);
        const control = await db.control.findUnique({
          where: { id: controlId, organizationId: actor.organizationId },
          select: { ownerId: true },
        });
        if (!control || !inScope(scope, control)) throw new NotFoundError("Control", controlId);
        const memberId = await callerMemberId(db, actor);
        if (!memberId || control.ownerId !== memberId) {
          throw new ForbiddenError("This operation needs the permission control:update, or to own the control");
        }
        status = "submitted";
      }
      return add(actor, { controlId }, status, args, query);
    },

    /** Evidence about a vendor (`vendor:update`): accepted at once. */
    addToVendor(actor: Actor, vendorId: string, args: AddEvidenceArgs, query: EvidenceQuery) {
      return add(actor, { vendorId }, "accepted", args, query);
    },

    accept(actor: Actor, evidenceId: string, query: EvidenceQuery) {
      return decide(actor, evidenceId, { status: "accepted" }, query);
    },

    reject(actor: Actor, evidenceId: string, reason: string, query: EvidenceQuery) {
      const input = parseInput(rejectInput, { reason });
      return decide(actor, evidenceId, { status: "rejected", reason: input.reason }, query);
    },

    /** Removes the evidence and its file's row; the object goes once this has committed (attachments.jobs.ts). */
    async delete(actor: Actor, evidenceId: string): Promise<DeletedEvidence> {
      return notifier.transaction(db, actor, async (tx, notify) => {
        const evidence = await locked(tx, actor, evidenceId);
        await scheduleObjectDeletions(tx, [evidence]);
        // The evidence row goes with its attachment (onDelete: Cascade).
        await tx.attachment.delete({ where: { id: evidence.attachmentId }, select: { id: true } });
        if (evidence.controlId && evidence.status === "accepted")
          await recordControlStates(tx, actor, [evidence.controlId], notify);
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "evidence.deleted",
            { type: "evidence", id: evidenceId },
            {
              controlId: evidence.controlId,
              vendorId: evidence.vendorId,
              status: evidence.status,
              attachmentId: evidence.attachmentId,
              sha256: evidence.sha256,
            },
          ),
        );
        return { deletedId: evidenceId, controlId: evidence.controlId, vendorId: evidence.vendorId };
      });
    },

    /**
     * One evidence item the caller may read: a control's in the caller's scope (else 404), a
     * vendor's with `vendor:read` (else 403). A caller who can read neither is refused (403).
     */
    async get(actor: Actor, evidenceId: string, query: EvidenceQuery) {
      const evidence = await db.evidence.findUnique({
        where: { id: evidenceId, organizationId: actor.organizationId },
        select: { vendorId: true, control: { select: { ownerId: true } } },
      });
      if (!evidence && !actor.permissions.has("vendor:read")) await controlScope(db, actor);
      if (evidence?.vendorId && !actor.permissions.has("vendor:read")) {
        throw new ForbiddenError("This operation needs the permission vendor:read");
      }
      if (!evidence || (evidence.control && !inScope(await controlScope(db, actor), evidence.control))) {
        throw new NotFoundError("Evidence", evidenceId);
      }
      return db.evidence.findUniqueOrThrow({ ...query, where: { id: evidenceId, organizationId: actor.organizationId } });
    },

    /** A control's evidence (its control in the caller's scope, else 404). */
    async listForControl(actor: Actor, controlId: string, args: ListArgs, query: EvidenceQuery) {
      const scope = await controlScope(db, actor);
      const control = await db.control.findUnique({
        where: { id: controlId, organizationId: actor.organizationId },
        select: { ownerId: true },
      });
      if (!control || !inScope(scope, control)) throw new NotFoundError("Control", controlId);
      const rows = rowsByIds(evidenceRows, db, actor.organizationId);
      return listPage(db, actor.organizationId, controlEvidenceList, { ...args, parent: [controlId], query }, rows);
    },

    /** A vendor's evidence (`vendor:read`; another organization's vendor is 404). */
    async listForVendor(actor: Actor, vendorId: string, args: ListArgs, query: EvidenceQuery) {
      const vendor = await db.vendor.findUnique({
        where: { id: vendorId, organizationId: actor.organizationId },
        select: { id: true },
      });
      if (!vendor) throw new NotFoundError("Vendor", vendorId);
      const rows = rowsByIds(evidenceRows, db, actor.organizationId);
      return listPage(db, actor.organizationId, vendorEvidenceList, { ...args, parent: [vendorId], query }, rows);
    },

    /** A credential-free URL for the file of evidence the caller has read (Evidence.downloadUrl). */
    downloadUrl: (attachment: { name: string; type: string; store: string; objectKey: string }, origin?: string) =>
      attachments.sign(attachment, origin),
  };
}

export type EvidenceService = ReturnType<typeof createEvidenceService>;
