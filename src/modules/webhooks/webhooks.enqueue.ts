import type { Prisma } from "../../generated/prisma/client.js";
import { filtersMatching } from "./webhooks.events.js";

/**
 * The deliveries of one audit event, written in the change's own transaction: one INSERT ... SELECT
 * of a row per enabled endpoint of the organization whose type filter matches (none when there is
 * none). The rows are the queue every replica's worker takes them from (webhooks.worker.ts), so a
 * delivery exists exactly when its event does.
 */
export async function enqueueWebhookDeliveries(
  tx: Prisma.TransactionClient,
  event: { id?: string; organizationId: string; action: string },
): Promise<void> {
  if (!event.id) return;
  await tx.$executeRaw`
    INSERT INTO "WebhookDelivery" ("id", "organizationId", "endpointId", "eventId", "eventType", "status", "nextAttemptAt", "createdAt", "updatedAt")
    SELECT 'whd_' || lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || substr(md5(random()::text || e."id"), 1, 20),
           e."organizationId", e."id", ${event.id}, ${event.action}, 'pending',
           now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
    FROM "WebhookEndpoint" e
    WHERE e."organizationId" = ${event.organizationId} AND e."enabled"
      AND (cardinality(e."eventTypes") = 0 OR e."eventTypes" && ${filtersMatching(event.action)}::text[])`;
}
