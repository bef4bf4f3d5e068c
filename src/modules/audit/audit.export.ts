import type { ExportLine } from "../../platform/audit-chain.js";
import { BadUserInputError } from "../../platform/errors.js";
import type { AuditTrail, SequenceRange } from "./audit.trail.js";

export const exportFormats = ["jsonl", "csv", "ocsf"] as const;
export type ExportFormat = (typeof exportFormats)[number];

/** The export line's keys, in the order of the CSV columns. */
export const EXPORT_COLUMNS = [
  "sequence",
  "id",
  "organizationId",
  "action",
  "entityType",
  "entityId",
  "actorUserId",
  "actorApiKeyId",
  "data",
  "requestId",
  "createdAt",
  "hash",
] as const satisfies readonly (keyof ExportLine)[];

const contentTypes: Record<ExportFormat, string> = {
  jsonl: "application/jsonl; charset=utf-8",
  csv: "text/csv; charset=utf-8",
  ocsf: "application/jsonl; charset=utf-8",
};

/** A cell a spreadsheet would run as a formula (OWASP, CSV injection): it begins with one of these. */
const formulaStart = /^[=+\-@\t\r]/;

/**
 * RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled; null is empty; data
 * is its JSON text. A cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return (a
 * caller's `X-Request-Id: -2-3-A1`) is prefixed with `'`, as OWASP advises, so that no spreadsheet
 * runs it; jsonl keeps every value as it is hashed.
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return "";
  let text = typeof value === "string" ? value : JSON.stringify(value);
  if (formulaStart.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

// OCSF 1.3 API Activity (class 6003): Create 1, Update 3, Delete 4 (reads write no events).
const OCSF_CLASS = 6003;
function ocsfActivity(action: string): { id: number; name: string } {
  const verb = action.slice(action.lastIndexOf(".") + 1);
  if (verb === "created") return { id: 1, name: "Create" };
  if (verb === "deleted" || verb === "revoked") return { id: 4, name: "Delete" };
  return { id: 3, name: "Update" };
}

/** One event as an OCSF API Activity record; `sequence`, `hash` and the organization in `unmapped`. */
export function ocsfRecord(line: ExportLine) {
  const activity = ocsfActivity(line.action);
  return {
    class_uid: OCSF_CLASS,
    class_name: "API Activity",
    category_uid: 6,
    category_name: "Application Activity",
    activity_id: activity.id,
    activity_name: activity.name,
    type_uid: OCSF_CLASS * 100 + activity.id,
    severity_id: 1,
    severity: "Informational",
    status_id: 1,
    status: "Success",
    time: Date.parse(line.createdAt),
    message: line.action,
    metadata: {
      version: "1.3.0",
      uid: line.id,
      correlation_uid: line.requestId,
      product: { name: "Compliance Workspace Gateway", vendor_name: "Compliance Workspace" },
      log_name: "audit",
    },
    actor: {
      user: line.actorUserId ? { uid: line.actorUserId, type_id: 1, type: "User" } : undefined,
      authorizations: line.actorApiKeyId ? [{ policy: { uid: line.actorApiKeyId, name: "api_key" } }] : undefined,
    },
    api: { operation: line.action, request: { uid: line.requestId ?? line.id } },
    src_endpoint: {},
    resources: [{ type: line.entityType, uid: line.entityId, data: line.data ?? undefined }],
    unmapped: { sequence: line.sequence, hash: line.hash, organizationId: line.organizationId },
  };
}

/** Checks the query of GET /v1/audit-events/export. */
export function exportRequest(query: URLSearchParams): SequenceRange & { format: ExportFormat } {
  const unknown = [...query.keys()].filter((key) => !["from", "to", "format"].includes(key));
  if (unknown.length) {
    throw new BadUserInputError(
      `Unknown query parameter ${unknown[0]}`,
      unknown.map((path) => ({ path, message: "unknown parameter" })),
    );
  }
  const format = query.get("format") ?? "jsonl";
  if (!(exportFormats as readonly string[]).includes(format)) {
    throw new BadUserInputError(`format is one of ${exportFormats.join(", ")}`, [
      { path: "format", message: "jsonl, csv or ocsf" },
    ]);
  }
  const sequence = (name: string) => {
    const text = query.get(name);
    if (text === null || text === "") return undefined;
    if (!/^[0-9]{1,10}$/.test(text) || Number(text) < 1 || Number(text) > 2_147_483_647) {
      throw new BadUserInputError(`${name} is a sequence: an integer of at least 1`, [
        { path: name, message: "an integer of at least 1" },
      ]);
    }
    return Number(text);
  };
  const range = { from: sequence("from"), to: sequence("to") };
  if (range.from && range.to && range.from > range.to) {
    throw new BadUserInputError("from is after to", [{ path: "from", message: "at most to" }]);
  }
  return { ...range, format: format as ExportFormat };
}

/**
 * Text chunks as a byte stream pulled one chunk at a time: the reader's pace sets the reading, so
 * memory stays flat however long the stream (the exports of the audit trail and of a statement of
 * applicability).
 */
export function textStream(source: AsyncGenerator<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await source.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      },
      async cancel() {
        await source.return(undefined);
      },
    },
    // Nothing read ahead: a batch is read once the client took the last one (a slow reader holds
    // one batch, not two).
    { highWaterMark: 0 },
  );
}

/**
 * The export as a byte stream pulled batch by batch from the database (the reader's pace sets the
 * reading: memory stays flat). What it holds at a time: one batch (AUDIT_BATCH events, about 0.4
 * MB of text and its bytes), nothing more; a reader that stops leaves the socket's buffers full
 * and the next batch unread. jsonl ends with the signed checkpoint of the range's last event.
 */
export function exportStream(
  trail: AuditTrail,
  organizationId: string,
  request: SequenceRange & { format: ExportFormat },
): { body: ReadableStream<Uint8Array>; contentType: string; filename: string } {
  const { format } = request;
  async function* chunks(): AsyncGenerator<string> {
    if (format === "csv") yield `${EXPORT_COLUMNS.join(",")}\r\n`;
    let last: { sequence: number; hash: string } | undefined;
    for await (const lines of trail.lines(organizationId, request)) {
      if (format === "csv") {
        yield lines.map((line) => `${EXPORT_COLUMNS.map((key) => csvField(line[key])).join(",")}\r\n`).join("");
      } else {
        yield lines.map((line) => `${JSON.stringify(format === "ocsf" ? ocsfRecord(line) : line)}\n`).join("");
      }
      const end = lines[lines.length - 1] as ExportLine;
      last = { sequence: end.sequence, hash: end.hash };
    }
    if (format === "jsonl") {
      const at = last ?? (await trail.head(organizationId));
      yield `${JSON.stringify({ checkpoint: trail.signAt(organizationId, at) })}\n`;
    }
  }
  const body = textStream(chunks());
  const range = `${request.from ?? 1}-${request.to ?? "end"}`;
  return {
    body,
    contentType: contentTypes[format],
    filename: `audit-${organizationId}-${range}.${format === "csv" ? "csv" : "jsonl"}`,
  };
}
