import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../../generated/prisma/client.js";
import { lockDataDir } from "./data-dir-lock.js";
import { applyMigrations, type MigrationSession, readMigrations } from "./migrate.js";
import { pgliteExtensions } from "./pglite-extensions.js";

export type Db = PrismaClient;

export type DatabaseOptions =
  /** PostgreSQL server. */
  (
    | {
        kind: "postgres";
        url: string;
        poolSize?: number;
        onIdleError?: (error: Error) => void;
        /** Longest wait for a connection (a new one, or a free one of the pool); none when absent. */
        connectTimeoutMs?: number;
        /** Longest a statement may run, enforced by the server and, for a server that hangs, by the client; none when absent. */
        statementTimeoutMs?: number;
      }
    /**
     * Embedded PGlite; `dataDir` undefined means in memory (tests). `loadDataDir` starts it from a
     * `dumpDataDir()` archive instead of an empty cluster (tests: skips initdb and the migrations).
     */
    | { kind: "embedded"; dataDir?: string; loadDataDir?: Blob }
  ) & {
    /** Makes `onQuery` available. Off in production: Prisma's query event costs CPU on every statement. */
    countQueries?: boolean;
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
};

export type PoolStats = { total: number; idle: number; waiting: number; max: number };

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  let queryListener: ((sql: string) => void) | undefined;
  const queryEvents = [{ emit: "event", level: "query" }] as const;
  // Typed as always on, so that `$on("query")` type-checks; Prisma emits nothing when it is off.
  const log = (options.countQueries ? [...queryEvents] : []) as [...typeof queryEvents];
  const onQuery = (listener: ((sql: string) => void) | undefined) => {
    if (!options.countQueries) throw new Error("open the database with countQueries: true to observe its statements");
    queryListener = listener;
  };
  const createClient = (adapter: PrismaPg | PrismaPGlite) => {
    const db = new PrismaClient({ adapter, log });
    if (options.countQueries) db.$on("query", (event) => queryListener?.(event.query));
    return db;
  };

  if (options.kind === "postgres") {
    // Migrations on a connection of their own, without the statement timeout: a migration may
    // rightly take long, and so may waiting for another replica's migration (advisory lock).
    const migrator = new pg.Client({ connectionString: options.url, connectionTimeoutMillis: options.connectTimeoutMs });
    // Its failures reach the caller through the query that meets them; unhandled, the event would end the process.
    migrator.on("error", () => {});
    try {
      await migrator.connect();
      await applyMigrations(pgSession(migrator), readMigrations());
    } finally {
      await Promise.race([migrator.end().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    }
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs,
      statement_timeout: options.statementTimeoutMs,
      // The server cannot enforce its timeout while it is frozen or cut off: the client does.
      query_timeout: options.statementTimeoutMs,
    });
    // An idle connection that the server drops (restart, failover, admin) emits here; unhandled, it
    // would end the process. The pool discards it and the next query opens a fresh one.
    pool.on("error", (error) => options.onIdleError?.(error));
    const db = createClient(new PrismaPg(pool));
    return {
      db,
      kind: "postgres",
      async ping() {
        await pool.query("SELECT 1");
      },
      async close() {
        await db.$disconnect();
        if (!pool.ended) await pool.end();
      },
      onQuery,
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max }),
    };
  }

  const unlock = options.dataDir ? lockDataDir(options.dataDir) : () => {};
  let pglite: PGlite;
  try {
    // One options object: PGlite ignores the second argument unless the first is a string.
    pglite = new PGlite({ dataDir: options.dataDir, loadDataDir: options.loadDataDir, extensions: pgliteExtensions });
    await pglite.waitReady;
    await applyMigrations(pgliteSession(pglite), readMigrations());
  } catch (error) {
    unlock();
    throw error;
  }
  const db = createClient(new PrismaPGlite(pglite));
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
  };
}

function pgSession(client: pg.ClientBase): MigrationSession {
  return {
    async query(sql, params) {
      return (await client.query(sql, params)).rows;
    },
    async transaction(script, after) {
      await client.query("BEGIN");
      try {
        await client.query(script);
        await client.query(after.sql, after.params);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      }
    },
  };
}

function pgliteSession(pglite: PGlite): MigrationSession {
  return {
    async query(sql, params) {
      return (await pglite.query<Record<string, unknown>>(sql, params)).rows;
    },
    async transaction(script, after) {
      await pglite.transaction(async (tx) => {
        await tx.exec(script);
        await tx.query(after.sql, after.params);
      });
    },
  };
}
