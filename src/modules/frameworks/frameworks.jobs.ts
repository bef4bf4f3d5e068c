import type { Logger } from "pino";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db } from "../../platform/db/database.js";
import type { Notifier } from "../notifications/notifications.service.js";
import { controlStatesSql, recordControlStatusChanges } from "./frameworks.readiness.js";

/**
 * Time moves readiness: evidence expires without a write. On every replica, a loop like the
 * attachment jobs (comments/attachments.jobs.ts) looks at each organization's controls, records
 * each whose state is no longer the one last recorded (`control.status_changed`, as a write would,
 * with no actor) and tells owners of evidence coming due. Replicas share the work safely: a control
 * is recorded under its row lock, taken with SKIP LOCKED, and `recordedState` read under it, so a
 * change is recorded once; a due notice is claimed by a conditional update of `dueNoticeFor`.
 */

const { sql } = Prisma;

/** How often a replica looks: well within the hour the contract allows. */
export const STATUS_EVERY_MS = 10 * 60_000;
/** An owner hears of evidence coming due this long before its evidenceDueAt. */
export const DUE_NOTICE_MS = 14 * 86_400_000;

export type StatusPass = { recorded: number; dueNotices: number };

/** One pass over every organization's controls at `now` (the loop's; tests pass their own clock). */
export async function runStatusPass(db: Db, notifier: Notifier, now = new Date()): Promise<StatusPass> {
  const pass: StatusPass = { recorded: 0, dueNotices: 0 };
  const organizations = await db.$queryRaw<{ organizationId: string }[]>`SELECT DISTINCT "organizationId" FROM "Control"`;
  for (const { organizationId } of organizations) {
    const states = controlStatesSql(organizationId, now, sql`TRUE`);
    const changed = await db.$queryRaw<{ controlId: string }[]>`
      SELECT s."controlId" FROM (${states}) s JOIN "Control" c ON c."id" = s."controlId"
      WHERE s."state" IS DISTINCT FROM COALESCE(c."recordedState", 'not_ready')`;
    if (changed.length > 0) {
      const system = { organizationId };
      pass.recorded += await notifier.transaction(db, system, async (tx, notify) => {
        const mine = await tx.$queryRaw<{ id: string }[]>`
          SELECT "id" FROM "Control"
          WHERE "organizationId" = ${organizationId} AND "id" = ANY(${changed.map((c) => c.controlId)}::text[])
          ORDER BY "id" FOR UPDATE SKIP LOCKED`;
        const recorded = await recordControlStatusChanges(
          tx,
          "system",
          organizationId,
          mine.map((c) => c.id),
          { notify, now },
        );
        return recorded.length;
      });
    }
    pass.dueNotices += await notifyDue(db, notifier, organizationId, now);
  }
  return pass;
}

/**
 * Tells each owner, once per evidenceDueAt, that a control's evidence expires within 14 days: the
 * controls that require evidence (evidenceEveryDays), whose latest accepted evidence runs out in
 * (now, now + 14 days], and whose owner was not yet told of that instant.
 */
async function notifyDue(db: Db, notifier: Notifier, organizationId: string, now: Date): Promise<number> {
  const states = controlStatesSql(organizationId, now, sql`c."evidenceEveryDays" IS NOT NULL AND c."ownerId" IS NOT NULL`);
  const horizon = new Date(now.getTime() + DUE_NOTICE_MS);
  const due = await db.$queryRaw<{ controlId: string; dueAt: Date }[]>`
    SELECT s."controlId", s."evidenceDueAt" AS "dueAt" FROM (${states}) s JOIN "Control" c ON c."id" = s."controlId"
    WHERE s."evidenceDueAt" > ${now.toISOString()}::timestamp(3) AND s."evidenceDueAt" <= ${horizon.toISOString()}::timestamp(3)
      AND c."dueNoticeFor" IS DISTINCT FROM s."evidenceDueAt"`;
  if (due.length === 0) return 0;
  return notifier.transaction(db, { organizationId }, async (tx, notify) => {
    // The claim: of replicas noticing the same instant, the one whose update changes the row tells.
    const claimed = await tx.$queryRaw<{ id: string; ownerId: string | null }[]>`
      UPDATE "Control" c SET "dueNoticeFor" = v."dueAt"
      FROM unnest(${due.map((d) => d.controlId)}::text[], ${due.map((d) => new Date(d.dueAt).toISOString())}::timestamp(3)[]) AS v("id", "dueAt")
      WHERE c."id" = v."id" AND c."organizationId" = ${organizationId} AND c."dueNoticeFor" IS DISTINCT FROM v."dueAt"
      RETURNING c."id", c."ownerId"`;
    await notify(
      ...claimed.map((c) => ({
        reason: "evidence_due" as const,
        recipientIds: [c.ownerId],
        entity: { type: "control" as const, id: c.id },
      })),
    );
    return claimed.length;
  });
}

export type ControlStatusJobs = {
  /** One pass now (tests; the loop calls it). */
  runOnce(now?: Date): Promise<StatusPass>;
  stop(): Promise<void>;
};

/** Starts the loop on this replica. */
export function startControlStatusJobs(options: {
  db: Db;
  notifier: Notifier;
  logger: Logger;
  everyMs?: number;
}): ControlStatusJobs {
  const { db, notifier, logger } = options;
  let running: Promise<unknown> = Promise.resolve();
  const runOnce = async (now = new Date()) => {
    const pass = await runStatusPass(db, notifier, now);
    if (pass.recorded || pass.dueNotices) logger.info(pass, "control status changes recorded");
    return pass;
  };
  const timer = setInterval(() => {
    running = running.then(() => runOnce()).catch((error) => logger.error({ err: error }, "control status job failed"));
  }, options.everyMs ?? STATUS_EVERY_MS);
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
