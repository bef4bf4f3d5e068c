import { createHash } from "node:crypto";
import type pg from "pg";

export type StatementNames = ((query: { sql: string }) => string | undefined) & {
  /**
   * A new name for `sql` when `failed` is still its name: a statement whose cached plan no longer
   * fits the table is prepared again under it, on every connection. Returns the name in force.
   */
  renew(sql: string, failed: string): string;
};

/**
 * Names for the statements Prisma sends, so that each PostgreSQL connection parses and plans a
 * statement once and then only binds and executes it (the driver adapter's `statementNameGenerator`;
 * pg keeps the prepared statements of each connection). Unnamed, every statement is parsed and
 * planned again on every execution: for the job queue's insert (pg-boss) that was half of its cost.
 *
 * A name is derived from the text, so the same text has the same name on every connection and a
 * name never stands for two texts. Only the first `limit` distinct texts get names: the rest go
 * unnamed, so neither pg's per-connection cache nor the server's memory grows without bound.
 *
 * Behind a pooler in transaction mode (PgBouncer before 1.21, or without `max_prepared_statements`)
 * a statement prepared on one server connection is not there on the next: turn them off
 * (`DATABASE_PREPARED_STATEMENTS=false`; off by default when `DATABASE_DIRECT_URL` is set).
 */
export function statementNames(limit = 500): StatementNames {
  const names = new Map<string, string>();
  const generation = new Map<string, number>();
  const nameOf = (sql: string, n: number) =>
    `prisma_${createHash("sha1").update(sql).digest("hex").slice(0, 24)}${n === 0 ? "" : `_${n}`}`;
  const name = ({ sql }: { sql: string }) => {
    const known = names.get(sql);
    if (known !== undefined || names.size >= limit) return known;
    const fresh = nameOf(sql, 0);
    names.set(sql, fresh);
    return fresh;
  };
  return Object.assign(name, {
    renew(sql: string, failed: string) {
      const current = names.get(sql);
      if (current !== undefined && current !== failed) return current;
      const n = (generation.get(sql) ?? 0) + 1;
      generation.set(sql, n);
      const fresh = nameOf(sql, n);
      names.set(sql, fresh);
      return fresh;
    },
  });
}

/**
 * PostgreSQL's 0A000 "cached plan must not change result type": a prepared statement whose result
 * columns changed under it (a migration altered a column's type, or added a column to a `SELECT *`).
 * The statement stays broken on that connection until it is prepared again.
 */
export function isStalePlan(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === "0A000" && typeof e.message === "string" && e.message.includes("cached plan must not change result type");
}

type NamedQuery = { name?: string; text: string };
type Callback = (error: Error | null, result?: unknown) => void;
const isNamed = (config: unknown): config is NamedQuery =>
  typeof config === "object" && config !== null && typeof (config as NamedQuery).name === "string";

/**
 * Statements of `pool` that fail with a stale plan (`isStalePlan`) are prepared again under a new
 * name: on every connection of the pool, a failed named statement renews its name; a statement run
 * on the pool itself (`pool.query`: outside any transaction, Prisma's reads and writes and the
 * direct reads of row-by-id.ts) then runs once more under the new name, transparently. Inside a
 * transaction (a client checked out of the pool) the failure has aborted the transaction: it fails
 * (503 with Retry-After, unavailable.ts), and its retry runs under the new name.
 */
export function renewStalePlans(pool: pg.Pool, names: StatementNames): void {
  const renewIfStale = ({ name, text }: NamedQuery, error: unknown) => {
    if (isStalePlan(error) && name) names.renew(text, name);
  };
  pool.on("connect", (client) => {
    const original = client.query as (...args: unknown[]) => unknown;
    client.query = function (this: pg.PoolClient, ...args: unknown[]) {
      const [config] = args;
      if (!isNamed(config)) return original.apply(this, args);
      const last = args.at(-1);
      if (typeof last === "function") {
        // pool.query runs its statement this way: (config, values, callback).
        args[args.length - 1] = (error: Error | null, result?: unknown) => {
          renewIfStale(config, error);
          (last as Callback)(error, result);
        };
        return original.apply(this, args);
      }
      return (original.apply(this, args) as Promise<unknown>).catch((error: unknown) => {
        renewIfStale(config, error);
        throw error;
      });
    } as typeof client.query;
  });
  const query = pool.query.bind(pool) as (...a: unknown[]) => unknown;
  pool.query = ((config: unknown, ...rest: unknown[]) => {
    const result = query(config, ...rest);
    if (!isNamed(config) || !(result instanceof Promise)) return result;
    return result.catch((error: unknown) => {
      if (!isStalePlan(error)) throw error;
      return query({ ...config, name: names.renew(config.text, config.name as string) }, ...rest);
    });
  }) as typeof pool.query;
}
