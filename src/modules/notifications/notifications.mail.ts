import { createHash } from "node:crypto";
import type Mail from "nodemailer/lib/mailer/index.js";
import type { JobWithMetadata, PgBoss } from "pg-boss";
import type { Logger } from "pino";
import { type Permission, rolePermissions } from "../../auth/permissions.js";
import type { NotificationEntityType, NotificationReason, Prisma } from "../../generated/prisma/client.js";
import type { MailConfig } from "../../platform/config.js";
import type { Db } from "../../platform/db/database.js";
import { QUEUES } from "../../platform/jobs.js";
import { composeRequestMessage, type EvidenceRequestMailJob } from "../evidence-requests/evidence-requests.mail.js";
import type { LinkTokens } from "../evidence-requests/evidence-requests.token.js";
import { referenceReadPermission } from "../request-loaders.js";
import { emailColumn, type NotificationMail } from "./notifications.service.js";
import { unsubscribeUrl } from "./notifications.unsubscribe.js";

/** The pg-boss queue of notification e-mail: one job per notification. */
export const MAIL_QUEUE = QUEUES.notificationMail;

/** Messages this replica sent, retried (an attempt failed, another follows) and failed (the last attempt failed): /metrics. */
export type MailCounts = { sent: number; retried: number; failed: number };

export type NotificationMailer = NotificationMail & {
  readonly counts: MailCounts;
  /** Starts working the queue on this replica (every replica does; each job goes to one). */
  start(): Promise<void>;
  /** Stops taking jobs, waits for messages in flight, closes the SMTP connections. */
  stop(): Promise<void>;
};

/** A notification's message to a member, or an evidence request's to its outside recipient. */
type MailJob = { notificationId: string } | EvidenceRequestMailJob;

/** What a job's log lines may name: ids and kinds, never a link. */
const jobFacts = (data: MailJob) =>
  "notificationId" in data
    ? { notificationId: data.notificationId }
    : { evidenceRequestId: data.evidenceRequestId, kind: data.kind };

/**
 * The job id of a notification's message: a UUID derived from the notification id, so that a
 * second enqueue of the same notification is the same job (pg-boss inserts with ON CONFLICT DO
 * NOTHING) and a message is never doubled by the queue.
 */
export function mailJobId(notificationId: string): string {
  return uuidOf(`notification-mail:${notificationId}`);
}

/** The job id of an evidence request's message: one job per request, kind, link generation and change. */
export function requestMailJobId(job: EvidenceRequestMailJob): string {
  return uuidOf(`evidence-request-mail:${job.evidenceRequestId}:${job.kind}:${job.generation}:${job.at}`);
}

function uuidOf(text: string): string {
  const hex = createHash("sha256").update(text).digest("hex");
  // RFC 9562 version 8 (custom) with the RFC 4122 variant: pg-boss's uuid column accepts any UUID.
  const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The Message-ID of a notification's message: the same on every attempt, so a receiver drops a resent copy. */
export function mailMessageId(notificationId: string, publicUrl: string): string {
  return `<${notificationId}@${new URL(publicUrl).hostname}>`;
}

export type NotificationMailerOptions = {
  db: Db;
  boss: PgBoss;
  config: MailConfig;
  logger: Logger;
  /** Jobs each replica fetches (and sends at once, over up to 3 SMTP connections) at a time; 10 when absent. */
  batchSize?: number;
  /** Rebuilds evidence requests' links for their e-mail (EVIDENCE_REQUEST_LINK_SECRET); such jobs fail without it. */
  links?: LinkTokens;
};

/**
 * E-mail for notifications, never lost: `enqueue` writes the jobs in the change's own transaction
 * (fromPrisma), so they exist exactly when the notifications do; every replica works the queue,
 * reads the notification as it is at sending time (a recipient deactivated or opted out since gets
 * nothing) and sends with nodemailer. A failed attempt is retried with exponential backoff
 * (MAIL_RETRY_*); after the last one the job stays in the queue as failed, for the CLI to list and retry.
 */
export async function createNotificationMailer(options: NotificationMailerOptions): Promise<NotificationMailer> {
  const { db, boss, config, logger } = options;
  const queue = {
    retryLimit: config.retryLimit,
    retryDelay: config.retryDelaySeconds,
    retryBackoff: true,
    retryDelayMax: config.retryDelayMaxSeconds,
    // An attempt that has not ended by then (a replica that died while sending) is tried again.
    expireInSeconds: 120,
    // Finished jobs (sent or failed) are kept this long: a month for an operator to find and retry the failed.
    deleteAfterSeconds: 30 * 86_400,
  };
  // Settings changed since the queue was made apply to jobs sent from now on.
  if (await boss.getQueue(MAIL_QUEUE)) {
    await boss.updateQueue(MAIL_QUEUE, queue);
  } else {
    await boss.createQueue(MAIL_QUEUE, queue);
  }
  // Loaded when e-mail is configured, not at every start (see server.ts).
  const [{ default: nodemailer }, { fromPrisma }] = await Promise.all([import("nodemailer"), import("pg-boss")]);
  const transport = nodemailer.createTransport({
    url: config.smtpUrl,
    pool: true,
    maxConnections: 3,
    // A server that does not answer must not hold a job past its expiry.
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
  const counts: MailCounts = { sent: 0, retried: 0, failed: 0 };
  let workerId: string | undefined;

  async function attempt(job: JobWithMetadata<MailJob>) {
    try {
      const { data } = job;
      let composed: Mail.Options | { skip: string };
      if ("notificationId" in data) composed = await composeMessage(db, data.notificationId, config);
      else if (options.links) composed = await composeRequestMessage({ db, config, links: options.links }, data);
      else throw new Error("this replica cannot rebuild evidence request links: start the mailer with them");
      if ("skip" in composed) {
        logger.info({ ...jobFacts(data), reason: composed.skip }, "notification e-mail not sent");
        return { id: job.id, status: "completed" as const, output: { skipped: composed.skip } };
      }
      const info = await transport.sendMail(composed);
      counts.sent++;
      return { id: job.id, status: "completed" as const, output: { messageId: info.messageId } };
    } catch (error) {
      const last = job.retryCount >= job.retryLimit;
      if (last) counts.failed++;
      else counts.retried++;
      logger[last ? "error" : "warn"](
        { err: error, ...jobFacts(job.data), attempt: job.retryCount + 1, of: job.retryLimit + 1 },
        last ? "notification e-mail failed after its last attempt; kept as failed" : "notification e-mail failed; will retry",
      );
      return { id: job.id, status: "failed" as const, output: { message: (error as Error).message } };
    }
  }

  return {
    counts,
    async enqueue(tx: Prisma.TransactionClient, notificationIds: readonly string[]) {
      if (notificationIds.length === 0) return;
      await boss.insert(
        MAIL_QUEUE,
        notificationIds.map((notificationId) => ({ id: mailJobId(notificationId), data: { notificationId } })),
        { db: fromPrisma(tx) },
      );
    },
    async enqueueEvidenceRequest(tx: Prisma.TransactionClient, job: EvidenceRequestMailJob) {
      await boss.insert(MAIL_QUEUE, [{ id: requestMailJobId(job), data: job }], { db: fromPrisma(tx) });
    },
    async start() {
      workerId ??= await boss.work(
        MAIL_QUEUE,
        {
          batchSize: options.batchSize ?? 10,
          // A full batch means more are waiting: fetch again at once instead of after the poll interval.
          burstWhenBatchFull: true,
          includeMetadata: true,
          perJobResults: true,
          pollingIntervalSeconds: config.pollIntervalSeconds,
        },
        (jobs: JobWithMetadata<MailJob>[]) => Promise.all(jobs.map(attempt)),
      );
    },
    async stop() {
      if (workerId) await boss.offWork(MAIL_QUEUE, { id: workerId, wait: true });
      workerId = undefined;
      transport.close();
    },
  };
}

const notificationReadPermission: Record<NotificationEntityType, Permission> = {
  ...referenceReadPermission,
  webhook_endpoint: "webhook:manage",
  control: "control:read",
  evidence_request: "control:read",
};

const entityNames: Record<NotificationEntityType, string> = {
  task: "task",
  task_item: "task item",
  vendor: "vendor",
  risk: "risk",
  policy: "policy",
  webhook_endpoint: "webhook endpoint",
  control: "control",
  evidence_request: "evidence request",
};

const reasonNames: Record<NotificationReason, string> = {
  mention: "mentions",
  assigned: "assignments",
  review_requested: "review requests",
  review_completed: "completed reviews",
  webhook_disabled: "disabled webhook endpoints",
  control_not_ready: "controls that are not ready",
  evidence_due: "evidence coming due",
  evidence_submitted: "submitted evidence",
};

async function titleOf(db: Db, organizationId: string, type: NotificationEntityType, id: string): Promise<string | undefined> {
  const where = { id, organizationId };
  switch (type) {
    case "task":
      return (await db.task.findFirst({ where, select: { title: true } }))?.title;
    case "task_item":
      return (await db.taskItem.findFirst({ where, select: { title: true } }))?.title;
    case "vendor":
      return (await db.vendor.findFirst({ where, select: { name: true } }))?.name;
    case "risk":
      return (await db.risk.findFirst({ where, select: { title: true } }))?.title;
    case "policy":
      return (await db.policy.findFirst({ where, select: { name: true } }))?.name;
    case "webhook_endpoint":
      return (await db.webhookEndpoint.findFirst({ where, select: { url: true } }))?.url;
    case "control": {
      const control = await db.control.findFirst({ where, select: { code: true, name: true } });
      return control ? `${control.code} ${control.name}` : undefined;
    }
    case "evidence_request":
      return (await db.evidenceRequest.findFirst({ where, select: { title: true } }))?.title;
  }
}

/** One line, at most `max` characters: a title goes into a subject. */
function short(text: string, max = 100): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Escapes text for HTML element content and attribute values. */
function html(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The message for a notification as things stand now, or why none is sent. Everything in it comes
 * from the notification and its records, and the Date is the notification's: a retry composes the
 * same message (same Message-ID, same unsubscribe link).
 */
export async function composeMessage(
  db: Db,
  notificationId: string,
  config: MailConfig,
): Promise<Mail.Options | { skip: string }> {
  const notification = await db.notification.findUnique({
    where: { id: notificationId },
    include: {
      organization: { select: { name: true } },
      recipient: {
        select: {
          organizationId: true,
          isActive: true,
          role: true,
          user: { select: { email: true, name: true } },
          notificationPreference: true,
        },
      },
      actor: { select: { user: { select: { name: true } } } },
    },
  });
  if (!notification) return { skip: "the notification no longer exists" };
  const { recipient } = notification;
  // The recipient must belong to the notification's organization: never mail another's members.
  if (recipient.organizationId !== notification.organizationId) return { skip: "the recipient is not of the organization" };
  if (!recipient.isActive) return { skip: "the recipient is no longer an active member" };
  if (notification.actorId === notification.recipientId) return { skip: "the recipient made the change" };
  if (recipient.notificationPreference?.[emailColumn[notification.reason]] === false) {
    return { skip: "the recipient switched this e-mail off" };
  }
  const title = await titleOf(db, notification.organizationId, notification.entityType, notification.entityId);
  if (title === undefined) return { skip: "the record no longer exists" };

  const actor = notification.actor?.user.name ?? "An API key";
  const kind = entityNames[notification.entityType];
  // A subject and body name the record only to a recipient whose role may read it: a mention on a
  // vendor reaches a contractor, who has no `vendor:read`, as "a vendor".
  const readPermission = notificationReadPermission[notification.entityType];
  const mayRead = rolePermissions[recipient.role].includes(readPermission);
  const quoted = mayRead ? `the ${kind} "${short(title)}"` : `a ${kind}`;
  const what = {
    mention: `${actor} mentioned you on ${quoted}`,
    assigned: `${actor} assigned you ${quoted}`,
    review_requested: `${actor} asked you to review ${quoted}`,
    // Notifications written before the outcome was recorded have none: "reviewed" then.
    review_completed: `${actor} ${notification.outcome ?? "reviewed"} your version of ${quoted}`,
    webhook_disabled: `${quoted.charAt(0).toUpperCase()}${quoted.slice(1)} was disabled: it answered 410 Gone or kept failing`,
    control_not_ready: `${quoted.charAt(0).toUpperCase()}${quoted.slice(1)}, which you own, is no longer ready`,
    evidence_due: `The evidence of ${quoted}, which you own, expires within 14 days`,
    evidence_submitted: `Evidence was submitted for ${quoted}`,
  }[notification.reason];
  const unsubscribe = await unsubscribeUrl(config, {
    memberId: notification.recipientId,
    reason: notification.reason,
    issuedAt: notification.createdAt,
  });
  const why = `You receive this because e-mail for ${reasonNames[notification.reason]} is on in your notification preferences in ${notification.organization.name}.`;
  const text = [
    `${what}.`,
    "",
    ...(notification.url ? [`Open it: ${notification.url}`, ""] : []),
    "--",
    why,
    `Stop e-mail for ${reasonNames[notification.reason]}: ${unsubscribe}`,
    "",
  ].join("\n");
  const body = [
    "<!doctype html>",
    '<html><body style="font-family: sans-serif">',
    `<p>${html(what)}.</p>`,
    ...(notification.url ? [`<p><a href="${html(notification.url)}">Open it</a></p>`] : []),
    `<hr><p style="color: #666; font-size: small">${html(why)} <a href="${html(unsubscribe)}">Stop e-mail for ${html(reasonNames[notification.reason])}</a>.</p>`,
    "</body></html>",
  ].join("\n");
  return {
    from: config.from,
    to: { name: recipient.user.name, address: recipient.user.email },
    subject: what,
    text,
    html: body,
    messageId: mailMessageId(notification.id, config.publicUrl),
    date: notification.createdAt,
    headers: {
      // RFC 8058 one-click unsubscribe: the provider POSTs List-Unsubscribe=One-Click to this URL.
      "List-Unsubscribe": `<${unsubscribe}>`,
      "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
      // RFC 3834: no vacation auto-replies to a notification.
      "Auto-Submitted": "auto-generated",
    },
  };
}
