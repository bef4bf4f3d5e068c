import { type GraphQLSchema, getOperationAST, parse, validate } from "graphql";
import type { Db } from "../platform/db/database.js";
import { documentIdOf, normalizeDocumentId } from "../platform/document-ids.js";
import { BadUserInputError } from "../platform/errors.js";

/** Trusted documents (contract section 13): what the operator publishes, for every replica. */

export type DocumentEntry = { id: string; text: string };

/** App names and versions become labels of /metrics and words of the request log: short and plain. */
const labelPattern = /^[\w.@/+-]{1,64}$/;

export function checkLabel(what: "app" | "version", value: string): string {
  if (!labelPattern.test(value)) {
    throw new BadUserInputError(
      `--${what} must be 1 to 64 letters, digits or the characters . _ - @ / + (it names the ${what} in logs and metrics)`,
    );
  }
  return value;
}

/**
 * The entries of a document file: graphql-codegen's `persisted-documents.json` and Relay's query
 * map (`{ "<id>": "<document>" }`), or Apollo's persisted query manifest
 * (`{ "format": "apollo-persisted-query-manifest", "operations": [{ "id", "body" }] }`).
 */
export function documentEntries(content: string): DocumentEntry[] {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (error) {
    throw new BadUserInputError(`The file is not JSON: ${(error as Error).message}`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new BadUserInputError("The file must be a JSON object of id to document, or an Apollo persisted query manifest");
  }
  const record = value as Record<string, unknown>;
  if (record.format === "apollo-persisted-query-manifest") {
    if (!Array.isArray(record.operations)) throw new BadUserInputError("The manifest has no operations list");
    return record.operations.map((operation, n) => {
      const { id, body } = (operation ?? {}) as { id?: unknown; body?: unknown };
      return { id: typeof id === "string" ? id : `operations[${n}]`, text: typeof body === "string" ? body : "" };
    });
  }
  const entries = Object.entries(record).map(([id, text]) => ({ id, text: typeof text === "string" ? text : "" }));
  if (!entries.length) throw new BadUserInputError("The file holds no documents");
  return entries;
}

/** What is wrong with one entry, or null: an id that is not its text's SHA-256, or a document the schema refuses. */
function problemOf(schema: GraphQLSchema, entry: DocumentEntry): string | null {
  const id = normalizeDocumentId(entry.id);
  if (!id) return "the id is not a SHA-256 (64 hex digits, optionally after sha256:)";
  if (!entry.text) return "the document is not a string of GraphQL";
  if (documentIdOf(entry.text) !== id) return "the id is not the SHA-256 of the document's text";
  let document: ReturnType<typeof parse>;
  try {
    document = parse(entry.text);
  } catch (error) {
    return `syntax: ${(error as Error).message}`;
  }
  const errors = validate(schema, document);
  if (errors.length) return errors.map((e) => e.message).join("; ");
  return null;
}

function nameOf(entry: DocumentEntry): string {
  try {
    const name = getOperationAST(parse(entry.text))?.name?.value;
    return name ? `${entry.id} (${name})` : entry.id;
  } catch {
    return entry.id;
  }
}

/** Every entry checked against the current schema; one error naming every bad document, or the entries by stored id. */
export function checkDocuments(schema: GraphQLSchema, entries: DocumentEntry[]): DocumentEntry[] {
  const bad = entries.flatMap((entry) => {
    const problem = problemOf(schema, entry);
    return problem ? [`  ${nameOf(entry)}: ${problem}`] : [];
  });
  if (bad.length) {
    throw new BadUserInputError(
      `${bad.length} of ${entries.length} documents cannot be published; none was stored:\n${bad.join("\n")}`,
    );
  }
  const byId = new Map(entries.map((e) => [normalizeDocumentId(e.id) as string, e.text]));
  return [...byId].map(([id, text]) => ({ id, text }));
}

/**
 * Stores checked documents in one statement: all or none. A document already stored keeps the
 * app and version that first brought it (its id is its text), so publishing again changes nothing.
 */
export async function publishDocuments(db: Db, input: { app: string; version: string; documents: DocumentEntry[] }) {
  const ids = input.documents.map((d) => d.id);
  const known = await db.trustedDocument.findMany({ where: { id: { in: ids } }, select: { id: true } });
  const knownIds = new Set(known.map((d) => d.id));
  const fresh = input.documents.filter((d) => !knownIds.has(d.id));
  const { count } = await db.trustedDocument.createMany({
    data: fresh.map((d) => ({ id: d.id, text: d.text, app: input.app, version: input.version })),
    skipDuplicates: true,
  });
  return { app: input.app, version: input.version, published: count, alreadyKnown: input.documents.length - count };
}

export async function listDocuments(db: Db, filter: { app?: string }) {
  const rows = await db.trustedDocument.findMany({
    where: filter.app ? { app: filter.app } : {},
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: { id: true, app: true, version: true, createdAt: true, text: true },
  });
  return rows.map((row) => {
    let operationName: string | null = null;
    try {
      operationName = getOperationAST(parse(row.text))?.name?.value ?? null;
    } catch {}
    return {
      id: `sha256:${row.id}`,
      app: row.app,
      version: row.version,
      operationName,
      createdAt: row.createdAt.toISOString(),
    };
  });
}
