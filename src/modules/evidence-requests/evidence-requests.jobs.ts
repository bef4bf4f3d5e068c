import type { Logger } from "pino";
import type { Db } from "../../platform/db/database.js";
import type { NotificationMail } from "../notifications/notifications.service.js";
import { expireDue, remindDue } from "./evidence-requests.service.js";

/** How often a replica looks for requests to remind of and requests whose link expired. */
const EVERY_MS = 60_000;

export type EvidenceRequestJobs = { runOnce(now?: Date): Promise<{ reminded: number; expired: number }>; stop(): Promise<void> };

/**
 * The reminders and expiries of evidence requests, on every replica (a polling loop like the
 * attachment jobs): the rows are the queue, and each change is claimed by a conditional update in
 * its own transaction, so replicas share the work without doing any of it twice.
 */
export function startEvidenceRequestJobs(options: {
  db: Db;
  mail?: NotificationMail;
  logger: Logger;
  everyMs?: number;
}): EvidenceRequestJobs {
  const { db, mail, logger } = options;
  let running: Promise<unknown> = Promise.resolve();
  const runOnce = async (now = new Date()) => {
    const reminded = await remindDue(db, mail, now);
    const expired = await expireDue(db, now);
    if (reminded || expired) logger.info({ reminded, expired }, "evidence requests reminded and expired");
    return { reminded, expired };
  };
  const timer = setInterval(() => {
    running = running.then(() => runOnce()).catch((error) => logger.error({ err: error }, "evidence request jobs failed"));
  }, options.everyMs ?? EVERY_MS);
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
