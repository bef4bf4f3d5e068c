import { authorize } from "../../auth/actor.js";
import {
  WebhookDeliveryStatus as DeliveryStatusValues,
  WebhookDisabledReason as DisabledReasonValues,
} from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs } from "../../graphql/page.schema.js";
import { anyDateTime, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { webhookDeliveryList, webhookEndpointList, webhookLimits } from "./webhooks.service.js";

const WebhookDisabledReason = builder.enumType(DisabledReasonValues, {
  name: "WebhookDisabledReason",
  description: "Why an endpoint is disabled",
  values: {
    gone: { description: "It answered 410 Gone" },
    failing: { description: "Every delivery failed for WEBHOOK_DISABLE_AFTER_HOURS" },
    manual: { description: "Someone disabled it (updateWebhookEndpoint enabled: false)" },
  },
});

const WebhookDeliveryStatus = builder.enumType(DeliveryStatusValues, {
  name: "WebhookDeliveryStatus",
  description: "Where a delivery stands",
  values: {
    pending: { description: "Not attempted yet, or queued again (redeliver, replay)" },
    succeeded: { description: "The endpoint answered 2xx" },
    retrying: { description: "An attempt failed; the next is at nextAttemptAt" },
    failed: { description: "The last attempt failed, or the endpoint answered 410: no more attempts" },
  },
});

const endpointDescription = "Where the organization's events are sent, signed per Standard Webhooks (v1).";

const WebhookEndpoint = builder.prismaObject("WebhookEndpoint", {
  description: endpointDescription,
  fields: (t) => ({
    id: t.exposeID("id", { description: "Webhook endpoint id (whe_…)" }),
    url: t.exposeString("url", { description: "Where messages are POSTed" }),
    description: t.exposeString("description", { description: "What the endpoint is for; empty when not set" }),
    eventTypes: t.exposeStringList("eventTypes", {
      description: "The event types sent (an item ending in .* matches a family); empty: every type",
    }),
    enabled: t.exposeBoolean("enabled", { description: "Whether messages are sent" }),
    disabledReason: t.expose("disabledReason", {
      type: WebhookDisabledReason,
      nullable: true,
      description: "Why it is disabled; null while enabled",
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the endpoint was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the endpoint last changed" }),
  }),
});

const WebhookEndpointWithSecret = builder.prismaObject("WebhookEndpoint", {
  variant: "WebhookEndpointWithSecret",
  description: `${endpointDescription} With its signing secret: only create and rotate answer it, once.`,
  fields: (t) => ({
    id: t.exposeID("id", { description: "Webhook endpoint id (whe_…)" }),
    url: t.exposeString("url", { description: "Where messages are POSTed" }),
    description: t.exposeString("description", { description: "What the endpoint is for; empty when not set" }),
    eventTypes: t.exposeStringList("eventTypes", {
      description: "The event types sent (an item ending in .* matches a family); empty: every type",
    }),
    enabled: t.exposeBoolean("enabled", { description: "Whether messages are sent" }),
    disabledReason: t.expose("disabledReason", {
      type: WebhookDisabledReason,
      nullable: true,
      description: "Why it is disabled; null while enabled",
    }),
    secret: t.exposeString("secret", {
      description: "The signing secret (whsec_ + base64 of 32 bytes): keep it, no read shows it again",
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the endpoint was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the endpoint last changed" }),
  }),
});

const WebhookDelivery = builder.prismaObject("WebhookDelivery", {
  description: "One event sent (or to be sent) to one endpoint, with its last attempt.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Delivery id (whd_…)" }),
    endpointId: t.exposeID("endpointId", { description: "The endpoint's id" }),
    endpoint: t.relation("endpoint", { ...graphOnly, description: "The endpoint" }),
    eventId: t.exposeID("eventId", { description: "The audit event's id: the message's webhook-id" }),
    eventType: t.exposeString("eventType", { description: "The event type, e.g. comment.created" }),
    status: t.expose("status", { type: WebhookDeliveryStatus, description: "pending, succeeded, retrying or failed" }),
    attempts: t.exposeInt("attempts", { description: "Attempts made" }),
    lastAttemptAt: t.expose("lastAttemptAt", { type: "DateTime", nullable: true, description: "When the last attempt was made" }),
    nextAttemptAt: t.expose("nextAttemptAt", {
      type: "DateTime",
      nullable: true,
      description: "When the next attempt is due; null once succeeded or failed",
    }),
    responseStatus: t.exposeInt("responseStatus", { nullable: true, description: "The HTTP status of the last answer" }),
    responseBody: t.exposeString("responseBody", { nullable: true, description: "The first KB of the last answer" }),
    durationMs: t.exposeInt("durationMs", { nullable: true, description: "How long the last attempt took" }),
    error: t.exposeString("error", { nullable: true, description: "Why the last attempt failed" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the delivery was queued" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the delivery last changed" }),
  }),
});

const WebhookEventType = builder.objectRef<{ type: string; description: string }>("WebhookEventType").implement({
  description: "An event type an endpoint can subscribe to",
  fields: (t) => ({
    type: t.exposeString("type", { description: "The type, e.g. comment.created" }),
    description: t.exposeString("description", { description: "When it is sent" }),
  }),
});

const DeletedWebhookEndpoint = builder.objectRef<{ id: string }>("DeletedWebhookEndpoint").implement({
  description: "The endpoint deleted (REST answers 204)",
  fields: (t) => ({ id: t.exposeID("id", { description: "Its id" }) }),
});

const WebhookReplay = builder.objectRef<{ queued: number }>("WebhookReplay").implement({
  description: "What a replay queued",
  fields: (t) => ({ queued: t.exposeInt("queued", { description: "Failed deliveries queued again" }) }),
});

const manage = "Needs `webhook:manage`.";
const endpointId = (t: { arg: { id: (o: object) => never } }) =>
  t.arg.id({ required: true, description: "The webhook endpoint id" });

builder.mutationField("createWebhookEndpoint", (t) =>
  t.prismaField({
    type: WebhookEndpointWithSecret,
    description: `Register an endpoint; the answer carries its signing secret, once. ${manage}`,
    args: {
      url: t.arg.string({
        required: true,
        ...limited("An http(s) URL; not localhost or a private address (https only in production)", webhookLimits.url),
      }),
      description: t.arg.string(limited("What the endpoint is for", webhookLimits.description)),
      eventTypes: t.arg.stringList({
        required: { list: false, items: true },
        ...limited(
          "The event types to send (see webhookEventTypes; `policy.*` for a family); empty or absent: every type",
          webhookLimits.eventTypes,
        ),
      }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.webhooks.create(authorize(ctx, "webhook:manage"), args, query),
  }),
);

builder.mutationField("updateWebhookEndpoint", (t) =>
  t.prismaField({
    type: WebhookEndpoint,
    description: `Change an endpoint; enabled: true re-enables a disabled one. An omitted argument keeps its value. ${manage}`,
    args: {
      id: endpointId(t as never),
      url: t.arg.string(limited("New URL", webhookLimits.url)),
      description: t.arg.string(limited("New description; null clears it", webhookLimits.description)),
      eventTypes: t.arg.stringList({
        required: { list: false, items: true },
        ...limited("New event types; empty: every type", webhookLimits.eventTypes),
      }),
      enabled: t.arg.boolean({ description: "false disables (reason manual), true re-enables" }),
    },
    resolve: (query, _root, { id, ...args }, ctx) =>
      ctx.services.webhooks.update(authorize(ctx, "webhook:manage"), id, args as never, query),
  }),
);

builder.mutationField("deleteWebhookEndpoint", (t) =>
  t.field({
    type: DeletedWebhookEndpoint,
    description: `Delete an endpoint with its delivery log (REST: 204). ${manage}`,
    args: { id: endpointId(t as never) },
    resolve: (_root, args, ctx) => ctx.services.webhooks.delete(authorize(ctx, "webhook:manage"), args.id),
  }),
);

builder.mutationField("rotateWebhookEndpointSecret", (t) =>
  t.prismaField({
    type: WebhookEndpointWithSecret,
    description: `A new signing secret, answered once; for 24 hours messages carry the old signature beside the new. ${manage}`,
    args: { id: endpointId(t as never) },
    resolve: (query, _root, args, ctx) => ctx.services.webhooks.rotateSecret(authorize(ctx, "webhook:manage"), args.id, query),
  }),
);

builder.queryField("webhookEndpoint", (t) =>
  t.prismaField({
    type: WebhookEndpoint,
    nullable: true,
    description: `Get an endpoint by id (never its secret). ${manage}`,
    args: { id: endpointId(t as never) },
    resolve: (query, _root, args, ctx) => ctx.services.webhooks.get(authorize(ctx, "webhook:manage"), args.id, query),
  }),
);

const WebhookEndpointConnection = defineConnection("WebhookEndpoint", WebhookEndpoint);

const webhookEndpointListArgs = listArgs("WebhookEndpoint", webhookEndpointList, {
  description: "Which webhook endpoints a list shows.",
  fields: (t) => ({
    enabled: t.boolean({ description: "Only enabled (true) or disabled (false) endpoints" }),
    ...dateBounds(t, "endpoints", true),
  }),
});

builder.queryField("webhookEndpoints", (t) =>
  t.field({
    type: WebhookEndpointConnection,
    nullable: true,
    description: `The organization's webhook endpoints (default newest first), with their totalCount. ${manage}`,
    args: webhookEndpointListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.webhooks.list(authorize(ctx, "webhook:manage"), args, itemsQuery(ctx, info, "WebhookEndpoint")),
  }),
);

builder.queryField("webhookEventTypes", (t) =>
  t.field({
    type: [WebhookEventType],
    description: `The event types an endpoint can subscribe to, each with a description. ${manage}`,
    resolve: (_root, _args, ctx) => {
      authorize(ctx, "webhook:manage");
      return ctx.services.webhooks.eventTypes();
    },
  }),
);

const WebhookDeliveryConnection = defineConnection("WebhookDelivery", WebhookDelivery);

const webhookDeliveryListArgs = listArgs("WebhookDelivery", webhookDeliveryList, {
  description: "Which deliveries of an endpoint a list shows.",
  fields: (t) => ({
    status: t.field({
      type: [WebhookDeliveryStatus],
      required: { list: false, items: true },
      ...anyOf("Only deliveries in these statuses"),
    }),
    eventType: t.stringList({ required: { list: false, items: true }, ...anyOf("Only these event types, e.g. comment.created") }),
    ...dateBounds(t, "deliveries", true),
  }),
});

builder.queryField("webhookDeliveries", (t) =>
  t.field({
    type: WebhookDeliveryConnection,
    nullable: true,
    description: `An endpoint's delivery log, filtered (default newest first), with their totalCount. ${manage}`,
    args: { id: endpointId(t as never), ...webhookDeliveryListArgs },
    resolve: (_root, args, ctx, info) =>
      ctx.services.webhooks.deliveries(authorize(ctx, "webhook:manage"), args, itemsQuery(ctx, info, "WebhookDelivery")),
  }),
);

builder.mutationField("redeliverWebhook", (t) =>
  t.prismaField({
    type: WebhookDelivery,
    description: `Send one delivery again now (REST: 202); whichever replica takes it first attempts it. CONFLICT (409) while an attempt is in flight, for a test message (send a new one) and while its endpoint is disabled (enable it first). ${manage}`,
    args: { id: t.arg.id({ required: true, description: "The webhook delivery id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.webhooks.redeliver(authorize(ctx, "webhook:manage"), args.id, query),
  }),
);

builder.mutationField("replayWebhookEndpoint", (t) =>
  t.field({
    type: WebhookReplay,
    description: `Queue every failed delivery of the endpoint created since a time (REST: 202, with the count). CONFLICT (409) while the endpoint is disabled: enable it first. ${manage}`,
    args: {
      id: endpointId(t as never),
      since: t.arg.string({
        required: true,
        ...limited("Failed deliveries created at or after this date-time (ISO 8601)", anyDateTime),
      }),
    },
    resolve: (_root, args, ctx) => ctx.services.webhooks.replay(authorize(ctx, "webhook:manage"), args.id, args.since),
  }),
);

builder.mutationField("sendTestWebhook", (t) =>
  t.prismaField({
    type: WebhookDelivery,
    description: `Send a webhook.test message now, whatever the type filter, and answer the attempt (not retried). ${manage}`,
    args: { id: endpointId(t as never) },
    resolve: (query, _root, args, ctx) => ctx.services.webhooks.sendTest(authorize(ctx, "webhook:manage"), args.id, query),
  }),
);
