import { isUtf8 } from "node:buffer";
import type { IncomingMessage } from "node:http";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createGraphQLError, type GraphQLParams, type Plugin } from "graphql-yoga";
import type { AuthState } from "../auth/caller.js";
import { AppError, BadUserInputError, UnauthenticatedError } from "../platform/errors.js";
import { transportErrorResponse } from "./error-response.js";

/** Seconds a caller refused for lack of memory is asked to wait. */
const BUSY_RETRY_AFTER_SECONDS = 2;
/** Deepest JSON nesting accepted in a request body: real inputs nest a handful of levels. */
export const MAX_JSON_DEPTH = 64;

/**
 * Bytes of request bodies in flight across the process. A body is admitted (its declared length,
 * or chunk by chunk when it is chunked) before it is read, and released when its answer is ready:
 * past the budget, the request is refused with 503 instead of growing the heap.
 */
export type BodyBudget = { tryAcquire: (bytes: number) => boolean; release: (bytes: number) => void; inFlight: () => number };

/** Bodies larger than this in total since the last collection make an idle process collect. */
const COLLECT_AFTER_BYTES = 32 * 1024 * 1024;
const COLLECT_DELAY_MS = 1_000;

/**
 * A full garbage collection, when the runtime allows it. Without one, an idle process keeps the
 * heap that a burst of large bodies grew: nothing allocates, so nothing collects.
 */
const collectGarbage: (() => void) | undefined = (() => {
  try {
    setFlagsFromString("--expose-gc");
    return runInNewContext("gc") as () => void;
  } catch {
    return undefined;
  }
})();

export function createBodyBudget(maxBytes: number): BodyBudget {
  let inFlight = 0;
  let sinceCollection = 0;
  let collection: NodeJS.Timeout | undefined;
  return {
    tryAcquire(bytes) {
      // One body alone may always use the whole budget, else a budget below the body limit starves.
      if (inFlight > 0 && inFlight + bytes > maxBytes) return false;
      inFlight += bytes;
      sinceCollection += bytes;
      clearTimeout(collection);
      return true;
    },
    release(bytes) {
      inFlight = Math.max(0, inFlight - bytes);
      if (inFlight === 0 && sinceCollection >= COLLECT_AFTER_BYTES && collectGarbage) {
        // Once the burst is over (no body in flight for a moment), give its memory back.
        clearTimeout(collection);
        collection = setTimeout(() => {
          sinceCollection = 0;
          collectGarbage();
          // A second pass frees what the first one only finalized (buffers behind weak references).
          collection = setTimeout(() => collectGarbage(), COLLECT_DELAY_MS * 4);
          collection.unref();
        }, COLLECT_DELAY_MS);
        collection.unref();
      }
    },
    inFlight: () => inFlight,
  };
}

export type BodyRead = { text: string } | { refused: AppError; headers?: Record<string, string> };

/** The path of the first key or string in `value` holding U+FFFD (where invalid UTF-8 was), or null. */
function replacedTextPath(value: unknown, path: string): string | null {
  if (typeof value === "string") return value.includes("\uFFFD") ? path : null;
  if (!value || typeof value !== "object") return null;
  for (const [key, item] of Object.entries(value)) {
    const at = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    if (key.includes("\uFFFD")) return at;
    const found = replacedTextPath(item, at);
    if (found !== null) return found;
  }
  return null;
}

/**
 * The refusal of a body that is not valid UTF-8, naming the field that holds the bytes (or the
 * body, when it is no JSON at all): decoded, they would be stored as U+FFFD, altered.
 */
function notUtf8(text: string): AppError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const path = replacedTextPath(parsed, "") || null;
  return path
    ? new BadUserInputError(`${path}: text must be valid UTF-8`, [{ path, message: "not valid UTF-8" }])
    : new BadUserInputError("The request body is not valid UTF-8", [{ path: "body", message: "not valid UTF-8" }]);
}

/** Nesting depth of a JSON text, found without parsing (and so without recursion). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

/**
 * Reads a request body within `limit` bytes (chunked or not, never further) and within the
 * budget, which it charges to `owner` until `releaseFor(owner)`.
 */
export function createBodyReader(budget: BodyBudget, limit: number) {
  const charged = new WeakMap<object, number>();
  const busy = (): BodyRead => ({
    refused: new AppError("SERVICE_UNAVAILABLE", "The server is busy receiving other requests; retry shortly"),
    headers: { "retry-after": String(BUSY_RETRY_AFTER_SECONDS) },
  });
  const tooLarge = (): BodyRead => ({
    refused: new AppError("PAYLOAD_TOO_LARGE", `The request body is larger than ${limit} bytes`),
  });

  function releaseFor(owner: object) {
    const bytes = charged.get(owner);
    if (bytes === undefined) return;
    charged.delete(owner);
    budget.release(bytes);
  }

  function charge(owner: object, bytes: number): boolean {
    if (!budget.tryAcquire(bytes)) return false;
    charged.set(owner, (charged.get(owner) ?? 0) + bytes);
    return true;
  }

  return {
    async read(request: Request, owner: object): Promise<BodyRead> {
      const declared = request.headers.get("content-length");
      const length = declared === null ? null : Number(declared);
      if (length !== null && length > limit) return tooLarge();
      if (length !== null && Number.isFinite(length) && !charge(owner, length)) return busy();
      if (length !== null && Number.isFinite(length) && length <= WHOLE_READ_MAX_BYTES) return whole(request, owner, length);
      const reader = request.body?.getReader();
      if (!reader) return { text: "" };
      const chunks: Uint8Array[] = [];
      let size = 0;
      for (;;) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch {
          // The client went away mid-body: give its share back now, not when (if) an answer is made.
          releaseFor(owner);
          return { refused: new AppError("BAD_USER_INPUT", "The request body could not be read to its end") };
        }
        const { done, value } = next;
        if (done) break;
        size += value.byteLength;
        if (size > limit) {
          void reader.cancel().catch(() => {});
          return tooLarge();
        }
        // A chunked body (or one longer than it said) is admitted as it arrives.
        if (length === null || size > length) {
          if (!charge(owner, value.byteLength)) {
            void reader.cancel().catch(() => {});
            return busy();
          }
        }
        chunks.push(value);
      }
      return checked(Buffer.concat(chunks));
    },
    releaseFor,
  };

  /**
   * A body of a declared length, admitted whole before this: read in one go (the runtime's own
   * collection of the stream's chunks, not a web stream read chunk by chunk: about a tenth of a
   * millisecond less per request under load), over HTTP straight from Node's request (the web
   * Request's body wraps it first: GraphQL get task's CPU 2 to 3 % lower, three alternations of
   * bench/graphql-envelope.mjs, bench/results/2026-12-04-tenth.md). Node's HTTP parser delivers
   * exactly the declared length; a body that is longer all the same (a Request made in process)
   * is charged and bounded.
   */
  async function whole(request: Request, owner: object, length: number): Promise<BodyRead> {
    let bytes: Buffer;
    try {
      const req = (owner as { req?: IncomingMessage }).req;
      if (req && typeof req.on === "function" && !req.readableDidRead) bytes = arrivedWhole(req, length) ?? (await bodyOf(req));
      else {
        const read = await request.arrayBuffer();
        bytes = Buffer.isBuffer(read) ? read : Buffer.from(read);
      }
    } catch {
      // The client went away mid-body: give its share back now, not when (if) an answer is made.
      releaseFor(owner);
      return { refused: new AppError("BAD_USER_INPUT", "The request body could not be read to its end") };
    }
    if (bytes.byteLength > limit) return tooLarge();
    if (bytes.byteLength > length && !charge(owner, bytes.byteLength - length)) return busy();
    return checked(bytes);
  }

  function checked(bytes: Buffer): BodyRead {
    const text = bytes.toString("utf8");
    if (jsonDepth(text) > MAX_JSON_DEPTH) {
      return { refused: new AppError("BAD_USER_INPUT", `JSON nested deeper than ${MAX_JSON_DEPTH} levels is not accepted`) };
    }
    if (!isUtf8(bytes)) return { refused: notUtf8(text) };
    return { text };
  }
}

export type BodyReader = ReturnType<typeof createBodyReader>;

/**
 * A Node request's body of `length` declared bytes when all of them have arrived already (the usual
 * small body, in the packet of its headers: Node's parser has buffered it before any handler reads,
 * though it marks the message complete only later), taken from the stream's buffer at once instead
 * of through its events. The parser never buffers more than the declared length. Undefined otherwise.
 */
export function arrivedWhole(req: IncomingMessage, length: number): Buffer | undefined {
  if (req.readableFlowing || length <= 0 || req.readableLength !== length) return undefined;
  // Paused, read() without a size hands over everything buffered: here the whole body.
  return (req.read() as Buffer | null) ?? undefined;
}

/** A Node request's body, whole; rejects when the client goes away before its end. */
function bodyOf(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.once("end", () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.once("error", reject);
    req.once("close", () => {
      if (!req.complete) reject(new Error("the request body ended early"));
    });
  });
}

/**
 * Bodies declared up to this size are read in one go (`whole`): the GraphQL documents and JSON
 * writes of every day. Larger ones go chunk by chunk as before: a burst of 40 bodies of 25 MiB
 * peaked about 100 MiB higher read whole (test/e2e/memory.test.ts, 700-750 against 600 MiB).
 */
const WHOLE_READ_MAX_BYTES = 1024 * 1024;

/** Whether the request says it carries a body. */
export function announcesBody(request: Request): boolean {
  const length = request.headers.get("content-length");
  return (length !== null && length !== "0") || request.headers.has("transfer-encoding");
}

/**
 * A POST body's GraphQL parameters, refused exactly as Yoga's own JSON parser refuses them (its
 * POST parser, which reads the body as @whatwg-node/fetch's Request.json() does): 400 BAD_REQUEST.
 */
export function graphqlParams(text: string): GraphQLParams {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    const extensions: Record<string, unknown> = { http: { spec: true, status: 400 }, code: "BAD_REQUEST" };
    if (error instanceof Error) {
      const message = error instanceof SyntaxError ? `${error.message}, "${text}" is not valid JSON` : error.message;
      extensions.originalError = { name: error.name, message };
    }
    throw createGraphQLError("POST body sent invalid JSON.", { extensions });
  }
  if (body === null || body === undefined || typeof body !== "object") {
    const received = body === null || body === undefined ? `${body}` : typeof body;
    throw createGraphQLError(`POST body is expected to be object but received ${received}`, {
      extensions: { http: { status: 400 }, code: "BAD_REQUEST" },
    });
  }
  return body as GraphQLParams;
}

/**
 * POST /graphql: the credential is checked before a byte of the body is read (anonymous callers
 * and failed credentials are answered at once), then the body is read within the body limit and
 * the memory budget, and its text is what Yoga parses (graphqlParams). Also releases the budget of both transports when the
 * answer is ready.
 */
export function useGraphqlBodyAdmission(options: {
  reader: BodyReader;
  authenticate: (request: Request) => Promise<AuthState>;
  rememberAuth: (request: Request, auth: AuthState) => void;
}): Plugin {
  /** The text admitted for a POST /graphql, until Yoga parses it. */
  const admitted = new WeakMap<Request, string>();
  return {
    async onRequest({ request, url, serverContext, endResponse, setRequest, fetchAPI }) {
      if (url.pathname !== "/graphql") return;
      const wantsPage =
        request.method === "GET" &&
        !url.searchParams.has("query") &&
        !url.searchParams.has("extensions") &&
        !url.searchParams.has("documentId");
      if (request.method === "OPTIONS" || request.method === "HEAD" || wantsPage) return;
      const auth = await options.authenticate(request);
      const refused = "error" in auth ? auth.error : "anonymous" in auth ? new UnauthenticatedError() : null;
      if (refused) {
        endResponse(transportErrorResponse(url.pathname, refused.code, refused.message));
        return;
      }
      if (request.method !== "POST") return;
      const body = await options.reader.read(request, serverContext);
      if ("refused" in body) {
        endResponse(transportErrorResponse(url.pathname, body.refused.code, body.refused.message, body.headers));
        return;
      }
      if (request.headers.has("idempotency-key")) {
        // useIdempotency reads the text again (to hash it): a request that holds it.
        const checked = new fetchAPI.Request(request.url, { method: "POST", headers: request.headers, body: body.text });
        options.rememberAuth(checked, auth);
        setRequest(checked);
        return;
      }
      // Otherwise Yoga parses the text read here, once: no second request, no second read of the body.
      admitted.set(request, body.text);
    },
    onRequestParse({ request, setRequestParser }) {
      const text = admitted.get(request);
      if (text === undefined) return;
      admitted.delete(request);
      setRequestParser(() => graphqlParams(text));
    },
    onResponse({ serverContext }) {
      options.reader.releaseFor(serverContext);
    },
  };
}
