import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import { WebhookDeliveryStatus } from "../../generated/prisma/enums.js";
import {
  column,
  dateBoundRules,
  dateSortKeys,
  type FilterRule,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  oneOf,
} from "../../graphql/lists.js";
import type { RecordQuery } from "../../graphql/loaders.js";
import type { WebhookConfig } from "../../platform/config.js";
import type { Db } from "../../platform/db/database.js";
import { BadUserInputError, ConflictError, NotFoundError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { limit, list, text } from "../../platform/limits.js";
import { notNull, parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, changesBetween, writeAuditEvent } from "../audit/audit.service.js";
import { isKnownTypeFilter, webhookEventTypes } from "./webhooks.events.js";
import { attemptDelivery, type Resolver, systemResolver, urlOrigin, urlProblem } from "./webhooks.http.js";
import { buildMessage, recordAttempt, type Sent } from "./webhooks.message.js";

export const webhookLimits = {
  url: limit({ minLength: 1, maxLength: 2048 }),
  description: limit({ maxLength: 500 }),
  eventTypes: limit({ maxItems: 50 }),
};

type EndpointQuery = { select?: Prisma.WebhookEndpointSelect; include?: Prisma.WebhookEndpointInclude };
type DeliveryQuery = { select?: Prisma.WebhookDeliverySelect; include?: Prisma.WebhookDeliveryInclude };

/** The organization's endpoints, newest first. */
export const webhookEndpointList: ListSpec = {
  table: "WebhookEndpoint",
  parent: [],
  filters: {
    enabled: ((value: boolean) => Prisma.sql`${column("enabled")} = ${value}`) as FilterRule,
    ...dateBoundRules(true),
  },
  orders: dateSortKeys(true),
  defaultOrder: newestFirst,
};

/** One endpoint's deliveries: what `webhookDeliveries` filters by. */
export const webhookDeliveryList: ListSpec = {
  table: "WebhookDelivery",
  parent: [{ name: "endpointId", sqlType: "text" }],
  filters: {
    status: oneOf("status", '"WebhookDeliveryStatus"'),
    eventType: oneOf("eventType", "text"),
    ...dateBoundRules(true),
  },
  orders: dateSortKeys(true),
  defaultOrder: newestFirst,
};

const eventTypes = list(
  z.string().refine(isKnownTypeFilter, "is not a known event type (see webhookEventTypes); a filter may end in .*"),
  webhookLimits.eventTypes,
);

export type WebhookServiceOptions = Pick<WebhookConfig, "allowedCidrs" | "httpsOnly" | "timeoutMs" | "retrySchedule"> & {
  resolve?: Resolver;
};

const defaults: WebhookServiceOptions = {
  allowedCidrs: [],
  httpsOnly: false,
  timeoutMs: 15_000,
  retrySchedule: [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400],
};

/** `whsec_` + base64 of 32 random bytes, as Standard Webhooks' libraries take it. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/** After a rotation, the old secret still signs for this long. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

type EndpointFields = { url: string; description: string; eventTypes: string[]; enabled: boolean };

export function createWebhookService(db: Db, options: Partial<WebhookServiceOptions> = {}) {
  const settings = { ...defaults, ...options };
  const resolve = settings.resolve ?? systemResolver;
  const url = text(webhookLimits.url).superRefine((value, ctx) => {
    const problem = urlProblem(value, settings);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
  const createInput = z.object({
    url,
    description: text(webhookLimits.description).nullish(),
    eventTypes: eventTypes.nullish(),
  });
  const updateInput = z
    .object({
      url: url.optional(),
      description: text(webhookLimits.description).nullish(),
      eventTypes: eventTypes.optional(),
      enabled: z.boolean(notNull).optional(),
    })
    .refine((input) => Object.values(input).some((v) => v !== undefined), "give at least one field to change");

  /** A disabled endpoint's deliveries would only fail again ("the endpoint is disabled"). */
  const disabledEndpoint = (endpointId: string) =>
    new ConflictError(
      `The endpoint is disabled: enable it first (PATCH /v1/webhook-endpoints/${endpointId} with enabled: true), then queue its deliveries again`,
    );

  async function endpointOf(actor: Actor, id: string) {
    const endpoint = await db.webhookEndpoint.findUnique({ where: { id, organizationId: actor.organizationId } });
    if (!endpoint) throw new NotFoundError("Webhook endpoint", id);
    return endpoint;
  }

  return {
    settings,

    async create(
      actor: Actor,
      args: WithNulls<{ url: string; description?: string; eventTypes?: string[] }>,
      query: EndpointQuery,
    ) {
      const input = parseInput(createInput, args);
      const id = newId("whe");
      return db.$transaction(async (tx) => {
        const data = { url: input.url, description: input.description ?? "", eventTypes: [...new Set(input.eventTypes ?? [])] };
        const endpoint = await tx.webhookEndpoint.create({
          ...query,
          data: { id, organizationId: actor.organizationId, secret: newSecret(), ...data },
        });
        await writeAuditEvent(
          tx,
          auditEvent(actor, "webhook_endpoint.created", { type: "webhook_endpoint", id }, { ...data, url: urlOrigin(data.url) }),
        );
        return endpoint;
      });
    },

    get: async (actor: Actor, id: string, query: EndpointQuery) => {
      const endpoint = await db.webhookEndpoint.findUnique({ ...query, where: { id, organizationId: actor.organizationId } });
      if (!endpoint) throw new NotFoundError("Webhook endpoint", id);
      return endpoint;
    },

    async list(actor: Actor, args: ListArgs, query: EndpointQuery) {
      return listPage(db, actor.organizationId, webhookEndpointList, { ...args, query }, (ids, q: RecordQuery) =>
        db.webhookEndpoint.findMany({
          ...(q as EndpointQuery),
          where: { id: { in: ids }, organizationId: actor.organizationId },
        }),
      );
    },

    /** Re-enabling (enabled: true) clears disabledReason; disabling by hand sets it to manual. */
    async update(
      actor: Actor,
      id: string,
      args: WithNulls<{ url?: string; description?: string; eventTypes?: string[]; enabled?: boolean }>,
      query: EndpointQuery,
    ) {
      const input = parseInput(updateInput, args);
      return db.$transaction(async (tx) => {
        const [current] = await tx.$queryRaw<EndpointFields[]>`
          SELECT "url", "description", "eventTypes", "enabled" FROM "WebhookEndpoint"
          WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
        if (!current) throw new NotFoundError("Webhook endpoint", id);
        const wanted: Partial<EndpointFields> = {
          url: input.url,
          description: input.description === null ? "" : input.description,
          eventTypes: input.eventTypes ? [...new Set(input.eventTypes)] : undefined,
          enabled: input.enabled,
        };
        const { changes, data } = changesBetween(
          { ...current, eventTypes: current.eventTypes.join("\n") as never },
          { ...wanted, eventTypes: wanted.eventTypes?.join("\n") as never },
        );
        if (changes.eventTypes) changes.eventTypes = { from: current.eventTypes, to: wanted.eventTypes };
        if (changes.url) changes.url = { from: urlOrigin(current.url), to: urlOrigin(wanted.url as string) };
        const set = {
          ...data,
          ...(data.eventTypes !== undefined ? { eventTypes: wanted.eventTypes } : {}),
          ...(data.enabled === true ? { disabledReason: null } : {}),
          ...(data.enabled === false ? { disabledReason: "manual" as const } : {}),
        };
        const endpoint = await tx.webhookEndpoint.update({ ...query, where: { id }, data: set });
        if (Object.keys(changes).length > 0) {
          await writeAuditEvent(
            tx,
            auditEvent(actor, "webhook_endpoint.updated", { type: "webhook_endpoint", id }, { changes } as never),
          );
        }
        return endpoint;
      });
    },

    async delete(actor: Actor, id: string) {
      return db.$transaction(async (tx) => {
        const deleted = await tx.webhookEndpoint.deleteMany({ where: { id, organizationId: actor.organizationId } });
        if (deleted.count === 0) throw new NotFoundError("Webhook endpoint", id);
        await writeAuditEvent(tx, auditEvent(actor, "webhook_endpoint.deleted", { type: "webhook_endpoint", id }, {}));
        return { id };
      });
    },

    /** A new secret; the old one keeps signing (beside it) for 24 hours. */
    async rotateSecret(actor: Actor, id: string, query: EndpointQuery) {
      return db.$transaction(async (tx) => {
        const [current] = await tx.$queryRaw<{ secret: string }[]>`
          SELECT "secret" FROM "WebhookEndpoint" WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
        if (!current) throw new NotFoundError("Webhook endpoint", id);
        const endpoint = await tx.webhookEndpoint.update({
          ...query,
          where: { id },
          data: {
            secret: newSecret(),
            previousSecret: current.secret,
            previousSecretUntil: new Date(Date.now() + ROTATION_OVERLAP_MS),
          },
        });
        await writeAuditEvent(tx, auditEvent(actor, "webhook_endpoint.secret_rotated", { type: "webhook_endpoint", id }, {}));
        return endpoint;
      });
    },

    eventTypes: () => Object.entries(webhookEventTypes).map(([type, description]) => ({ type, description })),

    async deliveries(actor: Actor, { id, ...args }: { id: string } & ListArgs, query: DeliveryQuery) {
      const endpoint = await endpointOf(actor, id);
      return listPage(
        db,
        actor.organizationId,
        webhookDeliveryList,
        { ...args, parent: [endpoint.id], query },
        (ids, q: RecordQuery) =>
          db.webhookDelivery.findMany({
            ...(q as DeliveryQuery),
            where: { id: { in: ids }, organizationId: actor.organizationId },
          }),
      );
    },

    /**
     * Queues the delivery to be attempted now by whichever replica takes it first. A test message
     * is not redelivered (send another), nor a delivery of a disabled endpoint (enable it first).
     */
    async redeliver(actor: Actor, id: string, query: DeliveryQuery) {
      const delivery = await db.webhookDelivery.findUnique({
        where: { id, organizationId: actor.organizationId },
        select: { eventType: true, endpoint: { select: { id: true, enabled: true } } },
      });
      if (!delivery) throw new NotFoundError("Webhook delivery", id);
      if (delivery.eventType === "webhook.test") {
        throw new ConflictError(
          `A test message is not redelivered: send a new one (POST /v1/webhook-endpoints/${delivery.endpoint.id}/test)`,
        );
      }
      if (!delivery.endpoint.enabled) throw disabledEndpoint(delivery.endpoint.id);
      // Never while a replica attempts it: one attempt at a time per delivery.
      const updated = await db.webhookDelivery.updateMany({
        where: { id, organizationId: actor.organizationId, OR: [{ lockedUntil: null }, { lockedUntil: { lt: new Date() } }] },
        // No job yet: the relay gives it one (webhooks.worker.ts), and a job it had before no longer claims it.
        data: { status: "pending", nextAttemptAt: new Date(), lockedUntil: null, jobId: null },
      });
      if (updated.count === 0) {
        throw new ConflictError("The delivery is being attempted right now: redeliver it once that attempt has ended");
      }
      return db.webhookDelivery.findUniqueOrThrow({ ...query, where: { id } });
    },

    /** Queues every failed delivery of the endpoint created since `since`; answers how many. */
    async replay(actor: Actor, id: string, since: string) {
      const from = new Date(since);
      if (!/^\d{4}-\d{2}-\d{2}T/.test(since) || Number.isNaN(from.getTime())) {
        throw new BadUserInputError("since: must be an ISO 8601 date-time, e.g. 2026-11-26T08:00:00Z", [
          { path: "since", message: "must be an ISO 8601 date-time" },
        ]);
      }
      const endpoint = await endpointOf(actor, id);
      if (!endpoint.enabled) throw disabledEndpoint(endpoint.id);
      const queued = await db.webhookDelivery.updateMany({
        where: { endpointId: endpoint.id, status: "failed", createdAt: { gte: from }, eventType: { not: "webhook.test" } },
        data: { status: "pending", nextAttemptAt: new Date(), lockedUntil: null, jobId: null },
      });
      return { queued: queued.count };
    },

    /** Sends a `webhook.test` message now, whatever the type filter, and answers the attempt (not retried). */
    async sendTest(actor: Actor, id: string, query: DeliveryQuery) {
      const endpoint = await endpointOf(actor, id);
      const deliveryId = newId("whd");
      const eventId = newId("msg");
      const message = JSON.stringify({
        type: "webhook.test",
        timestamp: new Date().toISOString(),
        data: { eventId, organizationId: actor.organizationId, endpointId: endpoint.id },
      });
      const sent: Sent = await attemptDelivery(endpoint.url, buildMessage(endpoint, eventId, message).headers, message, {
        ...settings,
        resolve,
      });
      await db.webhookDelivery.create({
        data: {
          id: deliveryId,
          organizationId: actor.organizationId,
          endpointId: endpoint.id,
          eventId,
          eventType: "webhook.test",
          ...recordAttempt(sent, 1, null),
        },
      });
      return db.webhookDelivery.findUniqueOrThrow({ ...query, where: { id: deliveryId } });
    },

    statusValues: Object.values(WebhookDeliveryStatus),
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
