import type { Plugin } from "graphql-yoga";
import { withoutLinkToken } from "../auth/evidence-request-links.js";
import type { BodyReader } from "./body-admission.js";
import { requestIdOf } from "./request-id.js";

/** What the route needs of the notification module (notifications.unsubscribe.ts). */
export type UnsubscribeHandler = {
  check(token: string): Promise<{ reason: string } | undefined>;
  apply(token: string, requestId?: string): Promise<{ done: true; reason: string } | { done: false }>;
};

export const UNSUBSCRIBE_PATH = "/unsubscribe/";

/** The path as logs and traces may keep it: an unsubscribe token or an evidence request's link token is a credential, so it is left out. */
export function loggablePath(pathname: string): string {
  return pathname.startsWith(UNSUBSCRIBE_PATH) ? `${UNSUBSCRIBE_PATH}{token}` : withoutLinkToken(pathname);
}
/** A JWT of ours is about 250 characters; anything much longer is not one. */
const MAX_TOKEN_LENGTH = 1_024;

const reasonNames: Record<string, string> = {
  mention: "mentions",
  assigned: "assignments",
  review_requested: "review requests",
  review_completed: "completed reviews",
  webhook_disabled: "disabled webhook endpoints",
  control_not_ready: "controls that are no longer ready",
  evidence_due: "evidence coming due",
  evidence_submitted: "submitted evidence",
};

const text = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(`${body}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", ...headers },
  });

const badToken = () =>
  text(400, "This unsubscribe link is not valid or has expired. Change your e-mail preferences in the app instead.");

const page = (reasonName: string) =>
  new Response(
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Stop e-mail for ${reasonName}</title></head>
<body style="font-family: sans-serif; max-width: 32rem; margin: 3rem auto">
<p>Stop e-mail about ${reasonName}? Your notifications stay in the app's inbox.</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Stop e-mail for ${reasonName}</button></form>
</body></html>
`,
    {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
        // The page runs nothing and posts only to itself; nobody may frame it.
        "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        "referrer-policy": "no-referrer",
      },
    },
  );

/**
 * `/unsubscribe/<token>`, RFC 8058 one-click unsubscribe, outside `/v1` and the schema like /health:
 * `POST` with the form body `List-Unsubscribe=One-Click` (urlencoded or multipart, no credential,
 * no CSRF header) switches the token's reason off and answers 200 in plain text; `GET` only shows
 * a page with a button that POSTs, because link scanners fetch every GET of a message. A bad or
 * expired token is a 400 in plain text: mail providers read only the status, people read the text.
 * Mounted after the rate limit and the body limit, which apply here as everywhere.
 */
export function useUnsubscribe(options: { handler: UnsubscribeHandler; bodyReader: BodyReader }): Plugin {
  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      if (!url.pathname.startsWith(UNSUBSCRIBE_PATH)) return;
      const token = url.pathname.slice(UNSUBSCRIBE_PATH.length);
      if (request.method === "GET" || request.method === "HEAD") {
        const claim = token.length <= MAX_TOKEN_LENGTH ? await options.handler.check(token) : undefined;
        endResponse(claim ? page(reasonNames[claim.reason] ?? claim.reason) : badToken());
        return;
      }
      if (request.method !== "POST") {
        endResponse(text(405, "Use POST to unsubscribe, or open the link in a browser.", { allow: "GET, HEAD, POST" }));
        return;
      }
      const owner = {};
      try {
        const read = await options.bodyReader.read(request, owner);
        if ("refused" in read) {
          endResponse(text(read.refused.code === "PAYLOAD_TOO_LARGE" ? 413 : 503, read.refused.message, read.headers));
          return;
        }
        const form = await formOf(read.text, request.headers.get("content-type"));
        if (form?.get("List-Unsubscribe") !== "One-Click") {
          endResponse(text(400, "An unsubscribe request carries the form field List-Unsubscribe=One-Click (RFC 8058)."));
          return;
        }
        if (token.length > MAX_TOKEN_LENGTH) {
          endResponse(badToken());
          return;
        }
        const outcome = await options.handler.apply(token, requestIdOf(serverContext as object));
        endResponse(
          outcome.done
            ? text(
                200,
                `You will no longer receive e-mail for ${reasonNames[outcome.reason] ?? outcome.reason}. Your notifications stay in the app.`,
              )
            : badToken(),
        );
      } finally {
        options.bodyReader.releaseFor(owner);
      }
    },
  };
}

/** The form fields of a urlencoded or multipart body; undefined for any other body. */
async function formOf(body: string, contentType: string | null): Promise<FormData | URLSearchParams | undefined> {
  const type = contentType?.split(";")[0]?.trim().toLowerCase();
  if (type === "application/x-www-form-urlencoded") return new URLSearchParams(body);
  if (type === "multipart/form-data") {
    try {
      return await new Response(body, { headers: { "content-type": contentType as string } }).formData();
    } catch {
      return undefined;
    }
  }
  return undefined;
}
