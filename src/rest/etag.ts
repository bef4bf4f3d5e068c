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

/** The bytes of a download route's JSON answer, sent so that no browser renders them as a page. */
async function downloadAnswer(json: Response): Promise<Answer> {
  const file = (await json.json()) as { name: string; type: string; contentBase64: string };
  const bytes = Buffer.from(file.contentBase64, "base64");
  const asciiName = file.name.replace(/[^A-Za-z0-9._ -]/g, "_");
  return {
    status: 200,
    body: bytes,
    headers: {
      "content-type": file.type,
      "content-length": String(bytes.length),
      "content-disposition": `attachment; filename="${asciiName}"; filename*=UTF-8''${encodeURIComponent(file.name)}`,
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; sandbox",
    },
  };
}

/**
 * A REST read's 200 as it is sent: its ETag and cache headers, 304 when the caller has it, and a
 * download route's file as its own bytes. Its own module so that the bench can price it (bench/guards.mjs).
 */
export async function withEtag(request: Request, response: Response, fetchAPI: FetchAPI, download: boolean): Promise<Response> {
  const answer = download ? await downloadAnswer(response) : await jsonAnswer(response);
  return conditional(request, answer, fetchAPI);
}

/**
 * The same for a JSON answer written here rather than by Sofa (rest-dispatch.ts): the headers
 * Sofa's `Response.json` sets, then the ETag, in one response instead of a copy of another.
 */
export function etaggedJson(request: Request, status: number, json: string, fetchAPI: FetchAPI): Response {
  const headers = { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(json)) };
  return conditional(request, { status, headers, body: json }, fetchAPI);
}
