import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Prisma } from "../../generated/prisma/client.js";
import type { AttachmentStore, StoreKind } from "../../platform/attachments/store.js";
import type { Db } from "../../platform/db/database.js";

/**
 * What happens to attachments' objects after the rows that named them are gone, on every replica:
 *
 * - Deletions: a change that removes rows naming objects (deleting a comment, switching an
 *   attachment to another store, sweeping an upload) writes an `AttachmentDeletion` row in its own
 *   transaction (`scheduleObjectDeletions`). Once it committed, `deleteDueObjects` deletes each
 *   object from its store and then the row; a store that fails leaves the row for a later attempt
 *   (backoff up to an hour, for as long as it takes). An object a committed `Attachment` or a
 *   pending `AttachmentUpload` row still names is never deleted: its deletion row is dropped. An
 *   object an upload URL could still write waits until that URL expired (and the margin a PUT
 *   begun in time has to finish): deleted earlier, the URL would create it again, an object that
 *   nothing names and nothing deletes (the URL's `If-None-Match: *` holds only while it exists).
 * - The sweeper: an upload never attached is removed once its URL expired and an hour passed (its
 *   row goes and its object's deletion is scheduled, in one transaction).
 *
 * A polling loop like the audit timers (src/modules/audit/audit.jobs.ts), not pg-boss: the rows are
 * the queue already (with their attempts and next attempt), and the loop runs on every replica,
 * whether or not e-mail or webhooks started the job queue. Replicas share the work safely: each row
 * is claimed by a conditional update before its object is touched.
 */

/** How often a replica looks for due deletions and expired uploads. */
const POLL_EVERY_MS = 10_000;
/** Deletions taken in one pass. */
const BATCH = 100;
/** An upload's object stays this long after its URL expired (a PUT that began in time may still be finishing). */
export const SWEEP_AFTER_EXPIRY_MS = 3_600_000;
/** What an interrupted write left (a crash in a put) is removed a day after the write started, once an hour. */
export const INCOMPLETE_AFTER_MS = 24 * 3_600_000;
const INCOMPLETE_SWEEP_EVERY_MS = 3_600_000;
/** The longest wait between two attempts at one deletion. */
const MAX_BACKOFF_MS = 3_600_000;

export type StoreOf = (kind: StoreKind) => AttachmentStore | undefined;
type Tx = Prisma.TransactionClient | Db;

/** The wait before attempt `attempts + 1` of a deletion: 10 s, doubling, at most an hour, with 10 % jitter. */
export function backoffMs(attempts: number, random = Math.random): number {
  return Math.min(10_000 * 2 ** attempts, MAX_BACKOFF_MS) * (1 + random() * 0.1);
}

/**
 * Schedules the deletion of objects, in the caller's transaction: nothing is deleted unless the
 * change that stopped naming them commits. `notBefore` delays it (a URL handed out may still be in use).
 */
export async function scheduleObjectDeletions(
  tx: Tx,
  objects: { store: string; objectKey: string }[],
  notBefore = new Date(),
): Promise<void> {
  if (objects.length === 0) return;
  await tx.attachmentDeletion.createMany({
    data: objects.map((o) => ({ id: randomUUID(), store: o.store, objectKey: o.objectKey, nextAttemptAt: notBefore })),
  });
}

/** When the last upload URL that could write the object stops admitting a PUT that began in time; null when none can. */
async function writableUntil(db: Db, store: string, objectKey: string, now: Date): Promise<Date | null> {
  const upload = await db.attachmentUpload.findFirst({
    where: { store, objectKey, expiresAt: { gt: new Date(now.getTime() - SWEEP_AFTER_EXPIRY_MS) } },
    select: { expiresAt: true },
    orderBy: { expiresAt: "desc" },
  });
  return upload ? new Date(upload.expiresAt.getTime() + SWEEP_AFTER_EXPIRY_MS) : null;
}

/** Whether a committed row still names the object: an attachment, or an upload not swept. */
async function stillNamed(db: Db, store: string, objectKey: string): Promise<boolean> {
  const [attachment, upload] = await Promise.all([
    db.attachment.findFirst({ where: { store, objectKey }, select: { id: true } }),
    db.attachmentUpload.findFirst({ where: { store, objectKey, attachmentId: null }, select: { id: true } }),
  ]);
  return Boolean(attachment || upload);
}

export type DeletionPass = { deleted: number; kept: number; failed: number; postponed: number };

/** One pass over the deletions due now: each is claimed, then its object deleted and its row with it. */
export async function deleteDueObjects(db: Db, storeOf: StoreOf, logger: Logger, now = new Date()): Promise<DeletionPass> {
  const due = await db.attachmentDeletion.findMany({
    where: { nextAttemptAt: { lte: now } },
    orderBy: { nextAttemptAt: "asc" },
    take: BATCH,
  });
  const pass: DeletionPass = { deleted: 0, kept: 0, failed: 0, postponed: 0 };
  for (const row of due) {
    // The claim: another replica (or a move switching to this object) that got there first wins.
    const claimed = await db.attachmentDeletion.updateMany({
      where: { id: row.id, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt },
      data: { attempts: row.attempts + 1, nextAttemptAt: new Date(now.getTime() + backoffMs(row.attempts)) },
    });
    if (claimed.count === 0) continue;
    if (await stillNamed(db, row.store, row.objectKey)) {
      await db.attachmentDeletion.deleteMany({ where: { id: row.id } });
      pass.kept++;
      continue;
    }
    const until = await writableUntil(db, row.store, row.objectKey, now);
    if (until) {
      await db.attachmentDeletion.updateMany({ where: { id: row.id }, data: { attempts: row.attempts, nextAttemptAt: until } });
      pass.postponed++;
      continue;
    }
    const store = storeOf(row.store as StoreKind);
    try {
      if (!store) throw new Error(`the ${row.store} store is not configured on this replica`);
      await store.delete(row.objectKey);
      await db.attachmentDeletion.deleteMany({ where: { id: row.id } });
      pass.deleted++;
    } catch (error) {
      pass.failed++;
      logger.warn(
        { err: error, store: row.store, objectKey: row.objectKey, attempts: row.attempts + 1 },
        "attachment object not deleted yet; retrying later",
      );
    }
  }
  return pass;
}

/**
 * Removes the uploads never attached whose URL expired more than an hour before `now`: each row
 * goes, and its object's deletion is scheduled, in one transaction (an upload attached meanwhile is
 * left alone: the delete is conditional on `attachmentId` still being null).
 */
export async function sweepExpiredUploads(db: Db, now = new Date()): Promise<number> {
  const expired = await db.attachmentUpload.findMany({
    where: { attachmentId: null, expiresAt: { lt: new Date(now.getTime() - SWEEP_AFTER_EXPIRY_MS) } },
    select: { id: true, store: true, objectKey: true },
    orderBy: { expiresAt: "asc" },
    take: BATCH,
  });
  let swept = 0;
  for (const upload of expired) {
    swept += await db.$transaction(async (tx) => {
      const removed = await tx.attachmentUpload.deleteMany({ where: { id: upload.id, attachmentId: null } });
      if (removed.count === 0) return 0;
      await scheduleObjectDeletions(tx, [upload], now);
      return 1;
    });
  }
  return swept;
}

/** Removes, in every store this replica reaches, what writes interrupted a day before `now` left behind. */
export async function sweepIncompleteWrites(storeOf: StoreOf, now = new Date()): Promise<number> {
  let removed = 0;
  for (const kind of ["filesystem", "database"] as const) {
    removed += (await storeOf(kind)?.sweepIncomplete?.(new Date(now.getTime() - INCOMPLETE_AFTER_MS))) ?? 0;
  }
  return removed;
}

export type AttachmentJobs = {
  /** One pass of both, now (tests; the loop calls it). */
  runOnce(now?: Date): Promise<{ swept: number } & DeletionPass>;
  stop(): Promise<void>;
};

/** Starts the loop on this replica: every `everyMs` the sweeper, then the deletions due. */
export function startAttachmentJobs(options: { db: Db; storeOf: StoreOf; logger: Logger; everyMs?: number }): AttachmentJobs {
  const { db, storeOf, logger } = options;
  let running: Promise<unknown> = Promise.resolve();
  let incompleteSweptAt = 0;
  const runOnce = async (now = new Date()) => {
    const swept = await sweepExpiredUploads(db, now);
    if (now.getTime() - incompleteSweptAt >= INCOMPLETE_SWEEP_EVERY_MS) {
      incompleteSweptAt = now.getTime();
      const removed = await sweepIncompleteWrites(storeOf, now);
      if (removed) logger.info({ removed }, "attachment writes interrupted a day ago removed");
    }
    const pass = await deleteDueObjects(db, storeOf, logger, now);
    if (swept || pass.deleted || pass.kept || pass.postponed) logger.info({ swept, ...pass }, "attachment objects cleaned up");
    return { swept, ...pass };
  };
  const timer = setInterval(() => {
    running = running.then(() => runOnce()).catch((error) => logger.error({ err: error }, "attachment jobs failed"));
  }, options.everyMs ?? POLL_EVERY_MS);
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
