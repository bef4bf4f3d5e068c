import type { fromPrisma as FromPrisma, Job, PgBoss } from "pg-boss";
import type { Logger } from "pino";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Prisma } from "../../generated/prisma/client.js";
import type { WebhookConfig } from "../../platform/config.js";
import type { Db } from "../../platform/db/database.js";
import { newId } from "../../platform/ids.js";
import { QUEUES } from "../../platform/jobs.js";
import { writeAuditEvent } from "../audit/audit.service.js";
import { attemptDelivery, type Resolver, systemResolver, urlOrigin } from "./webhooks.http.js";
import { buildMessage, recordAttempt, type Sent, succeeded } from "./webhooks.message.js";
import type { DisabledEndpoint } from "./webhooks.notify.js";
import { OBJECT_BODY_LIMIT_BYTES, restObjectOf } from "./webhooks.objects.js";

/**
 * Deliveries one replica fetches and attempts at once (the pg-boss batch): each batch costs pg-boss
 * a fetch and a completion, so 10 a batch sent 453 deliveries a second and 50 sent 941 (bench/webhooks.mjs).
 */
const BATCH_SIZE = 50;
/** Deliveries the relay gives jobs to in one statement, once an interval (WEBHOOK_POLL_INTERVAL_MS). */
const RELAY_BATCH = 1000;
/**
 * A due delivery whose job has not claimed it for this long gets a new one (a job lost to a failure
 * of the database while it was fetched, say); its old job, if it ever runs, no longer claims it.
 */
const REASSIGN_AFTER_MINUTES = 10;
/** A `Retry-After` is honoured up to this long. */
const MAX_RETRY_AFTER_SECONDS = 3600;
/** How often finished deliveries past their retention are deleted. */
const RETENTION_SWEEP_MS = 3600_000;

export type WebhookWorkerOptions = {
  db: Db;
  config: WebhookConfig;
  logger: Logger;
  resolve?: Resolver;
  /** Tells the organization's owners and admins that an endpoint was disabled (inbox and e-mail), in the disabling transaction; what it returns runs after the commit. */
  onDisabled?: (
    tx: Prisma.TransactionClient,
    endpoint: DisabledEndpoint,
    reason: "gone" | "failing",
  ) => Promise<(() => void) | undefined>;
};

export type WebhookCounts = { succeeded: number; retried: number; failed: number };

const notSent = (error: string): Sent => ({ status: null, body: null, retryAfterSeconds: null, durationMs: 0, error });

type Claimed = { id: string; lockedUntil: Date };
type DeliveryJob = { deliveryId: string };

/** The seconds before the next attempt after `attempts` attempts, or null when none follows. */
export function nextDelaySeconds(schedule: number[], attempts: number, sent: Sent, random = Math.random): number | null {
  if (sent.status === 410) return null;
  const base = schedule[attempts - 1];
  if (base === undefined) return null;
  let delay = base * (1 + random() * 0.1);
  if ((sent.status === 429 || sent.status === 503) && sent.retryAfterSeconds !== null) {
    delay = Math.max(delay, Math.min(sent.retryAfterSeconds, MAX_RETRY_AFTER_SECONDS));
  }
  return delay;
}

/**
 * Works the webhook deliveries on this replica; every replica does. The WebhookDelivery rows are the
 * record (written in the change's own transaction) and the delivery log; each attempt runs as a job
 * of the pg-boss queue `webhook-delivery`:
 * - the relay gives every delivery that is due or scheduled and has no job one, in one transaction
 *   that sets the row's `jobId` and inserts the job (start after its `nextAttemptAt`), FOR UPDATE
 *   SKIP LOCKED so that two replicas never relay the same one;
 * - a job claims its delivery only while the row still names it (`jobId`) and no other claim holds,
 *   by setting `lockedUntil` past the attempt's timeout, and writes the result only while that claim
 *   holds: one attempt at a time per delivery, and a stale or repeated job does nothing;
 * - after a failed attempt the row has its next `nextAttemptAt` and no job, and the relay gives it
 *   the next one. A replica that dies mid-attempt leaves its claim to lapse; the relay then gives the
 *   delivery a new job, which another replica works: at least once, same `webhook-id`.
 */
export function createWebhookWorker(options: WebhookWorkerOptions) {
  const { db, config, logger } = options;
  const resolve = options.resolve ?? systemResolver;
  const leaseMs = config.timeoutMs + 5_000;
  const counts: WebhookCounts = { succeeded: 0, retried: 0, failed: 0 };
  /** The job queue once started: pg-boss, its adapter for a Prisma transaction, and this replica's worker. */
  let started: { boss: PgBoss; fromPrisma: typeof FromPrisma; workerId: string } | undefined;
  let running = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let lastSweep = 0;
  // Observed from the start, whichever registry shows it (each app has its own).
  const attemptDuration = new Histogram({
    name: "webhook_attempt_duration_seconds",
    help: "Time of one webhook attempt: resolving, connecting, sending and reading the answer",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
    registers: [],
  });

  /**
   * The deliveries of a batch of jobs, claimed for their attempts in one statement: each only while
   * its row still names its job and no other claim holds (none for a stale or repeated job).
   */
  async function claim(jobs: Job<DeliveryJob>[]): Promise<Claimed[]> {
    return db.$queryRaw<Claimed[]>`
      UPDATE "WebhookDelivery" d SET "lockedUntil" = (now() AT TIME ZONE 'UTC') + ${leaseMs} * interval '1 millisecond'
      FROM unnest(${jobs.map((job) => job.data.deliveryId)}::text[], ${jobs.map((job) => job.id)}::text[]) AS j("deliveryId", "jobId")
      WHERE d."id" = j."deliveryId" AND d."jobId" = j."jobId" AND d."nextAttemptAt" IS NOT NULL
        AND (d."lockedUntil" IS NULL OR d."lockedUntil" < (now() AT TIME ZONE 'UTC'))
      RETURNING d."id", d."lockedUntil"`;
  }

  /**
   * Gives a job to every delivery waiting for one, oldest due first: those just written or
   * redelivered, those to retry, and those whose claim lapsed (a replica died mid-attempt). The rows
   * and the jobs commit together.
   */
  async function relay(): Promise<void> {
    if (!started) return;
    const { boss, fromPrisma, workerId } = started;
    const relayed = await db.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<{ id: string; jobId: string; nextAttemptAt: Date }[]>`
        UPDATE "WebhookDelivery" d
        SET "jobId" = gen_random_uuid()::text, "lockedUntil" = NULL, "updatedAt" = now() AT TIME ZONE 'UTC'
        WHERE d."id" IN (
          SELECT "id" FROM "WebhookDelivery"
          WHERE "nextAttemptAt" IS NOT NULL
            AND ("jobId" IS NULL
              OR "lockedUntil" < (now() AT TIME ZONE 'UTC')
              OR ("lockedUntil" IS NULL
                AND "nextAttemptAt" < (now() AT TIME ZONE 'UTC') - ${REASSIGN_AFTER_MINUTES} * interval '1 minute'
                AND "updatedAt" < (now() AT TIME ZONE 'UTC') - ${REASSIGN_AFTER_MINUTES} * interval '1 minute'))
          ORDER BY "nextAttemptAt"
          LIMIT ${RELAY_BATCH}
          FOR UPDATE SKIP LOCKED)
        RETURNING d."id", d."jobId", d."nextAttemptAt"`;
      if (rows.length > 0) {
        await boss.insert(
          QUEUES.webhookDelivery,
          rows.map((row) => ({ id: row.jobId, data: { deliveryId: row.id }, startAfter: row.nextAttemptAt })),
          { db: fromPrisma(tx) },
        );
      }
      return rows;
    });
    // Due now: this replica fetches at once instead of at its next poll.
    if (relayed.some((row) => row.nextAttemptAt.getTime() <= Date.now())) boss.notifyWorker(workerId);
  }

  /** Writes the attempt's outcome if this replica's claim still holds; false when another took the delivery. */
  async function settle(claimed: Claimed, data: ReturnType<typeof recordAttempt>): Promise<boolean> {
    const { count } = await db.webhookDelivery.updateMany({ where: { id: claimed.id, lockedUntil: claimed.lockedUntil }, data });
    return count === 1;
  }

  async function disable(endpoint: DisabledEndpoint, reason: "gone" | "failing") {
    const announce = await db.$transaction(async (tx) => {
      const { count } = await tx.webhookEndpoint.updateMany({
        where: { id: endpoint.id, enabled: true },
        data: { enabled: false, disabledReason: reason },
      });
      if (count === 0) return undefined;
      await writeAuditEvent(tx, {
        id: newId("aud"),
        organizationId: endpoint.organizationId,
        action: "webhook_endpoint.disabled",
        entityType: "webhook_endpoint",
        entityId: endpoint.id,
        data: { reason, url: urlOrigin(endpoint.url) },
      });
      return options.onDisabled?.(tx, endpoint, reason);
    });
    announce?.();
    logger.warn({ endpointId: endpoint.id, reason }, "webhook endpoint disabled");
  }

  /** Whether every delivery of the endpoint has failed for the whole failure window. */
  async function failingTooLong(endpointId: string): Promise<boolean> {
    const [row] = await db.$queryRaw<{ since: Date | null }[]>`
      SELECT min(d."createdAt") AS "since" FROM "WebhookDelivery" d
      WHERE d."endpointId" = ${endpointId} AND d."attempts" > 0 AND d."status" IN ('retrying', 'failed')
        AND d."eventType" <> 'webhook.test'
        AND d."createdAt" > COALESCE(
          (SELECT max(s."lastAttemptAt") FROM "WebhookDelivery" s WHERE s."endpointId" = ${endpointId} AND s."status" = 'succeeded'),
          '-infinity'::timestamp)`;
    return Boolean(row?.since && Date.now() - row.since.getTime() >= config.disableAfterHours * 3600_000);
  }

  async function attempt(claimed: Claimed) {
    const delivery = await db.webhookDelivery.findUnique({ where: { id: claimed.id }, include: { endpoint: true } });
    if (!delivery) return;
    const { endpoint } = delivery;
    if (!endpoint.enabled) {
      await settle(claimed, recordAttempt(notSent("the endpoint is disabled"), delivery.attempts, null));
      return;
    }
    const event = await db.auditEvent.findUnique({ where: { id: delivery.eventId } });
    if (!event) {
      await settle(claimed, recordAttempt(notSent("the event no longer exists"), delivery.attempts, null));
      return;
    }
    const message = {
      type: event.action,
      timestamp: event.createdAt.toISOString(),
      data: {
        eventId: event.id,
        organizationId: event.organizationId,
        action: event.action,
        entity: { type: event.entityType, id: event.entityId },
        actor: { userId: event.actorUserId, apiKeyId: event.actorApiKeyId },
        data: event.data,
        object: /\.deleted$/.test(event.action)
          ? null
          : await restObjectOf(db, event.organizationId, { type: event.entityType, id: event.entityId }),
      },
    };
    let body = JSON.stringify(message);
    if (Buffer.byteLength(body) > OBJECT_BODY_LIMIT_BYTES) {
      message.data.object = null;
      body = JSON.stringify(message);
    }
    let sent = await attemptDelivery(endpoint.url, buildMessage(endpoint, event.id, body).headers, body, {
      ...config,
      resolve,
    });
    attemptDuration.observe(sent.durationMs / 1000);
    const attempts = delivery.attempts + 1;
    let delay = succeeded(sent) ? null : nextDelaySeconds(config.retrySchedule, attempts, sent);
    let settled: boolean;
    try {
      settled = await settle(claimed, recordAttempt(sent, attempts, delay === null ? null : new Date(Date.now() + delay * 1000)));
    } catch (error) {
      // Left unsettled, the claim would lapse and the relay send the message again at once, without
      // end: the attempt counts as a failed one instead, on the schedule, with what can be recorded.
      logger.warn(
        { deliveryId: delivery.id, reason: (error as Error).message?.slice(0, 300) },
        "webhook attempt: its record could not be written; counted as a failed attempt",
      );
      const unrecorded = notSent(`the endpoint answered ${sent.status ?? "nothing"}, but the attempt could not be recorded`);
      delay = nextDelaySeconds(config.retrySchedule, attempts, unrecorded);
      settled = await settle(
        claimed,
        recordAttempt(
          { ...unrecorded, durationMs: sent.durationMs },
          attempts,
          delay === null ? null : new Date(Date.now() + delay * 1000),
        ),
      );
      sent = unrecorded;
    }
    if (!settled) {
      logger.warn({ deliveryId: delivery.id }, "webhook attempt outlived its claim; another replica has the delivery");
      return;
    }
    if (succeeded(sent)) counts.succeeded++;
    else if (delay !== null) counts.retried++;
    else counts.failed++;
    if (sent.status === 410) await disable(endpoint, "gone");
    else if (!succeeded(sent) && (await failingTooLong(endpoint.id))) await disable(endpoint, "failing");
  }

  async function sweep() {
    lastSweep = Date.now();
    const before = new Date(Date.now() - config.retentionDays * 86_400_000);
    const { count } = await db.webhookDelivery.deleteMany({ where: { nextAttemptAt: null, createdAt: { lt: before } } });
    if (count > 0) logger.info({ count }, "deleted webhook deliveries past their retention");
  }

  /**
   * One batch of pg-boss jobs: the attempts of the deliveries they still claim. Never fails a job:
   * the row is the record, and a claim taken but not settled lapses for the relay to give anew.
   */
  async function work(jobs: Job<DeliveryJob>[]) {
    try {
      const claimed = await claim(jobs);
      await Promise.all(
        claimed.map((c) =>
          attempt(c).catch((error) => logger.error({ err: error, deliveryId: c.id }, "webhook attempt failed unexpectedly")),
        ),
      );
    } catch (error) {
      logger.error({ err: error }, "webhook worker: cannot claim deliveries");
    }
    return jobs.map((job) => ({ id: job.id, status: "completed" as const }));
  }

  async function run() {
    while (running) {
      try {
        if (Date.now() - lastSweep > RETENTION_SWEEP_MS) await sweep();
        await relay();
      } catch (error) {
        logger.error({ err: error }, "webhook worker: cannot relay deliveries to the job queue");
      }
      // One relay an interval even with a backlog: at most RELAY_BATCH jobs a second ahead of the
      // attempts, so that relaying never takes the database from them.
      if (running) {
        await new Promise<void>((resolveWait) => {
          const timer = setTimeout(resolveWait, config.pollIntervalMs);
          wake = () => {
            clearTimeout(timer);
            resolveWait();
          };
        });
        wake = undefined;
      }
    }
  }

  return {
    counts,
    /** Starts relaying and working deliveries on this replica, on the job queue `boss` (pg-boss, started). */
    async start(boss: PgBoss) {
      if (started) return;
      const queue = {
        // A job whose replica died is left to the relay (after the claim lapses), not retried by pg-boss.
        retryLimit: 0,
        expireInSeconds: Math.ceil(leaseMs / 1000) + 60,
        // The delivery log is the record: a finished job is kept a day.
        deleteAfterSeconds: 86_400,
      };
      if (await boss.getQueue(QUEUES.webhookDelivery)) await boss.updateQueue(QUEUES.webhookDelivery, queue);
      else await boss.createQueue(QUEUES.webhookDelivery, queue);
      const { fromPrisma } = await import("pg-boss");
      const workerId = await boss.work(
        QUEUES.webhookDelivery,
        {
          batchSize: BATCH_SIZE,
          // A full batch means more are waiting: fetch again at once instead of after the poll interval.
          burstWhenBatchFull: true,
          perJobResults: true,
          pollingIntervalSeconds: Math.max(0.5, config.pollIntervalMs / 1000),
        },
        work,
      );
      started = { boss, fromPrisma, workerId };
      running = true;
      loop = run();
    },
    /** Stops relaying and fetching; attempts in flight finish (each within the timeout). */
    async stop() {
      running = false;
      wake?.();
      await loop;
      loop = undefined;
      if (started) await started.boss.offWork(QUEUES.webhookDelivery, { id: started.workerId, wait: true });
      started = undefined;
    },
    sweep,
    /** Deliveries by result, attempt duration, queue depth and oldest pending age, on this app's registry. */
    registerMetrics(registry: Registry) {
      for (const [key, help] of [
        ["succeeded", "Webhook deliveries this replica sent with a 2xx answer"],
        ["retried", "Webhook attempts this replica made that failed and will be retried"],
        ["failed", "Webhook deliveries whose last attempt (or a 410) this replica made failed for good"],
      ] as const) {
        new Counter({
          name: `webhook_deliveries_${key}_total`,
          help,
          registers: [registry],
          collect() {
            this.reset();
            this.inc(counts[key]);
          },
        });
      }
      registry.registerMetric(attemptDuration);
      new Gauge({
        name: "webhook_queue_depth",
        help: "Webhook deliveries waiting for an attempt (pending or retrying), all replicas",
        registers: [registry],
        async collect() {
          const [row] = await db.$queryRaw<{ depth: number; oldest: Date | null }[]>`
            SELECT count(*)::int AS "depth", min("nextAttemptAt") AS "oldest" FROM "WebhookDelivery" WHERE "nextAttemptAt" IS NOT NULL`;
          this.set(row?.depth ?? 0);
        },
      });
      new Gauge({
        name: "webhook_oldest_pending_age_seconds",
        help: "How long the most overdue webhook delivery has been due; 0 when none is",
        registers: [registry],
        async collect() {
          const [row] = await db.$queryRaw<{ oldest: Date | null }[]>`
            SELECT min("nextAttemptAt") AS "oldest" FROM "WebhookDelivery" WHERE "nextAttemptAt" IS NOT NULL`;
          this.set(row?.oldest ? Math.max(0, (Date.now() - row.oldest.getTime()) / 1000) : 0);
        },
      });
    },
  };
}

export type WebhookWorker = ReturnType<typeof createWebhookWorker>;
