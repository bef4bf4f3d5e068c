import type { Prisma } from "../../generated/prisma/client.js";
import { GENESIS_HASH, jcs } from "../../platform/audit-chain.js";

/** An audit event as a change records it: its sequence and hash are the chain's to give. */
export type AuditEventInput = Omit<Prisma.AuditEventUncheckedCreateInput, "sequence" | "hash">;

// The bench's A/B only (BENCH_AUDIT_CHAIN=off, bench/audit-chain.mjs): events are then written
// unchained (sequence 0), and verification fails. Set once per process, at start.
let chained = true;
export function setAuditChainForBench(on: boolean): void {
  chained = on;
}

const COLUMNS = `"id", "organizationId", "actorUserId", "actorApiKeyId", "action", "entityType", "entityId", "data", "requestId", "createdAt", "sequence", "hash"`;
const VALUES = `$1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10::timestamp(3)`;

/** The hash of the event at sequence `seq` after `previous`: SHA-256 of previous, "\n" and the line ($11, then the sequence). */
const hashAt = (previous: string, seq: string) =>
  `encode(sha256(convert_to(${previous} || E'\\n' || $11 || ${seq} || '}', 'UTF8')), 'hex')`;

/**
 * One statement: the organization's head moves to the next sequence and its hash, and the event is
 * inserted with both. The head row's lock, held until the change commits, puts concurrent changes
 * of one organization in commit order; no other organization waits.
 */
const INSERT_CHAINED = `WITH head AS (
  INSERT INTO "AuditChainHead" AS h ("organizationId", "sequence", "hash")
  VALUES ($2, 1, ${hashAt(`'${GENESIS_HASH}'`, "'1'")})
  ON CONFLICT ("organizationId") DO UPDATE SET "sequence" = h."sequence" + 1, "hash" = ${hashAt('h."hash"', '(h."sequence" + 1)::text')}
  RETURNING "sequence", "hash"
)
INSERT INTO "AuditEvent" (${COLUMNS}) SELECT ${VALUES}, head."sequence", head."hash" FROM head`;

const INSERT_UNCHAINED = `INSERT INTO "AuditEvent" (${COLUMNS}) VALUES (${VALUES}, 0, '${GENESIS_HASH}')`;

/**
 * Appends an audit event to its organization's chain in the change's transaction, in the one
 * statement that inserts it. The hash is the contract's (SHA-256 of the previous hash, a newline
 * and the RFC 8785 form of the export line without `hash`): in RFC 8785's key order `sequence`
 * comes last, so the line is canonicalised here without it and the database, which alone knows the
 * sequence, appends `,"sequence":N}` (an integer's JCS form is its digits) and hashes.
 */
export async function appendToChain(tx: Prisma.TransactionClient, data: AuditEventInput): Promise<void> {
  // What the database keeps of `data` (JSON.stringify's form, dates as ISO text) is what is hashed.
  const json = data.data === undefined || data.data === null ? null : JSON.stringify(data.data);
  const line = {
    id: data.id ?? "",
    organizationId: data.organizationId,
    action: data.action,
    entityType: data.entityType,
    entityId: data.entityId,
    actorUserId: data.actorUserId ?? null,
    actorApiKeyId: data.actorApiKeyId ?? null,
    data: json === null ? null : JSON.parse(json),
    requestId: data.requestId ?? null,
    createdAt: (data.createdAt ? new Date(data.createdAt) : new Date()).toISOString(),
  };
  const values = [
    line.id,
    line.organizationId,
    line.actorUserId,
    line.actorApiKeyId,
    line.action,
    line.entityType,
    line.entityId,
    json,
    line.requestId,
    line.createdAt,
  ];
  if (!chained) {
    await tx.$executeRawUnsafe(INSERT_UNCHAINED, ...values);
    return;
  }
  // `{"action":…,"requestId":…` and the separator: every other key sorts before "sequence".
  const withoutSequence = `${jcs(line).slice(0, -1)},"sequence":`;
  await tx.$executeRawUnsafe(INSERT_CHAINED, ...values, withoutSequence);
}
