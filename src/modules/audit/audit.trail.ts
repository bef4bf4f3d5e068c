import { z } from "zod";
import {
  AUDIT_LINE_COLUMNS,
  type AuditLineRow,
  chainHash,
  type ExportLine,
  GENESIS_HASH,
  lineOf,
} from "../../platform/audit-chain.js";
import type { Db } from "../../platform/db/database.js";
import { BadUserInputError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { integer, limit } from "../../platform/limits.js";
import { parseInput } from "../../platform/validation.js";
import type { AuditSigner, SignedCheckpoint } from "./audit.keys.js";

/** Rows read at once by verification and export: memory stays flat however long the chain. */
export const AUDIT_BATCH = 1_000;

export type Verification = { ok: boolean; checked: number; firstBrokenSequence: number | null; reason: string | null };
export type SequenceRange = { from?: number | null; to?: number | null };
export type CheckpointRow = SignedCheckpoint & { id: string; keyId: string; purgedEvents: number | null; createdAt: Date };

type StoredCheckpoint = {
  id: string;
  organizationId: string;
  sequence: number;
  hash: string;
  signedAt: Date;
  signature: string;
  keyId: string;
  purgedEvents: number | null;
  createdAt: Date;
};

const asCheckpoint = (row: StoredCheckpoint): CheckpointRow => ({ ...row, signedAt: row.signedAt.toISOString() });

/** A sequence as `from` and `to` take it. */
export const sequenceLimit = limit({ minimum: 1, maximum: 2_147_483_647 });
const rangeInput = z.object({ from: integer(sequenceLimit).nullish(), to: integer(sequenceLimit).nullish() });

function checkRange(range: SequenceRange): void {
  const { from, to } = parseInput(rangeInput, { from: range.from, to: range.to });
  if (from && to && from > to) throw new BadUserInputError("from is after to", [{ path: "from", message: "must be at most to" }]);
}

/**
 * Events of one organization in sequence order (then id, so that a duplicate shows), a window of
 * AUDIT_BATCH sequences at a time up to `to` or the last sequence at the start: each statement
 * reads one window of the index, whatever the table's statistics say.
 */
async function* eventBatches(db: Db, organizationId: string, from: number, to: number | null | undefined) {
  const [last] = await db.$queryRawUnsafe<{ sequence: number | null }[]>(
    `SELECT max("sequence") AS "sequence" FROM "AuditEvent" WHERE "organizationId" = $1`,
    organizationId,
  );
  const end = Math.min(to ?? Number.MAX_SAFE_INTEGER, Number(last?.sequence ?? 0));
  for (let start = from; start <= end; start += AUDIT_BATCH) {
    const rows = await db.$queryRawUnsafe<AuditLineRow[]>(
      `SELECT ${AUDIT_LINE_COLUMNS} FROM "AuditEvent"
       WHERE "organizationId" = $1 AND "sequence" BETWEEN $2::int AND $3::int
       ORDER BY "sequence", "id"`,
      organizationId,
      start,
      Math.min(start + AUDIT_BATCH - 1, end),
    );
    if (rows.length) yield rows.map((row) => ({ ...row, sequence: Number(row.sequence) }));
  }
}

export function createAuditTrail(db: Db, signer: AuditSigner) {
  const checkpointsBetween = (organizationId: string, from: number, to?: number) =>
    db.auditCheckpoint.findMany({
      where: { organizationId, sequence: { gte: from, ...(to === undefined ? {} : { lte: to }) } },
      orderBy: [{ sequence: "asc" }, { id: "asc" }],
    });
  const validSignature = (c: StoredCheckpoint) => signer.verify(asCheckpoint(c), c.signature);

  /** Where the chain starts: after the latest retention purge's signed checkpoint, or at 1. */
  async function anchor(organizationId: string): Promise<{ sequence: number; hash: string; broken?: Verification }> {
    const purge = await db.auditCheckpoint.findFirst({
      where: { organizationId, purgedEvents: { not: null } },
      orderBy: [{ sequence: "desc" }, { id: "desc" }],
    });
    if (!purge) return { sequence: 0, hash: GENESIS_HASH };
    if (!validSignature(purge)) {
      return {
        sequence: purge.sequence,
        hash: purge.hash,
        broken: broken(
          0,
          purge.sequence,
          `the retention purge's checkpoint at sequence ${purge.sequence} has no valid signature`,
        ),
      };
    }
    return { sequence: purge.sequence, hash: purge.hash };
  }

  function broken(checked: number, sequence: number, reason: string): Verification {
    return { ok: false, checked, firstBrokenSequence: sequence, reason };
  }

  /** The chain as it is now: the head's sequence and hash (0 and the genesis hash before any event). */
  async function head(organizationId: string): Promise<{ sequence: number; hash: string }> {
    const row = await db.auditChainHead.findUnique({ where: { organizationId } });
    return row ? { sequence: row.sequence, hash: row.hash } : { sequence: 0, hash: GENESIS_HASH };
  }

  async function storeCheckpoint(organizationId: string, at: { sequence: number; hash: string }, purgedEvents?: number) {
    const signed = signer.sign({ organizationId, ...at, signedAt: new Date().toISOString() });
    const row = await db.auditCheckpoint.create({
      data: { id: newId("acp"), ...signed, signedAt: new Date(signed.signedAt), keyId: signer.keyId, purgedEvents },
    });
    return asCheckpoint(row);
  }

  return {
    /**
     * Recomputes the chain over `from`..`to` (sequences, inclusive; the whole chain when absent),
     * streaming it: each event's hash from the one before, no gap, no duplicate, and every signed
     * checkpoint of the range on it; without `to`, the chain must also reach the latest checkpoint.
     */
    async verify(organizationId: string, range: SequenceRange): Promise<Verification> {
      checkRange(range);
      const start = await anchor(organizationId);
      if (start.broken) return start.broken;
      let expected = Math.max(range.from ?? 1, start.sequence + 1);
      let previous = start.hash;
      if (expected > start.sequence + 1) {
        const [before] = await db.$queryRawUnsafe<{ hash: string }[]>(
          `SELECT "hash" FROM "AuditEvent" WHERE "organizationId" = $1 AND "sequence" = $2::int ORDER BY "id" LIMIT 1`,
          organizationId,
          expected - 1,
        );
        if (!before) return broken(0, expected - 1, `event ${expected - 1}, just before the range, is missing`);
        previous = before.hash;
      }
      let checked = 0;
      for await (const rows of eventBatches(db, organizationId, expected, range.to)) {
        let failure: Verification | undefined;
        const hashes = new Map<number, string>();
        for (const row of rows) {
          if (row.sequence < expected) {
            failure = broken(checked, row.sequence, `more than one event has sequence ${row.sequence}: one was inserted`);
          } else if (row.sequence > expected) {
            failure = broken(checked, expected, `event ${expected} is missing: removed, or the events after it were moved`);
          } else if (chainHash(previous, lineOf(row)) !== row.hash) {
            failure = broken(
              checked,
              row.sequence,
              `event ${row.sequence} does not match its hash: it was changed, inserted or moved, or an event before it was`,
            );
          }
          if (failure) break;
          hashes.set(row.sequence, row.hash as string);
          previous = row.hash as string;
          expected += 1;
          checked += 1;
        }
        // A signed checkpoint before the break that the chain does not pass through breaks it there.
        const first = (rows[0] as AuditLineRow).sequence;
        const last = failure ? (failure.firstBrokenSequence as number) - 1 : expected - 1;
        if (last >= first) {
          for (const checkpoint of await checkpointsBetween(organizationId, first, last)) {
            if (!validSignature(checkpoint)) {
              return broken(
                checked,
                checkpoint.sequence,
                `the checkpoint at sequence ${checkpoint.sequence} has no valid signature`,
              );
            }
            if (hashes.get(checkpoint.sequence) !== checkpoint.hash) {
              return broken(
                checked,
                checkpoint.sequence,
                `event ${checkpoint.sequence} differs from the signed checkpoint at that sequence: events before it were changed, inserted or removed`,
              );
            }
          }
        }
        if (failure) return failure;
      }
      if (range.to && expected <= range.to) {
        return broken(checked, expected, `event ${expected} is missing: the chain ends at ${expected - 1}`);
      }
      if (!range.to) {
        const later = (await checkpointsBetween(organizationId, expected)).filter(validSignature).at(-1);
        if (later) {
          return broken(
            checked,
            expected,
            `the chain ends at ${expected - 1}, short of the signed checkpoint at sequence ${later.sequence}: events were removed`,
          );
        }
        const { sequence } = await head(organizationId);
        if (sequence >= expected)
          return broken(checked, expected, `event ${expected} is missing: the chain ends at ${expected - 1}`);
      }
      return { ok: true, checked, firstBrokenSequence: null, reason: null };
    },

    /** Signs the chain's head now and keeps the checkpoint. */
    async checkpoint(organizationId: string): Promise<CheckpointRow> {
      return storeCheckpoint(organizationId, await head(organizationId));
    },

    /**
     * Signs a checkpoint for every organization whose chain went on since its latest one (the
     * timer of AUDIT_CHECKPOINT_SECONDS); answers how many it signed.
     */
    async signDue(): Promise<number> {
      const due = await db.$queryRawUnsafe<{ organizationId: string; sequence: number; hash: string }[]>(
        `SELECT h."organizationId", h."sequence", h."hash" FROM "AuditChainHead" h
         WHERE h."sequence" > COALESCE((SELECT max(c."sequence") FROM "AuditCheckpoint" c WHERE c."organizationId" = h."organizationId"), 0)`,
      );
      for (const row of due) await storeCheckpoint(row.organizationId, { sequence: Number(row.sequence), hash: row.hash });
      return due.length;
    },

    /**
     * The events of the range in sequence order, in batches from the database, and the range's last
     * event (for the export's closing checkpoint).
     */
    async *lines(organizationId: string, range: SequenceRange): AsyncGenerator<ExportLine[]> {
      checkRange(range);
      for await (const rows of eventBatches(db, organizationId, range.from ?? 1, range.to)) {
        yield rows.map((row) => ({ ...lineOf(row), hash: row.hash as string }));
      }
    },

    /** A checkpoint signed now over a given point of the chain, not kept (the export's last line). */
    signAt(organizationId: string, at: { sequence: number; hash: string }): SignedCheckpoint {
      return signer.sign({ organizationId, ...at, signedAt: new Date().toISOString() });
    },

    head,

    /**
     * The retention purge: removes the organization's events older than `before` (those before the
     * first event at or after it, so the chain stays a whole from there), after verifying them, and
     * keeps a signed checkpoint of the last one removed, from which verification goes on. The
     * trigger lets this DELETE through only because the transaction sets audit.purge.
     */
    async purge(organizationId: string, before: Date): Promise<{ removed: number; checkpoint: CheckpointRow | null }> {
      const [bound] = await db.$queryRawUnsafe<{ through: number | null }[]>(
        `SELECT COALESCE(
           (SELECT min("sequence") - 1 FROM "AuditEvent" WHERE "organizationId" = $1 AND "createdAt" >= $2::timestamp(3)),
           (SELECT "sequence" FROM "AuditChainHead" WHERE "organizationId" = $1)) AS "through"`,
        organizationId,
        before.toISOString(),
      );
      const through = Number(bound?.through ?? 0);
      const start = await anchor(organizationId);
      if (through <= start.sequence) return { removed: 0, checkpoint: null };
      const verified = await this.verify(organizationId, { to: through });
      if (!verified.ok) {
        throw new BadUserInputError(
          `The events to purge do not verify (sequence ${verified.firstBrokenSequence}: ${verified.reason}); nothing was removed`,
        );
      }
      return db.$transaction(
        async (tx) => {
          await tx.$executeRawUnsafe(`SELECT set_config('audit.purge', 'on', true), set_config('statement_timeout', '0', true)`);
          // The head's row lock: one purge at a time per organization, beside its writes.
          await tx.$queryRawUnsafe(`SELECT 1 FROM "AuditChainHead" WHERE "organizationId" = $1 FOR UPDATE`, organizationId);
          const [last] = await tx.$queryRawUnsafe<{ hash: string }[]>(
            `SELECT "hash" FROM "AuditEvent" WHERE "organizationId" = $1 AND "sequence" = $2::int LIMIT 1`,
            organizationId,
            through,
          );
          if (!last) return { removed: 0, checkpoint: null };
          const removed = await tx.$executeRawUnsafe(
            `DELETE FROM "AuditEvent" WHERE "organizationId" = $1 AND "sequence" <= $2::int`,
            organizationId,
            through,
          );
          const signed = signer.sign({ organizationId, sequence: through, hash: last.hash, signedAt: new Date().toISOString() });
          const row = await tx.auditCheckpoint.create({
            data: {
              id: newId("acp"),
              ...signed,
              signedAt: new Date(signed.signedAt),
              keyId: signer.keyId,
              purgedEvents: removed,
            },
          });
          return { removed, checkpoint: asCheckpoint(row) };
        },
        { timeout: 600_000, maxWait: 10_000 },
      );
    },

    /** Purges every organization's events older than `days` days (AUDIT_RETENTION_DAYS). */
    async purgeOlderThan(days: number): Promise<number> {
      const before = new Date(Date.now() - days * 86_400_000);
      const organizations = await db.auditChainHead.findMany({ select: { organizationId: true } });
      let removed = 0;
      for (const { organizationId } of organizations) removed += (await this.purge(organizationId, before)).removed;
      return removed;
    },
  };
}

export type AuditTrail = ReturnType<typeof createAuditTrail>;
