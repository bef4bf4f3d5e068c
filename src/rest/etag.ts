import { createHash } from "node:crypto";
import type { FetchAPI } from "graphql-yoga";
import { IF_NONE_MATCH_MAX_LENGTH } from "./openapi.js";

type Answer = { status: number; headers: Record<string, string>; body: string | Buffer<ArrayBuffer> };

/**
 * A GET answer with an ETag (a hash of its bytes), or 304 with no body when the caller already has
 * them (If-None-Match). Answers depend on the caller, so caches must revalidate every time.
 * Built with the server's own fetch classes: converting between implementations costs more than the hash.
 */
function conditional(request: Request, { status, headers, body }: Answer, fetchAPI: FetchAPI): Response {
  const etag = `"${createHash("sha1").update(body).digest("base64url")}"`;
  headers.etag = etag;
  headers["cache-control"] = "private, no-cache";
  const known = request.headers.get("if-none-match");
  if (
    known &&
    known.length <= IF_NONE_MATCH_MAX_LENGTH &&
    (known.trim() === "*" || known.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag))
  ) {
    delete headers["content-length"];
    delete headers["content-type"];
    return new fetchAPI.Response(null, { status: 304, headers });
  }
  return new fetchAPI.Response(body, { status, headers });
}

/** A JSON answer as text with its headers. */
async function jsonAnswer(response: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: response.status, headers, body: await response.text() };
}

/**
 * A REST read's 200 as it is sent: its ETag and cache headers, and 304 when the caller has it. Its
 * own module so that the bench can price it (bench/guards.mjs). A download route's file never
 * comes here: it streams from the store (rest-plugin.ts, attachments.routes.ts).
 */
export async function withEtag(request: Request, response: Response, fetchAPI: FetchAPI): Promise<Response> {
  return conditional(request, await jsonAnswer(response), fetchAPI);
}

/**
 * The same for a JSON answer written here rather than by Sofa (rest-dispatch.ts): the headers
 * Sofa's `Response.json` sets, then the ETag, in one response instead of a copy of another.
 */
export function etaggedJson(request: Request, status: number, json: string, fetchAPI: FetchAPI): Response {
  const headers = { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(json)) };
  return conditional(request, { status, headers, body: json }, fetchAPI);
}
