import type { Prisma } from "../../generated/prisma/client.js";
import { GENESIS_HASH, jcs } from "../../platform/audit-chain.js";
import { deliveriesOf, deliveryFilters } from "../webhooks/webhooks.enqueue.js";

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
 * The organization's head moved to the next sequence and its hash (`head`), the event inserted with
 * both (`event`), and its webhook deliveries: one statement, or the CTEs that follow a change's in
 * one (`gated`: only when the CTE "change" has a row). The head row's lock, held until the change
 * commits, puts concurrent changes of one organization in commit order; no other organization
 * waits. The statement runs last in its transaction (writeAuditEvent), or is the change's own
 * statement (withAuditEvent), so the lock is held for this statement and the COMMIT only.
 */
const chainedCtes = (gated: boolean) => `head AS (
  INSERT INTO "AuditChainHead" AS h ("organizationId", "sequence", "hash")
  ${gated ? "SELECT " : "VALUES ("}$2, 1, ${hashAt(`'${GENESIS_HASH}'`, "'1'")}${gated ? " WHERE EXISTS (SELECT 1 FROM change)" : ")"}
  ON CONFLICT ("organizationId") DO UPDATE SET "sequence" = h."sequence" + 1, "hash" = ${hashAt('h."hash"', '(h."sequence" + 1)::text')}
  RETURNING "sequence", "hash"
), event AS (
  INSERT INTO "AuditEvent" (${COLUMNS}) SELECT ${VALUES}, head."sequence", head."hash" FROM head
  RETURNING "id"
)`;
const INSERT_CHAINED = `WITH ${chainedCtes(false)}
${deliveriesOf("event", { organizationId: "$2", action: "$5", filters: "$12" })}`;

const INSERT_UNCHAINED = `WITH event AS (
  INSERT INTO "AuditEvent" (${COLUMNS}) VALUES (${VALUES}, 0, '${GENESIS_HASH}')
  RETURNING "id"
)
${deliveriesOf("event", { organizationId: "$2", action: "$5", filters: "$11" })}`;

/**
 * The statement that writes an audit event: its place in its organization's chain, the event, and
 * its webhook deliveries. The hash is the contract's (SHA-256 of the previous hash, a newline and
 * the RFC 8785 form of the export line without `hash`): in RFC 8785's key order `sequence` comes
 * last, so the line is canonicalised here without it and the database, which alone knows the
 * sequence, appends `,"sequence":N}` (an integer's JCS form is its digits) and hashes.
 */
export function auditEventStatement(data: AuditEventInput, chain = chained): { sql: string; values: unknown[] } {
  const { values, withoutSequence, filters } = eventValues(data);
  if (!chain) return { sql: INSERT_UNCHAINED, values: [...values, filters] };
  return { sql: INSERT_CHAINED, values: [...values, withoutSequence, filters] };
}

/**
 * One statement that writes a change and its audit event, atomic without a transaction of its own
 * (a write that is nothing else saves its BEGIN, its COMMIT and a round trip). `change` gives the
 * change as CTEs, the last one named "change" and answering the changed rows, with its values as
 * `param(value)` placeholders, and the statement's answer (a SELECT, which may read every CTE). The
 * event, its place in the chain and its deliveries are written only when "change" has a row: a
 * change that finds nothing to write (a missing record) writes no event, and its answer says why.
 *
 * `shape` names the text `change` writes when that text is always the same for it (a comment's:
 * per kind of record): the statement's text is then one string kept for the process. Built afresh,
 * its several kilobytes were joined and hashed again at every write to find the prepared
 * statement's name (prepared-statements.ts), about 20 µs a write (bench/results/2026-12-05.md).
 */
export function withAuditEvent(
  data: AuditEventInput,
  change: (param: (value: unknown) => string) => { ctes: string; answer: string },
  shape?: string,
): { sql: string; values: unknown[] } {
  const { values: eventParams, withoutSequence, filters } = eventValues(data);
  const values = chained ? [...eventParams, withoutSequence, filters] : [...eventParams, filters];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const { ctes, answer } = change(param);
  if (shape === undefined) return { sql: statementText(ctes, answer), values };
  const key = `${chained}|${shape}`;
  let sql = textsByShape.get(key);
  if (sql === undefined) {
    sql = statementText(ctes, answer);
    textsByShape.set(key, sql);
  }
  return { sql, values };
}

/** The whole statement: the change's CTEs, the event (chained or not), its deliveries, the answer. */
function statementText(ctes: string, answer: string): string {
  const events = chained
    ? chainedCtes(true)
    : `event AS (
  INSERT INTO "AuditEvent" (${COLUMNS}) SELECT ${VALUES}, 0, '${GENESIS_HASH}' WHERE EXISTS (SELECT 1 FROM change)
  RETURNING "id"
)`;
  const deliveries = deliveriesOf("event", { organizationId: "$2", action: "$5", filters: chained ? "$12" : "$11" });
  return `WITH ${ctes}, ${events}, deliveries AS (\n${deliveries}\n)\n${answer}`;
}

/** withAuditEvent's texts by shape (and chain setting): a few, one per kind of change. */
const textsByShape = new Map<string, string>();

/** An event's values ($1 to $10), its line without the sequence ($11) and its delivery filters ($12). */
function eventValues(data: AuditEventInput): { values: unknown[]; withoutSequence: string; filters: string[] } {
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
  const values: unknown[] = [
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
  // `{"action":…,"requestId":…` and the separator: every other key sorts before "sequence".
  return { values, withoutSequence: `${jcs(line).slice(0, -1)},"sequence":`, filters: deliveryFilters(line.action) };
}
