import { randomBytes } from "node:crypto";
import pino from "pino";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import type { NotificationEntityType, NotificationReason } from "../../src/generated/prisma/client.js";
import {
  createNotificationMailer,
  MAIL_QUEUE,
  mailJobId,
  mailMessageId,
} from "../../src/modules/notifications/notifications.mail.js";
import { createUnsubscribe, unsubscribeToken } from "../../src/modules/notifications/notifications.unsubscribe.js";
import type { MailConfig } from "../../src/platform/config.js";
import { newId } from "../../src/platform/ids.js";
import { failedJobs, retryFailedJobs, startJobQueue } from "../../src/platform/jobs.js";
import { type ReceivedMail, startSmtpServer } from "../helpers/smtp.js";
import { createTestApp, openOwnDatabase } from "../helpers/test-app.js";

// The mailer against a real SMTP server (smtp-server on loopback), on a database of its own: the
// worker polls it. Notifications are written here as the notifying services write them: a row and
// `mail.enqueue(tx, ids)` in one transaction.
const smtpRefusals = new Map<string, number>();
const smtp = await startSmtpServer({
  refuse: (mail) => {
    const to = mail.envelopeTo[0] ?? "";
    const left = smtpRefusals.get(to);
    if (left === undefined) return undefined;
    if (left === Number.POSITIVE_INFINITY) return 550;
    if (left <= 0) return undefined;
    smtpRefusals.set(to, left - 1);
    return 451;
  },
});
const secret = randomBytes(32).toString("hex");
const config: MailConfig = {
  smtpUrl: smtp.url,
  from: "Workspace <notify@gateway.test>",
  publicUrl: "http://gateway.test",
  unsubscribeSecret: secret,
  retryLimit: 2,
  retryDelaySeconds: 1,
  retryDelayMaxSeconds: 1,
  pollIntervalSeconds: 0.5,
  worker: true,
};
const own = await openOwnDatabase();
const queue = await startJobQueue({ pglite: own.database.pglite, url: own.url, logger: pino({ level: "silent" }) });
const mailer = await createNotificationMailer({
  db: own.database.db,
  boss: queue.boss,
  config,
  logger: pino({ level: "silent" }),
});
await mailer.start();
const t = await createTestApp({
  database: own.database,
  appUrl: "https://app.gateway.test",
  mail: { mailer, unsubscribe: createUnsubscribe(own.database.db, secret) },
});
afterAll(async () => {
  await mailer.stop();
  await queue.stop(1_000);
  await smtp.stop();
  await own.close();
});

let org: SeedResult;
let other: SeedResult;
beforeEach(async () => {
  org = await t.seedOrg();
  other = await t.seedOrg();
});

type NotificationFields = {
  recipientId: string;
  actorId?: string | null;
  reason: NotificationReason;
  entityType: NotificationEntityType;
  entityId: string;
  url?: string | null;
  organizationId?: string;
  outcome?: "approved" | "rejected";
};

/** Writes notifications and enqueues their e-mail in one transaction, as the services do. */
async function notify(...list: NotificationFields[]): Promise<string[]> {
  return t.db.$transaction(async (tx) => {
    const ids: string[] = [];
    for (const n of list) {
      const id = newId("ntf");
      await tx.notification.create({
        data: {
          id,
          organizationId: n.organizationId ?? org.organizationId,
          recipientId: n.recipientId,
          actorId: n.actorId === undefined ? org.memberIds[0] : n.actorId,
          reason: n.reason,
          entityType: n.entityType,
          entityId: n.entityId,
          outcome: n.outcome ?? null,
          url: n.url === undefined ? `https://app.gateway.test/${org.organizationId}/x` : n.url,
        },
      });
      ids.push(id);
    }
    await mailer.enqueue(tx, ids);
    return ids;
  });
}

async function emailOf(memberId: string): Promise<string> {
  const member = await t.db.member.findUniqueOrThrow({ where: { id: memberId }, select: { user: { select: { email: true } } } });
  return member.user.email;
}

/** A header as sent (mailparser structures some, e.g. List-*), unfolded. */
function header(mail: ReceivedMail | undefined, name: string): string | undefined {
  const line = mail?.headerLines.find((h) => h.key === name.toLowerCase())?.line;
  return line
    ?.slice(line.indexOf(":") + 1)
    .replace(/\r?\n[ \t]+/g, " ")
    .trim();
}
const unsubscribeLink = (mail: ReceivedMail | undefined) => /^<(.+)>$/.exec(header(mail, "List-Unsubscribe") ?? "")?.[1];

const byMessageId = (id: string) => (mails: ReceivedMail[]) =>
  mails.some((m) => m.messageId === mailMessageId(id, config.publicUrl));
const find = (id: string) => smtp.received.filter((m) => m.messageId === mailMessageId(id, config.publicUrl));

async function jobState(notificationId: string): Promise<string | undefined> {
  return (await queue.boss.getJobById(MAIL_QUEUE, mailJobId(notificationId)))?.state;
}

async function until<T>(what: string, poll: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await poll();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const settled = (id: string) =>
  until(`job of ${id} settled`, async () => {
    const state = await jobState(id);
    return state === "completed" || state === "failed" ? state : undefined;
  });

describe("notification e-mail", () => {
  it("sends one message per reason with subject, link, Message-ID and one-click unsubscribe headers", async () => {
    const recipient = org.memberIds[1] as string;
    const ids = await notify(
      { recipientId: recipient, reason: "mention", entityType: "task", entityId: org.taskIds[0] as string },
      { recipientId: recipient, reason: "assigned", entityType: "risk", entityId: org.riskIds[0] as string },
      { recipientId: recipient, reason: "review_requested", entityType: "policy", entityId: org.policyIds[0] as string },
      {
        recipientId: recipient,
        reason: "review_completed",
        entityType: "policy",
        entityId: org.policyIds[0] as string,
        outcome: "rejected",
      },
    );
    await smtp.waitFor((mails) => ids.every((id) => byMessageId(id)(mails)), 15_000, "four messages");
    const [task, risk, policy] = await Promise.all([
      t.db.task.findUniqueOrThrow({ where: { id: org.taskIds[0] as string } }),
      t.db.risk.findUniqueOrThrow({ where: { id: org.riskIds[0] as string } }),
      t.db.policy.findUniqueOrThrow({ where: { id: org.policyIds[0] as string } }),
    ]);
    const subjects = ids.map((id) => find(id)[0]?.subject);
    expect(subjects).toEqual([
      `Ada Owner mentioned you on the task "${task.title}"`,
      `Ada Owner assigned you the risk "${risk.title}"`,
      `Ada Owner asked you to review the policy "${policy.name}"`,
      `Ada Owner rejected your version of the policy "${policy.name}"`,
    ]);
    const to = await emailOf(recipient);
    for (const id of ids) {
      const [mail] = find(id);
      expect(find(id)).toHaveLength(1);
      expect(mail?.envelopeTo).toEqual([to]);
      expect(mail?.from?.text).toBe('"Workspace" <notify@gateway.test>');
      expect(mail?.messageId).toBe(`<${id}@gateway.test>`);
      expect(mail?.text).toContain(`Open it: https://app.gateway.test/${org.organizationId}/x`);
      expect(mail?.html).toContain(`href="https://app.gateway.test/${org.organizationId}/x"`);
      expect(header(mail, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
      const unsubscribe = unsubscribeLink(mail) as string;
      expect(unsubscribe).toMatch(/^http:\/\/gateway\.test\/unsubscribe\/[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(mail?.text).toContain(unsubscribe);
      expect(header(mail, "Auto-Submitted")).toBe("auto-generated");
    }
    expect(await settled(ids[0] as string)).toBe("completed");
  });

  it("names a record in the subject and body only when the recipient's role may read it", async () => {
    // Edsger is an employee: task:read, but no vendor:read.
    const employee = org.memberIds[3] as string;
    const ids = await notify(
      { recipientId: employee, reason: "mention", entityType: "vendor", entityId: org.vendorIds[0] as string },
      { recipientId: employee, reason: "mention", entityType: "task", entityId: org.taskIds[0] as string },
    );
    await smtp.waitFor((mails) => ids.every((id) => byMessageId(id)(mails)), 15_000, "two messages");
    const task = await t.db.task.findUniqueOrThrow({ where: { id: org.taskIds[0] as string } });
    const [vendorMail] = find(ids[0] as string);
    expect(vendorMail?.subject).toBe("Ada Owner mentioned you on a vendor");
    for (const part of [vendorMail?.subject, vendorMail?.text, vendorMail?.html]) expect(part).not.toContain("CloudHost");
    expect(find(ids[1] as string)[0]?.subject).toBe(`Ada Owner mentioned you on the task "${task.title}"`);
  });

  it("escapes the record's title in HTML and sends no link when the notification has none", async () => {
    const taskId = org.taskIds[1] as string;
    await t.db.task.update({ where: { id: taskId }, data: { title: `<script>alert("x")</script> & <b>bold</b>` } });
    const [id] = await notify({
      recipientId: org.memberIds[2] as string,
      reason: "assigned",
      entityType: "task",
      entityId: taskId,
      url: null,
    });
    await smtp.waitFor(byMessageId(id as string));
    const [mail] = find(id as string);
    expect(mail?.html).not.toContain("<script>");
    expect(mail?.html).not.toContain("<b>bold");
    expect(mail?.html).toContain("&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#60;b&#62;bold&#60;/b&#62;");
    expect(mail?.text).not.toContain("Open it");
    expect(mail?.html).not.toContain("Open it");
    expect(mail?.subject).toContain(`<script>alert("x")</script>`);
  });

  it("a retry sends the same message: the Message-ID and the body do not change", async () => {
    const recipient = org.memberIds[3] as string;
    smtpRefusals.set(await emailOf(recipient), 1);
    const [id] = await notify({
      recipientId: recipient,
      reason: "mention",
      entityType: "vendor",
      entityId: org.vendorIds[0] as string,
    });
    await smtp.waitFor(byMessageId(id as string), 20_000, "the retried message");
    const first = smtp.refused.find((m) => m.messageId === mailMessageId(id as string, config.publicUrl));
    const [second] = find(id as string);
    expect(first?.messageId).toBe(second?.messageId);
    expect(first?.text).toBe(second?.text);
    expect(unsubscribeLink(first)).toBe(unsubscribeLink(second));
    expect(find(id as string)).toHaveLength(1);
  });

  it("a notification enqueued twice is one job and one message", async () => {
    const [id] = await notify({
      recipientId: org.memberIds[1] as string,
      reason: "assigned",
      entityType: "task",
      entityId: org.taskIds[0] as string,
    });
    await t.db.$transaction((tx) => mailer.enqueue(tx, [id as string]));
    await settled(id as string);
    await smtp.waitFor(byMessageId(id as string));
    expect(find(id as string)).toHaveLength(1);
  });

  it("the enqueue rolls back with the change: no message for a change that failed", async () => {
    const id = newId("ntf");
    await expect(
      t.db.$transaction(async (tx) => {
        await tx.notification.create({
          data: {
            id,
            organizationId: org.organizationId,
            recipientId: org.memberIds[1] as string,
            actorId: org.memberIds[0],
            reason: "mention",
            entityType: "task",
            entityId: org.taskIds[0] as string,
          },
        });
        await mailer.enqueue(tx, [id]);
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    expect(await jobState(id)).toBeUndefined();
  });

  it("sends nothing to a member who switched the reason off, is no longer active, made the change, or is of another organization", async () => {
    const [optedOut, inactive, actor] = org.memberIds.slice(1, 4) as [string, string, string];
    await t.db.notificationPreference.create({
      data: { memberId: optedOut, organizationId: org.organizationId, emailAssigned: false },
    });
    await t.db.member.update({ where: { id: inactive }, data: { isActive: false } });
    const task = org.taskIds[0] as string;
    const ids = await notify(
      { recipientId: optedOut, reason: "assigned", entityType: "task", entityId: task },
      { recipientId: inactive, reason: "assigned", entityType: "task", entityId: task },
      { recipientId: actor, actorId: actor, reason: "assigned", entityType: "task", entityId: task },
      // A recipient of another organization than the notification's (a defect upstream) is never mailed.
      { recipientId: other.memberIds[1] as string, reason: "assigned", entityType: "task", entityId: task },
      // Another reason stays on for the member who switched assignments off.
      { recipientId: optedOut, reason: "mention", entityType: "task", entityId: task },
    );
    for (const id of ids) expect(await settled(id)).toBe("completed");
    await smtp.waitFor(byMessageId(ids[4] as string));
    expect(ids.slice(0, 4).map((id) => find(id).length)).toEqual([0, 0, 0, 0]);
    const outputs = await Promise.all(
      ids.slice(0, 4).map(async (id) => (await queue.boss.getJobById(MAIL_QUEUE, mailJobId(id)))?.output),
    );
    expect(outputs).toEqual([
      { skipped: "the recipient switched this e-mail off" },
      { skipped: "the recipient is no longer an active member" },
      { skipped: "the recipient made the change" },
      { skipped: "the recipient is not of the organization" },
    ]);
  });

  it("keeps a message as failed after its last attempt, counts it, and sends it when retried", async () => {
    const recipient = org.memberIds[2] as string;
    const address = await emailOf(recipient);
    smtpRefusals.set(address, Number.POSITIVE_INFINITY);
    const before = { ...mailer.counts };
    const [id] = await notify({
      recipientId: recipient,
      reason: "assigned",
      entityType: "vendor",
      entityId: org.vendorIds[0] as string,
    });
    expect(await settled(id as string)).toBe("failed");
    expect(mailer.counts.failed - before.failed).toBe(1);
    expect(mailer.counts.retried - before.retried).toBe(config.retryLimit);
    const failed = await failedJobs(queue.boss, MAIL_QUEUE);
    const job = failed.find((j) => j.id === mailJobId(id as string));
    expect(job?.data).toEqual({ notificationId: id });
    expect(job?.retryCount).toBe(config.retryLimit);

    const metrics = await (await t.app.fetch(new Request("http://test/metrics"))).text();
    expect(metrics).toMatch(/notification_mail_failed_total [1-9]/);
    expect(metrics).toMatch(/notification_mail_retried_total [1-9]/);
    expect(metrics).toMatch(/notification_mail_sent_total [1-9]/);

    smtpRefusals.delete(address);
    expect(await retryFailedJobs(queue.boss, MAIL_QUEUE, [mailJobId(id as string)])).toBe(1);
    await smtp.waitFor(byMessageId(id as string), 15_000, "the retried failed message");
    expect(await settled(id as string)).toBe("completed");
  });

  it("sends every message once after the SMTP server was down for a while", async () => {
    const port = smtp.port;
    await smtp.stop();
    const before = mailer.counts.retried;
    const ids = await notify(
      ...[1, 2, 3].map((i) => ({
        recipientId: org.memberIds[i] as string,
        reason: "mention" as const,
        entityType: "task" as const,
        entityId: org.taskIds[0] as string,
      })),
    );
    await until("an attempt failed while the server was down", async () => (mailer.counts.retried > before ? true : undefined));
    await smtp.start();
    expect(smtp.port).toBe(port);
    await smtp.waitFor((mails) => ids.every((id) => byMessageId(id)(mails)), 20_000, "the three messages after the outage");
    for (const id of ids) expect(await settled(id)).toBe("completed");
    expect(ids.map((id) => find(id).length)).toEqual([1, 1, 1]);
  });
});

describe("notification e-mail of changes made through the API", () => {
  async function sessionOf(userId: string) {
    const session = await createSession(t.db, userId, 3_600_000);
    return { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
  }
  const toMember = (memberId: string) => async () => {
    const address = await emailOf(memberId);
    return smtp.received.filter((m) => m.envelopeTo.includes(address));
  };

  it("a comment's mentions mail the members mentioned, never its author or another organization's member", async () => {
    const [author, mentioned, deactivated] = org.memberIds as [string, string, string];
    await t.db.member.update({ where: { id: deactivated }, data: { isActive: false } });
    const foreign = other.memberIds[1] as string;
    const headers = await sessionOf(org.userIds[0] as string);
    const res = await t.rest("POST", "/v1/comments", {
      headers,
      body: {
        content: `@[Ada](${author}) @[Grace](${mentioned}) @[Alan](${deactivated}) @[Foreign](${foreign}) please look`,
        entityId: org.taskIds[0],
        entityType: "task",
      },
    });
    expect(res.status).toBe(201);
    const notifications = await t.db.notification.findMany({
      where: { commentId: res.body.id },
      select: { id: true, recipientId: true },
    });
    expect(notifications.map((n) => n.recipientId)).toEqual([mentioned]);
    const id = notifications[0]?.id as string;
    await smtp.waitFor(byMessageId(id));
    for (const memberId of [author, deactivated]) expect(await toMember(memberId)()).toEqual([]);
    expect(await toMember(foreign)()).toEqual([]);
    const [mail] = find(id);
    expect(mail?.envelopeTo).toEqual([await emailOf(mentioned)]);
    expect(mail?.subject).toMatch(/^Ada Owner mentioned you on the task "/);
    expect(mail?.text).toContain(`Open it: https://app.gateway.test/${org.organizationId}/tasks/${org.taskIds[0]}`);
  });

  it("an assignment over GraphQL mails the new assignee, unless they switched assignments off", async () => {
    const [, admin, auditor] = org.memberIds as [string, string, string];
    await t.db.notificationPreference.create({
      data: { memberId: admin, organizationId: org.organizationId, emailAssigned: false },
    });
    const assign = async (taskId: string, assigneeId: string) => {
      const res = await t.gql(
        `mutation($id: ID!, $assigneeId: ID) { updateTask(taskId: $id, assigneeId: $assigneeId) { id } }`,
        { id: taskId, assigneeId },
        { key: org.apiKey },
      );
      expect(res.body.errors).toBeUndefined();
      return (
        await t.db.notification.findFirstOrThrow({
          where: { entityId: taskId, recipientId: assigneeId },
          orderBy: { createdAt: "desc" },
        })
      ).id;
    };
    const sent = await assign(org.taskIds[0] as string, auditor);
    const notSent = await assign(org.taskIds[1] as string, admin);
    await smtp.waitFor(byMessageId(sent));
    expect(find(sent)[0]?.subject).toMatch(/^An API key assigned you the task "/);
    // Never enqueued: the service leaves out the reasons a recipient switched off.
    expect(await jobState(notSent)).toBeUndefined();
  });
});

describe("one-click unsubscribe (RFC 8058)", () => {
  const post = (path: string, body = "List-Unsubscribe=One-Click", type = "application/x-www-form-urlencoded") =>
    t.app.fetch(new Request(`http://test${path}`, { method: "POST", headers: { "content-type": type }, body }));

  it("the message's link switches that reason off, audited, idempotently; GET only shows a button", async () => {
    const recipient = org.memberIds[1] as string;
    const [id] = await notify({
      recipientId: recipient,
      reason: "mention",
      entityType: "task",
      entityId: org.taskIds[0] as string,
    });
    await smtp.waitFor(byMessageId(id as string));
    const link = unsubscribeLink(find(id as string)[0]) as string;
    const path = new URL(link).pathname;

    const page = await t.app.fetch(new Request(`http://test${path}`));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).toContain('<form method="post">');
    expect(html).toContain('name="List-Unsubscribe" value="One-Click"');
    expect(await t.db.notificationPreference.findUnique({ where: { memberId: recipient } })).toBeNull();

    const done = await post(path);
    expect(done.status).toBe(200);
    expect(await done.text()).toContain("no longer receive e-mail for mentions");
    expect(await t.db.notificationPreference.findUnique({ where: { memberId: recipient } })).toMatchObject({
      emailMention: false,
      emailAssigned: true,
    });
    const again = await post(path, "List-Unsubscribe=One-Click", "multipart/form-data; boundary=x");
    expect(again.status).toBe(400);
    const multipart = '--x\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--x--\r\n';
    expect((await post(path, multipart, "multipart/form-data; boundary=x")).status).toBe(200);
    const events = await t.db.auditEvent.findMany({
      where: { organizationId: org.organizationId, action: "notification_preferences.updated", entityId: recipient },
    });
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toEqual({ changes: { mention: { from: true, to: false } }, via: "unsubscribe link" });
    expect(events[0]?.actorUserId).toBe(org.userIds[1]);

    // Mentions are off for this member now; assignments still arrive.
    const [mention, assigned] = await notify(
      { recipientId: recipient, reason: "mention", entityType: "task", entityId: org.taskIds[0] as string },
      { recipientId: recipient, reason: "assigned", entityType: "task", entityId: org.taskIds[0] as string },
    );
    await smtp.waitFor(byMessageId(assigned as string));
    expect(await settled(mention as string)).toBe("completed");
    expect(find(mention as string)).toHaveLength(0);
  });

  it("keeps the token out of the request log and out of the metrics' route labels", async () => {
    const lines: string[] = [];
    const logged = await createTestApp({
      database: own.database,
      mail: { mailer, unsubscribe: createUnsubscribe(own.database.db, secret) },
      logger: pino({ level: "info" }, { write: (line: string) => lines.push(line) }),
    });
    const token = await unsubscribeToken(secret, {
      memberId: org.memberIds[3] as string,
      reason: "review_requested",
      issuedAt: new Date(),
    });
    const answer = await logged.app.fetch(
      new Request(`http://test/unsubscribe/${token}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "List-Unsubscribe=One-Click",
      }),
    );
    expect(answer.status).toBe(200);
    const metrics = await (await logged.app.fetch(new Request("http://test/metrics"))).text();
    expect(metrics).toContain('route="/unsubscribe/{token}"');
    expect(metrics).not.toContain(token);
    expect(lines.some((line) => line.includes('"path":"/unsubscribe/{token}"'))).toBe(true);
    expect(lines.join("\n")).not.toContain(token);
  });

  it("a bad, altered or expired token is a 400 in plain text, on GET and POST, and changes nothing", async () => {
    const recipient = org.memberIds[2] as string;
    const valid = await unsubscribeToken(secret, { memberId: recipient, reason: "assigned", issuedAt: new Date() });
    const expired = await unsubscribeToken(secret, {
      memberId: recipient,
      reason: "assigned",
      issuedAt: new Date(Date.now() - 91 * 86_400_000),
    });
    const foreign = await unsubscribeToken("another-secret-another-secret-another", {
      memberId: recipient,
      reason: "assigned",
      issuedAt: new Date(),
    });
    const altered = `${valid.slice(0, -2)}${valid.endsWith("AA") ? "BB" : "AA"}`;
    for (const token of ["not-a-token", expired, foreign, altered, "x".repeat(5_000)]) {
      const answer = await post(`/unsubscribe/${token}`);
      expect(answer.status).toBe(400);
      expect(answer.headers.get("content-type")).toContain("text/plain");
      expect(await answer.text()).toContain("not valid or has expired");
      expect((await t.app.fetch(new Request(`http://test/unsubscribe/${token}`))).status).toBe(400);
    }
    // A valid token without the one-click form field does nothing either.
    expect((await post(`/unsubscribe/${valid}`, "")).status).toBe(400);
    expect((await post(`/unsubscribe/${valid}`, "{}", "application/json")).status).toBe(400);
    expect(await t.db.notificationPreference.findUnique({ where: { memberId: recipient } })).toBeNull();
    expect((await t.app.fetch(new Request(`http://test/unsubscribe/${valid}`, { method: "DELETE" }))).status).toBe(405);
  });
});
