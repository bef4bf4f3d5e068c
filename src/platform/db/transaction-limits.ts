/**
 * How long an interactive transaction may wait to start (a connection of the pool, then BEGIN) and
 * how long it may run once started, for every `$transaction(async (tx) => ...)` of the service:
 * the PrismaClient carries them (database.ts), so no call site runs on Prisma's defaults (2 s, 5 s).
 * A transaction past either limit fails with Prisma's P2028, answered 503 SERVICE_UNAVAILABLE with
 * Retry-After (src/http/error-masking.ts), as is a statement past its own timeout.
 */
export type TransactionLimits = {
  /** Longest wait to start: beyond the pool's own wait for a connection, so the pool's timeout fires first when it is exhausted. */
  maxWaitMs: number;
  /** Longest run once started, lock waits included: above the statement timeout, so a single slow statement fails with its own timeout first. */
  timeoutMs: number;
};

/**
 * The service's defaults. 50 concurrent new versions of one policy queue on its row lock (section 3
 * of the contract): on a loaded 2-core machine the last of them waits seconds for a connection and
 * then for the lock, which Prisma's 2 s / 5 s cut short.
 */
export const DEFAULT_TRANSACTION_LIMITS: TransactionLimits = { maxWaitMs: 10_000, timeoutMs: 15_000 };

/** Why `limits` do not fit the database's other timeouts; null when they do. Checked at start. */
export function transactionLimitsProblem(
  limits: TransactionLimits,
  other: { statementTimeoutMs?: number; connectTimeoutMs?: number },
): string | null {
  if (other.statementTimeoutMs !== undefined && limits.timeoutMs <= other.statementTimeoutMs) {
    return `DATABASE_TRANSACTION_TIMEOUT_MS (${limits.timeoutMs}) must exceed DATABASE_STATEMENT_TIMEOUT_MS (${other.statementTimeoutMs}): a transaction runs several statements, and a slow one must fail with its own timeout first`;
  }
  if (other.connectTimeoutMs !== undefined && limits.maxWaitMs < other.connectTimeoutMs) {
    return `DATABASE_TRANSACTION_WAIT_MS (${limits.maxWaitMs}) must be at least DATABASE_CONNECT_TIMEOUT_MS (${other.connectTimeoutMs}): starting a transaction includes waiting for a connection`;
  }
  return null;
}
