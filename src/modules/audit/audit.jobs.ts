import type { Logger } from "pino";
import type { AuditTrail } from "./audit.trail.js";

/** How often the retention purge looks for events past AUDIT_RETENTION_DAYS. */
const RETENTION_EVERY_MS = 3_600_000;

/**
 * The audit trail's timers on each replica: every AUDIT_CHECKPOINT_SECONDS a checkpoint for each
 * organization whose chain went on since its latest one (so one is signed within that time of the
 * last new event), and, with AUDIT_RETENTION_DAYS, the hourly retention purge. Replicas doing the
 * same at once are harmless: two checkpoints of one point both verify, and the purge takes the
 * organization's head row lock.
 */
export function startAuditTimers(
  trail: AuditTrail,
  options: { checkpointSeconds: number; retentionDays?: number; logger: Logger },
): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const guarded = (name: string, work: () => Promise<unknown>) => () => {
    running = running.then(work).catch((error) => options.logger.error({ err: error }, `audit ${name} failed`));
  };
  const sign = setInterval(
    guarded("checkpoint", () => trail.signDue()),
    options.checkpointSeconds * 1_000,
  );
  const days = options.retentionDays;
  const purge = days
    ? setInterval(
        guarded("retention purge", async () => {
          const removed = await trail.purgeOlderThan(days);
          if (removed) options.logger.info({ removed, retentionDays: days }, "audit retention purge");
        }),
        RETENTION_EVERY_MS,
      )
    : undefined;
  sign.unref();
  purge?.unref();
  if (days) guarded("retention purge", () => trail.purgeOlderThan(days))();
  return {
    async stop() {
      clearInterval(sign);
      clearInterval(purge);
      await running;
    },
  };
}
