import "./platform/engine-flags.js";
import { createServer } from "node:http";
import module from "node:module";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { startBanner } from "./admin/banner.js";
import { seedDemo } from "./admin/seed.js";
import { seedFrameworkDemo } from "./admin/seed-frameworks.js";
import { createApp } from "./app.js";
import { startTracing } from "./http/tracing.js";
import { setAuditChainForBench } from "./modules/audit/audit.chain.js";
import { startAuditTimers } from "./modules/audit/audit.jobs.js";
import { auditSignerFromConfig } from "./modules/audit/audit.keys.js";
import { startAttachmentJobs } from "./modules/comments/attachments.jobs.js";
import { startEvidenceRequestJobs } from "./modules/evidence-requests/evidence-requests.jobs.js";
import { linkTokens } from "./modules/evidence-requests/evidence-requests.token.js";
import { startControlStatusJobs } from "./modules/frameworks/frameworks.jobs.js";
import { createDeviceManagement } from "./modules/members/device-management.js";
import { createNotificationMailer } from "./modules/notifications/notifications.mail.js";
import { createUnsubscribe } from "./modules/notifications/notifications.unsubscribe.js";
import { notifyDisabled } from "./modules/webhooks/webhooks.notify.js";
import { createWebhookWorker } from "./modules/webhooks/webhooks.worker.js";
import { attachmentUrlSecret, openAttachmentStores } from "./platform/attachments/create-store.js";
import { type Config, loadConfig } from "./platform/config.js";
import { type Database, openDatabase } from "./platform/db/database.js";
import { isDatabaseUnavailable } from "./platform/db/unavailable.js";
import { createEvents, createRedisEventTarget } from "./platform/events.js";
import { startJobQueue } from "./platform/jobs.js";
import { keptSecret } from "./platform/kept-secrets.js";
import { createNativeMemoryTrim } from "./platform/native-memory.js";
import { connectRedis } from "./platform/redis.js";

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  fail((error as Error).message);
}
const logger = pino({ level: config.logLevel, base: { service: "compliance-gateway" } });
if (config.production && !config.attachments.publicUrl) {
  logger.warn(
    { setting: "PUBLIC_URL" },
    "PUBLIC_URL is not set: the URLs the service signs (attachment uploads and downloads) and links follow each request's Host header; set it to the service's public origin (docs/production.md)",
  );
}

// A promise nobody awaited failed: a defect to fix, but not a reason to drop every request in
// flight, so the replica logs it and keeps serving. An exception that unwound the stack may have
// left any state half-changed: the replica logs it and exits, and its supervisor starts a fresh one.
process.on("unhandledRejection", (reason) => {
  logger.error({ err: reason }, "unhandled promise rejection (kept running)");
});
process.on("uncaughtException", (error) => {
  logger.fatal({ err: error }, "uncaught exception: exiting");
  process.exit(1);
});

const database = config.databaseUrl
  ? await openPostgresAtStart(config.databaseUrl)
  : await openDatabase({ kind: "embedded", dataDir: config.dataDir, transactions: config.databaseTransactions }).catch(
      (error: Error) => {
        logger.fatal({ err: error }, "cannot open the database");
        fail(error.message);
      },
    );

/**
 * PostgreSQL may not answer yet when the service starts (both starting together, a failover): try
 * again with backoff, logging each attempt, for DATABASE_STARTUP_TIMEOUT_MS; then exit 1 with one
 * line that says why. Nothing listens before the database answers. Other failures (a migration
 * this version does not know, a wrong password) do not heal by waiting: exit at once.
 */
async function openPostgresAtStart(url: string): Promise<Database> {
  const where = (() => {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
  })();
  const deadline = Date.now() + config.databaseStartupTimeoutMs;
  for (let attempt = 1; ; attempt++) {
    let timer: NodeJS.Timeout | undefined;
    try {
      const opening = openDatabase({
        kind: "postgres",
        url,
        directUrl: config.databaseDirectUrl,
        readUrls: config.databaseReadUrls,
        readMaxLagMs: config.databaseReadMaxLagMs,
        poolSize: config.databasePoolSize,
        poolIdleTimeoutMs: config.databasePoolIdleTimeoutMs,
        preparedStatements: config.databasePreparedStatements,
        connectTimeoutMs: config.databaseConnectTimeoutMs,
        statementTimeoutMs: config.databaseStatementTimeoutMs,
        lockTimeoutMs: config.databaseLockTimeoutMs,
        idleInTransactionTimeoutMs: config.databaseIdleInTransactionTimeoutMs,
        transactions: config.databaseTransactions,
        onIdleError: (error) => logger.warn({ err: error }, "an idle database connection failed"),
        onTimeoutMismatch: (mismatches) =>
          logger.warn(
            { mismatches },
            "the database connections do not have the configured timeouts: does PgBouncer log in as another role than DATABASE_DIRECT_URL's? See docs/production.md",
          ),
      });
      // A database that freezes in the middle of an attempt must not hold start-up past its deadline.
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("no answer before the start-up deadline")), Math.max(0, deadline - Date.now()));
      });
      return await Promise.race([opening, late]);
    } catch (error) {
      const message = (error as Error).message?.split("\n")[0] ?? String(error);
      const outOfTime = message === "no answer before the start-up deadline";
      if (!outOfTime && !isDatabaseUnavailable(error)) fail(`Cannot start: the database at ${where} refused to open: ${message}`);
      const left = deadline - Date.now();
      if (outOfTime || left <= 0) {
        fail(
          `Cannot start: the database at ${where} did not answer within ${config.databaseStartupTimeoutMs / 1000} s (${attempt} attempts; last: ${message})`,
        );
      }
      const delay = Math.min(250 * 2 ** (attempt - 1), 5_000, left);
      logger.warn({ attempt, database: where, error: message, retryInMs: delay }, "the database does not answer yet; retrying");
      await new Promise((resolve) => setTimeout(resolve, delay));
    } finally {
      clearTimeout(timer);
    }
  }
}

// Redis, when configured, is what replicas share: rate-limit counters and live events.
const redis = config.redisUrl ? await connectRedis(config.redisUrl, { timeoutMs: config.redisTimeoutMs, logger }) : undefined;
const events = redis
  ? createEvents(
      createRedisEventTarget({
        publisher: redis.client,
        subscriber: redis.subscriber,
        logger,
        onPublishFailure: () => {
          redis.health.counts.publishFailures++;
        },
      }),
    )
  : undefined;

const tracing = config.otlpEndpoint ? await startTracing(config.otlpEndpoint) : undefined;

/**
 * The job queue: pg-boss in our database (its own schema, created and migrated by its start()), for
 * e-mail and webhook deliveries, on every replica that sends either. E-mail needs it before the app
 * exists (a notification's mail is enqueued in the notification's transaction), so with e-mail it
 * starts at once; webhooks alone start it with their worker, after the server listens
 * (startWebhooks). The queue is no dependency of /ready.
 */
let shuttingDown = false;
/**
 * A start that needs the database (pg-boss's, a worker's), again while the database is unavailable
 * (a connection terminated under it, a restart, a failover: 1 s, then up to 5 s apart), for as
 * long as it takes: a replica that already serves must not end for a database that comes back.
 * Anything else (a refused schema migration) is thrown, for its caller to end the process with.
 */
async function whileDatabaseUnavailable<T>(what: string, start: () => Promise<T>, attempt = 0): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (shuttingDown || !isDatabaseUnavailable(error)) throw error;
    const delayMs = Math.min(5_000, 1_000 * 2 ** Math.min(attempt, 3));
    logger.warn({ err: error, delayMs }, `${what} did not start: the database is unavailable; trying again`);
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (shuttingDown) throw error;
    return whileDatabaseUnavailable(what, start, attempt + 1);
  }
}
const startQueue = (): ReturnType<typeof startJobQueue> =>
  whileDatabaseUnavailable("the job queue", () =>
    startJobQueue({ pglite: database.pglite, url: config.databaseUrl, logger }),
  ).catch((error: Error) => {
    logger.fatal({ err: error }, "cannot start the job queue");
    fail(`Cannot start: the job queue (pg-boss) did not start: ${error.message}`);
  });
let jobQueue = config.mail ? startQueue() : undefined;
/** The webhook worker's start (once the server listens), which shutdown waits for before stopping it. */
let webhooksStarting: Promise<void> | undefined;

/**
 * Evidence requests' link tokens are derived with EVIDENCE_REQUEST_LINK_SECRET, else a secret the
 * service keeps (DATA_DIR, or the database on PostgreSQL): the app answers links with it, the mail
 * worker rebuilds them with it.
 */
const links = linkTokens(
  keptSecret(
    {
      given: config.evidenceRequestLinkSecret,
      dataDir: config.dataDir,
      databaseUrl: config.databaseUrl,
      file: "evidence-request-link-secret",
      name: "evidence-request-link",
    },
    database.db,
  ),
);

/**
 * E-mail for notifications: a worker on every replica but those started with MAIL_WORKER=false.
 * Without SMTP configured nothing is started: no job is ever enqueued.
 */
const mail =
  config.mail && jobQueue
    ? await (async (mailConfig) => {
        try {
          const { boss } = await jobQueue;
          const mailer = await whileDatabaseUnavailable("the mail queue", () =>
            createNotificationMailer({ db: database.db, boss, config: mailConfig, logger, links }),
          );
          if (mailConfig.worker) await whileDatabaseUnavailable("the mail worker", () => mailer.start());
          else logger.info("MAIL_WORKER=false: this replica enqueues e-mail and leaves the sending to replicas with it on");
          return { mailer, unsubscribe: createUnsubscribe(database.db, mailConfig.unsubscribeSecret) };
        } catch (error) {
          logger.fatal({ err: error }, "cannot start the mail queue");
          fail(`Cannot start: the mail queue (pg-boss) did not start: ${(error as Error).message}`);
        }
      })(config.mail)
    : undefined;

/** Webhook deliveries: every replica relays and attempts them on the job queue unless WEBHOOK_WORKER=false. */
const webhookWorker = createWebhookWorker({
  db: database.db,
  config: config.webhooks,
  logger,
  // Started after the app exists (below), so `app` is set whenever this runs.
  onDisabled: (tx, endpoint) => notifyDisabled(app.services.notifier)(tx, endpoint),
});
// The audit checkpoints' key: AUDIT_SIGNING_KEY, else the one kept in DATA_DIR (made at first start).
const auditSigner = (() => {
  try {
    return auditSignerFromConfig(config);
  } catch (error) {
    fail(`Cannot start: the audit signing key: ${(error as Error).message}`);
  }
})();
if (!config.audit.chain) {
  setAuditChainForBench(false);
  logger.warn("BENCH_AUDIT_CHAIN=off: audit events are written unchained (bench only); the audit trail will not verify");
}

/** Freed native memory of closed connections goes back to the system (glibc keeps it otherwise). */
const nativeMemory = createNativeMemoryTrim({ afterClosed: config.nativeMemoryTrimAfterClosed, logger });

/** Attachments' stores; the service-signed URLs' secret is ATTACHMENT_URL_SECRET, else one the service keeps. */
const attachmentStores = (() => {
  try {
    const urlSecret = attachmentUrlSecret(config, database.db);
    return openAttachmentStores({ ...config.attachments, urlSecret }, { db: database.db });
  } catch (error) {
    fail(`Cannot start: the attachment store: ${(error as Error).message}`);
  }
})();

const app = createApp({
  attachmentStores,
  auditSigner,
  database,
  config,
  logger,
  events,
  redis: redis?.client,
  redisHealth: redis?.health,
  rateLimitKeyPrefix: `${config.redisKeyPrefix}rate`,
  recentWritersKeyPrefix: `${config.redisKeyPrefix}wrote:`,
  isShuttingDown: () => shuttingDown,
  tracer: tracing?.tracer,
  mail,
  evidenceRequests: { links, publicUrl: config.attachments.publicUrl },
  webhooks: { options: config.webhooks, worker: webhookWorker },
  nativeMemory: nativeMemory.counts,
  deviceManagement: config.deviceManagement
    ? createDeviceManagement(config.deviceManagement.url, config.deviceManagement.token)
    : undefined,
});

const auditTimers = startAuditTimers(app.services.audit.trail, {
  checkpointSeconds: config.audit.checkpointSeconds,
  retentionDays: config.audit.retentionDays,
  logger,
});

/** Attachments' objects deleted once the rows naming them are gone, and uploads never attached swept: on every replica. */
const attachmentJobs = startAttachmentJobs({ db: database.db, storeOf: attachmentStores.storeOf, logger });

/** Evidence requests' reminders (3 days before dueAt) and expiries: on every replica, each claimed once. */
const evidenceRequestJobs = startEvidenceRequestJobs({ db: database.db, mail: mail?.mailer, logger });
/** Controls whose state moved without a write (evidence expiring) recorded, and owners told of evidence coming due: on every replica. */
const controlStatusJobs = startControlStatusJobs({ db: database.db, notifier: app.services.notifier, logger });

/**
 * A refusal (401, 413, 503 busy) is answered before the body is read. Closing the connection then
 * would make the kernel reset it while the caller is still sending, and the caller could lose the
 * answer (EPIPE instead of the 503). Node reads and discards the rest of the body instead, and the
 * connection stays usable; a caller still sending this long after its answer is cut off.
 */
const DISCARD_REFUSED_BODY_MS = 2_000;

const server = createServer((req, res) => {
  // While draining, tell keep-alive clients to reconnect (to another replica).
  if (shuttingDown) res.setHeader("connection", "close");
  res.once("finish", () => {
    if (req.complete) return;
    const cutOff = setTimeout(() => req.socket.destroy(), DISCARD_REFUSED_BODY_MS).unref();
    req.once("close", () => clearTimeout(cutOff));
  });
  app.yoga(req, res);
});
// Node closes an idle keep-alive connection after 5 s; a load balancer keeps its own for 60 s (AWS
// ALB) and would send a request on one being closed. The headers' bound stays above it, as Node asks.
server.keepAliveTimeout = config.keepAliveTimeoutMs;
server.headersTimeout = config.keepAliveTimeoutMs + 1_000;
server.requestTimeout = Math.max(server.requestTimeout, server.headersTimeout);
nativeMemory.watch(server);

/**
 * The webhook worker starts this long after the server listens, and with it the job queue when
 * e-mail did not start it: pg-boss's start (its import and a dozen statements, which on the
 * embedded database queue on its one connection) would otherwise hold the first requests, /ready's
 * included, for about 0.1 s. Deliveries wait in their table meanwhile, as they wait for a poll.
 */
const WEBHOOK_WORKER_DELAY_MS = 1_000;
let webhooksTimer: NodeJS.Timeout | undefined;
function startWebhooks() {
  if (shuttingDown) return;
  jobQueue ??= startQueue();
  webhooksStarting = jobQueue
    .then(async ({ boss }) => {
      if (shuttingDown) return;
      await whileDatabaseUnavailable("the webhook worker", () => webhookWorker.start(boss));
      logger.info("the webhook worker started");
    })
    .catch((error: Error) => {
      // Stopping already: the shutdown's own steps end the process.
      if (shuttingDown) return logger.warn({ err: error }, "the webhook worker did not start before shutdown");
      logger.fatal({ err: error }, "cannot start the webhook worker");
      fail(`Cannot start: the webhook worker did not start: ${error.message}`);
    });
}

const demo =
  database.kind === "embedded" && config.seedDemoData && (await database.db.organization.count()) === 0
    ? await seedDemo(database.db)
    : null;
// Its readiness for SOC 2 too, made through the services (seed-frameworks.ts). A demo's extra: should
// it fail, the service still starts, with the rest of the demo data and a warning.
const frameworkDemo = demo
  ? await seedFrameworkDemo(database.db, app.services, demo).catch((error: Error) => {
      logger.warn({ err: error }, "the demo organization's SOC 2 part was not made");
      return null;
    })
  : null;

server.listen(config.port, config.host, () => {
  // The port listened on, which PORT=0 leaves to the OS.
  const { port } = server.address() as AddressInfo;
  const base = `http://${config.host}:${port}`;
  // What was compiled to get here is written to the compile cache now (dist/server.js turned it
  // on), not only at exit: a replica that is killed still leaves it for the next start.
  module.flushCompileCache?.();
  // The banner first: whoever waits for the "listening" line finds the demo key already printed.
  if (demo) process.stdout.write(startBanner({ base, graphiql: config.graphiql, demo, frameworks: frameworkDemo }));
  logger.info(
    { url: base, database: database.kind, redis: Boolean(redis), graphiql: config.graphiql ? `${base}/graphql` : false },
    "listening",
  );
  if (config.webhooks.worker) webhooksTimer = setTimeout(startWebhooks, WEBHOOK_WORKER_DELAY_MS);
});

/**
 * Answer /ready with 503 and keep serving for SHUTDOWN_DELAY_MS, so that a load balancer stops
 * sending before the listener closes (a connection still waiting to be accepted then would be
 * reset). Then stop taking connections, let requests in flight finish (up to SHUTDOWN_GRACE_MS),
 * and close what the process holds. Every step runs even when one before it failed; the process
 * exits 0 when all succeeded, 1 when one failed (its own log line names it), and 1 in any case at
 * SHUTDOWN_TIMEOUT_MS after the signal, so that a close that hangs never keeps a stopping replica.
 */
async function shutdown(signal: string) {
  if (shuttingDown) return;
  shuttingDown = true;
  clearTimeout(webhooksTimer);
  const signalledAt = Date.now();
  const steps: Record<string, "done" | "failed"> = {};
  let current = "";
  // Not unref'd: a step hanging on a promise with nothing else pending must not let the process end
  // as if it had stopped cleanly.
  setTimeout(() => {
    logger.fatal(
      { step: current, steps, timeoutMs: config.shutdownTimeoutMs },
      `shutdown did not finish within SHUTDOWN_TIMEOUT_MS (still at: ${current}); exiting`,
    );
    process.exit(1);
  }, config.shutdownTimeoutMs);
  logger.info(
    { signal, delayMs: config.shutdownDelayMs, graceMs: config.shutdownGraceMs, timeoutMs: config.shutdownTimeoutMs },
    "shutting down",
  );
  const run = async (step: string, action: () => unknown) => {
    current = step;
    try {
      await action();
      steps[step] = "done";
    } catch (error) {
      steps[step] = "failed";
      logger.error({ err: error, step }, `shutdown step failed: ${step}`);
    }
  };
  await run("keep serving for SHUTDOWN_DELAY_MS", () => new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs)));
  await run("close the listener and finish requests in flight", async () => {
    // Live streams would hold their connections until the grace period ends: complete them now,
    // so that their clients reconnect (to another replica) at once.
    app.closeStreams();
    const forceClose = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    clearTimeout(forceClose);
  });
  await run("dispose the GraphQL server", () => app.yoga.dispose());
  await run("stop the audit timers", () => auditTimers.stop());
  await run("stop the attachment jobs", () => attachmentJobs.stop());
  await run("stop the evidence request jobs", () => evidenceRequestJobs.stop());
  await run("stop the control status jobs", () => controlStatusJobs.stop());
  // Messages being sent finish (within SHUTDOWN_TIMEOUT_MS); the jobs not taken wait for another replica.
  await run("stop the mail worker", () => mail?.mailer.stop());
  // Attempts in flight finish (each within WEBHOOK_TIMEOUT_MS); a claim left behind lapses for another replica.
  await run("stop the webhook worker", async () => {
    await webhooksStarting;
    await webhookWorker.stop();
  });
  await run("stop the job queue", () =>
    jobQueue?.then((queue) => queue.stop(Math.max(1_000, config.shutdownTimeoutMs - (Date.now() - signalledAt) - 2_000))),
  );
  await run("close the database", () => database.close());
  await run("close Redis", () => redis?.close());
  await run("stop tracing", () => tracing?.shutdown());
  const exitCode = Object.values(steps).includes("failed") ? 1 : 0;
  logger.info({ exitCode, steps, ms: Date.now() - signalledAt }, "stopped");
  process.exit(exitCode);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
