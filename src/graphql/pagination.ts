import { BadUserInputError } from "../platform/errors.js";
import { commonLimits, integer } from "../platform/limits.js";

export type PageArgs = { limit?: number | null; cursor?: string | null };
export type Page<T> = {
  items: T[];
  nextCursor: string | null;
  /** Counts every record of the list (all pages), with its filter; called only when a client selects totalCount. */
  totalCount: () => Promise<number>;
};

export const pageLimits = { default: 20, max: commonLimits.pageSize.maximum };
// Built once: a zod schema costs far more to build than to check (a page of 50 vendors with their
// comments checks it 50 times).
const pageSize = integer(commonLimits.pageSize);

/** The page size asked for (default 20), or a BAD_USER_INPUT error outside 1 to 100. */
export function pageSizeOf(limit: number | null | undefined): number {
  const size = limit ?? pageLimits.default;
  const checked = pageSize.safeParse(size);
  if (!checked.success) {
    const message = checked.error.issues[0]?.message ?? "is not a valid page size";
    throw new BadUserInputError(`limit: ${message}`, [{ path: "limit", message }]);
  }
  return size;
}
