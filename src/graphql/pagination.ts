import { BadUserInputError } from "../platform/errors.js";
import { commonLimits, integer } from "../platform/limits.js";

export type PageArgs = { limit?: number | null; cursor?: string | null };
/** One row of a page with its own cursor (a Relay edge). */
export type Edge<T> = { cursor: string; node: T };
export type PageInfo = {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
};
export type Page<T> = {
  items: T[];
  edges: Edge<T>[];
  pageInfo: PageInfo;
  nextCursor: string | null;
  /** Counts every record of the list (all pages), with its filter; called only when a client selects totalCount. */
  totalCount: () => Promise<number>;
};

export const pageLimits = { default: 20, max: commonLimits.pageSize.maximum };
// Built once: a zod schema costs far more to build than to check (a page of 50 vendors with their
// comments checks it 50 times).
const pageSize = integer(commonLimits.pageSize);

/** The page size asked for (default 20), or a BAD_USER_INPUT error outside 1 to 100; `name` is the argument (limit, first or last). */
export function pageSizeOf(limit: number | null | undefined, name = "limit"): number {
  const size = limit ?? pageLimits.default;
  const checked = pageSize.safeParse(size);
  if (!checked.success) {
    const message = checked.error.issues[0]?.message ?? "is not a valid page size";
    throw new BadUserInputError(`${name}: ${message}`, [{ path: name, message }]);
  }
  return size;
}
