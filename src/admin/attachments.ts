import { randomUUID } from "node:crypto";
import { type StoreOf, scheduleObjectDeletions } from "../modules/comments/attachments.jobs.js";
import { type AttachmentStore, newObjectKey, type StoreKind } from "../platform/attachments/store.js";
import type { Db } from "../platform/db/database.js";

/**
 * The operator's attachment commands (`attachments verify`, `attachments move`): the objects behind
 * the rows, read back or copied, one attachment at a time and streamed (no file is held in memory).
 */

/** Attachments read from the database in one query. */
const PAGE = 200;
/** The largest file the database store takes (contract section 15). */
export const DATABASE_STORE_MAX_BYTES = 10 * 1024 * 1024;
/**
 * A copy being made is covered by a deletion scheduled this far ahead, which the switch cancels: a
 * run stopped between the copy and the switch leaves no object behind once it is due.
 */
const COPY_LEASE_MS = 6 * 3_600_000;

type Row = { id: string; store: string; objectKey: string; size: number; sha256: string; type: string };

/** Every attachment matching `where`, a page at a time, in id order. */
async function* attachments(db: Db, where: { organizationId?: string; store?: { not: string } }): AsyncGenerator<Row> {
  let after: string | undefined;
  for (;;) {
    const page = await db.attachment.findMany({
      where: { ...where, ...(after ? { id: { gt: after } } : {}) },
      select: { id: true, store: true, objectKey: true, size: true, sha256: true, type: true },
      orderBy: { id: "asc" },
      take: PAGE,
    });
    yield* page;
    if (page.length < PAGE) return;
    after = page.at(-1)?.id;
  }
}

function storeFor(storeOf: StoreOf, kind: string): AttachmentStore {
  const store = storeOf(kind as StoreKind);
  if (!store) throw new Error(`the ${kind} store is not configured (see docs/attachments.md)`);
  return store;
}

export type VerifyResult = { checked: number; mismatched: string[] };

/**
 * Reads every object of the organization's attachments through and compares its size and SHA-256
 * with the row's: an object changed, or missing, is named in `mismatched`.
 */
export async function verifyAttachments(db: Db, storeOf: StoreOf, organizationId: string): Promise<VerifyResult> {
  // A mistyped id would otherwise "verify" nothing and pass.
  if (!(await db.organization.findUnique({ where: { id: organizationId }, select: { id: true } })))
    throw new Error(`No organization ${organizationId}: nothing to verify (is the id right?)`);
  const result: VerifyResult = { checked: 0, mismatched: [] };
  for await (const row of attachments(db, { organizationId })) {
    const facts = await storeFor(storeOf, row.store).digest(row.objectKey);
    result.checked++;
    if (!facts || facts.size !== row.size || facts.sha256 !== row.sha256) result.mismatched.push(row.id);
  }
  return result;
}

export type MoveResult = {
  moved: number;
  bytes: number;
  skipped: number;
  failed: { id: string; reason: string }[];
};

/**
 * Copies every attachment not yet in the `to` store there, checks the copy's size and SHA-256 by
 * reading it back, then switches the row to it (only if the row still names the object copied) and
 * schedules the old object's deletion after `keepOldMs` (URLs handed out for it stay usable). Run
 * again at any point: what was switched is skipped, and a copy never switched is deleted later.
 */
export async function moveAttachments(
  db: Db,
  storeOf: StoreOf,
  to: StoreKind,
  options: { keepOldMs: number },
): Promise<MoveResult> {
  const target = storeFor(storeOf, to);
  const result: MoveResult = { moved: 0, bytes: 0, skipped: await db.attachment.count({ where: { store: to } }), failed: [] };
  for await (const row of attachments(db, { store: { not: to } })) {
    const failed = (reason: string) => result.failed.push({ id: row.id, reason });
    if (to === "database" && row.size > DATABASE_STORE_MAX_BYTES) {
      failed(`${row.size} bytes: the database store takes at most ${DATABASE_STORE_MAX_BYTES}`);
      continue;
    }
    let source: AttachmentStore;
    try {
      source = storeFor(storeOf, row.store);
    } catch (error) {
      failed((error as Error).message);
      continue;
    }
    const key = newObjectKey();
    // The copy's deletion, scheduled before it exists; the switch below cancels it.
    const lease = randomUUID();
    await db.attachmentDeletion.create({
      data: { id: lease, store: to, objectKey: key, nextAttemptAt: new Date(Date.now() + COPY_LEASE_MS) },
    });
    const copied = await copyObject(source, row, target, key);
    if (copied !== true) {
      failed(copied);
      // Nothing to wait for: the copy (if any of it was written) can go now.
      await db.attachmentDeletion.updateMany({ where: { id: lease, attempts: 0 }, data: { nextAttemptAt: new Date() } });
      continue;
    }
    const switched = await db.$transaction(async (tx) => {
      // The lease still unclaimed: no cleanup has started deleting the copy.
      const cancelled = await tx.attachmentDeletion.deleteMany({ where: { id: lease, attempts: 0 } });
      if (cancelled.count === 0) return false;
      const updated = await tx.attachment.updateMany({
        where: { id: row.id, store: row.store, objectKey: row.objectKey },
        data: { store: to, objectKey: key },
      });
      // Deleted or moved meanwhile: the copy is nobody's, so it goes instead of the old object.
      const unused = updated.count === 1 ? { store: row.store, objectKey: row.objectKey } : { store: to, objectKey: key };
      await scheduleObjectDeletions(tx, [unused], new Date(Date.now() + (updated.count === 1 ? options.keepOldMs : 0)));
      return updated.count === 1;
    });
    if (switched) {
      result.moved++;
      result.bytes += row.size;
    } else failed("changed while it was copied (deleted or moved by another run); run the move again");
  }
  return result;
}

/** Copies the row's object to `key` in `target` and reads the copy back: true, or why not. */
async function copyObject(source: AttachmentStore, row: Row, target: AttachmentStore, key: string): Promise<true | string> {
  try {
    const opened = await source.open(row.objectKey);
    if (!opened) return `its object is missing from the ${row.store} store`;
    try {
      await target.put(key, opened.body, { size: row.size, sha256: row.sha256, type: row.type });
    } finally {
      opened.body.destroy();
    }
    const copy = await target.digest(key);
    if (!copy || copy.size !== row.size || copy.sha256 !== row.sha256)
      return `the copy in the ${target.kind} store does not read back as written`;
    return true;
  } catch (error) {
    return (error as Error).message;
  }
}
