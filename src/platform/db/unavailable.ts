import { isStalePlan } from "./prepared-statements.js";

/**
 * Whether an error means "the database cannot answer now" (unreachable, restarting, shutting down,
 * read-only, out of connections, too slow) rather than "this request is wrong": such a request can
 * be retried as it is, so it is answered 503, never 500.
 *
 * What reaches us, with Prisma 7 on @prisma/adapter-pg: Prisma errors whose code says so (P1001
 * can't reach the server), the adapter's error kinds (`DatabaseNotReachable`, ...) or PostgreSQL's
 * SQLSTATE under `meta.driverAdapterError.cause`, and plain errors of `pg` and `pg-pool` that the
 * adapter passes on unconverted (connection timeout, connection terminated, query read timeout).
 * Directly from `pg` (readiness, start-up): Node's socket errors and `DatabaseError` with a SQLSTATE.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let depth = 0, e = error; e && typeof e === "object" && depth < 5; depth++, e = (e as { cause?: unknown }).cause) {
    if (matches(e as Record<string, unknown>)) return true;
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.some((x) => x && typeof x === "object" && matches(x as Record<string, unknown>)))
      return true;
  }
  return false;
}

const prismaCodes = new Set([
  "P1001", // can't reach the database server
  "P1002", // the server was reached but timed out
  "P1008", // operations timed out
  "P1017", // the server closed the connection
  "P2024", // timed out fetching a connection from the pool
  "P2037", // too many database connections
]);

const adapterKinds = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);

const socketCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/**
 * SQLSTATEs: 08 connection exception, 53 insufficient resources (too many connections, out of
 * memory or disk), 57014 statement timeout, 57P01-57P05 shutdown, crash, cannot connect now
 * (starting up, recovering), idle session timeout, 25006 read-only transaction (a standby, or
 * default_transaction_read_only during failover), 55P03 lock not available (lock_timeout); and
 * 0A000 with "cached plan must not change result type", a prepared statement that a migration made
 * stale inside a transaction: its name is renewed (prepared-statements.ts), so the retry runs.
 */
const unavailableSqlState = /^(08...|53...|57014|57P0[1-5]|25006|55P03)$/;

const driverMessages =
  /^(Connection terminated|timeout expired|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed|Cannot use a pool after calling end)/;

function matches(e: Record<string, unknown>): boolean {
  const code = typeof e.code === "string" ? e.code : undefined;
  if (code && (prismaCodes.has(code) || socketCodes.has(code) || unavailableSqlState.test(code))) return true;
  if (isStalePlan(e)) return true;
  const cause = (e.meta as { driverAdapterError?: { cause?: Record<string, unknown> } } | undefined)?.driverAdapterError?.cause;
  // The adapter's own error carries the same cause as `cause`.
  const adapterCause = (e.name === "DriverAdapterError" ? e.cause : undefined) as Record<string, unknown> | undefined;
  for (const c of [cause, adapterCause]) {
    if (!c) continue;
    if (typeof c.kind === "string" && adapterKinds.has(c.kind)) return true;
    const state = c.originalCode ?? c.code;
    if (typeof state === "string" && unavailableSqlState.test(state)) return true;
    if (isStalePlan({ code: state, message: c.originalMessage ?? c.message })) return true;
  }
  return typeof e.message === "string" && driverMessages.test(e.message);
}
