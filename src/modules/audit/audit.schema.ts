import { authorize } from "../../auth/actor.js";
import { builder } from "../../graphql/builder.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs } from "../../graphql/page.schema.js";
import { limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { auditEventList, auditLimits } from "./audit.service.js";

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
