import { authenticated, authorize } from "../../auth/actor.js";
import {
  NotificationEntityType as NotificationEntityTypeValues,
  NotificationOutcome as NotificationOutcomeValues,
  NotificationReason as NotificationReasonValues,
} from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { objectRefOf } from "../../graphql/node.schema.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs } from "../../graphql/page.schema.js";
import { nodeTypeOf } from "../../platform/ids.js";
import { limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { isReferencedType, referencedRecord } from "../request-loaders.js";
import { Viewer } from "../viewer/viewer.schema.js";
import { type NotificationPreferences, notificationLimits, notificationList } from "./notifications.service.js";

const personalNote =
  "Personal: only a user's own credential (JWT or session) reads or changes it; an API key gets FORBIDDEN (REST 403).";

export const NotificationReason = builder.enumType(NotificationReasonValues, {
  name: "NotificationReason",
  description: "Why a member was told of a change.",
  values: {
    mention: { description: "A comment mentions the member (on create, or an edit that adds the mention)" },
    assigned: { description: "The member became the assignee of a task, task item, vendor or risk" },
    review_requested: { description: "A policy version was submitted naming the member as its approver" },
    review_completed: { description: "A policy version the member submitted was approved or rejected" },
    webhook_disabled: { description: "A webhook endpoint was disabled after a 410 or its failure window (owners and admins)" },
    control_not_ready: { description: "A control the member owns stopped being ready" },
    evidence_due: { description: "The evidence of a control the member owns expires within 14 days" },
    evidence_submitted: { description: "Evidence was submitted through an evidence request the member created" },
  },
});

const NotificationOutcome = builder.enumType(NotificationOutcomeValues, {
  name: "NotificationOutcome",
  description: "How a policy version's review ended.",
  values: {
    approved: { description: "The approver approved the version: it is the policy's current text" },
    rejected: { description: "The approver rejected the version: it is a draft again, with the reason" },
  },
});

const NotificationEntityType = builder.enumType(NotificationEntityTypeValues, {
  name: "NotificationEntityType",
  description: "The kind of record a notification is about; entityId names a record of this kind.",
  values: {
    task: { description: "A task (tsk_...)" },
    task_item: { description: "A task item of a vendor or risk (tski_...)" },
    vendor: { description: "A vendor (vnd_...)" },
    risk: { description: "A risk (rsk_...)" },
    policy: { description: "A policy (pol_...)" },
    webhook_endpoint: { description: "A webhook endpoint (whe_...); reason webhook_disabled" },
    control: { description: "A control (ctl_...); reasons control_not_ready and evidence_due" },
    evidence_request: { description: "An evidence request (erq_...); reason evidence_submitted" },
  },
});

const NotificationEntity = builder.unionType("NotificationEntity", {
  description: "What a notification can be about.",
  types: [objectRefOf("Task"), objectRefOf("TaskItem"), objectRefOf("Vendor"), objectRefOf("Risk"), objectRefOf("Policy")],
  resolveType: (entity) => nodeTypeOf((entity as { id: string }).id),
});

const Notification = builder.prismaObject("Notification", {
  description: "A change one member was told of: written with the change, in its transaction. Only its recipient reads it.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Notification id (ntf_...)" }),
    reason: t.expose("reason", { type: NotificationReason, description: "Why the member was told" }),
    entityType: t.expose("entityType", { type: NotificationEntityType, description: "The kind of record it is about" }),
    entityId: t.exposeID("entityId", { description: "Id of the record it is about" }),
    entity: t.field({
      type: NotificationEntity,
      nullable: true,
      ...graphOnly,
      description:
        "The task, task item, vendor, risk or policy it is about, as it is now; null once deleted, and for a webhook endpoint (see webhookEndpoint). Needs that type's `:read` permission (`task:read` for a task item): without it, null with FORBIDDEN here",
      select: { entityType: true, entityId: true },
      resolve: (n, _args, ctx) => (isReferencedType(n.entityType) ? referencedRecord(ctx, n.entityType, n.entityId) : null),
    }),
    actorId: t.exposeID("actorId", {
      nullable: true,
      description: "Member id of who made the change; null for an API key acting alone",
    }),
    actor: t.relation("actor", {
      nullable: true,
      ...graphOnly,
      description: "The member who made the change; null for an API key acting alone. Any credential reads its id and name",
    }),
    commentId: t.exposeID("commentId", {
      nullable: true,
      description: "For mention: the comment that mentions the member; null otherwise or once the comment is deleted",
    }),
    comment: t.prismaField({
      type: "Comment",
      nullable: true,
      ...graphOnly,
      description:
        "For mention: the comment that mentions the member; null otherwise or once deleted. Needs `comment:read`: without it, null with FORBIDDEN here",
      select: { commentId: true },
      resolve: (query, n, _args, ctx) => {
        if (!n.commentId) return null;
        authorize(ctx, "comment:read");
        return ctx.loaders.comments.byId.load({ id: n.commentId, query }) as never;
      },
    }),
    outcome: t.expose("outcome", {
      type: NotificationOutcome,
      nullable: true,
      description: "For review_completed: whether the version was approved or rejected; null for the other reasons",
    }),
    url: t.exposeString("url", {
      nullable: true,
      description:
        "The deep link into the web app: the comment's contextUrl when it is on a trusted origin and in the organization, else the record's page; null when the service has no APP_URL",
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the change was made" }),
    readAt: t.expose("readAt", {
      type: "DateTime",
      nullable: true,
      description: "When the member marked it read; null while unread",
    }),
  }),
});

const NotificationConnection = defineConnection("Notification", Notification);

const notificationListArgs = listArgs("Notification", notificationList, {
  description: "Which of the caller's notifications a list shows.",
  fields: (t) => ({
    unread: t.boolean({ description: "true: only unread ones (their totalCount is the unread count); false: only read ones" }),
    reason: t.field({
      type: [NotificationReason],
      required: { list: false, items: true },
      ...anyOf("Only notifications for these reasons"),
    }),
    ...dateBounds(t, "notifications", false),
  }),
});

const listDescription = `The caller's notifications, filtered (default newest first), with their totalCount. ${personalNote}`;

builder.queryField("notifications", (t) =>
  t.field({
    type: NotificationConnection,
    nullable: true,
    description: `${listDescription} Over GraphQL a refused list is null with its error, and the other fields of the request still answer.`,
    args: notificationListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.notifications.list(authenticated(ctx), args, itemsQuery(ctx, info, "Notification")),
  }),
);

builder.objectField(Viewer, "notifications", (t) =>
  t.field({
    type: NotificationConnection,
    nullable: true,
    description: `${listDescription} Null with FORBIDDEN here for an API key.`,
    args: notificationListArgs,
    resolve: (caller, args, ctx, info) => ctx.services.notifications.list(caller, args, itemsQuery(ctx, info, "Notification")),
  }),
);

const MarkNotificationsReadPayload = builder
  .objectRef<{ markedCount: number; unreadCount: number }>("MarkNotificationsReadPayload")
  .implement({
    description: "What marking read changed.",
    fields: (t) => ({
      markedCount: t.exposeInt("markedCount", { description: "How many unread notifications this marked read" }),
      unreadCount: t.exposeInt("unreadCount", { description: "How many of the caller's notifications are still unread" }),
    }),
  });

builder.mutationField("markNotificationsRead", (t) =>
  t.field({
    type: MarkNotificationsReadPayload,
    description: `Mark the caller's notifications read: those named in ids (ids of other members' notifications are skipped, no error), or all of them with all: true; give exactly one of the two. ${personalNote}`,
    args: {
      ids: t.arg.idList(limited("The notifications to mark read", notificationLimits.ids)),
      all: t.arg.boolean({ description: "true: mark every unread notification of the caller read" }),
    },
    resolve: (_root, args, ctx) => ctx.services.notifications.markRead(authenticated(ctx), args),
  }),
);

const EmailPreferences = builder.objectRef<NotificationPreferences["email"]>("NotificationEmailPreferences").implement({
  description: "For each reason, whether its notifications are also e-mailed (when the service sends e-mail).",
  fields: (t) => ({
    mention: t.exposeBoolean("mention", { description: "E-mail when a comment mentions me" }),
    assigned: t.exposeBoolean("assigned", { description: "E-mail when I am assigned a record" }),
    review_requested: t.exposeBoolean("review_requested", { description: "E-mail when I am asked to approve a policy version" }),
    review_completed: t.exposeBoolean("review_completed", {
      description: "E-mail when a policy version I submitted is approved or rejected",
    }),
    webhook_disabled: t.exposeBoolean("webhook_disabled", { description: "E-mail when a webhook endpoint is disabled" }),
    control_not_ready: t.exposeBoolean("control_not_ready", { description: "E-mail when a control I own stops being ready" }),
    evidence_due: t.exposeBoolean("evidence_due", {
      description: "E-mail when the evidence of a control I own expires within 14 days",
    }),
    evidence_submitted: t.exposeBoolean("evidence_submitted", {
      description: "E-mail when an outside party submits files through an evidence request I created",
    }),
  }),
});

const Preferences = builder.objectRef<NotificationPreferences>("NotificationPreferences").implement({
  description:
    "A member's notification choices; everything is on until switched off. Notifications are always recorded in the inbox.",
  fields: (t) => ({
    email: t.field({ type: EmailPreferences, description: "E-mail, per reason", resolve: (p) => p.email }),
  }),
});

const EmailPreferencesInput = builder.inputType("NotificationEmailPreferencesInput", {
  description: "The reasons whose e-mail to switch on (true) or off (false); reasons left out stay as they are.",
  fields: (t) => ({
    mention: t.boolean({ description: "E-mail when a comment mentions me" }),
    assigned: t.boolean({ description: "E-mail when I am assigned a record" }),
    review_requested: t.boolean({ description: "E-mail when I am asked to approve a policy version" }),
    review_completed: t.boolean({ description: "E-mail when a policy version I submitted is approved or rejected" }),
    webhook_disabled: t.boolean({ description: "E-mail when a webhook endpoint is disabled" }),
    control_not_ready: t.boolean({ description: "E-mail when a control I own stops being ready" }),
    evidence_due: t.boolean({ description: "E-mail when the evidence of a control I own expires within 14 days" }),
    evidence_submitted: t.boolean({
      description: "E-mail when an outside party submits files through an evidence request I created",
    }),
  }),
});

const preferencesDescription = `The caller's notification preferences. ${personalNote}`;

builder.queryField("notificationPreferences", (t) =>
  t.field({
    type: Preferences,
    nullable: true,
    description: preferencesDescription,
    resolve: (_root, _args, ctx) => ctx.services.notifications.preferences(authenticated(ctx)),
  }),
);

builder.objectField(Viewer, "notificationPreferences", (t) =>
  t.field({
    type: Preferences,
    nullable: true,
    description: `${preferencesDescription} Null with FORBIDDEN here for an API key.`,
    resolve: (caller, _args, ctx) => ctx.services.notifications.preferences(caller),
  }),
);

builder.mutationField("updateNotificationPreferences", (t) =>
  t.field({
    type: Preferences,
    description: `Switch e-mail per reason on or off; answers the preferences after the write, and records an audit event (notification_preferences.updated) when something changed. ${personalNote}`,
    args: {
      email: t.arg({ type: EmailPreferencesInput, required: true, description: "The reasons to change; at least one" }),
    },
    resolve: (_root, args, ctx) => ctx.services.notifications.updatePreferences(authenticated(ctx), args),
  }),
);

builder.subscriptionField("notificationAdded", (t) =>
  t.prismaField({
    type: "Notification",
    description: `Each notification written for the caller, as the change that caused it commits (server-sent events; on any replica). ${personalNote}`,
    subscribe: (_root, _args, ctx) => ctx.services.notifications.subscribe(authenticated(ctx)),
    resolve: (query, event, _args, ctx) => {
      const actor = authenticated(ctx);
      return ctx.services.notifications.byId(actor, (event as { id: string }).id, query);
    },
  }),
);
