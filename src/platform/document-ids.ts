import { createHash } from "node:crypto";

const bareHex = /^[0-9a-f]{64}$/i;

/**
 * A trusted document's id as stored: the SHA-256 of its text in 64 lower-case hex digits. Callers
 * write it as GraphQL over HTTP's Appendix A does (`sha256:<hex>`), or bare (Relay's query map,
 * graphql-codegen 5, Apollo's `persistedQuery.sha256Hash`). Null when `raw` is neither.
 */
export function normalizeDocumentId(raw: unknown): string | null {
  if (typeof raw !== "string") return null;
  const hex = raw.startsWith("sha256:") ? raw.slice("sha256:".length) : raw;
  return bareHex.test(hex) ? hex.toLowerCase() : null;
}

/** The id a document's text has. */
export function documentIdOf(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
