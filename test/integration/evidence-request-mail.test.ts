import { randomBytes } from "node:crypto";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { remindDue } from "../../src/modules/evidence-requests/evidence-requests.service.js";
import { linkTokens } from "../../src/modules/evidence-requests/evidence-requests.token.js";
import { createNotificationMailer, MAIL_QUEUE } from "../../src/modules/notifications/notifications.mail.js";
import type { MailConfig } from "../../src/platform/config.js";
import { JOB_SCHEMA, startJobQueue } from "../../src/platform/jobs.js";
import { type ReceivedMail, startSmtpServer } from "../helpers/smtp.js";
import { createTestApp, openOwnDatabase } from "../helpers/test-app.js";

// The e-mail of evidence requests (contract section 17) through section 11's queue, against a real
// SMTP server: the link, the reminder and the rejection's reason, each once, and the link in none
// of the queue's rows.
const smtp = await startSmtpServer();
const config: MailConfig = {
  smtpUrl: smtp.url,
  from: "Workspace <notify@gateway.test>",
  publicUrl: "https://gateway.test",
  unsubscribeSecret: randomBytes(32).toString("hex"),
  retryLimit: 2,
  retryDelaySeconds: 1,
  retryDelayMaxSeconds: 1,
  pollIntervalSeconds: 0.5,
  worker: true,
};
const links = linkTokens(randomBytes(32).toString("base64url"));
const own = await openOwnDatabase();
const queue = await startJobQueue({ pglite: own.database.pglite, url: own.url, logger: pino({ level: "silent" }) });
const mailer = await createNotificationMailer({
  db: own.database.db,
  boss: queue.boss,
  config,
  logger: pino({ level: "silent" }),
  links,
});
await mailer.start();
const t = await createTestApp({
  database: own.database,
  mail: { mailer },
  evidenceRequests: { links, publicUrl: config.publicUrl },
});
afterAll(async () => {
  await mailer.stop();
  await queue.stop(1_000);
  await smtp.stop();
  await own.close();
});
const org = await t.seedOrg();

const to = (address: string, kind: string) => (mails: ReceivedMail[]) =>
  mails.filter((m) => m.envelopeTo.includes(address) && m.messageId?.includes(`.${kind}.`));
const linkIn = (mail: ReceivedMail | undefined) =>
  /https:\/\/gateway\.test\/requests\/[A-Za-z0-9_-]{43}/.exec(mail?.text ?? "")?.[0];

async function createRequest(recipientEmail: string, dueInDays = 10) {
  const res = await t.rest("POST", "/v1/evidence-requests", {
    key: org.apiKey,
    body: {
      vendorId: org.vendorIds[0],
      title: "SOC 2 Type II report",
      instructions: "The 2026 report, please.",
      recipientEmail,
      recipientName: "Vendor Security",
      dueAt: new Date(Date.now() + dueInDays * 86_400_000).toISOString(),
    },
  });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id as string, url: res.body.url as string };
}

/** Every job of the queue as stored, payload and output included. */
async function jobRows(): Promise<string> {
  const { rows } = await queue.boss
    .getDb()
    .executeSql(`SELECT data, output FROM ${JOB_SCHEMA}.job WHERE name = $1`, [MAIL_QUEUE]);
  return JSON.stringify(rows);
}

describe("evidence request e-mail", () => {
  it("sends the recipient the link the creation answered, from the queue whose rows never hold it", async () => {
    const { url } = await createRequest("invited@vendor.example");
    const [mail] = to(
      "invited@vendor.example",
      "invitation",
    )(await smtp.waitFor((m) => to("invited@vendor.example", "invitation")(m).length > 0));
    expect(mail?.subject).toMatch(/asks you for evidence: SOC 2 Type II report/);
    expect(linkIn(mail)).toBe(url);
    expect(mail?.html).toContain(url);
    expect(mail?.text).toContain("The 2026 report, please.");
    const page = await t.app.fetch(new Request(url.replace("https://gateway.test", "http://test")));
    expect(page.status).toBe(200);
    expect(await jobRows()).not.toContain(url.slice(url.lastIndexOf("/") + 1));
  });

  it("reminds once, with the same link, even when two replicas look at once", async () => {
    const { url } = await createRequest("reminded@vendor.example", 2);
    await Promise.all([remindDue(t.db, mailer), remindDue(t.db, mailer)]);
    await remindDue(t.db, mailer);
    await smtp.waitFor((m) => to("reminded@vendor.example", "reminder")(m).length > 0);
    // Time for a second copy to arrive, if one had been queued.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const reminders = to("reminded@vendor.example", "reminder")(smtp.received);
    expect(reminders).toHaveLength(1);
    expect(reminders[0]?.subject).toMatch(/^Reminder:/);
    expect(linkIn(reminders[0])).toBe(url);
  });

  it("mails a rejection's reason with the same link, which works again", async () => {
    const { id, url } = await createRequest("rejected@vendor.example");
    const token = url.slice(url.lastIndexOf("/") + 1);
    const bytes = new TextEncoder().encode("%PDF-1.7 old report");
    const sha256 = Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("base64");
    const upload = await t.rest("POST", "/v1/attachment-uploads", {
      headers: { "x-evidence-request-token": token },
      body: { fileName: "old.pdf", fileType: "application/pdf", size: bytes.length, sha256 },
    });
    await t.app.fetch(new Request(upload.body.uploadUrl, { method: "PUT", headers: upload.body.headers, body: bytes }));
    const submitted = await t.rest("POST", "/v1/evidence-requests/current/submission", {
      headers: { "x-evidence-request-token": token },
      body: { uploadIds: [upload.body.id] },
    });
    expect(submitted.status, submitted.text).toBe(200);
    const rejected = await t.rest("POST", `/v1/evidence-requests/${id}/reject`, {
      key: org.apiKey,
      body: { reason: "That is the 2025 report." },
    });
    expect(rejected.status).toBe(200);
    const [mail] = to(
      "rejected@vendor.example",
      "rejection",
    )(await smtp.waitFor((m) => to("rejected@vendor.example", "rejection")(m).length > 0));
    expect(mail?.text).toContain("That is the 2025 report.");
    expect(linkIn(mail)).toBe(url);
    expect((await t.app.fetch(new Request(`http://test/requests/${token}`))).status).toBe(200);
    expect(await jobRows()).not.toContain(token);
  });

  it("mails a resend's new link after the first", async () => {
    const { id, url } = await createRequest("resent@vendor.example");
    await smtp.waitFor((m) => to("resent@vendor.example", "invitation")(m).length === 1);
    const resent = await t.rest("POST", `/v1/evidence-requests/${id}/resend`, { key: org.apiKey });
    expect(resent.status).toBe(200);
    const mails = await smtp.waitFor((m) => to("resent@vendor.example", "invitation")(m).length === 2);
    const links = to("resent@vendor.example", "invitation")(mails).map(linkIn);
    expect(links).toEqual([url, resent.body.url]);
  });
});
