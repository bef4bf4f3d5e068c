import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import { EvidenceStatus } from "../../generated/prisma/enums.js";
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
import { commonLimits, limit, text } from "../../platform/limits.js";
import { parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, writeAuditEvent } from "../audit/audit.service.js";
import { scheduleObjectDeletions } from "../comments/attachments.jobs.js";
import { type AttachmentService, type StoredFile, uploadLimits } from "../comments/attachments.service.js";
import {
  callerMemberId,
  controlScope,
  inScope,
  type Recorder,
  recordControlStates,
} from "../controls/controls.service.js";
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
  if (target.controlId) {
    const control = await tx.control.findUnique({
      where: { id: target.controlId, organizationId },
      select: { evidenceEveryDays: true },
    });
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
  const validUntil =
    input.validUntil ?? (everyDays === null ? null : new Date(collectedAt.getTime() + everyDays * DAY_MS));
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
      const message = "this upload is already attached";
      throw new AppError("CONFLICT", `uploadId: ${message}`, [{ path: "uploadId", message }]);
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
  if (target.controlId && input.status === "accepted") await recordControlStates(tx, recorder, [target.controlId]);
  for (const { file, evidenceId, attachmentId } of rows) {
    await writeAuditEvent(
      tx,
      auditEvent(recorder, "evidence.added", { type: "evidence", id: evidenceId }, {
        controlId: common.controlId,
        vendorId: common.vendorId,
        status: input.status,
        collectedAt: collectedAt.toISOString(),
        validUntil: validUntil?.toISOString() ?? null,
        submittedByEmail: common.submittedByEmail,
        evidenceRequestId: common.evidenceRequestId,
        attachment: fileOf({ ...file, id: attachmentId }),
        sha256: file.sha256,
      }),
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
