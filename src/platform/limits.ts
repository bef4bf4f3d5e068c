import { type GraphQLInputType, getNullableType, isListType, isScalarType } from "graphql";
import { z } from "zod";
import { codePointLength, notNull } from "./validation.js";

/**
 * A limit on one input value, declared once and read by three consumers: the service's zod
 * validation (`text`, `integer`, `list` below), the OpenAPI document (`limitKeywords`, the JSON
 * Schema keywords of the same name) and the GraphQL description (`limited`). Lengths count Unicode
 * code points, as JSON Schema's `maxLength` does.
 *
 * To limit a new input: declare it with `limit({...})` (next to the service, exported), validate
 * with `text(l)` / `integer(l)` / `list(item, l)`, and give the GraphQL argument or input field
 * `...limited("What it is", l)`. test/unit/limits.test.ts fails when a declared limit is on no
 * GraphQL argument, when the OpenAPI schema of a REST route lacks one of its keywords, or when a
 * service checks a length or range with zod directly.
 */
export type Limit = {
  minLength?: number;
  maxLength?: number;
  /** Leading and trailing whitespace is removed before the checks (and from the stored value). */
  trim?: boolean;
  /** Refuses text that is only whitespace (JSON Schema: `pattern: "\\S"`). */
  notBlank?: boolean;
  /** ECMAScript regular expression the whole value must match, anchored by its own ^ and $, no flags. */
  pattern?: string;
  /** What the pattern means, in words, for messages and descriptions. */
  patternHint?: string;
  format?: "email" | "uri";
  /** Base64 text whose decoded bytes are at most `maxBytes`. */
  base64?: { maxBytes: number };
  minimum?: number;
  maximum?: number;
  maxItems?: number;
};

const declared = new Set<Limit>();

/** Declares a limit (see the comment on `Limit`). */
export function limit<L extends Limit>(declaration: L): Readonly<L> {
  declared.add(declaration);
  return Object.freeze(declaration);
}

/** Every limit declared so far: the test checks each one is on a GraphQL argument and in OpenAPI. */
export function declaredLimits(): readonly Limit[] {
  return [...declared];
}

const MiB = 1024 * 1024;
const size = (bytes: number) => (bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${bytes} bytes`);

function lengthWords(l: Limit): string | undefined {
  const { minLength: min, maxLength: max } = l;
  if (min !== undefined && min > 1 && max !== undefined) return `${min} to ${max} characters`;
  if (min === 1 && max !== undefined) return `1 to ${max} characters`;
  if (min === 1) return "not empty";
  if (max !== undefined) return `at most ${max} characters`;
  if (min !== undefined) return `at least ${min} characters`;
  return undefined;
}

/** The limit in words, e.g. "1 to 2000 characters, not only whitespace". */
export function describeLimit(l: Limit): string {
  const parts: string[] = [];
  if (l.format === "email") parts.push("an e-mail address");
  if (l.format === "uri" && !l.patternHint) parts.push("an absolute URL");
  if (l.patternHint) parts.push(l.patternHint);
  if (l.base64) parts.push(`standard base64, at most ${size(l.base64.maxBytes)} decoded`);
  else {
    const length = lengthWords(l);
    if (length) parts.push(l.trim && length !== "not empty" ? `${length} after trimming` : length);
  }
  if (l.notBlank) parts.push("not only whitespace");
  if (l.minimum !== undefined && l.maximum !== undefined) parts.push(`${l.minimum} to ${l.maximum}`);
  else if (l.minimum !== undefined) parts.push(`${l.minimum} or more`);
  else if (l.maximum !== undefined) parts.push(`at most ${l.maximum}`);
  if (l.maxItems !== undefined) parts.push(`at most ${l.maxItems} items`);
  return parts.join(", ");
}

/** Options of a Pothos argument or input field: the description with the limit, and the limit itself. */
export function limited(description: string, l: Limit): { description: string; extensions: { limit: Limit } } {
  return { description: `${description} (${describeLimit(l)})`, extensions: { limit: l } };
}

/** The limit a GraphQL argument or input field carries, from `limited`. */
export function limitOf(extensions: Readonly<Record<string, unknown>> | null | undefined): Limit | undefined {
  return (extensions?.limit as Limit | undefined) ?? undefined;
}

/** The limit as JSON Schema (OpenAPI 3.1) keywords. */
export function limitKeywords(l: Limit): Record<string, unknown> {
  const keywords: Record<string, unknown> = {};
  if (l.minLength !== undefined) keywords.minLength = l.minLength;
  if (l.maxLength !== undefined) keywords.maxLength = l.maxLength;
  if (l.base64) {
    keywords.contentEncoding = "base64";
    keywords.pattern = "^[A-Za-z0-9+/]*={0,2}$";
    keywords.maxLength = Math.min(l.maxLength ?? Number.POSITIVE_INFINITY, Math.ceil(l.base64.maxBytes / 3) * 4);
  }
  const blankRefused = l.notBlank || (l.trim && l.minLength !== undefined && l.minLength >= 1);
  const patterns = [l.pattern, blankRefused ? "\\S" : undefined].filter((p) => p !== undefined);
  if (patterns.length === 1 && !keywords.pattern) keywords.pattern = patterns[0];
  // JSON Schema takes one pattern per schema: both must hold.
  if (patterns.length === 2) keywords.allOf = patterns.map((pattern) => ({ pattern }));
  if (l.format) keywords.format = l.format;
  if (l.minimum !== undefined) keywords.minimum = l.minimum;
  if (l.maximum !== undefined) keywords.maximum = l.maximum;
  if (l.maxItems !== undefined) keywords.maxItems = l.maxItems;
  return keywords;
}

const isBase64 = (s: string) => s.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(s);

/** Bytes that standard base64 text decodes to. */
export function decodedSize(data: string): number {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return (data.length / 4) * 3 - padding;
}

/** zod for a string under the limit; a null is refused with a hint to leave the field out. */
export function text(l: Limit) {
  const base = z.string(notNull);
  let schema = l.trim ? base.trim() : base;
  const { minLength: min, maxLength: max } = l;
  if (l.notBlank || (l.trim && min === 1)) {
    schema = schema.refine((s) => /\S/.test(s), "must not be empty or only whitespace");
  } else if (min === 1) {
    schema = schema.min(1, "must not be empty");
  }
  if (min !== undefined && min > 1) {
    schema = schema.refine((s) => codePointLength(s) >= min, `must be at least ${min} characters`);
  }
  if (max !== undefined) schema = schema.refine((s) => codePointLength(s) <= max, `must be at most ${max} characters`);
  if (l.pattern) {
    const pattern = new RegExp(l.pattern);
    schema = schema.refine((s) => pattern.test(s), `must be ${l.patternHint ?? `of the form ${l.pattern}`}`);
  }
  if (l.format === "email") schema = schema.refine((s) => z.email().safeParse(s).success, "must be an e-mail address");
  if (l.format === "uri") schema = schema.refine((s) => URL.canParse(s), "must be an absolute URL");
  const encoded = l.base64;
  if (encoded) {
    schema = schema
      .refine(isBase64, "must be standard base64")
      .refine((s) => decodedSize(s) <= encoded.maxBytes, `must decode to at most ${size(encoded.maxBytes)}`);
  }
  return schema;
}

/** zod for an integer within the limit. */
export function integer(l: Limit) {
  let schema = z.number(notNull).int("must be an integer");
  if (l.minimum !== undefined && l.maximum !== undefined) {
    const message = `must be an integer from ${l.minimum} to ${l.maximum}`;
    return schema.min(l.minimum, message).max(l.maximum, message);
  }
  if (l.minimum !== undefined) schema = schema.min(l.minimum, `must be at least ${l.minimum}`);
  if (l.maximum !== undefined) schema = schema.max(l.maximum, `must be at most ${l.maximum}`);
  return schema;
}

/** zod for a list within the limit. */
export function list<T extends z.ZodType>(item: T, l: Limit) {
  const schema = z.array(item);
  return l.maxItems === undefined ? schema : schema.max(l.maxItems, `must have at most ${l.maxItems} items`);
}

/** Limits shared by several inputs. */
export const commonLimits = {
  /** A name or title. */
  name: limit({ minLength: 1, maxLength: 255, trim: true }),
  /** A description or changelog. */
  freeText: limit({ maxLength: 10_000 }),
  /**
   * An id given as an argument: the record must exist, so only emptiness and length are refused
   * here. The service's ids are at most 37 characters; every other ID argument and
   * X-Organization-Id are held to the same length (src/graphql/input-bounds.ts).
   */
  id: limit({ minLength: 1, maxLength: 64 }),
  /** `cursor` of every list: what `nextCursor` gave, which encodes the sort key of the last row. */
  cursor: limit({ maxLength: 4096 }),
  /** `limit` of every list. */
  pageSize: limit({ minimum: 1, maximum: 100 }),
};

export type Input = { type: GraphQLInputType; extensions?: Readonly<Record<string, unknown>> | null };

/** Every ID a caller sends, where no limit of its own is declared: ids are short, so a long one is refused before any lookup. */
export const anyId: Limit = { maxLength: commonLimits.id.maxLength };

/** Date-times and dates a caller sends: longer ones are no ISO 8601 value. */
export const anyDateTime: Limit = { maxLength: 64 };
export const anyDate: Limit = { maxLength: 10 };
/** Text a caller sends where no limit of its own is declared (the longest free text the service keeps). */
export const anyText: Limit = { maxLength: 10_000 };
const scalarLimits: Record<string, Limit | undefined> = { ID: anyId, DateTime: anyDateTime, Date: anyDate, String: anyText };

/** The limit of an argument or input field: its declared one, else `anyId` for an ID. */
export function inputLimit(input: Input): Limit | undefined {
  const declared = limitOf(input.extensions);
  if (declared) return declared;
  const named = getNullableType(input.type);
  const scalar = isListType(named) ? getNullableType(named.ofType) : named;
  if (!isScalarType(scalar)) return undefined;
  return scalarLimits[scalar.name];
}

/** Limits of every list's filter. */
export const listLimits = {
  /** Values of one filter field (`status: [...]`, `assigneeId: [...]`). */
  values: limit({ maxItems: 100 }),
  /** `search` (REST: `q`). */
  search: limit({ minLength: 2, maxLength: 100 }),
};
