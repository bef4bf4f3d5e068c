import { filtersMatching } from "./webhooks.events.js";

/**
 * The deliveries of one audit event, as the end of the statement that inserts the event
 * (audit.chain.ts): an INSERT ... SELECT of a row per enabled endpoint of the organization whose
 * type filter matches (none when there is none). `event` names the statement's CTE that returns
 * the inserted event's "id"; `organizationId`, `action` and `filters` are its placeholders (the
 * last one bound to `deliveryFilters(action)`). The rows are the queue every replica's worker takes
 * them from (webhooks.worker.ts), so a delivery exists exactly when its event does, and costs the
 * change no statement of its own.
 */
export function deliveriesOf(event: string, p: { organizationId: string; action: string; filters: string }): string {
  return `INSERT INTO "WebhookDelivery" ("id", "organizationId", "endpointId", "eventId", "eventType", "status", "nextAttemptAt", "createdAt", "updatedAt")
SELECT 'whd_' || lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || substr(md5(random()::text || e."id"), 1, 20),
       e."organizationId", e."id", ${event}."id", ${p.action}, 'pending',
       now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
FROM ${event} CROSS JOIN "WebhookEndpoint" e
WHERE e."organizationId" = ${p.organizationId} AND e."enabled"
  AND (cardinality(e."eventTypes") = 0 OR e."eventTypes" && ${p.filters}::text[])`;
}

/** The endpoint type filters that select an event of this action (`deliveriesOf`'s `filters`). */
export function deliveryFilters(action: string): string[] {
  return filtersMatching(action);
}
