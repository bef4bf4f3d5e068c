import type { PGlite } from "@electric-sql/pglite";
import type { PgBoss as PgBossType } from "pg-boss";
import type { Logger } from "pino";

export type JobQueue = {
  /** pg-boss itself: queues are created, sent to and worked by the modules that own them. */
  boss: PgBossType;
  /** Stops fetching, lets handlers in flight finish for up to `timeoutMs`, and closes its connections. */
  stop(timeoutMs?: number): Promise<void>;
};

export type JobQueueOptions = {
  /** The embedded database: pg-boss shares its one connection with Prisma (fromPglite). */
  pglite?: PGlite;
  /** PostgreSQL: pg-boss's own small pool. It needs no session state, so PgBouncer's transaction pooling serves it. */
  url?: string;
  /** Connections of that pool: fetching, completing and maintenance; 3 when absent. */
  poolSize?: number;
  logger: Logger;
  /**
   * False for a short-lived process (the CLI) that only reads and changes jobs: no schema
   * creation or migration, no maintenance. True (the service) when absent.
   */
  maintain?: boolean;
};

/** The queues of the service, by what they carry. */
export const QUEUES = { notificationMail: "notification-mail", webhookDelivery: "webhook-delivery" } as const;

/** The schema pg-boss creates and migrates in our database (its `start()` does it, under its own lock). */
export const JOB_SCHEMA = "pgboss";

/**
 * Starts pg-boss on the service's database, PostgreSQL or embedded. Jobs a change must not lose
 * are sent with `{ db: fromPrisma(tx) }` in that change's transaction, so they commit or roll back
 * with it. pg-boss polls for work (LISTEN/NOTIFY stays off: it would pin a session, which PgBouncer
 * in transaction mode cannot give) and only ever takes transaction-scoped advisory locks.
 */
export async function startJobQueue(options: JobQueueOptions): Promise<JobQueue> {
  const maintain = options.maintain ?? true;
  const common = {
    schema: JOB_SCHEMA,
    schedule: false,
    application_name: "compliance-gateway-jobs",
    ...(maintain ? {} : { supervise: false, migrate: false, createSchema: false, registerInstance: false }),
  } as const;
  // Loaded here, not at start: a service without e-mail never needs it (about 0.2 s of start-up).
  const { fromPglite, PgBoss } = await import("pg-boss");
  let boss: PgBossType;
  if (options.pglite) {
    boss = new PgBoss({ ...common, db: fromPglite(options.pglite), backend: "pglite" });
  } else if (options.url) {
    boss = new PgBoss({ ...common, connectionString: options.url, max: options.poolSize ?? 3 });
  } else {
    throw new Error("startJobQueue needs the embedded database or a PostgreSQL URL");
  }
  // Unhandled, an "error" event would end the process; pg-boss retries what failed on its next cycle.
  boss.on("error", (error) => options.logger.error({ err: error }, "job queue error"));
  boss.on("warning", (warning) => options.logger.warn({ warning }, "job queue warning"));
  try {
    await boss.start();
  } catch (error) {
    // A start that failed (the database went away under it) leaves no pool behind for a retry to add to.
    await boss.stop({ graceful: false, close: true }).catch(() => {});
    throw error;
  }
  return {
    boss,
    async stop(timeoutMs = 10_000) {
      await boss.stop({ graceful: true, close: true, timeout: timeoutMs });
    },
  };
}

export type FailedJob = { id: string; data: unknown; output: unknown; retryCount: number; failedAt: Date | null };

/** The jobs of a queue kept as failed after their last attempt, oldest first. */
export async function failedJobs(boss: PgBossType, queue: string, limit = 100): Promise<FailedJob[]> {
  const { rows } = await boss
    .getDb()
    .executeSql(
      `SELECT id, data, output, retry_count AS "retryCount", completed_on AS "failedAt" FROM ${JOB_SCHEMA}.job WHERE name = $1 AND state = 'failed' ORDER BY completed_on, id LIMIT $2`,
      [queue, limit],
    );
  return rows as FailedJob[];
}

/** Puts failed jobs back to be worked again (with one more attempt each); all of the queue's when `ids` is absent. */
export async function retryFailedJobs(boss: PgBossType, queue: string, ids?: string[]): Promise<number> {
  const targets = ids ?? (await failedJobs(boss, queue, 10_000)).map((job) => job.id);
  if (targets.length === 0) return 0;
  const result = (await boss.retry(queue, targets)) as { affected?: number };
  return result.affected ?? 0;
}
