import type Mail from "nodemailer/lib/mailer/index.js";
import type { MailConfig } from "../../platform/config.js";
import type { Db } from "../../platform/db/database.js";
import type { LinkTokens } from "./evidence-requests.token.js";

/**
 * The e-mail an evidence request's recipient gets: the link (`invitation`, at creation and at each
 * resend), a `reminder` 3 days before dueAt, and a `rejection` with the reviewer's reason. They go
 * through the notification mail queue (section 11: enqueued in the change's transaction, retried,
 * sent once), as a second kind of job. A job names the request, never the link: the worker rebuilds
 * the URL from the request's current link generation (evidence-requests.token.ts), so no job
 * payload, log line or failure output holds a token.
 */
export type EvidenceRequestMailKind = "invitation" | "reminder" | "rejection";

export type EvidenceRequestMailJob = {
  evidenceRequestId: string;
  kind: EvidenceRequestMailKind;
  /** The link generation the change issued (an invitation of a replaced link is not sent). */
  generation: number;
  /** What makes two jobs of one kind and generation different messages (a second rejection): the change's time. */
  at: string;
};

/** What the mail worker needs to rebuild a request's link. */
export type EvidenceRequestMailDeps = { db: Db; config: Pick<MailConfig, "from" | "publicUrl">; links: LinkTokens };

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const oneLine = (text: string, max = 100) => {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};
const day = (date: Date) => date.toLocaleDateString("en-GB", { day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });

/** The Message-ID of a job's message: the same on every attempt, so a receiver drops a resent copy. */
export function requestMessageId(job: EvidenceRequestMailJob, publicUrl: string): string {
  const at = job.at.replace(/[^0-9]/g, "");
  return `<${job.evidenceRequestId}.${job.kind}.${job.generation}.${at}@${new URL(publicUrl).hostname}>`;
}

/** The message for a job as the request stands now, or why none is sent. */
export async function composeRequestMessage(
  deps: EvidenceRequestMailDeps,
  job: EvidenceRequestMailJob,
): Promise<Mail.Options | { skip: string }> {
  const request = await deps.db.evidenceRequest.findUnique({
    where: { id: job.evidenceRequestId },
    select: {
      id: true,
      title: true,
      instructions: true,
      recipientEmail: true,
      recipientName: true,
      dueAt: true,
      expiresAt: true,
      status: true,
      linkGeneration: true,
      rejectionReason: true,
      organization: { select: { name: true } },
    },
  });
  if (!request) return { skip: "the request no longer exists" };
  if (request.expiresAt <= new Date()) return { skip: "the link has expired" };
  if (job.kind === "invitation" && request.linkGeneration !== job.generation) return { skip: "the link was replaced" };
  const open = request.status === "open" || request.status === "rejected";
  if (job.kind === "invitation" && !open) return { skip: `the request is ${request.status}` };
  if (job.kind === "reminder" && !open) return { skip: `the request is ${request.status}` };
  if (job.kind === "rejection" && request.status !== "rejected") return { skip: `the request is ${request.status}` };

  const token = await deps.links.token(request.id, request.linkGeneration);
  const url = deps.links.url(deps.config.publicUrl, token);
  const organization = request.organization.name;
  const title = oneLine(request.title);
  const subject = {
    invitation: `${organization} asks you for evidence: ${title}`,
    reminder: `Reminder: ${organization} needs "${title}" by ${day(request.dueAt)}`,
    rejection: `${organization} could not accept what you sent for "${title}"`,
  }[job.kind];
  const opening = {
    invitation: `${organization} asks you to send files for "${request.title}".`,
    reminder: `${organization} is still waiting for files for "${request.title}".`,
    rejection: `${organization} reviewed the files you sent for "${request.title}" and could not accept them.`,
  }[job.kind];
  const paragraphs = [
    opening,
    ...(job.kind === "rejection" && request.rejectionReason ? [`Their reason: ${request.rejectionReason}`] : []),
    ...(request.instructions && job.kind !== "rejection" ? [request.instructions] : []),
    `Due: ${day(request.dueAt)}. The link works until ${day(request.expiresAt)}; no account is needed.`,
  ];
  const footer =
    "This link is for you alone: anyone who has it can send files to this request. If you did not expect it, ignore this message.";
  const text = [...paragraphs.flatMap((p) => [p, ""]), `Open the page to send the files: ${url}`, "", "--", footer, ""].join(
    "\n",
  );
  const html = [
    "<!doctype html>",
    '<html><body style="font-family: sans-serif">',
    ...paragraphs.map((p) => `<p>${escapeHtml(p).replace(/\n/g, "<br>")}</p>`),
    `<p><a href="${escapeHtml(url)}">Open the page to send the files</a></p>`,
    `<hr><p style="color: #666; font-size: small">${escapeHtml(footer)}</p>`,
    "</body></html>",
  ].join("\n");
  return {
    from: deps.config.from,
    to: { name: request.recipientName ?? "", address: request.recipientEmail },
    subject,
    text,
    html,
    messageId: requestMessageId(job, deps.config.publicUrl),
    date: new Date(job.at),
    headers: { "Auto-Submitted": "auto-generated" },
  };
}
