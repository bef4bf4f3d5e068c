import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { describe, expect, it } from "vitest";
import { applyMigrations, type MigrationSession, readMigrations } from "../../src/platform/db/migrate.js";
import { pgliteExtensions } from "../../src/platform/db/pglite-extensions.js";
import { emptyCluster } from "../helpers/data-dir.js";

function session(db: PGlite): MigrationSession {
  return {
    query: async (sql, params) => (await db.query<Record<string, unknown>>(sql, params)).rows,
    transaction: async (script, after) => {
      await db.transaction(async (tx) => {
        await tx.exec(script);
        await tx.query(after.sql, after.params);
      });
    },
  };
}

function migrationsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "migrations-"));
  for (const [name, sql] of Object.entries(files)) {
    mkdirSync(path.join(dir, name));
    writeFileSync(path.join(dir, name, "migration.sql"), sql);
  }
  return dir;
}

describe("applyMigrations", () => {
  it("applies pending migrations once, in order, recording them as Prisma does", async () => {
    const db = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    const applied = await applyMigrations(session(db), readMigrations());
    expect(applied.length).toBeGreaterThan(0);
    expect(await applyMigrations(session(db), readMigrations())).toEqual([]);
    const { rows } = await db.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" ORDER BY migration_name`,
    );
    expect(rows.map((r) => r.migration_name)).toEqual(applied);
    expect(rows.every((r) => r.checksum.length === 64 && r.finished_at)).toBe(true);
    await db.close();
  });

  it("rolls back a failing migration entirely and records nothing", async () => {
    const dir = migrationsDir({ "1_ok": "CREATE TABLE a (id int);", "2_bad": "CREATE TABLE b (id int); SELECT * FROM missing;" });
    const db = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    await expect(applyMigrations(session(db), readMigrations(dir))).rejects.toThrow(/missing/);
    const tables = await db.query<{ tablename: string }>(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`,
    );
    expect(tables.rows.map((r) => r.tablename)).toEqual(["_prisma_migrations", "a"]);
    const recorded = await db.query(`SELECT 1 FROM "_prisma_migrations" WHERE migration_name = '2_bad'`);
    expect(recorded.rows).toHaveLength(0);
    await db.close();
    rmSync(dir, { recursive: true });
  });

  it("refuses to start when an applied migration was edited", async () => {
    const dir = migrationsDir({ "1_ok": "CREATE TABLE a (id int);" });
    const db = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    await applyMigrations(session(db), readMigrations(dir));
    writeFileSync(path.join(dir, "1_ok", "migration.sql"), "CREATE TABLE a (id bigint);");
    await expect(applyMigrations(session(db), readMigrations(dir))).rejects.toThrow(/changed after it was applied/);
    await db.close();
    rmSync(dir, { recursive: true });
  });
});
