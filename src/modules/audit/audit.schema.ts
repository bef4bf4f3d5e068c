import { authorize } from "../../auth/actor.js";
import { builder } from "../../graphql/builder.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs } from "../../graphql/page.schema.js";
import { limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { auditCheckpointList, auditEventList, auditLimits } from "./audit.service.js";
import type { CheckpointRow, Verification } from "./audit.trail.js";

const AuditEvent = builder.prismaObject("AuditEvent", {
  description: "One change in the organization: who made it, with which credential, what and when.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Audit event id" }),
    action: t.exposeString("action", { description: "What happened, e.g. comment.created, member.device_unlinked" }),
    entityType: t.exposeString("entityType", { description: "Type of the record changed" }),
    entityId: t.exposeID("entityId", { description: "Id of the record changed" }),
    actorUserId: t.exposeID("actorUserId", { nullable: true, description: "The user who acted (JWT or session)" }),
    actorApiKeyId: t.exposeID("actorApiKeyId", { nullable: true, description: "The API key that acted" }),
    data: t.expose("data", { type: "JSON", nullable: true, description: "The values that changed, where they matter" }),
    requestId: t.exposeString("requestId", { nullable: true, description: "X-Request-Id of the request that made the change" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the change was made" }),
    sequence: t.exposeInt("sequence", {
      description: "Place in the organization's audit chain: 1, 2, 3 ... in commit order, without gaps",
    }),
    hash: t.exposeString("hash", {
      description:
        "Lowercase hex SHA-256 of the previous event's hash (64 zeros before the first), a newline and this event's export line without hash, in RFC 8785 form",
    }),
    actor: t.prismaField({
      type: "Member",
      nullable: true,
      ...graphOnly,
      description:
        "The acting user's membership; null for an API key alone. Any credential reads its id and name; its other fields need `member:read`",
      resolve: (query, event, _args, ctx) =>
        event.actorUserId ? ctx.loaders.members.byUserId.load({ id: event.actorUserId, query }) : null,
    }),
  }),
});

const AuditEventConnection = defineConnection("AuditEvent", AuditEvent);

const auditEventListArgs = listArgs("AuditEvent", auditEventList, {
  description: "Which audit events a list shows; entityType with entityId is the history of one record.",
  fields: (t) => ({
    entityType: t.string(limited("Only changes of this type of record, e.g. task, vendor, task_item", auditLimits.entityType)),
    entityId: t.idList({ required: { list: false, items: true }, ...anyOf("Only changes of these records") }),
    actorUserId: t.idList({ required: { list: false, items: true }, ...anyOf("Only changes made by these users") }),
    action: t.stringList({
      required: { list: false, items: true },
      ...anyOf("Only these actions, e.g. task.updated"),
    }),
    ...dateBounds(t, "events", false),
  }),
});

builder.queryField("auditEvents", (t) =>
  t.field({
    type: AuditEventConnection,
    nullable: true,
    description:
      "The organization's audit events, filtered (default newest first), with their totalCount. Needs `audit:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: auditEventListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.audit.list(authorize(ctx, "audit:read"), args, itemsQuery(ctx, info, "AuditEvent")),
  }),
);

const AuditCheckpoint = builder.objectRef<CheckpointRow>("AuditCheckpoint").implement({
  description:
    "A signed statement that the organization's audit chain reached `sequence` with `hash`: Ed25519 over the RFC 8785 form of {organizationId, sequence, hash, signedAt}, checked with the key of GET /v1/audit/public-key.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Checkpoint id" }),
    organizationId: t.exposeID("organizationId", { description: "The organization whose chain it states" }),
    sequence: t.exposeInt("sequence", { description: "The chain's last event at signing (0 before any event)" }),
    hash: t.exposeString("hash", { description: "That event's hash" }),
    signedAt: t.exposeString("signedAt", {
      description: "When it was signed: ISO 8601, UTC, milliseconds, exactly the text that was signed",
    }),
    signature: t.exposeString("signature", { description: "base64url of the 64-byte Ed25519 signature" }),
    keyId: t.exposeString("keyId", { description: "base64url SHA-256 of the signing public key (SPKI, DER)" }),
    purgedEvents: t.exposeInt("purgedEvents", {
      nullable: true,
      description: "Set by a retention purge: the events it removed, those up to `sequence`; the chain is verified from here",
    }),
  }),
});

const AuditCheckpointConnection = defineConnection("AuditCheckpoint", AuditCheckpoint);

const auditCheckpointListArgs = listArgs("AuditCheckpoint", auditCheckpointList, {
  description: "Which audit checkpoints a list shows.",
  fields: (t) => ({ ...dateBounds(t, "checkpoints", false) }),
});

builder.queryField("auditCheckpoints", (t) =>
  t.field({
    type: AuditCheckpointConnection,
    nullable: true,
    description:
      "The organization's signed audit checkpoints (default latest sequence first), with their totalCount. Needs `audit:read`.",
    args: auditCheckpointListArgs,
    resolve: (_root, args, ctx) => ctx.services.audit.checkpoints(authorize(ctx, "audit:read"), args),
  }),
);

builder.mutationField("createAuditCheckpoint", (t) =>
  t.field({
    type: AuditCheckpoint,
    description:
      "Signs the organization's audit chain as it is now and answers the checkpoint (it writes no audit event). Needs `audit:read`.",
    resolve: (_root, _args, ctx) => ctx.services.audit.checkpoint(authorize(ctx, "audit:read")),
  }),
);

const AuditVerification = builder.objectRef<Verification>("AuditVerification").implement({
  description: "What recomputing the audit chain found.",
  fields: (t) => ({
    ok: t.exposeBoolean("ok", { description: "True when every event of the range is in place and unchanged" }),
    checked: t.exposeInt("checked", { description: "Events checked before the first break (all of them when ok)" }),
    firstBrokenSequence: t.exposeInt("firstBrokenSequence", {
      nullable: true,
      description: "The sequence where the chain first breaks; null when ok",
    }),
    reason: t.exposeString("reason", { nullable: true, description: "What is wrong there; null when ok" }),
  }),
});

builder.queryField("verifyAuditTrail", (t) =>
  t.field({
    type: AuditVerification,
    description:
      "Recomputes the organization's audit chain over sequences from..to (inclusive; the whole chain when absent) and checks it against the signed checkpoints: a changed, removed, inserted or reordered event, or a chain cut short of a checkpoint, is named by its sequence. Needs `audit:read`.",
    args: {
      from: t.arg.int(limited("First sequence to check; the chain's first when absent", auditLimits.sequence)),
      to: t.arg.int(limited("Last sequence to check; the chain's last when absent", auditLimits.sequence)),
    },
    resolve: (_root, args, ctx) => ctx.services.audit.verify(authorize(ctx, "audit:read"), args),
  }),
);
