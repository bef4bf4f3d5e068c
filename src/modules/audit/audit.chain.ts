import type { Prisma } from "../../generated/prisma/client.js";
import { chainHash, GENESIS_HASH } from "../../platform/audit-chain.js";

/** An audit event as a change records it: its sequence and hash are the chain's to give. */
export type AuditEventInput = Omit<Prisma.AuditEventUncheckedCreateInput, "sequence" | "hash">;

// The bench's A/B only (BENCH_AUDIT_CHAIN=off, bench/audit-chain.mjs): events are then written
// unchained (sequence 0), and verification fails. Set once per process, at start.
let chained = true;
export function setAuditChainForBench(on: boolean): void {
  chained = on;
}

/** The organization's next sequence, and the hash before it. The row lock it takes on the head is held until commit. */
const NEXT_IN_CHAIN = `INSERT INTO "AuditChainHead" AS h ("organizationId", "sequence", "hash") VALUES ($1, 1, '${GENESIS_HASH}')
ON CONFLICT ("organizationId") DO UPDATE SET "sequence" = h."sequence" + 1
RETURNING "sequence", "hash"`;

const INSERT_EVENT = `INSERT INTO "AuditEvent" ("id", "organizationId", "actorUserId", "actorApiKeyId", "action", "entityType", "entityId", "data", "requestId", "createdAt", "sequence", "hash")
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10::timestamp(3), $11, $12)`;

/** The event, and the head's new hash, in one statement. */
const INSERT_CHAINED = `WITH head AS (UPDATE "AuditChainHead" SET "hash" = $12 WHERE "organizationId" = $2)
${INSERT_EVENT}`;

/**
 * Appends an audit event to its organization's chain, in the change's transaction: one statement
 * more than a plain insert. The first takes the next sequence on the organization's head row, whose
 * lock (held until commit) puts concurrent changes of one organization in commit order, and no
 * other organization waits; the second inserts the event with its hash and moves the head's hash.
 */
export async function appendToChain(tx: Prisma.TransactionClient, data: AuditEventInput): Promise<void> {
  // What the database keeps of `data` (JSON.stringify's form, dates as ISO text) is what is hashed.
  const json = data.data === undefined || data.data === null ? null : JSON.stringify(data.data);
  const createdAt = data.createdAt ? new Date(data.createdAt) : new Date();
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
    createdAt: createdAt.toISOString(),
  };
  let sequence = 0;
  let hash = GENESIS_HASH;
  if (chained) {
    const [head] = await tx.$queryRawUnsafe<{ sequence: number; hash: string }[]>(NEXT_IN_CHAIN, data.organizationId);
    sequence = Number(head?.sequence);
    hash = chainHash(head?.hash as string, { sequence, ...line });
  }
  await tx.$executeRawUnsafe(
    chained ? INSERT_CHAINED : INSERT_EVENT,
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
    sequence,
    hash,
  );
}
