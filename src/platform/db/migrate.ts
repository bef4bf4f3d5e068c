import { createHash, randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PGlite } from "@electric-sql/pglite";
import type pg from "pg";
import { type MigrationStep, migrationSteps } from "./migration-steps.js";

/** One statement with parameters, or a script of several statements, inside a migration's transaction. */
export interface MigrationTx {
  query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  exec(script: string): Promise<void>;
}

/**
 * What the migrator needs from a database: transactions, nothing kept between them. Each one takes
 * a transaction-scoped advisory lock, which transaction pooling (PgBouncer) keeps, where a session
 * lock taken on one server connection and released on another would stay held.
 */
export interface MigrationSession {
  transaction<T>(work: (tx: MigrationTx) => Promise<T>): Promise<T>;
  /**
   * `work` on the connection itself, outside any transaction (a migration marked
   * `NO_TRANSACTION_MARKER`), holding the migrations' advisory lock for the session meanwhile.
   */
  outsideTransaction<T>(work: (connection: MigrationTx) => Promise<T>): Promise<T>;
}

/**
 * The first line of a migration that cannot run in a transaction (`CREATE INDEX CONCURRENTLY`,
 * `ALTER TYPE ... ADD VALUE` on old servers): its statements run one by one, each on its own, under
 * the migrations' lock, and it is recorded once they all succeeded. Write each statement so that it
 * can run again (`IF NOT EXISTS`): a crash half-way leaves it unrecorded, and the next start runs it
 * again from the top. Statements are split at a `;` that ends a line.
 */
export const NO_TRANSACTION_MARKER = "-- migration: no transaction";

const statementsOf = (sql: string) =>
  sql
    .split(/;[ \t]*(?:\r?\n|$)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement.replace(/^--.*$/gm, "").trim().length > 0);

export function pgMigrationSession(client: pg.ClientBase): MigrationSession {
  const tx: MigrationTx = {
    query: async (sql, params) => (await client.query(sql, params)).rows,
    exec: async (script) => {
      await client.query(script);
    },
  };
  return {
    // A session lock: the migrator has a direct connection of its own (DATABASE_DIRECT_URL past PgBouncer).
    async outsideTransaction(work) {
      await client.query("SET statement_timeout = 0; SET lock_timeout = 0");
      await client.query("SELECT pg_advisory_lock($1)", [ADVISORY_LOCK_KEY]);
      try {
        return await work(tx);
      } finally {
        await client.query("SELECT pg_advisory_unlock($1)", [ADVISORY_LOCK_KEY]).catch(() => {});
      }
    },
    async transaction(work) {
      await client.query("BEGIN");
      try {
        const result = await work(tx);
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    },
  };
}

export function pgliteMigrationSession(pglite: PGlite): MigrationSession {
  return {
    // One process owns a PGlite database (its data directory lock): nothing to exclude.
    outsideTransaction: (work) =>
      work({
        query: async (sql, params) => (await pglite.query<Record<string, unknown>>(sql, params)).rows,
        exec: async (script) => {
          await pglite.exec(script);
        },
      }),
    transaction: (work) =>
      pglite.transaction((tx) =>
        work({
          query: async (sql, params) => (await tx.query<Record<string, unknown>>(sql, params)).rows,
          exec: async (script) => {
            await tx.exec(script);
          },
        }),
      ),
  };
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

/**
 * Applies pending migrations in order, each in a transaction (or, marked `NO_TRANSACTION_MARKER`,
 * statement by statement under a session lock), recorded as Prisma records them.
 * Every transaction takes the lock, then reads what is applied: replicas starting together each
 * find the migration another applied meanwhile and skip it.
 */
export async function applyMigrations(
  session: MigrationSession,
  migrations: Migration[],
  steps: Record<string, MigrationStep> = migrationSteps,
): Promise<string[]> {
  const done: string[] = [];
  for (;;) {
    let outside: Migration | undefined;
    const applied = await session.transaction(async (tx) => {
      // A migration may rightly take long, and so may waiting for another replica's: the role's
      // timeouts (session-defaults.ts) are for requests.
      await tx.exec(
        "SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0",
      );
      await tx.query("SELECT pg_advisory_xact_lock($1)", [ADVISORY_LOCK_KEY]);
      const next = await nextPending(tx, migrations);
      if (!next) return undefined;
      if (next.sql.trimStart().startsWith(NO_TRANSACTION_MARKER)) {
        outside = next;
        return undefined;
      }
      await tx.exec(next.sql);
      await steps[next.name]?.(tx);
      await record(tx, next);
      return next.name;
    });
    if (outside) {
      const migration = outside;
      const ran = await session.outsideTransaction(async (connection) => {
        // Another replica may have applied it between the transaction above and the lock.
        if ((await nextPending(connection, migrations))?.name !== migration.name) return false;
        for (const statement of statementsOf(migration.sql)) await connection.query(statement);
        await record(connection, migration);
        return true;
      });
      if (ran) done.push(migration.name);
      continue;
    }
    if (!applied) return done;
    done.push(applied);
  }
}

function record(tx: MigrationTx, migration: Migration) {
  return tx.query(
    `INSERT INTO "_prisma_migrations" ("id", "checksum", "migration_name", "started_at", "finished_at", "applied_steps_count")
     VALUES ($1, $2, $3, now(), now(), 1)`,
    [randomUUID(), migration.checksum, migration.name],
  );
}

async function nextPending(tx: MigrationTx, migrations: Migration[]): Promise<Migration | undefined> {
  await tx.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id" VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum" VARCHAR(64) NOT NULL,
    "finished_at" TIMESTAMPTZ,
    "migration_name" VARCHAR(255) NOT NULL,
    "logs" TEXT,
    "rolled_back_at" TIMESTAMPTZ,
    "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count" INTEGER NOT NULL DEFAULT 0
  )`);
  const rows = await tx.query(
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
  for (const migration of migrations) {
    const row = applied.get(migration.name);
    if (!row) return migration;
    if (!row.finished_at) {
      throw new Error(`Migration ${migration.name} was started but never finished; repair the database by hand.`);
    }
    if (row.checksum !== migration.checksum) {
      throw new Error(`Migration ${migration.name} was changed after it was applied. Migrations must never be edited.`);
    }
  }
  return undefined;
}
