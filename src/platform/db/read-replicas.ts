import type { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import type { PrismaClient } from "../../generated/prisma/client.js";

/** What /ready and /metrics say of one streaming replica. */
export type ReplicaStatus = {
  /** host:port/database, never the credentials. */
  name: string;
  /** available: serves reads; lagging: behind by more than the bound; down: does not answer. */
  state: "available" | "lagging" | "down";
  /** How far behind the primary it was at its last check (ms); null when unknown. */
  lagMs: number | null;
  /** Reads it served, and reads it failed that the primary then served. */
  reads: number;
  fallbacks: number;
};

/** A replica: its Prisma client, and its pool for the statements read without Prisma (row-by-id.ts). */
export type Replica = { name: string; db: PrismaClient; pool: pg.Pool };

export type ReadReplicas = {
  /** A replica that may serve a read now (known to be at most `maxLagMs` behind), else undefined. */
  pick(): Replica | undefined;
  /** A read on `replica` failed for want of the database: skip it until a check finds it well. */
  failed(replica: Replica, error: unknown): void;
  served(replica: Replica): void;
  statuses(): ReplicaStatus[];
  /** Longest a caller's own writes may be missing from a replica that `pick` returns. */
  readonly maxLagMs: number;
  close(): Promise<void>;
};

export type ReadReplicaOptions = {
  urls: string[];
  /** The primary's pool: its WAL position is what replicas are measured against. */
  primary: pg.Pool;
  maxLagMs: number;
  poolSize: number;
  /** The primary's: how long a connection may sit unused before it is closed (0: never). */
  poolIdleTimeoutMs: number;
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
  createClient: (adapter: PrismaPg) => PrismaClient;
  createAdapter: (pool: pg.Pool) => PrismaPg;
  onIdleError?: (error: Error) => void;
};

const CHECK_INTERVAL_MS = 250;

export function replicaName(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
}

type Tracked = Replica & {
  /** Upper bound of its lag at `checkedAt`, from its replay position and time (ms). */
  lagMs: number | null;
  checkedAt: number;
  down: boolean;
  checking: boolean;
  reads: number;
  fallbacks: number;
};

/**
 * Streaming replicas for reads, each with its own pool and Prisma client, and a check every
 * 250 ms of how far behind the primary each one is. A replica is picked only while its lag at the
 * last check plus the time since that check stays under `maxLagMs`: lag grows at most as fast as
 * time passes, so a replica that stopped answering its checks, or stopped replaying, drops out
 * within `maxLagMs` without a read having to fail first.
 */
export function openReadReplicas(options: ReadReplicaOptions): ReadReplicas {
  const replicas: Tracked[] = options.urls.map((url) => {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize,
      idleTimeoutMillis: options.poolIdleTimeoutMs,
      connectionTimeoutMillis: options.connectTimeoutMs,
      query_timeout: options.statementTimeoutMs,
    });
    pool.on("error", (error) => options.onIdleError?.(error));
    return {
      name: replicaName(url),
      pool,
      db: options.createClient(options.createAdapter(pool)),
      lagMs: null,
      checkedAt: 0,
      down: false,
      checking: false,
      reads: 0,
      fallbacks: 0,
    };
  });

  async function checkAll() {
    let primaryLsn: string;
    try {
      primaryLsn = (await options.primary.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn")).rows[0]
        ?.lsn as string;
    } catch {
      // Without the primary's position no replica's lag is known; their bounds age past maxLagMs.
      return;
    }
    const primaryReadAt = Date.now();
    await Promise.all(replicas.filter((r) => !r.checking).map((r) => check(r, primaryLsn, primaryReadAt)));
  }

  async function check(replica: Tracked, primaryLsn: string, primaryReadAt: number) {
    replica.checking = true;
    try {
      const { rows } = await replica.pool.query<{ standby: boolean; caught_up: boolean | null; behind_ms: number | null }>(
        `SELECT pg_is_in_recovery() AS standby,
                pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught_up,
                (extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)::float8 AS behind_ms`,
        [primaryLsn],
      );
      const row = rows[0];
      const now = Date.now();
      // Caught up with where the primary was when asked: behind by at most the time since then.
      if (!row?.standby || row.caught_up) replica.lagMs = now - primaryReadAt;
      else replica.lagMs = row.behind_ms === null ? null : Math.max(0, row.behind_ms);
      replica.checkedAt = now;
      replica.down = false;
    } catch {
      replica.down = true;
    } finally {
      replica.checking = false;
    }
  }

  const boundNow = (r: Tracked) => (r.lagMs === null ? Number.POSITIVE_INFINITY : r.lagMs + (Date.now() - r.checkedAt));
  const usable = (r: Tracked) => !r.down && boundNow(r) <= options.maxLagMs;

  const timer = setInterval(() => void checkAll(), CHECK_INTERVAL_MS);
  timer.unref();
  void checkAll();
  let next = 0;

  return {
    maxLagMs: options.maxLagMs,
    pick() {
      for (let i = 0; i < replicas.length; i++) {
        const replica = replicas[(next + i) % replicas.length] as Tracked;
        if (usable(replica)) {
          next = (next + i + 1) % replicas.length;
          return replica;
        }
      }
      return undefined;
    },
    failed(replica) {
      const tracked = replica as Tracked;
      tracked.down = true;
      tracked.fallbacks++;
    },
    served(replica) {
      (replica as Tracked).reads++;
    },
    statuses: () =>
      replicas.map((r) => ({
        name: r.name,
        state: r.down || r.checkedAt === 0 ? "down" : usable(r) ? "available" : "lagging",
        lagMs: r.lagMs === null || r.checkedAt === 0 ? null : Math.round(boundNow(r)),
        reads: r.reads,
        fallbacks: r.fallbacks,
      })),
    async close() {
      clearInterval(timer);
      await Promise.all(
        replicas.map(async (r) => {
          await r.db.$disconnect();
          if (!r.pool.ended) await r.pool.end();
        }),
      );
    },
  };
}
