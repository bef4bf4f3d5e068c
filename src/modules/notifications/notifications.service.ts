import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { NotificationEntityType, NotificationOutcome, NotificationReason } from "../../generated/prisma/enums.js";
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
import type { Db } from "../../platform/db/database.js";
import { ForbiddenError, NotFoundError } from "../../platform/errors.js";
import type { Events, NotificationAddedEvent } from "../../platform/events.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, limit, list, text } from "../../platform/limits.js";
import { notNull, parseInput } from "../../platform/validation.js";
import { type AuditEventInput, auditEvent, type Changes, changesBetween, writeAuditEvent } from "../audit/audit.service.js";
import type { EvidenceRequestMailJob } from "../evidence-requests/evidence-requests.mail.js";

/** E-mail for notifications; absent when SMTP is not configured. */
export type NotificationMail = {
  /** In the caller's transaction, one e-mail job per notification given (the caller has left out the reasons each recipient switched off). */
  enqueue(tx: Prisma.TransactionClient, notificationIds: readonly string[]): Promise<void>;
  /** In the caller's transaction, the e-mail of an evidence request to its outside recipient (no member: no notification). */
  enqueueEvidenceRequest?(tx: Prisma.TransactionClient, job: EvidenceRequestMailJob): Promise<void>;
};

/** Where deep links point: the web app's origin (none: notifications carry no url) and the other origins trusted (CORS_ORIGINS). */
export type DeepLinks = { appUrl?: string; trustedOrigins?: readonly string[] };

/** The record a notification is about; a task item also names its parent, whose page shows it. */
export type NotifiedEntity =
  | { type: Exclude<NotificationEntityType, "task_item">; id: string }
  | { type: "task_item"; id: string; parentType: "vendor" | "risk"; parentId: string };

/** One change's notifications of one reason: the caller names candidates, the notifier keeps the active members. */
export type NotificationDraft = {
  reason: NotificationReason;
  /** Member ids; unknown, inactive, foreign ids and the actor's own are left out. */
  recipientIds: readonly (string | null | undefined)[];
  entity: NotifiedEntity;
  commentId?: string;
  /** For review_completed: whether the version was approved or rejected. */
  outcome?: NotificationOutcome;
  /** The page the comment was made on; the link when it is trusted (see `deepLink`). */
  contextUrl?: string | null;
};

/** Who made the change: a user credential's user, or the member a comment is written for. */
export type ChangeActor = { organizationId: string; userId?: string | null; memberId?: string | null };

export type WrittenNotification = NotificationAddedEvent;

const fallbackSegment: Record<Exclude<NotificationEntityType, "task_item">, string> = {
  task: "tasks",
  vendor: "vendors",
  risk: "risk",
  policy: "policies",
  webhook_endpoint: "settings/webhooks",
  control: "controls",
  evidence_request: "evidence-requests",
};

/**
 * The deep link of a notification: null without APP_URL; the comment's `contextUrl` when it is an
 * http(s) URL on APP_URL's origin or a CORS origin whose path is in the organization
 * (`/<organizationId>/…`, after the URL parser has resolved `..` and encodings); otherwise the
 * record's page in the web app.
 */
export function deepLink(
  links: DeepLinks,
  organizationId: string,
  entity: NotifiedEntity,
  contextUrl?: string | null,
): string | null {
  if (!links.appUrl) return null;
  const trusted = contextUrl ? trustedContextUrl(links, organizationId, contextUrl) : null;
  if (trusted) return trusted;
  const base = `${links.appUrl}/${encodeURIComponent(organizationId)}`;
  if (entity.type === "task_item") {
    return `${base}/${fallbackSegment[entity.parentType]}/${encodeURIComponent(entity.parentId)}?taskItemId=${encodeURIComponent(entity.id)}`;
  }
  return `${base}/${fallbackSegment[entity.type]}/${encodeURIComponent(entity.id)}`;
}

function trustedContextUrl(links: DeepLinks, organizationId: string, contextUrl: string): string | null {
  let url: URL;
  try {
    url = new URL(contextUrl);
  } catch {
    return null;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return null;
  if (url.username || url.password) return null;
  const origins = new Set([links.appUrl, ...(links.trustedOrigins ?? [])]);
  if (!origins.has(url.origin)) return null;
  const inOrganization = `/${organizationId}/`;
  if (url.pathname.slice(0, inOrganization.length) !== inOrganization) return null;
  return url.href;
}

const { sql, join, raw } = Prisma;

/** The preference column that switches a reason's e-mail on or off. */
export const emailColumn = {
  mention: "emailMention",
  assigned: "emailAssigned",
  review_requested: "emailReviewRequested",
  review_completed: "emailReviewCompleted",
  webhook_disabled: "emailWebhookDisabled",
  control_not_ready: "emailControlNotReady",
  evidence_due: "emailEvidenceDue",
  evidence_submitted: "emailEvidenceSubmitted",
} as const satisfies Record<NotificationReason, string>;

type PreferenceRow = Record<(typeof emailColumn)[NotificationReason], boolean>;

/**
 * Writes notifications inside the transaction of the change that causes them (so they are never
 * lost and never written for a change that rolled back), enqueues their e-mail in the same
 * transaction, and tells the recipients' live subscriptions once the change has committed.
 */
export function createNotifier({ links: given, mail, events }: { links: DeepLinks; mail?: NotificationMail; events: Events }) {
  const links = { ...given, appUrl: given.appUrl ? new URL(given.appUrl).origin : undefined };
  const notifier = {
    async write(
      tx: Prisma.TransactionClient,
      actor: ChangeActor,
      drafts: readonly NotificationDraft[],
    ): Promise<WrittenNotification[]> {
      const { organizationId } = actor;
      // Each candidate once, with the first draft that names it.
      const rows: Prisma.Sql[] = [];
      const seen = new Set<string>();
      for (const draft of drafts) {
        const url = deepLink(links, organizationId, draft.entity, draft.contextUrl);
        for (const recipientId of draft.recipientIds) {
          if (!recipientId || seen.has(recipientId)) continue;
          seen.add(recipientId);
          rows.push(
            sql`(${join([
              sql`${newId("ntf")}::text`,
              sql`${recipientId}::text`,
              sql`${draft.reason}::"NotificationReason"`,
              sql`${draft.entity.type}::"NotificationEntityType"`,
              sql`${draft.entity.id}::text`,
              sql`${draft.commentId ?? null}::text`,
              sql`${draft.outcome ?? null}::"NotificationOutcome"`,
              sql`${url}::text`,
            ])})`,
          );
        }
      }
      if (rows.length === 0) return [];
      // One statement (the change's transaction holds its connection meanwhile): the actor, the
      // candidates that are active members of the organization and not the actor, their rows, and
      // whether each one's e-mail for the reason is on.
      const written = await tx.$queryRaw<{ id: string; recipientId: string; mail: boolean }[]>(sql`
        WITH "actor" AS (
          SELECT COALESCE(${actor.memberId ?? null}::text, (
            SELECT m."id" FROM "Member" m WHERE m."organizationId" = ${organizationId} AND m."userId" = ${actor.userId ?? null}::text
          )) AS "id"
        ), "draft"("id", "recipientId", "reason", "entityType", "entityId", "commentId", "outcome", "url") AS (
          VALUES ${join(rows)}
        ), "inserted" AS (
          INSERT INTO "Notification" ("id", "organizationId", "recipientId", "actorId", "reason", "entityType", "entityId", "commentId", "outcome", "url")
          SELECT d."id", ${organizationId}, d."recipientId", a."id", d."reason", d."entityType", d."entityId", d."commentId", d."outcome", d."url"
          FROM "draft" d
          JOIN "Member" m ON m."id" = d."recipientId" AND m."organizationId" = ${organizationId} AND m."isActive"
          CROSS JOIN "actor" a
          WHERE a."id" IS NULL OR d."recipientId" <> a."id"
          RETURNING "id", "recipientId", "reason"
        )
        SELECT i."id", i."recipientId", CASE i."reason"
          ${raw(
            Object.entries(emailColumn)
              .map(([reason, column]) => `WHEN '${reason}' THEN COALESCE(p."${column}", TRUE)`)
              .join(" "),
          )}
          END AS "mail"
        FROM "inserted" i LEFT JOIN "NotificationPreference" p ON p."memberId" = i."recipientId"`);
      const mailed = written.filter((n) => n.mail).map((n) => n.id);
      if (mail && mailed.length > 0) await mail.enqueue(tx, mailed);
      return written.map((n) => ({ id: n.id, organizationId, recipientId: n.recipientId }));
    },

    /** After the commit: each recipient's `notificationAdded` stream hears of its notification. */
    announce(written: readonly WrittenNotification[]) {
      for (const n of written) events.publish("notification.added", n.recipientId, n);
    },

    /**
     * `db.$transaction(change)` where the change may notify (`notify(draft, ...)`, any number of
     * times, in the transaction); the recipients' live streams hear of it once it has committed.
     */
    async transaction<T>(
      db: Db,
      actor: ChangeActor,
      change: (tx: Prisma.TransactionClient, notify: (...drafts: NotificationDraft[]) => Promise<void>) => Promise<T>,
    ): Promise<T> {
      const written: WrittenNotification[] = [];
      const result = await db.$transaction((tx) =>
        change(tx, async (...drafts) => {
          written.push(...(await notifier.write(tx, actor, drafts)));
        }),
      );
      notifier.announce(written);
      return result;
    },
  };
  return notifier;
}

export type Notifier = ReturnType<typeof createNotifier>;

// The inbox --------------------------------------------------------------------------------------

const unread: FilterRule = ((value: boolean) =>
  value ? Prisma.sql`${column("readAt")} IS NULL` : Prisma.sql`${column("readAt")} IS NOT NULL`) as FilterRule;

/** One member's notifications: what `notifications` filters and sorts by. */
export const notificationList: ListSpec = {
  table: "Notification",
  parent: [{ name: "recipientId", sqlType: "text" }],
  filters: { unread, reason: oneOf("reason", '"NotificationReason"'), ...dateBoundRules(false) },
  orders: dateSortKeys(false),
  defaultOrder: newestFirst,
};

export const notificationLimits = { ids: limit({ maxItems: 100 }) };

const markReadInput = z
  .object({
    ids: list(text(commonLimits.id), notificationLimits.ids).nullish(),
    all: z.boolean().nullish(),
  })
  .refine((input) => (input.ids != null) !== (input.all != null), {
    message: "give either ids or all, not both and not neither",
  })
  .refine((input) => input.all !== false, { message: "all must be true when given", path: ["all"] });

const preferencesInput = z.object({
  email: z
    .object({
      mention: z.boolean(notNull).optional(),
      assigned: z.boolean(notNull).optional(),
      review_requested: z.boolean(notNull).optional(),
      review_completed: z.boolean(notNull).optional(),
      webhook_disabled: z.boolean(notNull).optional(),
      control_not_ready: z.boolean(notNull).optional(),
      evidence_due: z.boolean(notNull).optional(),
      evidence_submitted: z.boolean(notNull).optional(),
    })
    .strict()
    .refine((email) => Object.values(email).some((v) => v !== undefined), "give at least one reason to switch on or off"),
});

export type EmailPreferences = Record<NotificationReason, boolean>;
export type NotificationPreferences = { email: EmailPreferences; updatedAt: Date | null };

function preferencesOf(row: (PreferenceRow & { updatedAt: Date }) | null): NotificationPreferences {
  const email = Object.fromEntries(
    Object.entries(emailColumn).map(([reason, column]) => [reason, row?.[column] ?? true]),
  ) as EmailPreferences;
  return { email, updatedAt: row?.updatedAt ?? null };
}

/**
 * Switches a member's e-mail for some reasons on or off, the others staying, in one transaction with
 * the audit event of the change (`audit` makes it from the changes); nothing is written when nothing
 * changes. The inbox's `updateNotificationPreferences` and the unsubscribe link both write through it.
 */
export async function writeEmailPreferences(
  db: Db,
  member: { memberId: string; organizationId: string },
  wanted: Partial<EmailPreferences>,
  audit: (changes: Changes) => AuditEventInput,
): Promise<NotificationPreferences> {
  const { memberId, organizationId } = member;
  return db.$transaction(async (tx) => {
    const before = preferencesOf(await tx.notificationPreference.findUnique({ where: { memberId } }));
    const { changes } = changesBetween(before.email, wanted);
    if (Object.keys(changes).length === 0) return before;
    const data = Object.fromEntries(
      Object.entries(changes).map(([reason, change]) => [emailColumn[reason as NotificationReason], change.to]),
    ) as Partial<PreferenceRow>;
    const row = await tx.notificationPreference.upsert({
      where: { memberId },
      create: { memberId, organizationId, ...data },
      update: data,
    });
    await writeAuditEvent(tx, audit(changes));
    return preferencesOf(row);
  });
}

type NotificationQuery = { select?: Prisma.NotificationSelect; include?: Prisma.NotificationInclude };

/** A member's own notifications and e-mail choices; every method takes the caller's own credential. */
export function createNotificationService(db: Db, events: Events) {
  /** The caller's membership: an inbox is personal, so only a user's own credential has one. */
  async function ownMemberId(actor: Actor): Promise<string> {
    if (actor.kind === "apiKey" || !actor.userId) {
      throw new ForbiddenError("An inbox is personal: only a user's own credential (JWT or session) reads or changes it");
    }
    const member = await db.member.findUnique({
      where: { organizationId_userId: { organizationId: actor.organizationId, userId: actor.userId } },
      select: { id: true },
    });
    if (!member) throw new ForbiddenError("You are not a member of this organization");
    return member.id;
  }

  const unreadCount = (tx: Prisma.TransactionClient | Db, recipientId: string) =>
    tx.notification.count({ where: { recipientId, readAt: null } });

  return {
    ownMemberId,

    /** The caller's notifications, filtered (default newest first), with their totalCount. */
    async list(actor: Actor, args: ListArgs, query: NotificationQuery) {
      const memberId = await ownMemberId(actor);
      return listPage(db, actor.organizationId, notificationList, { ...args, parent: [memberId], query }, (ids, q: RecordQuery) =>
        db.notification.findMany({
          ...(q as NotificationQuery),
          where: { id: { in: ids }, organizationId: actor.organizationId, recipientId: memberId },
        }),
      );
    },

    async byId(actor: Actor, id: string, query: NotificationQuery) {
      const memberId = await ownMemberId(actor);
      const notification = await db.notification.findUnique({
        ...query,
        where: { id, organizationId: actor.organizationId, recipientId: memberId },
      });
      if (!notification) throw new NotFoundError("Notification", id);
      return notification;
    },

    /** Marks the given notifications (only the caller's own count) or all of them read; answers how many changed and how many stay unread. */
    async markRead(actor: Actor, args: { ids?: readonly string[] | null; all?: boolean | null }) {
      const input = parseInput(markReadInput, args);
      const memberId = await ownMemberId(actor);
      return db.$transaction(async (tx) => {
        const marked = await tx.notification.updateMany({
          where: {
            organizationId: actor.organizationId,
            recipientId: memberId,
            readAt: null,
            ...(input.ids ? { id: { in: input.ids } } : {}),
          },
          data: { readAt: new Date() },
        });
        return { markedCount: marked.count, unreadCount: await unreadCount(tx, memberId) };
      });
    },

    async preferences(actor: Actor): Promise<NotificationPreferences> {
      const memberId = await ownMemberId(actor);
      return preferencesOf(await db.notificationPreference.findUnique({ where: { memberId } }));
    },

    /** Switches the e-mail of the given reasons on or off; the others stay. Audited when something changes. */
    async updatePreferences(actor: Actor, args: { email: Record<string, unknown> }): Promise<NotificationPreferences> {
      const input = parseInput(preferencesInput, args);
      const memberId = await ownMemberId(actor);
      return writeEmailPreferences(db, { memberId, organizationId: actor.organizationId }, input.email, (changes) =>
        auditEvent(actor, "notification_preferences.updated", { type: "notification_preferences", id: memberId }, {
          changes,
        } as Prisma.InputJsonValue),
      );
    },

    /** The caller's new notifications, as they are written (on any replica: the events are shared). */
    async subscribe(actor: Actor) {
      const memberId = await ownMemberId(actor);
      return events.subscribe(
        "notification.added",
        memberId,
        (event: NotificationAddedEvent) => event.recipientId === memberId && event.organizationId === actor.organizationId,
      );
    },
  };
}
