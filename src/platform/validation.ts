import { z } from "zod";
import { BadUserInputError } from "./errors.js";

/** Parses with a zod schema; a failure is a 400 with one detail per problem. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message }));
  throw new BadUserInputError(details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join("; "), details);
}

/** Length in Unicode code points, as users count characters (an emoji is one). */
export function codePointLength(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

/** zod option for an optional field that may be left out but not set to null. */
export const notNull = {
  error: (issue: { input: unknown }) =>
    issue.input === null ? "must not be null; leave the field out to keep its value" : undefined,
};

/** A name or title: trimmed, then 1 to 255 characters. @deprecated `text(commonLimits.name)` from limits.ts */
export const nameText = () =>
  z
    .string(notNull)
    .trim()
    .min(1, "must not be empty or only whitespace")
    .refine((s) => codePointLength(s) <= 255, "must be at most 255 characters");

/** Free text of at most `max` characters. @deprecated `text(commonLimits.freeText)` from limits.ts */
export const freeText = (max = 10_000) =>
  z.string().refine((s) => codePointLength(s) <= max, `must be at most ${max} characters`);

/** Arguments as GraphQL delivers them: any optional one may also be null. */
export type WithNulls<T> = { [K in keyof T]: undefined extends T[K] ? T[K] | null : T[K] };
