import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { PGlite } from "@electric-sql/pglite";
import { describe, expect, it } from "vitest";
import { applyMigrations, readMigrations } from "../../src/db/migrate.js";
import { printSchemaFile, schemaFilePath } from "../../src/schema-file.js";

const run = promisify(execFile);

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
    const { stdout } = await run(process.execPath, ["scripts/prisma.mjs", "sql-from-empty"], { maxBuffer: 16 * 1024 * 1024 });
    const fromSchema = new PGlite();
    await fromSchema.exec(stdout);
    const fromMigrations = new PGlite();
    await applyMigrations(
      {
        query: async (sql, params) => (await fromMigrations.query<Record<string, unknown>>(sql, params)).rows,
        transaction: async (script, after) => {
          await fromMigrations.transaction(async (tx) => {
            await tx.exec(script);
            await tx.query(after.sql, after.params);
          });
        },
      },
      readMigrations(),
    );
    const expected = await catalog(fromSchema);
    expect(expected.length).toBeGreaterThan(1000);
    expect(await catalog(fromMigrations)).toBe(expected);
    await Promise.all([fromSchema.close(), fromMigrations.close()]);
  }, 120_000);
});
