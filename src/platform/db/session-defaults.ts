import type pg from "pg";
import type { MigrationSession } from "./migrate.js";

/** Server-side bounds of every session the service opens on PostgreSQL, in milliseconds (0: none). */
export type SessionTimeouts = {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
};

const settings = {
  statement_timeout: "statementTimeoutMs",
  lock_timeout: "lockTimeoutMs",
  idle_in_transaction_session_timeout: "idleInTransactionTimeoutMs",
} as const satisfies Record<string, keyof SessionTimeouts>;

// Prisma's migration lock key plus one: role settings are written by one replica at a time.
const SETTINGS_LOCK_KEY = 72707370;

/**
 * Stores the timeouts as the role's defaults in this database (`ALTER ROLE ... IN DATABASE ... SET`),
 * which any role may do for itself. PostgreSQL applies them when a server connection starts, so
 * they hold whoever opens it: this service directly, PgBouncer in any pool mode, a streaming
 * replica (the setting is replicated with the catalog). A startup parameter would be refused by
 * PgBouncer, and `SET` would last only until PgBouncer hands the server connection to another
 * client. Written only when they differ, under a lock, so replicas starting together do not clash.
 */
export async function storeRoleTimeouts(session: MigrationSession, timeouts: SessionTimeouts): Promise<boolean> {
  return session.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1)", [SETTINGS_LOCK_KEY]);
    const [row] = await tx.query(
      `SELECT coalesce(s.setconfig, '{}') AS config FROM pg_roles r
       LEFT JOIN pg_db_role_setting s ON s.setrole = r.oid AND s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
       WHERE r.rolname = current_user`,
    );
    const stored = new Map(
      ((row?.config as string[] | undefined) ?? []).map((entry) => {
        const at = entry.indexOf("=");
        return [entry.slice(0, at), entry.slice(at + 1)];
      }),
    );
    const changes = Object.entries(settings).filter(([name, key]) => stored.get(name) !== String(Math.trunc(timeouts[key])));
    if (changes.length === 0) return false;
    for (const [name, key] of changes) {
      // Integers written by us (milliseconds, PostgreSQL's unit for these), identifiers quoted by format().
      await tx.exec(
        `DO $$ BEGIN EXECUTE format('ALTER ROLE %I IN DATABASE %I SET ${name} = ${Math.trunc(timeouts[key])}', current_user, current_database()); END $$`,
      );
    }
    return true;
  });
}

/** The timeouts in force on a connection of `pool`, as the service's requests get them. */
export async function timeoutsInForce(pool: pg.Pool): Promise<SessionTimeouts> {
  const { rows } = await pool.query<Record<string, string>>(
    `SELECT ${Object.keys(settings)
      .map((name) => `(SELECT setting FROM pg_settings WHERE name = '${name}') AS ${name}`)
      .join(", ")}`,
  );
  const row = rows[0] ?? {};
  return Object.fromEntries(Object.entries(settings).map(([name, key]) => [key, Number(row[name])])) as SessionTimeouts;
}

/** Which configured timeouts a connection does not have, as "name: in force X ms, configured Y ms". */
export function timeoutMismatches(configured: SessionTimeouts, inForce: SessionTimeouts): string[] {
  return Object.entries(settings)
    .filter(([, key]) => inForce[key] !== Math.trunc(configured[key]))
    .map(([name, key]) => `${name}: in force ${inForce[key]} ms, configured ${Math.trunc(configured[key])} ms`);
}
