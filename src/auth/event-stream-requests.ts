/**
 * A browser's own EventSource on a page of this origin: a GET asking for server-sent events whose
 * Sec-Fetch-Site says same-origin. Browsers set that header themselves and no page can forge it,
 * so such a request cannot be cross-site, and the CSRF check has nothing to prevent. (Yoga runs no
 * mutation over GET; other clients send a credential header, which passes the check anyway.)
 */
export function isSameOriginEventStream(request: Request): boolean {
  return (
    request.method === "GET" &&
    (request.headers.get("accept") ?? "").includes("text/event-stream") &&
    request.headers.get("sec-fetch-site") === "same-origin"
  );
}

/**
 * The organization of a same-origin EventSource, which cannot send X-Organization-Id: the
 * `organizationId` query parameter of its URL. Null for any other request.
 */
export function eventStreamOrganization(request: Request): string | null {
  if (!isSameOriginEventStream(request)) return null;
  return new URL(request.url).searchParams.get("organizationId")?.trim() || null;
}
