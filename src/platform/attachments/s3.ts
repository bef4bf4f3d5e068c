import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { S3ServiceException } from "@aws-sdk/client-s3";
import type { S3StoreConfig } from "../config.js";
import {
  type AttachmentStore,
  checkedBytes,
  contentDisposition,
  hexToBase64,
  measure,
  ObjectExistsError,
  ObjectMismatchError,
  StoreUnavailableError,
  uploadHeaders,
  withinTimeout,
} from "./store.js";

export type S3StoreSettings = S3StoreConfig & {
  /** Tests only: the server's keys; the SDK's default credential chain when absent. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
};

/** The AWS SDK's S3 client and presigner. */
type Sdk = typeof import("@aws-sdk/client-s3") & typeof import("@aws-sdk/s3-request-presigner");
let loadedSdk: Sdk | undefined;
let sdkLoading: Promise<Sdk> | undefined;

/**
 * The SDK, loaded when the first S3 store is made, not when the service starts: a service whose
 * objects are not in S3 never loads it (80 ms of loading alone; in the started service 3 to 8 MB
 * less memory, 2026-12-04).
 */
function loadSdk(): Promise<Sdk> {
  sdkLoading ??= Promise.all([import("@aws-sdk/client-s3"), import("@aws-sdk/s3-request-presigner")]).then(
    ([client, presigner]) => (loadedSdk = { ...client, ...presigner }),
  );
  return sdkLoading;
}

/** An error S3 answered (only the SDK, once loaded, makes them). */
function isS3Error(error: unknown): error is S3ServiceException {
  return loadedSdk !== undefined && error instanceof loadedSdk.S3ServiceException;
}

/**
 * Objects in an S3 bucket (AWS, or any S3-compatible service at S3_ENDPOINT) through the AWS SDK
 * v3, with its default credential chain. S3 signs the URLs: a presigned PUT whose signed headers
 * pin size, type and SHA-256 (S3 itself refuses other bytes), a presigned GET that sets the
 * response's type and Content-Disposition.
 */
export function createS3Store(options: S3StoreSettings & { timeoutMs: number }): AttachmentStore {
  const { bucket, timeoutMs } = options;
  const ready = loadSdk().then((sdk) => ({
    sdk,
    client: new sdk.S3Client({
      region: options.region,
      // The SDK's default chain (environment, shared files, instance or task role) unless given (tests).
      credentials: options.credentials,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      // A checksum only where an operation needs one: our PUTs carry the declared SHA-256 themselves,
      // and no streamed body becomes aws-chunked with a trailer (which some S3-compatible servers refuse).
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      // A store that does not connect, or stops sending, fails within the timeout instead of hanging.
      requestHandler: { connectionTimeout: timeoutMs, socketTimeout: timeoutMs },
    }),
  }));
  // A store made and never used does not leave a failed load unhandled; its first use reports it.
  ready.catch(() => {});
  const timed = <T>(what: string, work: (abortSignal: AbortSignal) => Promise<T>) =>
    withinTimeout(timeoutMs, what, (signal) => work(signal).catch((error) => Promise.reject(unavailableOr(error))));

  /**
   * Removes what a refused put may have left. S3 keeps nothing of a request cut off before its
   * declared length, or whose checksum differs; some S3-compatible servers (s3rver) keep what
   * arrived, and write it a moment after the connection closed: deleted until it stays absent.
   */
  async function removeMismatch(key: string) {
    const { sdk, client } = await ready;
    const deadline = Date.now() + timeoutMs;
    for (let absent = 0; absent < 3 && Date.now() < deadline; ) {
      await client.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: key })).catch(() => {});
      const head = await client
        .send(new sdk.HeadObjectCommand({ Bucket: bucket, Key: key }))
        .catch(absentAsNull)
        .catch(() => null);
      absent = head ? 0 : absent + 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function get(key: string) {
    const { sdk, client } = await ready;
    return timed("read", (abortSignal) =>
      client.send(new sdk.GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal }),
    ).catch(absentAsNull);
  }

  return {
    kind: "s3",

    async put(key, body, expect) {
      const { sdk, client } = await ready;
      const exists = await timed("put", (abortSignal) =>
        client.send(new sdk.HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal }),
      ).catch(absentAsNull);
      if (exists) throw new ObjectExistsError(key);
      const checked = checkedBytes(expect);
      const source = body instanceof Uint8Array ? Readable.from([body]) : body;
      // Bytes that are not the declared ones end the request at once, as does a source that fails.
      const abort = new AbortController();
      checked.on("error", () => abort.abort());
      pipeline(source, checked).catch(() => {});
      const mismatch = () => (checked.errored instanceof ObjectMismatchError ? checked.errored : undefined);
      try {
        await client.send(
          new sdk.PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: checked,
            ContentLength: expect.size,
            ContentType: expect.type,
            ChecksumSHA256: hexToBase64(expect.sha256),
            IfNoneMatch: "*",
          }),
          { abortSignal: abort.signal },
        );
      } catch (error) {
        if (mismatch()) await removeMismatch(key);
        if (mismatch()) throw mismatch();
        // 412: the key exists; 409: another conditional write to it won the race.
        if (isS3Error(error) && [409, 412].includes(error.$metadata.httpStatusCode ?? 0)) throw new ObjectExistsError(key);
        throw unavailableOr(checked.errored ?? error);
      }
      // The check fails at the last byte, which a server may already have taken as the whole object.
      if (mismatch()) {
        await removeMismatch(key);
        throw mismatch();
      }
    },

    async open(key) {
      const object = await get(key);
      if (!object) return null;
      return { body: object.Body as Readable, size: Number(object.ContentLength) };
    },

    async digest(key) {
      const object = await get(key);
      if (!object) return null;
      return measure(object.Body as Readable).catch((error) => Promise.reject(unavailableOr(error)));
    },

    async delete(key) {
      const { sdk, client } = await ready;
      await timed("delete", (abortSignal) =>
        client.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: key }), { abortSignal }),
      );
    },

    async signUpload(key, o) {
      const { sdk, client } = await ready;
      const command = new sdk.PutObjectCommand({
        Bucket: bucket,
        Key: key,
        ContentType: o.type,
        ContentLength: o.size,
        ChecksumSHA256: hexToBase64(o.sha256),
        // Written once: S3 refuses (412) a PUT to a key that holds an object, so the URL cannot
        // change an object once uploaded, attached or not.
        IfNoneMatch: "*",
      });
      const url = await sdk.getSignedUrl(client, command, {
        expiresIn: o.expiresInSeconds,
        // Headers the client must send as they are: they are signed, not moved into the query.
        signableHeaders: new Set(["content-type", "content-length", "if-none-match"]),
        unhoistableHeaders: new Set(["x-amz-checksum-sha256"]),
      });
      return { url, method: "PUT", headers: uploadHeaders(o), expiresAt: new Date(Date.now() + o.expiresInSeconds * 1000) };
    },

    async signDownload(key, o) {
      const { sdk, client } = await ready;
      const command = new sdk.GetObjectCommand({
        Bucket: bucket,
        Key: key,
        ResponseContentType: o.type,
        ResponseContentDisposition: contentDisposition(o.fileName),
      });
      const url = await sdk.getSignedUrl(client, command, { expiresIn: o.expiresInSeconds });
      return { url, expiresAt: new Date(Date.now() + o.expiresInSeconds * 1000) };
    },

    async ping() {
      const { sdk, client } = await ready;
      await timed("ping", (abortSignal) => client.send(new sdk.HeadBucketCommand({ Bucket: bucket }), { abortSignal }));
    },
  };
}

function absentAsNull(error: unknown): null {
  if (isS3Error(error) && (error.name === "NoSuchKey" || error.name === "NotFound")) return null;
  throw error;
}

const networkCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND",
]);

/**
 * No answer, a timeout, a 5xx, or the store refusing the service's credentials (a wrong or revoked
 * key, a missing permission: 401, 403): the store is unavailable to this replica, a 503 the caller
 * retries and `/ready` reports. Another 4xx (no such bucket) is a configuration fault.
 */
function unavailableOr(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (isS3Error(error)) {
    const status = error.$metadata.httpStatusCode ?? 0;
    if (status === 401 || status === 403)
      return new StoreUnavailableError(
        `The attachment store refuses the service's credentials (${error.name}); retry shortly`,
        error,
      );
    return status >= 500 || status === 0 ? new StoreUnavailableError(undefined, error) : error;
  }
  const e = error as { code?: string; name?: string };
  if ((e.code && networkCodes.has(e.code)) || e.name === "TimeoutError" || e.name === "AbortError")
    return new StoreUnavailableError(undefined, error);
  return error;
}
