import { AsyncLocalStorage } from "node:async_hooks";
import type { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import type { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../../generated/prisma/client.js";
import { lockDataDir } from "./data-dir-lock.js";
import { applyMigrations, pgliteMigrationSession, pgMigrationSession, readMigrations } from "./migrate.js";
import { copyQueryConfigsPlainly } from "./pg-query-config.js";
import { renewStalePlans, statementNames } from "./prepared-statements.js";
import { compiledOffThread, compileQueryCompiler } from "./query-compiler.js";
import { openReadReplicas, type ReadReplicas } from "./read-replicas.js";
import { routeReads } from "./read-routing.js";
import { joinRequestTransactions } from "./request-transaction.js";
import { directRows, readRowsDirectly, writeRowsDirectly } from "./row-by-id.js";
import { type SessionTimeouts, storeRoleTimeouts, timeoutMismatches, timeoutsInForce } from "./session-defaults.js";
import { DEFAULT_TRANSACTION_LIMITS, type TransactionLimits } from "./transaction-limits.js";

export type Db = PrismaClient;

copyQueryConfigsPlainly();

export type DatabaseOptions =
  /** PostgreSQL server. */
  (
    | {
        kind: "postgres";
        /** The pooled connection (PgBouncer in transaction mode, or PostgreSQL itself) for requests. */
        url: string;
        /** A direct connection for migrations and role settings; `url` when absent. */
        directUrl?: string;
        /** Streaming replicas for reads that `withReplicaReads` allows (read-routing.ts). */
        readUrls?: string[];
        /** Replicas further behind than this are skipped; default 1 s. */
        readMaxLagMs?: number;
        poolSize?: number;
        /** How long a connection may sit unused in the pool before it is closed; 0: never; default 10 s (pg's). */
        poolIdleTimeoutMs?: number;
        onIdleError?: (error: Error) => void;
        /** Longest wait for a connection (a new one, or a free one of the pool); none when absent. */
        connectTimeoutMs?: number;
        /** Longest a statement may run, enforced by the server and, for a server that hangs, by the client; none when absent. */
        statementTimeoutMs?: number;
        /** Server-side lock and idle-in-transaction timeouts; stored as the role's defaults with the statement timeout. */
        lockTimeoutMs?: number;
        idleInTransactionTimeoutMs?: number;
        /** Told which configured timeouts the pooled connections do not have (e.g. PgBouncer logs in as another role). */
        onTimeoutMismatch?: (mismatches: string[]) => void;
        /** Named (prepared) statements on each connection (prepared-statements.ts); unnamed when false or absent. */
        preparedStatements?: boolean;
      }
    /**
     * Embedded PGlite; `dataDir` undefined means in memory (tests). `loadDataDir` starts it from a
     * `dumpDataDir()` archive instead of an empty cluster (tests: skips initdb and the migrations).
     */
    | { kind: "embedded"; dataDir?: string; loadDataDir?: Blob }
  ) & {
    /** Makes `onQuery` available. Off in production: Prisma's query event costs CPU on every statement. */
    countQueries?: boolean;
    /** Wait and run limits of every interactive transaction; DEFAULT_TRANSACTION_LIMITS when absent. */
    transactions?: TransactionLimits;
  };

export type Database = {
  db: Db;
  kind: DatabaseOptions["kind"];
  /** Answers when the database answers; used by readiness checks. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** Called with every SQL statement Prisma sends (tests count them); needs `countQueries`. */
  onQuery(listener: ((sql: string) => void) | undefined): void;
  /** Connections of the PostgreSQL pool (metrics); the embedded database has no pool. */
  poolStats?(): PoolStats;
  /** Streaming replicas for reads, when configured: their state (/ready, /metrics) and lag bound. */
  replicas?: Pick<ReadReplicas, "statuses" | "maxLagMs">;
  /** The embedded database itself (its one connection), for what shares it with Prisma: the job queue (jobs.ts). */
  pglite?: PGlite;
};

export type PoolStats = { total: number; idle: number; waiting: number; max: number };

/**
 * The embedded database's `shared_buffers` when EMBEDDED_SHARED_BUFFERS is unset: 32MB, not
 * PostgreSQL's 128MB. PostgreSQL zero-fills its shared buffers at every start (0.3 s of a 2.4 s
 * restart of `npm start` at 128MB on a 2-core machine, 2026-12-03), and PGlite's data files are
 * read through the operating system's page cache as well, so a larger pool mostly caches twice.
 */
export const EMBEDDED_SHARED_BUFFERS_DEFAULT = "32MB";

/**
 * PGlite's start parameters with `shared_buffers` set: EMBEDDED_SHARED_BUFFERS (which config.ts
 * validates at start and openDatabase reads from the environment as PGlite reads its own), else
 * EMBEDDED_SHARED_BUFFERS_DEFAULT. The tests use 16MB: they open a few hundred small databases.
 */
function embeddedStartParams(defaults: readonly string[], sharedBuffers: string | undefined): string[] {
  return [...defaults, "-c", `shared_buffers=${sharedBuffers ?? EMBEDDED_SHARED_BUFFERS_DEFAULT}`];
}

/** PostgreSQL's type OID of `bytea`. */
const BYTEA_OID = 17;
/** PostgreSQL's text form of a bytea (`\x` and two hex digits a byte) decoded by Buffer's hex decoder. */
const decodeBytea = (text: string): Uint8Array => Buffer.from(text.slice(2), "hex");
/**
 * A bytea parameter in that text form, by Buffer's hex encoder: PGlite's own builds an array of a
 * string a byte and joins it (a 4 MB parameter: 8 million strings).
 */
const encodeBytea = (bytes: unknown): string => {
  if (!(bytes instanceof Uint8Array)) throw new Error("Invalid input for bytea type");
  return `\\x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}`;
};
/**
 * The statement PGlite is running for pglite-prisma-adapter (see adapterParsing): its database and
 * parsers, in that statement's async context; none for everything else that shares the database.
 */
type AdapterStatement = { pglite: PGlite; parsers: Record<number, unknown> };
const adapterStatement = new AsyncLocalStorage<AdapterStatement>();

/** Runs one of the adapter's statements with the parsers the adapter handed it (adapterParsing). */
type AsAdapterStatement = <R>(handed: Record<number, unknown>, statement: () => R) => R;

/**
 * Makes PGlite read its parsers from the statement's context: the adapter's for the adapter's
 * statements, its own for the others' (migrations, the job queue, the tests' own queries). Answers
 * how to run an adapter's statement in that context.
 *
 * Why: the adapter (0.7.2, the latest) hands PGlite its parsers with every statement, and PGlite
 * then merges them with its own, some 320 parsers keyed by type OID (a sparse object, slow to copy),
 * for every statement: about 200 µs of CPU a statement, as much again as a small query costs
 * without it. PGlite reads `this.parsers` once a statement, inside its lock and in the caller's
 * async context, so the adapter's statements are sent without parsers and find theirs there; a
 * lookup the adapter has no parser for falls through to PGlite's own (the prototype), as the merge
 * did, array types PGlite adds later included. Each database has its own.
 */
function adapterParsing(pglite: PGlite): AsAdapterStatement {
  let own = pglite.parsers;
  Object.defineProperty(pglite, "parsers", {
    configurable: true,
    enumerable: true,
    get: () => {
      const statement = adapterStatement.getStore();
      return statement?.pglite === pglite ? statement.parsers : own;
    },
    set: (parsers) => {
      own = parsers;
    },
  });
  /** The context of each parsers object the adapter hands (it hands the same one every time). */
  const contexts = new WeakMap<object, AdapterStatement>();
  return (handed, statement) => {
    let context = contexts.get(handed);
    if (!context) {
      // PGlite's own parsers as the prototype: what the adapter does not parse, PGlite does.
      const parsers = Object.assign(Object.create(own), handed, { [BYTEA_OID]: decodeBytea }) as Record<number, unknown>;
      context = { pglite, parsers };
      contexts.set(handed, context);
    }
    return adapterStatement.run(context, statement);
  };
}

/**
 * The PGlite that pglite-prisma-adapter is given: its statements run with their parsers in context
 * (adapterParsing) instead of handed to PGlite, and its bytea parser replaced. The adapter
 * decodes a bytea a byte at a time (a substring and a parseInt each: 97 ms of CPU a MB, 10 s for a
 * 100 MB file read from the database attachment store, the event loop blocked meanwhile); Buffer's
 * decoder gives the same bytes at a fifth of that or less. Every other parser, and everything else
 * of PGlite's, is the adapter's own.
 */
function forAdapter<T extends object>(queryable: T, asAdapterStatement: AsAdapterStatement): T {
  return new Proxy(queryable, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (key === "query") {
        return (sql: string, params?: unknown[], options?: { parsers?: Record<number, unknown> }) => {
          const { parsers, ...rest } = options ?? {};
          if (!parsers) return value.call(target, sql, params, options);
          return asAdapterStatement(parsers, () => value.call(target, sql, params, rest));
        };
      }
      // The adapter's transactions query through the transaction PGlite hands its callback.
      if (key === "transaction") {
        return (callback: (tx: object) => unknown) =>
          value.call(target, (tx: object) => callback(forAdapter(tx, asAdapterStatement)));
      }
      return value.bind(target);
    },
  });
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  // Started now, finished off the main thread while the database opens; a failure surfaces at the first query.
  compileQueryCompiler().catch(() => {});
  let queryListener: ((sql: string) => void) | undefined;
  const queryEvents = [{ emit: "event", level: "query" }] as const;
  // Typed as always on, so that `$on("query")` type-checks; Prisma emits nothing when it is off.
  const log = (options.countQueries ? [...queryEvents] : []) as [...typeof queryEvents];
  const onQuery = (listener: ((sql: string) => void) | undefined) => {
    if (!options.countQueries) throw new Error("open the database with countQueries: true to observe its statements");
    queryListener = listener;
  };
  const createClient = (adapter: PrismaPg | PrismaPGlite) => {
    const { maxWaitMs, timeoutMs } = options.transactions ?? DEFAULT_TRANSACTION_LIMITS;
    const clientOptions = { adapter, log, transactionOptions: { maxWait: maxWaitMs, timeout: timeoutMs } };
    const db = new PrismaClient({ ...clientOptions, ...(compiledOffThread as object) } as typeof clientOptions);
    if (options.countQueries) db.$on("query", (event) => queryListener?.(event.query));
    return db;
  };

  if (options.kind === "postgres") {
    const timeouts: SessionTimeouts | undefined =
      options.statementTimeoutMs === undefined
        ? undefined
        : {
            statementTimeoutMs: options.statementTimeoutMs,
            lockTimeoutMs: options.lockTimeoutMs ?? options.statementTimeoutMs,
            idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs ?? 0,
          };
    // Migrations on a connection of their own, without the statement timeout: a migration may
    // rightly take long, and so may waiting for another replica's migration (advisory lock).
    const migrator = new pg.Client({
      connectionString: options.directUrl ?? options.url,
      connectionTimeoutMillis: options.connectTimeoutMs,
    });
    // Its failures reach the caller through the query that meets them; unhandled, the event would end the process.
    migrator.on("error", () => {});
    try {
      await migrator.connect();
      await applyMigrations(pgMigrationSession(migrator), readMigrations());
      if (timeouts) await storeRoleTimeouts(pgMigrationSession(migrator), timeouts);
    } finally {
      await Promise.race([migrator.end().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    }
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      idleTimeoutMillis: options.poolIdleTimeoutMs ?? 10_000,
      connectionTimeoutMillis: options.connectTimeoutMs,
      // No startup parameters (PgBouncer refuses them): the server-side timeouts are the role's
      // defaults (session-defaults.ts). The server cannot enforce its timeout while it is frozen or cut off: the client does.
      query_timeout: options.statementTimeoutMs,
    });
    // An idle connection that the server drops (restart, failover, admin) emits here; unhandled, it
    // would end the process. The pool discards it and the next query opens a fresh one.
    pool.on("error", (error) => options.onIdleError?.(error));
    if (timeouts) {
      const inForce = await timeoutsInForce(pool).catch(async (error) => {
        await pool.end().catch(() => {});
        throw error;
      });
      const mismatches = timeoutMismatches(timeouts, inForce);
      if (mismatches.length) options.onTimeoutMismatch?.(mismatches);
    }
    // One generator for the primary and the replicas: a text has one name everywhere.
    const statementName = options.preparedStatements ? statementNames() : undefined;
    if (statementName) renewStalePlans(pool, statementName);
    const adapterOptions = statementName
      ? { statementNameGenerator: statementName as (query: { sql: string }) => string }
      : undefined;
    const primary = createClient(new PrismaPg(pool, adapterOptions));
    const replicas: ReadReplicas | undefined = options.readUrls?.length
      ? openReadReplicas({
          urls: options.readUrls,
          primary: pool,
          maxLagMs: options.readMaxLagMs ?? 1_000,
          poolSize: options.poolSize ?? 10,
          poolIdleTimeoutMs: options.poolIdleTimeoutMs ?? 10_000,
          connectTimeoutMs: options.connectTimeoutMs,
          statementTimeoutMs: options.statementTimeoutMs,
          createClient,
          createAdapter: (replicaPool) => {
            if (statementName) renewStalePlans(replicaPool, statementName);
            return new PrismaPg(replicaPool, adapterOptions);
          },
          onIdleError: options.onIdleError,
        })
      : undefined;
    const db = joinRequestTransactions(replicas ? routeReads(primary, replicas) : primary);
    // The fixed by-id reads (row-by-id.ts) on the same pools, routed and observed as Prisma's reads are.
    const observe = options.countQueries ? (sql: string) => queryListener?.(sql) : undefined;
    readRowsDirectly(db, directRows(pool, replicas, observe, statementName));
    // Writes that answer rows (row-by-id.ts' writeText) on the primary's pool alone.
    writeRowsDirectly(db, directRows(pool, undefined, observe, statementName));
    return {
      db,
      kind: "postgres",
      async ping() {
        await pool.query("SELECT 1");
      },
      async close() {
        await replicas?.close();
        await db.$disconnect();
        if (!pool.ended) await pool.end();
      },
      onQuery,
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max }),
      replicas,
    };
  }

  // The embedded database's modules load only when it is the one opened (PostgreSQL starts faster).
  const [{ PGlite }, { PrismaPGlite }, { pgliteExtensions }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("pglite-prisma-adapter"),
    import("./pglite-extensions.js"),
  ]);
  const unlock = options.dataDir ? lockDataDir(options.dataDir) : () => {};
  let pglite: PGlite;
  try {
    // One options object: PGlite ignores the second argument unless the first is a string.
    pglite = new PGlite({
      dataDir: options.dataDir,
      loadDataDir: options.loadDataDir,
      extensions: pgliteExtensions,
      startParams: embeddedStartParams(PGlite.defaultStartParams, process.env.EMBEDDED_SHARED_BUFFERS),
      serializers: { [BYTEA_OID]: encodeBytea },
    });
    await pglite.waitReady;
    await applyMigrations(pgliteMigrationSession(pglite), readMigrations());
  } catch (error) {
    unlock();
    throw error;
  }
  const db = joinRequestTransactions(createClient(new PrismaPGlite(forAdapter(pglite, adapterParsing(pglite)))));
  return {
    db,
    kind: "embedded",
    async ping() {
      await pglite.query("SELECT 1");
    },
    async close() {
      await db.$disconnect();
      await pglite.close();
      unlock();
    },
    onQuery,
    pglite,
  };
}
