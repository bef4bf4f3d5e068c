import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

/** The previous hash of an organization's first event. */
export const GENESIS_HASH = "0".repeat(64);

/** An audit event as exported (contract section 14): exactly these keys, absent values as null. */
export type ExportLine = {
  sequence: number;
  id: string;
  organizationId: string;
  action: string;
  entityType: string;
  entityId: string;
  actorUserId: string | null;
  actorApiKeyId: string | null;
  data: unknown;
  requestId: string | null;
  /** ISO 8601, UTC, milliseconds. */
  createdAt: string;
  hash: string;
};

/** RFC 8785 (JCS) text of a JSON value. */
export function jcs(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new Error("not a JSON value");
  return text;
}

/** The event's hash: SHA-256 (lowercase hex) of the previous hash, a newline, and the RFC 8785 form of its export line without `hash`. */
export function chainHash(previousHash: string, line: Omit<ExportLine, "hash">): string {
  return createHash("sha256")
    .update(`${previousHash}\n${jcs(line)}`)
    .digest("hex");
}

/** A row as the chain's SQL reads it (AUDIT_LINE_COLUMNS): createdAt and data as text, so every driver reads them alike. */
export type AuditLineRow = Omit<ExportLine, "data" | "hash"> & { data: string | null; hash: string | null };

/** The columns of an export line, for SELECT ... FROM "AuditEvent". */
export const AUDIT_LINE_COLUMNS = `"sequence", "id", "organizationId", "action", "entityType", "entityId", "actorUserId", "actorApiKeyId",
  "data"::text AS "data", "requestId", to_char("createdAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt", "hash"`;

/** The export line of a stored row, without its hash. */
export function lineOf(row: AuditLineRow): Omit<ExportLine, "hash"> {
  return {
    sequence: Number(row.sequence),
    id: row.id,
    organizationId: row.organizationId,
    action: row.action,
    entityType: row.entityType,
    entityId: row.entityId,
    actorUserId: row.actorUserId ?? null,
    actorApiKeyId: row.actorApiKeyId ?? null,
    data: row.data === null || row.data === undefined ? null : JSON.parse(row.data),
    requestId: row.requestId ?? null,
    createdAt: row.createdAt,
  };
}
