import pg from "pg";
import { openDatabase } from "../../src/platform/db/database.js";

/**
 * The run's migrated PostgreSQL template: a database the service's own migrator migrated once,
 * that tests copy with `CREATE DATABASE ... TEMPLATE` (a file copy on the server: tens of
 * milliseconds and no CPU of ours) instead of migrating a new database each (a second or more of
 * CPU in the test's process).
 *
 * Its name is the run's own (global-setup.ts draws it), so two runs on one server, of two
 * checkouts with other migrations, never share one; the global teardown drops it and every
 * database named `<template>_...` (the copies, and a template left half made).
 */
export const postgresAdminUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

export function databaseUrl(name: string): string {
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Makes the template `name` unless it exists. Any process of the run may call it at any time
 * (the global setup on PostgreSQL runs; the first test file that needs it on embedded runs, so
 * that a run without such a file makes none): an advisory lock keeps two from making it at once,
 * and the template is migrated under another name and renamed, so that a name that exists is a
 * template that is whole.
 */
export async function ensurePostgresTemplate(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  try {
    await admin.query("SELECT pg_advisory_lock(hashtext($1))", [name]);
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (exists.rowCount) return;
    const building = `${name}_building`;
    await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${building}`);
    // The service's own migrator, so the copies are exactly what it would leave.
    const database = await openDatabase({ kind: "postgres", url: databaseUrl(building), poolSize: 1 });
    // CREATE DATABASE ... TEMPLATE and the rename refuse while anyone is connected to it.
    await database.close();
    await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
  } finally {
    // Ending the session releases the lock.
    await admin.end();
  }
}

/** Drops the template `name` and its copies, if the server answers (a run that made none). */
export async function dropPostgresTemplate(name: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresAdminUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch {
    return; // No PostgreSQL here: nothing was made on it.
  }
  try {
    const made = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname = $1 OR starts_with(datname, $2) ORDER BY datname = $1",
      [name, `${name}_`],
    );
    // The copies first, the template last.
    for (const { datname } of made.rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
