import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { MappingRelationship } from "../../generated/prisma/enums.js";
import type { Db } from "../../platform/db/database.js";
import { BadUserInputError, ConflictError, ForbiddenError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { limit, list, text } from "../../platform/limits.js";
import { parseInput } from "../../platform/validation.js";
import { auditEvent, writeAuditEvent } from "../audit/audit.service.js";
import {
  badDocument,
  type Catalog,
  type CatalogRequirement,
  firstIssue,
  frameworkLimits,
  requirementLimits,
} from "./formats/catalog.js";
import { readCsv } from "./formats/csv.js";
import { readOscal } from "./formats/oscal.js";
import { pointer, readPlainJson } from "./formats/plain-json.js";

export const FRAMEWORK_FORMATS = ["oscal", "json", "csv"] as const;
export type FrameworkFormat = (typeof FRAMEWORK_FORMATS)[number];

/**
 * NIST's SP 800-53 catalog in OSCAL, prose and all, is about 4 MB; 16 MiB leaves room for larger
 * catalogs and stays well within the request body limit (BODY_LIMIT_BYTES, 36 MiB by default).
 */
export const MAX_DOCUMENT_CHARACTERS = 16 * 1024 * 1024;
/** NIST's CSF 2.0 to SP 800-53 informative references are about 1,000 pairs. */
export const MAX_MAPPINGS = 50_000;

export const importLimits = {
  document: limit({ minLength: 1, maxLength: MAX_DOCUMENT_CHARACTERS }),
  ...frameworkLimits,
};

export type ImportFrameworkArgs = {
  format: FrameworkFormat;
  document: string;
  key?: string | null;
  name?: string | null;
  version?: string | null;
  source?: string | null;
  license?: string | null;
};

type FrameworkQuery = { select?: Prisma.FrameworkSelect; include?: Prisma.FrameworkInclude };
type Tx = Prisma.TransactionClient;

/** A framework read from a document, with the arguments given over what the document says. */
export type FrameworkDocument = {
  key: string;
  name: string;
  version: string;
  source: string | null;
  license: string | null;
  requirements: CatalogRequirement[];
};

const facts = z.object({
  key: text(frameworkLimits.key),
  name: text(frameworkLimits.name),
  version: text(frameworkLimits.version),
  source: text(frameworkLimits.source).nullable(),
  license: text(frameworkLimits.license).nullable(),
});

/** Reads `document` in its format; the arguments win over what the document says of the framework. */
export async function readFrameworkDocument(args: ImportFrameworkArgs): Promise<FrameworkDocument> {
  parseInput(z.object({ document: text(importLimits.document) }), { document: args.document });
  let catalog: Catalog;
  if (args.format === "oscal") catalog = await readOscal(args.document);
  else if (args.format === "json") catalog = readPlainJson(args.document);
  else if (args.format === "csv") catalog = readCsv(args.document);
  else
    throw new BadUserInputError(`format must be one of ${FRAMEWORK_FORMATS.join(", ")}`, [
      { path: "format", message: "unknown" },
    ]);
  const given = (name: "key" | "name" | "version" | "source" | "license") => args[name] ?? catalog[name] ?? null;
  const missing = (["key", "name", "version"] as const).filter((name) => given(name) === null);
  if (missing.length) {
    throw new BadUserInputError(
      `${missing.join(", ")} must be given: a ${args.format === "csv" ? "CSV document" : "document"} without ${missing.join(" and ")} needs ${missing.length === 1 ? "it as an argument" : "them as arguments"}`,
      missing.map((path) => ({ path, message: "required" })),
    );
  }
  const framework = parseInput(facts, {
    key: given("key"),
    name: given("name"),
    version: given("version"),
    source: given("source"),
    license: given("license"),
  });
  return { ...framework, requirements: catalog.requirements };
}

/** Ids of the requirements, by ref: a new id each, so the parent column can name them in the same statement. */
async function insertRequirements(tx: Tx, frameworkId: string, requirements: CatalogRequirement[]): Promise<void> {
  const ids = new Map(requirements.map((r) => [r.ref, newId("req")]));
  // One statement whatever the number: the columns travel as arrays.
  await tx.$executeRaw`
    INSERT INTO "Requirement" ("id", "frameworkId", "ref", "title", "description", "parentId", "assessable", "position")
    SELECT r."id", ${frameworkId}, r."ref", r."title", r."description", r."parentId", r."assessable", r."position"
    FROM unnest(
      ${requirements.map((r) => ids.get(r.ref))}::text[],
      ${requirements.map((r) => r.ref)}::text[],
      ${requirements.map((r) => r.title)}::text[],
      ${requirements.map((r) => r.description)}::text[],
      ${requirements.map((r) => (r.parentRef === null ? null : ids.get(r.parentRef)))}::text[],
      ${requirements.map((r) => r.assessable)}::boolean[],
      ${requirements.map((r) => r.position)}::int[]
    ) AS r("id", "ref", "title", "description", "parentId", "assessable", "position")`;
}

/** A framework's row and its requirements: an organization's own, or shipped (`null`). Its id. */
async function createFramework(tx: Tx, organizationId: string | null, framework: FrameworkDocument): Promise<string> {
  const id = newId("fw");
  await tx.framework.create({
    data: {
      id,
      organizationId,
      key: framework.key,
      name: framework.name,
      version: framework.version,
      source: framework.source,
      license: framework.license,
      requirementCount: framework.requirements.length,
    },
    select: { id: true },
  });
  await insertRequirements(tx, id, framework.requirements);
  return id;
}

/** Serializes imports of one key, so that two cannot both find it free. */
const lockKey = (tx: Tx, key: string) =>
  tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`framework-key:${key}`}, 0))`;

type FrameworkRow = { id: string; organizationId: string | null; version: string };

/** What an operator's import did. */
export type OperatorImportResult = {
  id: string;
  key: string;
  name: string;
  version: string;
  requirementCount: number;
  /** True for a new shipped framework, false when it filled in a shipped framework's descriptions. */
  created: boolean;
  /** Requirements whose description the import set. */
  descriptionsFilled: number;
  /** Refs of the document that the shipped framework does not have (left out). */
  unmatched: string[];
};

export type MappingSetResult = {
  sourceKey: string;
  targetKey: string;
  sourceFrameworkId: string;
  targetFrameworkId: string;
  mappingCount: number;
};

const mappingDocument = z.strictObject({
  source: text(frameworkLimits.key),
  target: text(frameworkLimits.key),
  mappings: list(
    z.strictObject({
      sourceRef: text(requirementLimits.ref),
      targetRef: text(requirementLimits.ref),
      relationship: z.enum(MappingRelationship, { error: "must be one of equal, subset, superset, intersect" }),
    }),
    { maxItems: MAX_MAPPINGS },
  ),
});

export type MappingSetDocument = z.output<typeof mappingDocument>;

/** A mapping set: `{source, target, mappings: [{sourceRef, targetRef, relationship}]}`, pairs unique. */
export function readMappingSet(documentText: string): MappingSetDocument {
  parseInput(z.object({ document: text(importLimits.document) }), { document: documentText });
  let value: unknown;
  try {
    value = JSON.parse(documentText);
  } catch (error) {
    throw badDocument("/", `not JSON: ${(error as Error).message}`);
  }
  const parsed = mappingDocument.safeParse(value);
  if (!parsed.success) throw firstIssue(parsed.error, pointer);
  if (parsed.data.mappings.length === 0) throw badDocument("/mappings", "a mapping set needs at least one mapping");
  const seen = new Map<string, number>();
  for (const [i, m] of parsed.data.mappings.entries()) {
    const pair = `${m.sourceRef}\n${m.targetRef}`;
    const first = seen.get(pair);
    if (first !== undefined)
      throw badDocument(`/mappings/${i}`, `the pair ${m.sourceRef} -> ${m.targetRef} is already /mappings/${first}`);
    seen.set(pair, i);
  }
  return parsed.data;
}

export function createFrameworkImportService(db: Db) {
  /** The frameworks of that key an organization sees (organizationId null: the operator, who sees the shipped ones). */
  async function frameworksWithKey(tx: Tx, key: string) {
    return tx.$queryRaw<FrameworkRow[]>`
      SELECT "id", "organizationId", "version" FROM "Framework" WHERE "key" = ${key}`;
  }

  /** Writes the mappings of a set, replacing the scope's earlier relationship for a pair it names again. */
  async function writeMappings(tx: Tx, organizationId: string | null, set: MappingSetDocument): Promise<MappingSetResult> {
    const resolve = async (key: string, at: string) => {
      const [framework] = await tx.$queryRaw<{ id: string; organizationId: string | null }[]>`
        SELECT "id", "organizationId" FROM "Framework"
        WHERE "key" = ${key} AND ("organizationId" IS NULL OR "organizationId" IS NOT DISTINCT FROM ${organizationId})
        ORDER BY "organizationId" NULLS LAST LIMIT 1`;
      if (!framework) throw badDocument(at, `no framework has the key ${JSON.stringify(key)}`);
      return framework;
    };
    const source = await resolve(set.source, "/source");
    const target = await resolve(set.target, "/target");
    if (organizationId !== null && source.organizationId === null && target.organizationId === null) {
      throw new ForbiddenError(
        "A mapping set between two shipped frameworks is the operator's to import (npm run cli -- frameworks map); an organization's mapping sets touch at least one of its own frameworks",
      );
    }
    const refIds = async (frameworkId: string, refs: string[]) => {
      const rows = await tx.$queryRaw<{ ref: string; id: string }[]>`
        SELECT "ref", "id" FROM "Requirement" WHERE "frameworkId" = ${frameworkId} AND "ref" = ANY(${refs}::text[])`;
      return new Map(rows.map((row) => [row.ref, row.id]));
    };
    const sourceIds = await refIds(source.id, [...new Set(set.mappings.map((m) => m.sourceRef))]);
    const targetIds = await refIds(target.id, [...new Set(set.mappings.map((m) => m.targetRef))]);
    const unknown = set.mappings.flatMap((m, i) => [
      ...(sourceIds.has(m.sourceRef)
        ? []
        : [{ path: `/mappings/${i}/sourceRef`, message: `${set.source} has no requirement ${m.sourceRef}` }]),
      ...(targetIds.has(m.targetRef)
        ? []
        : [{ path: `/mappings/${i}/targetRef`, message: `${set.target} has no requirement ${m.targetRef}` }]),
    ]);
    if (unknown.length) {
      const named = unknown.slice(0, 20).map((d) => `${d.path}: ${d.message}`);
      throw new BadUserInputError(
        `document: ${unknown.length} unknown ref${unknown.length === 1 ? "" : "s"}: ${named.join("; ")}${unknown.length > 20 ? "; ..." : ""}`,
        unknown,
      );
    }
    const sources = set.mappings.map((m) => sourceIds.get(m.sourceRef) as string);
    const targets = set.mappings.map((m) => targetIds.get(m.targetRef) as string);
    await tx.$executeRaw`
      DELETE FROM "RequirementMapping" m
      USING unnest(${sources}::text[], ${targets}::text[]) AS p("sourceId", "targetId")
      WHERE m."organizationId" IS NOT DISTINCT FROM ${organizationId} AND m."sourceId" = p."sourceId" AND m."targetId" = p."targetId"`;
    await tx.$executeRaw`
      INSERT INTO "RequirementMapping" ("id", "organizationId", "sourceId", "targetId", "relationship")
      SELECT p."id", ${organizationId}, p."sourceId", p."targetId", p."relationship"::"MappingRelationship"
      FROM unnest(
        ${set.mappings.map(() => newId("rmp"))}::text[], ${sources}::text[], ${targets}::text[],
        ${set.mappings.map((m) => m.relationship)}::text[]
      ) AS p("id", "sourceId", "targetId", "relationship")`;
    return {
      sourceKey: set.source,
      targetKey: set.target,
      sourceFrameworkId: source.id,
      targetFrameworkId: target.id,
      mappingCount: set.mappings.length,
    };
  }

  return {
    /**
     * An organization's own framework from a document: all or nothing, its key unique among the
     * frameworks the organization sees (409 otherwise), audited in the organization's chain.
     */
    async importFramework(actor: Actor, args: ImportFrameworkArgs, query: FrameworkQuery) {
      const framework = await readFrameworkDocument(args);
      return db.$transaction(async (tx) => {
        await lockKey(tx, framework.key);
        const clash = (await frameworksWithKey(tx, framework.key)).find(
          (f) => f.organizationId === null || f.organizationId === actor.organizationId,
        );
        if (clash) {
          throw new ConflictError(
            clash.organizationId === null
              ? `The key ${framework.key} is a framework shipped with the service; choose another key for your own`
              : `Your organization already has a framework with the key ${framework.key}; a new version needs a new key`,
          );
        }
        const id = await createFramework(tx, actor.organizationId, framework);
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "framework.imported",
            { type: "framework", id },
            {
              key: framework.key,
              name: framework.name,
              version: framework.version,
              format: args.format,
              requirementCount: framework.requirements.length,
            },
          ),
        );
        return tx.framework.findUniqueOrThrow({ ...query, where: { id } });
      });
    },

    /**
     * The operator's import (CLI): a shipped framework for every organization. A key that names a
     * shipped framework of the same version fills in its descriptions and changes nothing else;
     * of another version, 409 (a new version is a new framework, with a key of its own).
     */
    async importShipped(args: ImportFrameworkArgs): Promise<OperatorImportResult> {
      const framework = await readFrameworkDocument(args);
      return db.$transaction(async (tx) => {
        await lockKey(tx, framework.key);
        const existing = await frameworksWithKey(tx, framework.key);
        const shipped = existing.find((f) => f.organizationId === null);
        if (shipped && shipped.version !== framework.version) {
          throw new ConflictError(
            `The shipped framework ${framework.key} is version ${shipped.version}, this document ${framework.version}: to fill in its descriptions give --version ${shipped.version}; for a framework of the new version give it a key of its own (--key)`,
          );
        }
        if (shipped) {
          const described = framework.requirements.filter((r) => r.description !== null);
          const filled = await tx.$queryRaw<{ ref: string }[]>`
            UPDATE "Requirement" r SET "description" = d."description"
            FROM unnest(${described.map((r) => r.ref)}::text[], ${described.map((r) => r.description)}::text[]) AS d("ref", "description")
            WHERE r."frameworkId" = ${shipped.id} AND r."ref" = d."ref"
            RETURNING r."ref"`;
          const known = await tx.$queryRaw<{ ref: string }[]>`
            SELECT "ref" FROM "Requirement" WHERE "frameworkId" = ${shipped.id}`;
          const refs = new Set(known.map((r) => r.ref));
          const row = await tx.framework.findUniqueOrThrow({ where: { id: shipped.id } });
          return {
            id: row.id,
            key: row.key,
            name: row.name,
            version: row.version,
            requirementCount: row.requirementCount,
            created: false,
            descriptionsFilled: filled.length,
            unmatched: framework.requirements.filter((r) => !refs.has(r.ref)).map((r) => r.ref),
          };
        }
        if (existing.length) {
          throw new ConflictError(
            `An organization already has its own framework with the key ${framework.key}: a shipped one would clash with it; choose another key (--key)`,
          );
        }
        const id = await createFramework(tx, null, framework);
        return {
          id,
          key: framework.key,
          name: framework.name,
          version: framework.version,
          requirementCount: framework.requirements.length,
          created: true,
          descriptionsFilled: framework.requirements.filter((r) => r.description !== null).length,
          unmatched: [],
        };
      });
    },

    /**
     * An organization's mapping set: between frameworks it sees, at least one of them its own
     * (403 otherwise: shipped-to-shipped sets are the operator's); unknown refs are a 400 naming
     * each; audited in the organization's chain. Only the organization's readiness uses it.
     */
    async importMappingSet(actor: Actor, documentText: string): Promise<MappingSetResult> {
      const set = readMappingSet(documentText);
      return db.$transaction(async (tx) => {
        const result = await writeMappings(tx, actor.organizationId, set);
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "framework.mappings_imported",
            { type: "framework", id: result.sourceFrameworkId },
            {
              source: result.sourceKey,
              target: result.targetKey,
              targetFrameworkId: result.targetFrameworkId,
              mappingCount: result.mappingCount,
            },
          ),
        );
        return result;
      });
    },

    /** The operator's mapping set (CLI): shipped, for every organization. */
    async importShippedMappingSet(documentText: string): Promise<MappingSetResult> {
      const set = readMappingSet(documentText);
      return db.$transaction((tx) => writeMappings(tx, null, set));
    },

    /** Every shipped framework (the operator's view), by key. */
    async listShipped() {
      return db.framework.findMany({
        where: { organizationId: null },
        orderBy: { key: "asc" },
        select: { id: true, key: true, name: true, version: true, source: true, license: true, requirementCount: true },
      });
    },
  };
}

export type FrameworkImportService = ReturnType<typeof createFrameworkImportService>;
