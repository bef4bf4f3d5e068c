import type { z } from "zod";
import { BadUserInputError } from "../../../platform/errors.js";
import { type Limit, limit, text } from "../../../platform/limits.js";

/** One requirement as every format reads it, in catalog order (`position` from 1). */
export type CatalogRequirement = {
  ref: string;
  title: string;
  description: string | null;
  parentRef: string | null;
  assessable: boolean;
  position: number;
};

/** What a format reader answers: the framework's facts the document gives, and its requirements. */
export type Catalog = {
  key?: string;
  name?: string;
  version?: string;
  source?: string;
  license?: string;
  requirements: CatalogRequirement[];
};

/** A requirement before the tree is checked: `at` names it, or one of its fields, in errors (a JSON pointer, a CSV line). */
export type RawRequirement = {
  ref: string;
  title: string;
  description: string | null;
  parentRef: string | null;
  assessable: boolean;
  at: (field?: string) => string;
};

/** Limits of a framework's own facts: the arguments of an import and the fields of a plain document. */
export const frameworkLimits = {
  key: limit({
    minLength: 1,
    maxLength: 64,
    pattern: "^[a-z0-9][a-z0-9._-]*$",
    patternHint: "lowercase letters, digits and . _ - (starting with a letter or digit)",
  }),
  name: limit({ minLength: 1, maxLength: 255, trim: true }),
  version: limit({ minLength: 1, maxLength: 64, trim: true }),
  source: limit({ maxLength: 1000 }),
  license: limit({ maxLength: 1000 }),
};

/**
 * Limits inside a document (not arguments, so not declared: they have no GraphQL argument). NIST's
 * SP 800-53 has about 1,200 controls and enhancements; the bound leaves room for catalogs ten times
 * larger while keeping one import within a transaction's time.
 */
export const MAX_REQUIREMENTS = 20_000;
export const requirementLimits = {
  ref: { minLength: 1, maxLength: 64, trim: true } satisfies Limit,
  title: { minLength: 1, maxLength: 500, trim: true } satisfies Limit,
  description: { maxLength: 100_000 } satisfies Limit,
};

const refText = text(requirementLimits.ref);
const titleText = text(requirementLimits.title);
const descriptionText = text(requirementLimits.description);

export function badDocument(at: string, message: string): BadUserInputError {
  return new BadUserInputError(`document: ${at}: ${message}`, [{ path: at, message }]);
}

/** The first problem zod found in a value, as a 400 naming where it is. */
export function firstIssue(error: z.ZodError, where: (path: PropertyKey[]) => string): BadUserInputError {
  const issue = error.issues[0] as z.core.$ZodIssue;
  return badDocument(where(issue.path), issue.message);
}

/**
 * Checks the requirements as a tree and answers them in catalog order: refs unique, titles not
 * empty, every parent a ref of the same document (before or after the child: order is free), no
 * cycle, at most MAX_REQUIREMENTS. The first problem is a 400 naming its place.
 */
export function checkRequirements(raw: RawRequirement[]): CatalogRequirement[] {
  if (raw.length === 0) throw badDocument("requirements", "a framework needs at least one requirement");
  if (raw.length > MAX_REQUIREMENTS) {
    throw badDocument("requirements", `at most ${MAX_REQUIREMENTS} requirements are accepted (this document has ${raw.length})`);
  }
  const byRef = new Map<string, RawRequirement>();
  const checked = raw.map((item, index) => {
    const field = <T>(schema: z.ZodType<T>, value: unknown, name: string): T => {
      const result = schema.safeParse(value);
      if (!result.success) throw badDocument(item.at(name), (result.error.issues[0] as z.core.$ZodIssue).message);
      return result.data;
    };
    const ref = field(refText, item.ref, "ref");
    if (byRef.has(ref)) throw badDocument(item.at("ref"), `${JSON.stringify(ref)} is already the ref of ${byRef.get(ref)?.at()}`);
    const requirement = {
      ...item,
      ref,
      title: field(titleText, item.title, "title"),
      description:
        item.description === null || item.description === "" ? null : field(descriptionText, item.description, "description"),
      parentRef: item.parentRef === null || item.parentRef.trim() === "" ? null : item.parentRef.trim(),
      position: index + 1,
    };
    byRef.set(ref, requirement);
    return requirement;
  });
  for (const item of checked) {
    if (item.parentRef !== null && !byRef.has(item.parentRef)) {
      throw badDocument(item.at("parent"), `${JSON.stringify(item.parentRef)} is the ref of no requirement in this document`);
    }
  }
  // A parent chain longer than the number of requirements goes round a cycle.
  const state = new Map<string, "walking" | "done">();
  for (const item of checked) {
    const chain: string[] = [];
    let ref: string | null = item.ref;
    while (ref !== null && state.get(ref) !== "done") {
      if (state.get(ref) === "walking") {
        throw badDocument(
          byRef.get(ref)?.at("parent") ?? ref,
          `the parents go round in a cycle: ${[...chain, ref].join(" -> ")}`,
        );
      }
      state.set(ref, "walking");
      chain.push(ref);
      ref = byRef.get(ref)?.parentRef ?? null;
    }
    for (const walked of chain) state.set(walked, "done");
  }
  return checked.map(({ at: _at, ...requirement }) => requirement);
}

/** A key made from a title, for documents that carry none (OSCAL's metadata has a title, no key). */
export function keyFromTitle(title: string): string {
  const slug = title
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9.]+/g, "-")
    .replace(/^[-.]+|[-.]+$/g, "");
  return slug.slice(0, frameworkLimits.key.maxLength).replace(/[-.]+$/, "") || "catalog";
}
