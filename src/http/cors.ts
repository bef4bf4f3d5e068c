import type { Plugin } from "graphql-yoga";

/** CORS headers (with credentials) for listed origins only; nothing for any other, `null` included. */
export function corsFor(origins: readonly string[]) {
  const allowed = new Set(origins);
  return (request: Request) => {
    const origin = request.headers.get("origin");
    if (!origin || !allowed.has(origin)) return false;
    return {
      origin: [origin],
      credentials: true,
      methods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
      // x-amz-checksum-sha256: a browser's upload to the URLs the service signs (attachment-objects.ts).
      allowedHeaders: [
        "content-type",
        "x-api-key",
        "authorization",
        "x-organization-id",
        "idempotency-key",
        "if-none-match",
        "x-amz-checksum-sha256",
      ],
      exposedHeaders: [
        "x-request-id",
        "etag",
        "retry-after",
        "ratelimit-limit",
        "ratelimit-remaining",
        "ratelimit-reset",
        "ratelimit-policy",
      ],
      maxAge: 600,
    };
  };
}

/**
 * With any origin listed, every answer depends on the caller's Origin (a listed one gets CORS
 * headers, another or none gets none), so every answer says `Vary: Origin`, preflights included:
 * a shared cache must not hand one origin's answer to another. Yoga's CORS plugin says it only for
 * lists of several origins, and `corsFor` always passes one. With no origin listed, no answer
 * depends on it.
 */
export function useVaryOnOrigin(origins: readonly string[]): Plugin {
  if (origins.length === 0) return {};
  return {
    onResponse({ response }) {
      const vary = response.headers.get("vary");
      const tokens = (vary ?? "").split(",").map((token) => token.trim().toLowerCase());
      if (tokens.includes("origin") || tokens.includes("*")) return;
      response.headers.set("vary", vary ? `${vary}, Origin` : "Origin");
    },
  };
}
