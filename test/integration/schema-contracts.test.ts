import { readFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { describe, expect, it } from "vitest";
import { printSchemaFile, schemaFilePath } from "../../src/graphql/schema-file.js";
import { applyMigrations, pgliteMigrationSession, readMigrations } from "../../src/platform/db/migrate.js";
import { pgliteExtensions } from "../../src/platform/db/pglite-extensions.js";
import { emptyCluster } from "../helpers/data-dir.js";
import { sqlFromEmpty } from "../helpers/sql-from-empty.js";

/** Everything about the public schema that a migration can change, as sorted text. */
async function catalog(db: PGlite): Promise<string> {
  const queries = [
    `SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default
       FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'`,
    `SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def
       FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> '_prisma_migrations'`,
    `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename <> '_prisma_migrations'`,
    `SELECT t.typname, e.enumlabel, e.enumsortorder FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid`,
  ];
  const parts: string[] = [];
  for (const sql of queries) {
    const { rows } = await db.query<Record<string, unknown>>(sql);
    parts.push(...rows.map((r) => JSON.stringify(r)).sort());
  }
  return parts.join("\n");
}

describe("contracts that frontends and operators rely on", () => {
  it("schema.graphql is the printed schema (run `npm run schema:print` after a schema change)", () => {
    expect(readFileSync(schemaFilePath, "utf8")).toBe(printSchemaFile());
  });

  it("the migrations produce exactly what schema.prisma describes", async () => {
    // Both from the empty cluster that `new PGlite()` would make, without running initdb twice.
    const fromSchema = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    // Prisma declares the trigram indexes but not the extension they need; the migration creates it.
    await fromSchema.exec(`CREATE EXTENSION IF NOT EXISTS pg_trgm;\n${await sqlFromEmpty()}`);
    const fromMigrations = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    await applyMigrations(pgliteMigrationSession(fromMigrations), readMigrations());
    const expected = await catalog(fromSchema);
    expect(expected.length).toBeGreaterThan(1000);
    expect(await catalog(fromMigrations)).toBe(expected);
    await Promise.all([fromSchema.close(), fromMigrations.close()]);
  }, 120_000);
});
