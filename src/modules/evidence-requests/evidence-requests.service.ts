import { z } from "zod";
import type { Actor, RecipientActor } from "../../auth/actor.js";
import { DEAD_LINK_MESSAGE } from "../../auth/evidence-request-links.js";
import type { Permission } from "../../auth/permissions.js";
import { Prisma } from "../../generated/prisma/client.js";
import { EvidenceRequestStatus } from "../../generated/prisma/enums.js";
import {
  bound,
  dateBoundRules,
  dateSortKeys,
  type FilterRule,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  oneOf,
  search,
  sortBy,
} from "../../graphql/lists.js";
import type { RecordQuery } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { BadUserInputError, ConflictError, ForbiddenError, NotFoundError, UnauthenticatedError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, limit, list, text } from "../../platform/limits.js";
import { parseInput } from "../../platform/validation.js";
import { type AuditEventInput, auditEvent, writeAuditEvent } from "../audit/audit.service.js";
import type { AttachmentService, CreateUploadArgs } from "../comments/attachments.service.js";
import { callerMemberId, recordControlStates } from "../controls/controls.service.js";
import { createEvidenceFromUploads, type EvidenceOutcome, writeEvidenceReviews } from "../evidence/evidence.service.js";
import type { NotificationMail, Notifier } from "../notifications/notifications.service.js";
import type { EvidenceRequestMailKind } from "./evidence-requests.mail.js";
import type { LinkTokens } from "./evidence-requests.token.js";

const DAY_MS = 86_400_000;
/** expiresAt when not given: dueAt plus this. */
export const DEFAULT_GRACE_DAYS = 7;
/** The furthest expiresAt may be from now. */
export const MAX_LINK_DAYS = 90;
/** The reminder goes this long before dueAt, while the request takes submissions. */
export const REMIND_BEFORE_MS = 3 * DAY_MS;
/** Files one request takes: uploads made through its link and not yet submitted. */
export const MAX_REQUEST_FILES = 20;

type RequestQuery = { select?: Prisma.EvidenceRequestSelect; include?: Prisma.EvidenceRequestInclude };

export const evidenceRequestLimits = {
  title: commonLimits.name,
  instructions: commonLimits.freeText,
  recipientEmail: limit({ maxLength: 254, format: "email", trim: true }),
  recipientName: limit({ minLength: 1, maxLength: 255, trim: true }),
  note: limit({ maxLength: 2000 }),
  reason: limit({ minLength: 1, maxLength: 2000, notBlank: true }),
  uploadIds: limit({ maxItems: MAX_REQUEST_FILES }),
};

/** Which kinds of request the caller may read: the control's with `control:read`, the vendor's with `vendor:read`. */
const visibleTo: FilterRule = ((kinds: readonly ("control" | "vendor")[]) => {
  if (kinds.length === 2) return null;
  if (kinds.length === 0) return Prisma.sql`FALSE`;
  return kinds[0] === "control" ? Prisma.sql`t."controlId" IS NOT NULL` : Prisma.sql`t."vendorId" IS NOT NULL`;
}) as FilterRule;

/** The organization's evidence requests: what `evidenceRequests` filters and sorts by. */
export const evidenceRequestList: ListSpec = {
  table: "EvidenceRequest",
  parent: [],
  filters: {
    status: oneOf("status", '"EvidenceRequestStatus"'),
    controlId: oneOf("controlId", "text"),
    vendorId: oneOf("vendorId", "text"),
    dueBefore: bound("dueAt", "timestamp(3)", "before"),
    dueAfter: bound("dueAt", "timestamp(3)", "after"),
    ...dateBoundRules(true),
    search: search("title", "recipientEmail"),
    visibleTo,
  },
  orders: {
    ...dateSortKeys(true),
    dueAt: sortBy.timestamp("dueAt"),
    title: sortBy.text("title"),
    status: sortBy.enum("status", '"EvidenceRequestStatus"', Object.values(EvidenceRequestStatus)),
  },
  defaultOrder: newestFirst,
};

const createInput = z
  .object({
    controlId: text(commonLimits.id).nullish(),
    vendorId: text(commonLimits.id).nullish(),
    title: text(evidenceRequestLimits.title),
    instructions: text(evidenceRequestLimits.instructions).nullish(),
    recipientEmail: text(evidenceRequestLimits.recipientEmail),
    recipientName: text(evidenceRequestLimits.recipientName).nullish(),
    dueAt: z.date(),
    expiresAt: z.date().nullish(),
  })
  .refine((input) => !input.controlId !== !input.vendorId, {
    message: "give exactly one of controlId and vendorId",
    path: ["controlId"],
  });

export type CreateEvidenceRequestArgs = z.input<typeof createInput>;

const rejectInput = z.object({ reason: text(evidenceRequestLimits.reason) });

const submitInput = z.object({
  uploadIds: list(text(commonLimits.id), evidenceRequestLimits.uploadIds).refine(
    (ids) => ids.length > 0,
    "give at least one upload",
  ),
  note: text(evidenceRequestLimits.note).nullish(),
});

export type SubmitEvidenceRequestArgs = { uploadIds: readonly string[]; note?: string | null };

/** The statuses a link works in: the page shows the form (open, rejected) or that the files await review (submitted). */
export const LIVE_STATUSES = ["open", "rejected", "submitted"] as const;
/** The statuses that take a submission through the link. */
const TAKES_FILES = ["open", "rejected"];

/** The permission that changes a request of a control or of a vendor. */
const updatePermission = (target: { controlId: string | null }): Permission =>
  target.controlId ? "control:update" : "vendor:update";

function requirePermission(actor: Actor, permission: Permission) {
  if (!actor.permissions.has(permission)) throw new ForbiddenError(`This operation needs the permission ${permission}`);
}

/** The kinds of request the caller may read; 403 when none. */
function readableKinds(actor: Actor): ("control" | "vendor")[] {
  const kinds = [
    ...(actor.permissions.has("control:read") ? (["control"] as const) : []),
    ...(actor.permissions.has("vendor:read") ? (["vendor"] as const) : []),
  ];
  if (kinds.length === 0) throw new ForbiddenError("This operation needs the permission control:read or vendor:read");
  return kinds;
}

/** When the link stops working: the given expiresAt, else dueAt + 7 days (at most 90 days ahead); 400 outside those bounds. */
export function linkExpiry(dueAt: Date, expiresAt: Date | null | undefined, now = new Date()): Date {
  const latest = new Date(now.getTime() + MAX_LINK_DAYS * DAY_MS);
  const refuse = (path: string, message: string) => new BadUserInputError(`${path}: ${message}`, [{ path, message }]);
  if (dueAt.getTime() <= now.getTime()) throw refuse("dueAt", "must be in the future");
  if (dueAt.getTime() > latest.getTime()) throw refuse("dueAt", `must be at most ${MAX_LINK_DAYS} days ahead`);
  if (!expiresAt) return new Date(Math.min(dueAt.getTime() + DEFAULT_GRACE_DAYS * DAY_MS, latest.getTime()));
  if (expiresAt.getTime() < dueAt.getTime()) throw refuse("expiresAt", "must not be before dueAt");
  if (expiresAt.getTime() > latest.getTime()) throw refuse("expiresAt", `must be at most ${MAX_LINK_DAYS} days ahead`);
  return expiresAt;
}

/** An audit event of the recipient's own (opened, submitted): no user or key, the e-mail as actor. */
export function recipientEvent(
  recipient: RecipientActor,
  action: string,
  data: Record<string, Prisma.InputJsonValue> = {},
): AuditEventInput {
  return {
    id: newId("aud"),
    organizationId: recipient.organizationId,
    actorUserId: null,
    actorApiKeyId: null,
    action,
    entityType: "evidence_request",
    entityId: recipient.evidenceRequestId,
    data: { ...data, actorEmail: recipient.recipientEmail, via: "evidence request link" },
    requestId: recipient.requestId,
  };
}

export type EvidenceRequestServiceOptions = {
  links: LinkTokens;
  /** PUBLIC_URL: the base of the links; the request's own origin when unset. */
  publicUrl?: string;
  mail?: NotificationMail;
  /** The attachment service: the link's uploads, and the check that the store holds their bytes. */
  attachments: AttachmentService;
};

/** What a member's or key's change records as its author. */
async function creatorOf(tx: Prisma.TransactionClient, actor: Actor) {
  if (!actor.userId) return { createdById: null, createdByApiKeyId: actor.apiKeyId };
  const member = await tx.member.findUnique({
    where: { organizationId_userId: { organizationId: actor.organizationId, userId: actor.userId } },
    select: { id: true },
  });
  return { createdById: member?.id ?? null, createdByApiKeyId: null };
}

export function createEvidenceRequestService(db: Db, notifier: Notifier, options: EvidenceRequestServiceOptions) {
  const { links, mail, attachments } = options;
  const base = (origin?: string) => options.publicUrl ?? origin ?? "";

  async function queueMail(tx: Prisma.TransactionClient, id: string, kind: EvidenceRequestMailKind, generation: number) {
    await mail?.enqueueEvidenceRequest?.(tx, { evidenceRequestId: id, kind, generation, at: new Date().toISOString() });
  }

  /** The request under its row lock, for a change: 404 when not the organization's, 403 without the target's permission. */
  async function lockForChange(tx: Prisma.TransactionClient, actor: Actor, id: string) {
    const [row] = await tx.$queryRaw<
      { id: string; controlId: string | null; vendorId: string | null; status: EvidenceRequestStatus; expiresAt: Date }[]
    >`SELECT "id", "controlId", "vendorId", "status"::text AS "status", "expiresAt"
      FROM "EvidenceRequest" WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
    if (!row) throw new NotFoundError("Evidence request", id);
    requirePermission(actor, updatePermission(row));
    return row;
  }

  const conflict = (id: string, status: string, what: string) =>
    new ConflictError(`Evidence request ${JSON.stringify(id)} is ${status}: ${what}`);

  return {
    links,

    /** A new request and its link (answered once, as `url`), its e-mail queued in the same transaction. */
    async create(actor: Actor, args: CreateEvidenceRequestArgs, query: RequestQuery, origin?: string) {
      const input = parseInput(createInput, args);
      requirePermission(actor, updatePermission({ controlId: input.controlId ?? null }));
      const expiresAt = linkExpiry(input.dueAt, input.expiresAt);
      const id = newId("erq");
      const { token, tokenHash } = await links.issue(id, 1);
      const request = await notifier.transaction(db, actor, async (tx) => {
        const where = { organizationId: actor.organizationId, id: (input.controlId ?? input.vendorId) as string };
        const target = input.controlId
          ? await tx.control.findUnique({ where, select: { id: true } })
          : await tx.vendor.findUnique({ where, select: { id: true } });
        if (!target) throw new NotFoundError(input.controlId ? "Control" : "Vendor", where.id);
        const data = {
          controlId: input.controlId ?? null,
          vendorId: input.vendorId ?? null,
          title: input.title,
          instructions: input.instructions ?? null,
          recipientEmail: input.recipientEmail,
          recipientName: input.recipientName ?? null,
          dueAt: input.dueAt,
          expiresAt,
        };
        const created = await tx.evidenceRequest.create({
          ...query,
          data: { id, organizationId: actor.organizationId, ...data, tokenHash, ...(await creatorOf(tx, actor)) },
        });
        await queueMail(tx, id, "invitation", 1);
        const { instructions: _instructions, ...recorded } = data;
        await writeAuditEvent(tx, auditEvent(actor, "evidence_request.created", { type: "evidence_request", id }, recorded));
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "evidence_request.sent",
            { type: "evidence_request", id },
            {
              recipientEmail: data.recipientEmail,
              linkGeneration: 1,
              mailed: Boolean(mail?.enqueueEvidenceRequest),
            },
          ),
        );
        return created;
      });
      return { ...request, url: links.url(base(origin), token) };
    },

    /** A request of the organization whose kind the caller may read; any other is 404. */
    async get(actor: Actor, id: string, query: RequestQuery) {
      const kinds = readableKinds(actor);
      const kind = kinds.length === 2 ? {} : kinds[0] === "control" ? { controlId: { not: null } } : { vendorId: { not: null } };
      const request = await db.evidenceRequest.findUnique({
        ...query,
        where: { id, organizationId: actor.organizationId, ...kind },
      });
      if (!request) throw new NotFoundError("Evidence request", id);
      return request;
    },

    /** The organization's requests the caller may read (controls' with control:read, vendors' with vendor:read). */
    async list(actor: Actor, args: ListArgs, query: RequestQuery) {
      const kinds = readableKinds(actor);
      const filter = { ...args.filter, ...(kinds.length < 2 ? { visibleTo: kinds } : {}) };
      return listPage(db, actor.organizationId, evidenceRequestList, { ...args, filter, query }, (ids, q: RecordQuery) =>
        db.evidenceRequest.findMany({
          ...(q as RequestQuery),
          where: { id: { in: ids }, organizationId: actor.organizationId },
        }),
      );
    },

    /** Ends the link at once; the request keeps its evidence. */
    async cancel(actor: Actor, id: string, query: RequestQuery) {
      return notifier.transaction(db, actor, async (tx) => {
        const row = await lockForChange(tx, actor, id);
        if (!(LIVE_STATUSES as readonly string[]).includes(row.status))
          throw conflict(id, row.status, "only a live request can be cancelled");
        const updated = await tx.evidenceRequest.update({ ...query, where: { id }, data: { status: "cancelled" } });
        await writeAuditEvent(
          tx,
          auditEvent(actor, "evidence_request.cancelled", { type: "evidence_request", id }, { from: row.status }),
        );
        return updated;
      });
    },

    /** A new link (answered once, as `url`) and its e-mail; the old link stops working at once. */
    async resend(actor: Actor, id: string, query: RequestQuery, origin?: string) {
      let token = "";
      const updated = await notifier.transaction(db, actor, async (tx) => {
        const row = await lockForChange(tx, actor, id);
        if (!TAKES_FILES.includes(row.status)) throw conflict(id, row.status, "only an open or rejected request gets a new link");
        if (row.expiresAt <= new Date()) throw conflict(id, "expired", "its link can no longer be renewed");
        const { linkGeneration } = await tx.evidenceRequest.findUniqueOrThrow({
          where: { id },
          select: { linkGeneration: true },
        });
        const generation = linkGeneration + 1;
        const issued = await links.issue(id, generation);
        token = issued.token;
        const result = await tx.evidenceRequest.update({
          ...query,
          where: { id },
          data: { tokenHash: issued.tokenHash, linkGeneration: generation },
        });
        await queueMail(tx, id, "invitation", generation);
        const recipient = await tx.evidenceRequest.findUniqueOrThrow({ where: { id }, select: { recipientEmail: true } });
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "evidence_request.sent",
            { type: "evidence_request", id },
            {
              recipientEmail: recipient.recipientEmail,
              linkGeneration: generation,
              mailed: Boolean(mail?.enqueueEvidenceRequest),
            },
          ),
        );
        return result;
      });
      return { ...updated, url: links.url(base(origin), token) };
    },

    /** The request as its recipient sees it (currentEvidenceRequest); the first view is audited as opened. */
    async current(recipient: RecipientActor) {
      const request = await db.evidenceRequest.findUniqueOrThrow({
        where: { id: recipient.evidenceRequestId },
        select: currentSelect,
      });
      if (!request.openedAt) await this.opened(recipient);
      return currentOf(request);
    },

    /** Records the link's first view (`evidence_request.opened`, the recipient as actor); later views write nothing. */
    async opened(recipient: RecipientActor) {
      await db.$transaction(async (tx) => {
        const first = await tx.evidenceRequest.updateMany({
          where: { id: recipient.evidenceRequestId, openedAt: null },
          data: { openedAt: new Date() },
        });
        if (first.count === 1) await writeAuditEvent(tx, recipientEvent(recipient, "evidence_request.opened"));
      });
    },

    /** An upload for the link's request (createAttachmentUpload with the token): at most 20 files not yet submitted. */
    async createUpload(recipient: RecipientActor, args: CreateUploadArgs, origin?: string) {
      const request = await db.evidenceRequest.findUniqueOrThrow({
        where: { id: recipient.evidenceRequestId },
        select: { status: true },
      });
      if (!TAKES_FILES.includes(request.status)) {
        throw new ConflictError("The files sent through this link await review: no more can be sent now");
      }
      return attachments.createUpload(recipient, args, origin, MAX_REQUEST_FILES);
    },

    /**
     * The recipient's files become `submitted` evidence of the control or vendor (the recipient's
     * e-mail as submittedByEmail), the request becomes `submitted`, and its creator is notified, in
     * one transaction. The store is asked for each file's bytes before it (503 when it is down,
     * nothing written).
     */
    async submit(recipient: RecipientActor, args: SubmitEvidenceRequestArgs) {
      const input = parseInput(submitInput, args);
      const files = await attachments.prepare(
        recipient,
        input.uploadIds.map((uploadId) => ({ uploadId })),
        (index) => `uploadIds.${index}`,
      );
      const id = recipient.evidenceRequestId;
      const change = { organizationId: recipient.organizationId, userId: null, memberId: null };
      return notifier.transaction(db, change, async (tx, notify) => {
        const [row] = await tx.$queryRaw<
          { controlId: string | null; vendorId: string | null; status: string; expiresAt: Date; createdById: string | null }[]
        >`SELECT "controlId", "vendorId", "status"::text AS "status", "expiresAt", "createdById"
          FROM "EvidenceRequest" WHERE "id" = ${id} FOR UPDATE`;
        if (!row || row.expiresAt <= new Date() || !(LIVE_STATUSES as readonly string[]).includes(row.status)) {
          throw new UnauthenticatedError(DEAD_LINK_MESSAGE);
        }
        if (!TAKES_FILES.includes(row.status)) {
          throw new ConflictError("The files sent through this link await review: no more can be sent now");
        }
        const created = await createEvidenceFromUploads(tx, {
          recorder: { organizationId: recipient.organizationId, userId: null, apiKeyId: null, requestId: recipient.requestId },
          target: row.controlId ? { controlId: row.controlId } : { vendorId: row.vendorId as string },
          files,
          status: "submitted",
          submittedByEmail: recipient.recipientEmail,
          evidenceRequestId: id,
        });
        const submittedAt = new Date();
        await tx.evidenceRequest.update({
          where: { id },
          data: { status: "submitted", submittedAt, note: input.note ?? null },
          select: { id: true },
        });
        await writeAuditEvent(
          tx,
          recipientEvent(recipient, "evidence_request.submitted", {
            from: row.status,
            evidence: created.map((e) => ({ id: e.id, attachmentId: e.attachmentId, sha256: e.sha256 })),
            ...(input.note ? { note: input.note } : {}),
          }),
        );
        await notify({ reason: "evidence_submitted", recipientIds: [row.createdById], entity: { type: "evidence_request", id } });
        return this.currentIn(tx, id);
      });
    },

    /** Accepts a submitted request and every item it submitted that awaits review (which can make the control ready). */
    async accept(actor: Actor, id: string, query: RequestQuery) {
      return notifier.transaction(db, actor, async (tx, notify) => {
        const row = await lockForChange(tx, actor, id);
        if (row.status !== "submitted") throw conflict(id, row.status, "only a submitted request is accepted");
        const decided = await decideEvidence(tx, actor, id, { status: "accepted" }, notify);
        const updated = await tx.evidenceRequest.update({ ...query, where: { id }, data: { status: "accepted" } });
        await writeAuditEvent(
          tx,
          auditEvent(actor, "evidence_request.accepted", { type: "evidence_request", id }, { evidence: decided }),
        );
        return updated;
      });
    },

    /**
     * Rejects a submitted request's items that await review and reopens it (status `rejected`, which
     * takes files again through the same link until it expires); the recipient is mailed the reason.
     */
    async reject(actor: Actor, id: string, reason: string, query: RequestQuery) {
      const input = parseInput(rejectInput, { reason });
      return notifier.transaction(db, actor, async (tx, notify) => {
        const row = await lockForChange(tx, actor, id);
        if (row.status !== "submitted") throw conflict(id, row.status, "only a submitted request is rejected");
        const decided = await decideEvidence(tx, actor, id, { status: "rejected", reason: input.reason }, notify);
        const updated = await tx.evidenceRequest.update({
          ...query,
          where: { id },
          data: { status: "rejected", rejectionReason: input.reason },
        });
        const { linkGeneration } = await tx.evidenceRequest.findUniqueOrThrow({
          where: { id },
          select: { linkGeneration: true },
        });
        await queueMail(tx, id, "rejection", linkGeneration);
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "evidence_request.rejected",
            { type: "evidence_request", id },
            {
              reason: input.reason,
              evidence: decided,
              mailed: Boolean(mail?.enqueueEvidenceRequest),
            },
          ),
        );
        return updated;
      });
    },

    /** The recipient's view of the request, read in a transaction (the answer of a submission). */
    async currentIn(tx: Prisma.TransactionClient, id: string) {
      const request = await tx.evidenceRequest.findUniqueOrThrow({ where: { id }, select: currentSelect });
      return currentOf(request);
    },
  };
}

const currentSelect = {
  id: true,
  title: true,
  instructions: true,
  dueAt: true,
  expiresAt: true,
  status: true,
  rejectionReason: true,
  submittedAt: true,
  openedAt: true,
  organization: { select: { name: true } },
  evidence: {
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: {
      status: true,
      createdAt: true,
      attachment: { select: { name: true, type: true, size: true, sha256: true } },
    },
  },
} satisfies Prisma.EvidenceRequestSelect;

function currentOf(request: Prisma.EvidenceRequestGetPayload<{ select: typeof currentSelect }>) {
  return {
    organizationName: request.organization.name,
    title: request.title,
    instructions: request.instructions,
    dueAt: request.dueAt,
    expiresAt: request.expiresAt,
    status: request.status,
    rejectionReason: request.status === "rejected" ? request.rejectionReason : null,
    submittedAt: request.submittedAt,
    files: request.evidence.map((e) => ({ ...e.attachment, status: e.status, sentAt: e.createdAt })),
  };
}

/**
 * Accepts or rejects, in the caller's transaction, the request's evidence that awaits review: each
 * item's review and its event (`writeEvidenceReviews`, as acceptEvidence and rejectEvidence write
 * them, naming the request), then each control's state once.
 */
async function decideEvidence(
  tx: Prisma.TransactionClient,
  actor: Actor,
  evidenceRequestId: string,
  outcome: EvidenceOutcome,
  notify: Parameters<typeof recordControlStates>[3],
) {
  const items = await tx.$queryRaw<
    { id: string; controlId: string | null; vendorId: string | null; attachmentId: string; sha256: string }[]
  >`SELECT e."id", e."controlId", e."vendorId", e."attachmentId", a."sha256"
    FROM "Evidence" e JOIN "Attachment" a ON a."id" = e."attachmentId"
    WHERE e."evidenceRequestId" = ${evidenceRequestId} AND e."organizationId" = ${actor.organizationId}
      AND e."status" = 'submitted'
    ORDER BY e."createdAt", e."id" FOR UPDATE OF e`;
  await writeEvidenceReviews(tx, actor, items, outcome, await callerMemberId(tx, actor), { evidenceRequestId });
  const controls = [...new Set(items.flatMap((i) => (i.controlId ? [i.controlId] : [])))];
  await recordControlStates(tx, actor, controls, notify);
  return items.map((i) => ({ id: i.id, sha256: i.sha256 }));
}

export type EvidenceRequestService = ReturnType<typeof createEvidenceRequestService>;

/**
 * The timers of evidence requests, on every replica: the reminder 3 days before dueAt (each
 * request's claimed by one conditional update that sets remindedAt in the transaction that queues
 * its e-mail, so two replicas never both send it), and expiry (a request whose link passed
 * expiresAt while it still took files becomes `expired`, with its audit event).
 */
export async function remindDue(db: Db, mail: NotificationMail | undefined, now = new Date()): Promise<number> {
  const due = await db.evidenceRequest.findMany({
    where: {
      status: { in: ["open", "rejected"] },
      remindedAt: null,
      dueAt: { lte: new Date(now.getTime() + REMIND_BEFORE_MS), gt: now },
      expiresAt: { gt: now },
    },
    select: { id: true, linkGeneration: true },
    take: 100,
  });
  let reminded = 0;
  for (const row of due) {
    await db.$transaction(async (tx) => {
      const claimed = await tx.evidenceRequest.updateMany({
        where: { id: row.id, remindedAt: null, status: { in: ["open", "rejected"] } },
        data: { remindedAt: now },
      });
      if (claimed.count !== 1) return;
      await mail?.enqueueEvidenceRequest?.(tx, {
        evidenceRequestId: row.id,
        kind: "reminder",
        generation: row.linkGeneration,
        at: now.toISOString(),
      });
      reminded++;
    });
  }
  return reminded;
}

export async function expireDue(db: Db, now = new Date()): Promise<number> {
  const due = await db.evidenceRequest.findMany({
    where: { status: { in: ["open", "rejected"] }, expiresAt: { lte: now } },
    select: { id: true },
    take: 100,
  });
  let expired = 0;
  for (const { id } of due) {
    await db.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ organizationId: string; status: string; expiresAt: Date }[]>`
        SELECT "organizationId", "status"::text AS "status", "expiresAt" FROM "EvidenceRequest"
        WHERE "id" = ${id} AND "status" IN ('open', 'rejected') AND "expiresAt" <= ${now} FOR UPDATE`;
      if (!row) return;
      await tx.evidenceRequest.update({ where: { id }, data: { status: "expired" }, select: { id: true } });
      await writeAuditEvent(tx, {
        id: newId("aud"),
        organizationId: row.organizationId,
        actorUserId: null,
        actorApiKeyId: null,
        action: "evidence_request.expired",
        entityType: "evidence_request",
        entityId: id,
        data: { from: row.status, expiresAt: row.expiresAt.toISOString(), via: "expiry job" },
        requestId: null,
      });
      expired++;
    });
  }
  return expired;
}
