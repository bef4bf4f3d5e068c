import type { Plugin } from "graphql-yoga";

/** Whether the request carries a credential: an API key, a bearer token, or the session cookie. */
function carriesCredential(request: Request): boolean {
  if (request.headers.has("x-api-key") || request.headers.has("authorization")) return true;
  return /(?:^|;)\s*session_token=/.test(request.headers.get("cookie") ?? "");
}

/**
 * Headers every answer gets, errors included, on both transports (contract section 4), set last,
 * once the answer is final:
 * - `X-Content-Type-Options: nosniff`, so that no browser reads an answer as another type;
 * - `Cache-Control: no-store` on an answer to a credential, since it is that caller's: nothing may
 *   keep it, except a GET answered with an ETag, which keeps its `private, no-cache` (kept, and
 *   revalidated with If-None-Match).
 */
export function useAnswerHeaders(): Plugin {
  return {
    onResponse({ request, response }) {
      const { headers } = response;
      headers.set("x-content-type-options", "nosniff");
      if (!carriesCredential(request)) return;
      if (request.method === "GET" && headers.has("etag")) return;
      headers.set("cache-control", "no-store");
    },
  };
}
