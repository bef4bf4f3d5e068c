import { createGraphQLError, type Plugin } from "graphql-yoga";
import { jsonDepth, MAX_JSON_DEPTH } from "./body-admission.js";
import { transportErrorResponse } from "./error-response.js";

/** A lone UTF-16 surrogate: not a character, and neither PostgreSQL's JSON nor its text can keep it. */
const loneSurrogate = /\p{Surrogate}/u;

/** The path of the first string in `value` that is not well-formed Unicode, or null. */
export function malformedTextPath(value: unknown, path = ""): string | null {
  if (typeof value === "string") return loneSurrogate.test(value) ? path : null;
  if (!value || typeof value !== "object") return null;
  for (const [key, item] of Object.entries(value)) {
    if (loneSurrogate.test(key)) return path;
    const found = malformedTextPath(item, path ? `${path}.${key}` : key);
    if (found !== null) return found;
  }
  return null;
}

/** Most items of one list in a request's input: coercing a huge list costs seconds of CPU. */
export const MAX_LIST_ITEMS = 10_000;

/** The path of the first list in `value` longer than MAX_LIST_ITEMS, or null. */
export function longListPath(value: unknown, path = ""): string | null {
  if (!value || typeof value !== "object") return null;
  if (Array.isArray(value) && value.length > MAX_LIST_ITEMS) return path;
  for (const [key, item] of Object.entries(value)) {
    const found = longListPath(item, path ? `${path}.${key}` : key);
    if (found !== null) return found;
  }
  return null;
}

const jsonContentType = /^application\/json$/;

/**
 * Requests to /graphql that graphql-yoga would answer outside our error format, or let through to
 * the database: non-JSON bodies (415), GET parameters that are not JSON (400), and text that is not
 * well-formed Unicode (400).
 */
export function useGraphqlInputHygiene(): Plugin {
  return {
    onRequest({ request, url, endResponse, setRequest }) {
      if (url.pathname !== "/graphql") return;
      if (request.method === "POST") {
        const raw = request.headers.get("content-type") ?? "";
        const type = raw.split(";")[0]?.trim().toLowerCase() ?? "";
        if (!jsonContentType.test(type)) {
          endResponse(
            transportErrorResponse(
              url.pathname,
              "UNSUPPORTED_MEDIA_TYPE",
              "Send GraphQL requests as JSON (Content-Type: application/json)",
            ),
          );
        } else if (raw !== raw.toLowerCase()) {
          // Media types are case-insensitive; graphql-yoga only recognises the lower-case form.
          const headers = new Headers(request.headers);
          headers.set("content-type", raw.toLowerCase());
          setRequest(new Request(request, { headers }));
        }
        return;
      }
      for (const name of ["variables", "extensions"]) {
        const raw = url.searchParams.get(name);
        if (raw === null) continue;
        if (jsonDepth(raw) > MAX_JSON_DEPTH) {
          endResponse(transportErrorResponse(url.pathname, "BAD_USER_INPUT", `The ${name} parameter nests too deeply`));
          return;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw);
        } catch {
          parsed = undefined;
        }
        if (parsed !== null && (typeof parsed !== "object" || Array.isArray(parsed))) {
          endResponse(transportErrorResponse(url.pathname, "BAD_USER_INPUT", `The ${name} parameter must be a JSON object`));
          return;
        }
      }
    },
    onParams({ params }) {
      const long = longListPath(params.variables ?? {}, "variables");
      if (long !== null) {
        throw createGraphQLError(`${long}: a list may have at most ${MAX_LIST_ITEMS} items`, {
          extensions: { code: "BAD_USER_INPUT", http: { status: 400 } },
        });
      }
      const where =
        typeof params.query === "string" && loneSurrogate.test(params.query)
          ? "query"
          : malformedTextPath(params.variables ?? {}, "variables");
      if (where !== null) {
        throw createGraphQLError(`${where}: text must be well-formed Unicode (a lone surrogate is not a character)`, {
          extensions: { code: "BAD_USER_INPUT", http: { status: 400 } },
        });
      }
    },
  };
}
