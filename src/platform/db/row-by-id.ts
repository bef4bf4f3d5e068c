import { Prisma } from "../../generated/prisma/client.js";
import type { Db } from "./database.js";

/**
 * The hottest reads (a task by id, on both transports) select every scalar column of one row by
 * its primary key within an organization. Through `findUnique` each such read is compiled by
 * Prisma's query compiler and its plan interpreted; this fixed statement skips that (0.29 against
 * 0.21 ms of CPU per read in process: docs/performance.md). It still goes through Prisma's
 * `$queryRaw`, so nothing else changes: replicas serve it inside `withReplicaReads` (read-routing.ts
 * routes `$queryRaw`), a transaction runs it on its connection, tests count it, both databases run it.
 *
 * `columns` are the model's scalar fields as `findUnique` returns them (tests compare the two).
 */
export function rowByIdReader<Row>(table: string, columns: readonly string[]) {
  const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;
  // Identifiers are constants of the caller's code, never input; the values are bound parameters.
  const head = `SELECT ${columns.map(quoted).join(", ")} FROM ${quoted(table)} WHERE "id" = `;
  const strings = [head, ` AND "organizationId" = `, " LIMIT 1"];
  return async (db: Db, id: string, organizationId: string): Promise<Row | null> => {
    const rows = await db.$queryRaw<Row[]>(Prisma.sql(strings, id, organizationId));
    return rows[0] ?? null;
  };
}

/** Whether plugin-prisma's selection asks for the scalar columns alone (no relation, no narrowing). */
export const selectsScalarsOnly = (query: { select?: object; include?: object } | undefined) =>
  !query || (query.select === undefined && query.include === undefined);
