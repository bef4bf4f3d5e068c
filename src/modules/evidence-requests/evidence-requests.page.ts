import { readFileSync } from "node:fs";
import type { RecipientActor } from "../../auth/actor.js";
import type { AttachmentSettings } from "../comments/attachments.service.js";
import { type EvidenceRequestService, MAX_REQUEST_FILES } from "./evidence-requests.service.js";

/**
 * The page's three files, beside this module in the source tree and beside the bundle in dist/
 * (scripts/build.mjs copies the folder): the markup is a template filled here, the script and the
 * stylesheet are served as they are.
 */
const folder = new URL("./evidence-request-page/", import.meta.url);
const read = (name: string) => readFileSync(new URL(name, folder), "utf8");
let files: { template: string; script: string; style: string } | undefined;
const pageFiles = () => {
  files ??= { template: read("request.html"), script: read("request.js"), style: read("request.css") };
  return files;
};

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const day = (date: Date) =>
  date.toLocaleDateString("en-GB", { weekday: "long", day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });
const bytes = (size: number) =>
  size >= 1_048_576 ? `${(size / 1_048_576).toFixed(1)} MB` : size >= 1024 ? `${Math.ceil(size / 1024)} KB` : `${size} bytes`;

/** Fills `{{name}}` with values already escaped (or markup made here). */
function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => values[name] ?? "");
}

const GONE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<title>This link no longer works</title>
<link rel="stylesheet" href="/evidence-request-page/request.css">
</head>
<body>
<main>
<h1>This link no longer works</h1>
<p>If you still need to send files, ask the person who sent you the link for a new one.</p>
</main>
</body>
</html>
`;

/** The page of section 17, for the route in src/http/evidence-request-page.ts (its EvidenceRequestPage). */
export function evidenceRequestPage(service: EvidenceRequestService, attachments: AttachmentSettings) {
  const uploadOrigins = new Map<string, Promise<string>>();
  /** Where the store's upload URLs point (S3's endpoint, or the service itself), for the page's CSP. */
  const uploadOrigin = (origin: string) => {
    let found = uploadOrigins.get(origin);
    if (!found) {
      found = attachments.store
        .signUpload("0".repeat(32), {
          size: 1,
          type: "application/octet-stream",
          sha256: "0".repeat(64),
          expiresInSeconds: 60,
          origin,
        })
        .then((signed) => new URL(signed.url).origin);
      found.catch(() => uploadOrigins.delete(origin));
      uploadOrigins.set(origin, found);
    }
    return found;
  };

  return {
    async render(recipient: RecipientActor, origin: string) {
      const request = await service.current(recipient);
      const takesFiles = request.status === "open" || request.status === "rejected";
      const files = request.files.length
        ? `<section aria-labelledby="sent-heading"><h2 id="sent-heading">Files already sent</h2><ul class="files">${request.files
            .map((f) => `<li>${escapeHtml(f.name)} (${bytes(f.size)})</li>`)
            .join("")}</ul></section>`
        : "";
      const form = `<form id="submission" data-max-files="${MAX_REQUEST_FILES}" data-max-bytes="${attachments.maxBytes}" novalidate>
<div class="field">
<label for="files">Files</label>
<p class="hint" id="files-hint">Up to ${MAX_REQUEST_FILES} files, each at most ${bytes(attachments.maxBytes)}.</p>
<input id="files" name="files" type="file" multiple required aria-describedby="files-hint">
</div>
<div class="field">
<label for="note">Note for ${escapeHtml(request.organizationName)} <span class="hint">(optional)</span></label>
<textarea id="note" name="note" rows="4" maxlength="2000"></textarea>
</div>
<button type="submit" id="submit">Send files</button>
<p id="status" role="status" aria-live="polite"></p>
</form>`;
      const waiting = `<section id="done" role="status"><h2>Your files await review</h2><p>${escapeHtml(request.organizationName)} received the files you sent${
        request.submittedAt ? ` on ${escapeHtml(day(request.submittedAt))}` : ""
      } and will review them. You will get an e-mail if anything else is needed.</p></section>`;
      const html = fill(pageFiles().template, {
        organizationName: escapeHtml(request.organizationName),
        title: escapeHtml(request.title),
        instructions: request.instructions ? `<div class="instructions">${escapeHtml(request.instructions)}</div>` : "",
        dueAt: escapeHtml(day(request.dueAt)),
        dueAtIso: request.dueAt.toISOString(),
        expiresAt: escapeHtml(day(request.expiresAt)),
        expiresAtIso: request.expiresAt.toISOString(),
        rejection: request.rejectionReason
          ? `<div class="notice" role="alert"><p><strong>The files you sent were not accepted.</strong> ${escapeHtml(request.rejectionReason)}</p><p>Please send them again.</p></div>`
          : "",
        files,
        state: takesFiles ? form : waiting,
      });
      return { html, uploadOrigin: await uploadOrigin(origin) };
    },
    gone: () => GONE,
    asset(name: string) {
      if (name === "request.js") return { type: "text/javascript; charset=utf-8", body: pageFiles().script };
      if (name === "request.css") return { type: "text/css; charset=utf-8", body: pageFiles().style };
      return undefined;
    },
  };
}
