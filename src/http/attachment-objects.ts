import { Readable } from "node:stream";
import type { Plugin } from "graphql-yoga";
import type { Logger } from "pino";
import { guardedBody } from "../platform/attachments/guarded-body.js";
import { type DownloadGrant, OBJECTS_PATH, type ServiceUrls, type UploadGrant } from "../platform/attachments/signed-urls.js";
import {
  type AttachmentStore,
  base64ToHex,
  isObjectKey,
  ObjectExistsError,
  ObjectMismatchError,
  type StoreKind,
  StoreUnavailableError,
  storedBytesHeaders,
} from "../platform/attachments/store.js";
import { connectionAbort } from "./connection-abort.js";
import { errorResponse } from "./error-response.js";
import { requestIdOf } from "./request-id.js";

/**
 * `/attachment-objects/<key>?op=…&sig=…`: the URLs the service signs for stores that cannot sign
 * their own (filesystem, database; platform/attachments/signed-urls.ts), answered as S3 answers its
 * presigned URLs. The signature is the credential: no API key, no CSRF header, no rate limit (the
 * URL was handed to one caller, for minutes), and no body limit but the signed size. An upload
 * streams into the store, which checks size and SHA-256; a download streams out of it.
 */
type ObjectsOptions = {
  urls: ServiceUrls;
  storeOf: (kind: StoreKind) => AttachmentStore | undefined;
  logger: Logger;
  /** ATTACHMENT_STORE_TIMEOUT_MS: the longest a download waits for the store's next bytes. */
  timeoutMs: number;
};

export function useAttachmentObjects(options: ObjectsOptions): Plugin {
  return {
    async onRequest({ request, url, endResponse, serverContext }) {
      if (!url.pathname.startsWith(OBJECTS_PATH)) return;
      endResponse(await answer(request, url, options, serverContext));
    },
  };
}

async function answer(request: Request, url: URL, options: ObjectsOptions, serverContext: object): Promise<Response> {
  const key = url.pathname.slice(OBJECTS_PATH.length);
  const grant = isObjectKey(key) ? await options.urls.verify(url) : "altered";
  if (grant === "altered") return forbidden("This attachment URL is not valid: it was altered or is not one the service signed");
  if (grant === "expired") return forbidden("This attachment URL has expired: ask the API for a new one");
  const store = options.storeOf(grant.store);
  if (!store)
    return errorResponse("SERVICE_UNAVAILABLE", `The ${grant.store} attachment store is not configured on this replica`);
  try {
    if (grant.op === "upload") {
      if (request.method !== "PUT") return notAllowed("PUT");
      return await upload(request, store, grant);
    }
    if (request.method !== "GET" && request.method !== "HEAD") return notAllowed("GET, HEAD");
    return await download(request, store, grant, options, serverContext);
  } catch (error) {
    if (error instanceof StoreUnavailableError) return errorResponse("SERVICE_UNAVAILABLE", error.message);
    throw error;
  }
}

async function upload(request: Request, store: AttachmentStore, grant: UploadGrant): Promise<Response> {
  // The signed headers, as S3 checks a presigned PUT's: sent otherwise, the URL does not admit the request.
  const type = request.headers.get("content-type");
  const length = request.headers.get("content-length");
  const checksum = request.headers.get("x-amz-checksum-sha256");
  if (
    type !== grant.type ||
    (length !== null && length !== String(grant.size)) ||
    base64ToHex(checksum ?? "") !== grant.sha256 ||
    request.headers.get("if-none-match") !== "*"
  )
    return forbidden(
      `This URL admits only the declared bytes: send Content-Type: ${grant.type}, Content-Length: ${grant.size}, the declared x-amz-checksum-sha256 and If-None-Match: *`,
    );
  const body = request.body ? Readable.from(request.body as unknown as AsyncIterable<Uint8Array>) : Readable.from([]);
  try {
    await store.put(grant.key, body, { size: grant.size, sha256: grant.sha256, type: grant.type });
  } catch (error) {
    if (error instanceof ObjectExistsError)
      return errorResponse(
        "CONFLICT",
        "An object was already uploaded to this URL: an upload URL admits one upload, and an object is never changed",
      );
    if (error instanceof ObjectMismatchError)
      return errorResponse("BAD_USER_INPUT", `The bytes are not the declared ones: ${error.message}`);
    throw error;
  }
  return new Response(null, { status: 200, headers: { "cache-control": "no-store" } });
}

async function download(
  request: Request,
  store: AttachmentStore,
  grant: DownloadGrant,
  options: ObjectsOptions,
  serverContext: object,
): Promise<Response> {
  const object = await store.open(grant.key);
  if (!object) return errorResponse("NOT_FOUND", "This attachment no longer exists");
  const headers = {
    ...storedBytesHeaders({ type: grant.type, size: object.size, fileName: grant.name }),
    "cache-control": "private, no-store",
  };
  if (request.method === "HEAD") {
    object.body.destroy();
    return new Response(null, { status: 200, headers });
  }
  const body = guardedBody(object.body, {
    timeoutMs: options.timeoutMs,
    abort: connectionAbort(serverContext),
    onFail: (error, sentBytes) =>
      options.logger.warn(
        { requestId: requestIdOf(serverContext), store: store.kind, sentBytes, size: object.size, err: error },
        "attachment download cut off: the store failed or stalled mid-stream",
      ),
  });
  return new Response(body, { status: 200, headers });
}

const forbidden = (message: string) => errorResponse("FORBIDDEN", message);

const notAllowed = (allow: string) =>
  errorResponse("METHOD_NOT_ALLOWED", `This attachment URL answers ${allow} only`, undefined, { allow });
