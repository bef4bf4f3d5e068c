import { BadUserInputError } from "../platform/errors.js";
import { commonLimits, integer } from "../platform/limits.js";

export type PageArgs = { limit?: number | null; cursor?: string | null };
export type Page<T> = {
  items: T[];
  nextCursor: string | null;
  /** Counts every record of the list (all pages); called only when a client selects totalCount. */
  totalCount?: () => Promise<number>;
};

export const pageLimits = { default: 20, max: commonLimits.pageSize.maximum };
// Built once: a zod schema costs far more to build than to check (a page of 50 vendors with their
// comments checks it 50 times).
const pageSize = integer(commonLimits.pageSize);

type KeyValue = string | number | Date;

/** The columns lists page by, and the type each has in a cursor. */
const keyKinds = { createdAt: "date", id: "string", version: "int" } as const;
type PageKey = keyof typeof keyKinds;

/**
 * Keyset pagination, newest first, over `keys` (a unique combination, e.g. createdAt then id).
 * The cursor names the last row returned, so rows inserted meanwhile cause neither repeats nor
 * gaps among the rows that already existed.
 */
export function pageQuery<K extends PageKey>(args: PageArgs, keys: readonly K[]) {
  const limit = args.limit ?? pageLimits.default;
  const checked = pageSize.safeParse(limit);
  if (!checked.success) {
    const message = checked.error.issues[0]?.message ?? "is not a valid page size";
    throw new BadUserInputError(`limit: ${message}`, [{ path: "limit", message }]);
  }
  const after = args.cursor ? decodeCursor(args.cursor, keys) : null;
  // Lexicographic "before the cursor": k0 < v0, or k0 = v0 and k1 < v1, ...
  const where = after
    ? {
        OR: keys.map((key, i) => ({
          ...Object.fromEntries(keys.slice(0, i).map((k) => [k, after[k]])),
          [key]: { lt: after[key] },
        })),
      }
    : {};
  const orderBy = keys.map((key) => ({ [key]: "desc" as const })) as { [P in K]: "desc" }[];
  return { where, orderBy, take: limit + 1, limit, keys, after };
}

export function toPage<T extends Record<string, unknown>>(rows: T[], query: { limit: number; keys: readonly string[] }): Page<T> {
  const items = rows.slice(0, query.limit);
  const last = items[items.length - 1];
  const nextCursor = rows.length > query.limit && last ? encodeCursor(query.keys.map((k) => last[k] as KeyValue)) : null;
  return { items, nextCursor };
}

function encodeCursor(values: KeyValue[]): string {
  return Buffer.from(JSON.stringify(values.map((v) => (v instanceof Date ? { d: v.toISOString() } : v)))).toString("base64url");
}

function decodeCursor<K extends PageKey>(cursor: string, keys: readonly K[]): Record<K, KeyValue> {
  const invalid = () =>
    new BadUserInputError("cursor is not a cursor from this list", [{ path: "cursor", message: "is not valid" }]);
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(values) || values.length !== keys.length) throw invalid();
  const decoded = values.map((v, i) => {
    const kind = keyKinds[keys[i] as K];
    if (kind === "string" && typeof v === "string") return v;
    // Only values the database can compare: 32-bit integers, dates of the years 1970 to 9999.
    if (kind === "int" && Number.isInteger(v) && Math.abs(v as number) <= 2_147_483_647) return v as number;
    if (kind === "date" && v && typeof v === "object" && typeof v.d === "string") {
      const date = new Date(v.d);
      const year = date.getUTCFullYear();
      if (!Number.isNaN(date.getTime()) && year >= 1970 && year <= 9999) return date;
    }
    throw invalid();
  });
  return Object.fromEntries(keys.map((k, i) => [k, decoded[i]])) as Record<K, KeyValue>;
}

/** plugin-prisma's query for the page's items, also selecting the keys the cursor is made of. */
export function withKeys<Q extends { select?: object; include?: object }>(query: Q, keys: readonly string[]): Q {
  if (!query.select) return query;
  return { ...query, select: { ...query.select, ...Object.fromEntries(keys.map((k) => [k, true])) } };
}
