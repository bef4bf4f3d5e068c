import type { DocumentNode } from "graphql";
import { LRUCache } from "lru-cache";

/**
 * What a GraphQL document's text gives on its own, kept per distinct text (issue 59): its parse
 * (and so its token limit's verdict), and through Yoga's validation cache, which is keyed by the
 * parsed document, the schema and the validation rules, the verdicts of validation and of the
 * depth, alias and directive limits. The cost rule keeps its verdict on the parsed document too
 * (query-cost.ts), per schema and operation, and only when no variable sets it. A bound on entries
 * and one on the bytes of the texts kept: many distinct or large documents cannot grow the process.
 */
export const documentCacheLimits = { entries: 1_000, bytes: 4 * 1024 * 1024 };

type Limits = typeof documentCacheLimits;

/** Yoga's `parserAndValidationCache`: a bounded cache of parsed documents and one of parse refusals, by text. */
export function documentCaches(limits: Limits = documentCacheLimits) {
  // A text's size in bytes (UTF-8); a parse is a few times its text, so the bound also holds the trees.
  const sizeCalculation = (_value: unknown, text: string) => Math.max(1, Buffer.byteLength(text));
  const documentCache = new LRUCache<string, DocumentNode>({ max: limits.entries, maxSize: limits.bytes, sizeCalculation });
  // Refusals are fewer: a tenth of the room, so that a stream of broken texts cannot evict the good ones.
  const errorCache = new LRUCache<string, Error>({
    max: Math.max(1, Math.floor(limits.entries / 10)),
    maxSize: Math.max(1, Math.floor(limits.bytes / 10)),
    sizeCalculation,
  });
  return { documentCache, errorCache, validationCache: true as const };
}
