import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { PGlite } from "@electric-sql/pglite";
import { describe, expect, it } from "vitest";
import { printSchemaFile, schemaFilePath } from "../../src/graphql/schema-file.js";
import { applyMigrations, pgliteMigrationSession, readMigrations } from "../../src/platform/db/migrate.js";
import { pgliteExtensions } from "../../src/platform/db/pglite-extensions.js";
import { emptyCluster } from "../helpers/data-dir.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * `scripts/prisma.mjs sql-from-empty` (Prisma 6's schema engine: 10 s of CPU), cached under a key
 * of everything its output depends on: schema.prisma, the script and the Prisma 6 version. A
 * schema.prisma without a migration changes the key, so the drift is found all the same.
 */
async function sqlFromEmpty(): Promise<string> {
  const read = (file: string) => readFileSync(path.join(root, file), "utf8");
  const key = createHash("sha256")
    .update(read("prisma/schema.prisma"))
    .update(read("scripts/prisma.mjs"))
    .update(JSON.parse(read("node_modules/prisma6/package.json")).version)
    .digest("hex")
    .slice(0, 16);
  const dir = path.join(root, "node_modules/.cache/gateway-tests");
  const file = path.join(dir, `sql-from-empty-${key}.sql`);
  if (existsSync(file)) return readFileSync(file, "utf8");
  const { stdout } = await run(process.execPath, ["scripts/prisma.mjs", "sql-from-empty"], {
    cwd: root,
    maxBuffer: 16 * 1024 * 1024,
  });
  mkdirSync(dir, { recursive: true });
  const partial = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.partial`;
  writeFileSync(partial, stdout);
  renameSync(partial, file);
  for (const old of readdirSync(dir)) {
    if (old.startsWith("sql-from-empty-") && old.endsWith(".sql") && old !== path.basename(file))
      rmSync(path.join(dir, old), { force: true });
  }
  return stdout;
}

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
