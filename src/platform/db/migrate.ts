import { createHash, randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** What the migrator needs from a connection: one session, so the advisory lock holds. */
export interface MigrationSession {
  query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  /** Runs a multi-statement script and the statements after it atomically. */
  transaction(script: string, after: { sql: string; params: unknown[] }): Promise<void>;
}

export type Migration = { name: string; sql: string; checksum: string };

// Prisma's own advisory lock key, so `prisma migrate` and this service exclude each other too.
const ADVISORY_LOCK_KEY = 72707369;

// From src/platform/db/ when run from source, from dist/ when run from the bundle, from a folder
// of dist/ for the bundles the tests build.
export const defaultMigrationsDir = ["../../../prisma/migrations", "../prisma/migrations", "../../prisma/migrations"]
  .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
  .find((dir) => existsSync(dir)) as string;

export function readMigrations(dir = defaultMigrationsDir): Migration[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(path.join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

/** Applies pending migrations in order, each in a transaction, recorded as Prisma records them. */
export async function applyMigrations(session: MigrationSession, migrations: Migration[]): Promise<string[]> {
  await session.query("SELECT pg_advisory_lock($1)", [ADVISORY_LOCK_KEY]);
  try {
    await session.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0
    )`);
    const rows = await session.query(
      `SELECT "migration_name", "checksum", "finished_at" FROM "_prisma_migrations" WHERE "rolled_back_at" IS NULL`,
    );
    const applied = new Map(rows.map((row) => [row.migration_name as string, row]));
    const known = new Set(migrations.map((m) => m.name));
    for (const row of rows) {
      if (!known.has(row.migration_name as string)) {
        throw new Error(
          `The database has migration ${row.migration_name}, which this version does not know. Is an older version starting against a newer database?`,
        );
      }
    }
    const done: string[] = [];
    for (const migration of migrations) {
      const row = applied.get(migration.name);
      if (row) {
        if (!row.finished_at) {
          throw new Error(`Migration ${migration.name} was started but never finished; repair the database by hand.`);
        }
        if (row.checksum !== migration.checksum) {
          throw new Error(`Migration ${migration.name} was changed after it was applied. Migrations must never be edited.`);
        }
        continue;
      }
      await session.transaction(migration.sql, {
        sql: `INSERT INTO "_prisma_migrations" ("id", "checksum", "migration_name", "started_at", "finished_at", "applied_steps_count")
              VALUES ($1, $2, $3, now(), now(), 1)`,
        params: [randomUUID(), migration.checksum, migration.name],
      });
      done.push(migration.name);
    }
    return done;
  } finally {
    await session.query("SELECT pg_advisory_unlock($1)", [ADVISORY_LOCK_KEY]);
  }
}
