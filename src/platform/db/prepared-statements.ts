import { createHash } from "node:crypto";

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
export function statementNames(limit = 500): (query: { sql: string }) => string | undefined {
  const names = new Map<string, string>();
  return ({ sql }) => {
    const known = names.get(sql);
    if (known !== undefined || names.size >= limit) return known;
    const name = `prisma_${createHash("sha1").update(sql).digest("hex").slice(0, 24)}`;
    names.set(sql, name);
    return name;
  };
}
