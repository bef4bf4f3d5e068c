import pg from "pg";
import { type PrismaClient as Db, Prisma } from "../../generated/prisma/client.js";
import type { ReadReplicas } from "./read-replicas.js";
import { replicaReadsAllowed } from "./read-routing.js";
import { requestTransaction } from "./request-transaction.js";
import { isDatabaseUnavailable } from "./unavailable.js";

/** Runs one read-only statement and returns its rows; `values` are bound parameters. */
export type RowSource = (text: string, values: unknown[], arrays?: boolean) => Promise<Record<string, unknown>[]>;

/** The PostgreSQL pools behind a client (set by openDatabase); absent on PGlite and in transactions. */
const sources = new WeakMap<object, RowSource>();

export function readRowsDirectly(db: Db, source: RowSource): void {
  sources.set(db, source);
}

/** The PostgreSQL primary pool behind a client, for statements that write (set by openDatabase); absent on PGlite. */
const writeSources = new WeakMap<object, RowSource>();

export function writeRowsDirectly(db: Db, source: RowSource): void {
  writeSources.set(db, source);
}

/** The pool `writeText` writes on for `db`, if any (tests watch what goes through it). */
export const directWrites = (db: Db): RowSource | undefined => writeSources.get(db);

/**
 * A fixed statement that writes and answers rows (`$1`, `$2`... for `values`, each cast in the SQL
 * where its type is not the column's): on PostgreSQL straight on the primary's pool, never a
 * replica, as the reads of `readText` are (Prisma's raw query costs a write about as much CPU as
 * its own statement, bench/results/2026-12-04-audit-chain.md); on PGlite and inside a request's
 * transaction (which must hold it) through `$queryRawUnsafe`.
 */
export async function writeText<Row>(db: Db, text: string, values: unknown[]): Promise<Row[]> {
  const source = requestTransaction() ? undefined : writeSources.get(db);
  return source ? ((await source(text, values)) as Row[]) : db.$queryRawUnsafe<Row[]>(text, ...values);
}

/**
 * A read-only statement's rows: on PostgreSQL straight from the pool Prisma reads on (`directRows`),
 * elsewhere (PGlite, a transaction's client) through `$queryRaw`. For statements whose values are
 * strings, numbers, booleans, null or arrays of strings, each cast in the SQL: both ways then read
 * the same rows (lists.ts's statements are such).
 */
export function readRows<Row>(db: Db, statement: Prisma.Sql): Promise<Row[]> {
  return rowsOf(db, statement.text, statement.values, () => statement);
}

/**
 * A fixed read-only statement (`$1`, `$2`... for `values`, each cast in the SQL): on the pool where
 * `db` has one, otherwise through `$queryRawUnsafe` (PGlite, a transaction's client).
 */
export async function readText<Row>(db: Db, text: string, values: unknown[]): Promise<Row[]> {
  const source = sources.get(db);
  return source ? ((await source(text, values)) as Row[]) : db.$queryRawUnsafe<Row[]>(text, ...values);
}

/** As `readText`, each row an array of its columns in the statement's order (no object per row to build). */
export async function readArrays(db: Db, text: string, values: unknown[]): Promise<unknown[][]> {
  const source = sources.get(db);
  if (source) return (await source(text, values, true)) as unknown as unknown[][];
  return (await db.$queryRawUnsafe<Record<string, unknown>[]>(text, ...values)).map((row) => Object.values(row));
}

/** `text` with `values` on the pool where `db` has one; otherwise `statement()` through `$queryRaw`. */
async function rowsOf<Row>(db: Db, text: string, values: unknown[], statement: () => Prisma.Sql): Promise<Row[]> {
  // Inside a request's transaction (request-transaction.ts) the read must see its writes.
  const source = requestTransaction() ? undefined : sources.get(db);
  return source ? ((await source(text, values)) as Row[]) : db.$queryRaw<Row[]>(statement());
}

/**
 * The hottest reads (a task by id on both transports, the rows of a list page) select every scalar
 * column of rows by primary key within an organization. Through `findUnique`/`findMany` each is planned
 * by Prisma's query compiler and its plan interpreted; these fixed statements go through
 * `readRows`. In process, per read of one row: `findUnique` 0.23 to 0.29 ms of CPU, `$queryRaw`
 * 0.17 to 0.21, the pool 0.065 (bench/results/2026-11-25-perf.md).
 *
 * `columns` are the model's scalar fields as Prisma returns them (a test compares the two on both
 * databases); the identifiers are constants of the caller's code, the values parameters.
 */
export function rowByIdReader<Row>(table: string, columns: readonly string[]) {
  const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;
  // The texts are built once: the by-id read is the hottest path of both transports.
  const head = `SELECT ${columns.map(quoted).join(", ")} FROM ${quoted(table)} WHERE `;
  const one = [`${head}"id" = `, ` AND "organizationId" = `, " LIMIT 1"];
  const many = [`${head}"id" = ANY(`, `::text[]) AND "organizationId" = `, ""];
  const text = (strings: string[]) => `${strings[0]}$1${strings[1]}$2${strings[2]}`;
  const oneText = text(one);
  const manyText = text(many);
  const byId = async (db: Db, id: string, organizationId: string): Promise<Row | null> => {
    const rows = await rowsOf<Row>(db, oneText, [id, organizationId], () => Prisma.sql(one, id, organizationId));
    return rows[0] ?? null;
  };
  /** The rows of these ids in the organization, in no particular order; unknown ids are left out. */
  const byIds = (db: Db, ids: readonly string[], organizationId: string): Promise<Row[]> =>
    rowsOf<Row>(db, manyText, [[...ids], organizationId], () => Prisma.sql(many, [...ids], organizationId));
  return Object.assign(byId, { byIds, table });
}

export type RowReader<Row> = ReturnType<typeof rowByIdReader<Row>>;

const TIMESTAMP = 1114;
const digits = (text: string, from: number, to: number) => {
  let n = 0;
  for (let i = from; i < to; i++) n = n * 10 + text.charCodeAt(i) - 48;
  return n;
};
/**
 * `timestamp(3)` as PostgreSQL writes it (`2026-11-26 07:41:40.071`, UTC), read field by field: a
 * list page reads hundreds, and parsing each as an ISO string was a visible part of its CPU. Any
 * other form (a year before 100 or past 9999, BC) goes to Date's own parser.
 */
function timestampOf(value: string): Date {
  const { length } = value;
  const year = digits(value, 0, 4);
  const plain = length >= 19 && length <= 23 && value.charCodeAt(4) === 45 && value.charCodeAt(10) === 32 && year >= 100;
  if (!plain || (length > 19 && value.charCodeAt(19) !== 46)) return new Date(`${value.replace(" ", "T")}Z`);
  const fraction = length > 20 ? digits(value, 20, length) * 10 ** (23 - length) : 0;
  return new Date(
    Date.UTC(
      year,
      digits(value, 5, 7) - 1,
      digits(value, 8, 10),
      digits(value, 11, 13),
      digits(value, 14, 16),
      digits(value, 17, 19),
      fraction,
    ),
  );
}
const DATE = 1082;
/** Timestamps and dates as Prisma reads them: `timestamp(3)` and `date` are UTC. */
const prismaTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === TIMESTAMP) return timestampOf;
    if (oid === DATE) return (value: string) => new Date(`${value}T00:00:00.000Z`);
    return pg.types.getTypeParser(oid, format as "text");
  },
} as pg.CustomTypesConfig;

/**
 * Reads on the pools Prisma reads on, routed as `routeReads` routes Prisma's reads (read-routing.ts):
 * inside `withReplicaReads` a replica that `pick` offers, the primary when it fails for want of the
 * database or none is offered; `observe` sees each statement as Prisma's query event would (tests
 * count them); `statementName` names them as Prisma's are named (prepared-statements.ts).
 */
export function directRows(
  primary: pg.Pool,
  replicas: ReadReplicas | undefined,
  observe?: (sql: string) => void,
  statementName?: (query: { sql: string }) => string | undefined,
): RowSource {
  return async (text, values, arrays) => {
    observe?.(text);
    const query = {
      name: statementName?.({ sql: text }),
      text,
      values,
      types: prismaTypes,
      ...(arrays ? { rowMode: "array" as const } : {}),
    };
    // Errors go on as pg raises them: the safety net and maskError know pg's as they know Prisma's.
    const replica = replicas && replicaReadsAllowed() ? replicas.pick() : undefined;
    if (replica) {
      try {
        const { rows } = await replica.pool.query(query);
        replicas?.served(replica);
        return rows;
      } catch (error) {
        if (!isDatabaseUnavailable(error)) throw error;
        replicas?.failed(replica, error);
      }
    }
    return (await primary.query(query)).rows;
  };
}
