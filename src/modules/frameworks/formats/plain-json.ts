import { z } from "zod";
import { list, text } from "../../../platform/limits.js";
import { badDocument, type Catalog, checkRequirements, firstIssue, frameworkLimits, MAX_REQUIREMENTS } from "./catalog.js";

// Lengths of a requirement's fields are checked by checkRequirements, which names the requirement.
const requirement = z.strictObject({
  ref: z.string(),
  title: z.string(),
  description: z.string().nullish(),
  parent: z.string().nullish(),
  assessable: z.boolean().nullish(),
});

const document = z.strictObject({
  key: text(frameworkLimits.key).nullish(),
  name: text(frameworkLimits.name).nullish(),
  version: text(frameworkLimits.version).nullish(),
  source: text(frameworkLimits.source).nullish(),
  license: text(frameworkLimits.license).nullish(),
  requirements: list(requirement, { maxItems: MAX_REQUIREMENTS }),
});

/** A JSON pointer (RFC 6901) to a place in the document. */
export const pointer = (path: PropertyKey[]) =>
  `/${path.map((part) => String(part).replaceAll("~", "~0").replaceAll("/", "~1")).join("/")}`;

/**
 * The project's plain format, in JSON: `{key, name, version, source, license, requirements: [{ref,
 * title, description, parent, assessable}]}` (`parent` a ref; `assessable` true when absent).
 */
export function readPlainJson(documentText: string): Catalog {
  let value: unknown;
  try {
    value = JSON.parse(documentText);
  } catch (error) {
    throw badDocument("/", `not JSON: ${(error as Error).message}`);
  }
  const parsed = document.safeParse(value);
  if (!parsed.success) throw firstIssue(parsed.error, pointer);
  const { requirements, ...facts } = parsed.data;
  return {
    ...Object.fromEntries(Object.entries(facts).filter(([, v]) => v !== null && v !== undefined)),
    requirements: checkRequirements(
      requirements.map((r, i) => ({
        ref: r.ref,
        title: r.title,
        description: r.description ?? null,
        parentRef: r.parent ?? null,
        assessable: r.assessable ?? true,
        at: (field?: string) => pointer(field ? ["requirements", i, field] : ["requirements", i]),
      })),
    ),
  };
}
