import { createHash, randomBytes } from "node:crypto";
import { type Readable, Transform, type TransformCallback } from "node:stream";
import { AppError } from "../errors.js";

/**
 * Where attachments' bytes live (contract section 15): one port, one file per store behind it
 * (s3.ts, filesystem.ts, database.ts), chosen by ATTACHMENT_STORE (create-store.ts).
 */
export type StoreKind = "s3" | "filesystem" | "database";
export const STORE_KINDS: readonly StoreKind[] = ["s3", "filesystem", "database"];

/** An object's size in bytes and SHA-256 (hex). */
export type ObjectFacts = { size: number; sha256: string };

export interface AttachmentStore {
  readonly kind: StoreKind;
  /**
   * Writes a new object, streaming; refuses (ObjectMismatchError) and removes what it wrote when
   * the bytes are not exactly `size` long or do not hash to `sha256`. Never overwrites: an existing
   * key is ObjectExistsError.
   */
  put(key: string, body: Readable | Uint8Array, expect: ObjectFacts & { type: string }): Promise<void>;
  /** Streams an object, or null when the store has none under that key. */
  open(key: string): Promise<{ body: Readable; size: number } | null>;
  /** Reads the object through (streaming) and answers its size and SHA-256, or null when absent. */
  digest(key: string): Promise<ObjectFacts | null>;
  /** Deletes the object; deleting an absent object is not an error. */
  delete(key: string): Promise<void>;
  /** A URL a client PUTs the bytes to, admitting exactly this size, type and digest until expiry. */
  signUpload(key: string, o: SignUploadOptions): Promise<SignedUpload>;
  /** A credential-free URL serving the bytes with this type and Content-Disposition: attachment. */
  signDownload(key: string, o: SignDownloadOptions): Promise<{ url: string; expiresAt: Date }>;
  /** Throws StoreUnavailableError quickly (bounded timeout) when the store cannot be reached. */
  ping(): Promise<void>;
  /**
   * Removes what writes interrupted before `startedBefore` left behind (a crash in the middle of a
   * put), never a complete object; answers how many pieces went. Absent where the store keeps
   * nothing of an interrupted write (S3 discards an incomplete PUT).
   */
  sweepIncomplete?(startedBefore: Date): Promise<number>;
}

type SignOptions = {
  expiresInSeconds: number;
  /**
   * The service's origin as the caller reached it (`new URL(request.url).origin`): the URLs the
   * service signs itself (filesystem, database) start with it when PUBLIC_URL is unset.
   */
  origin?: string;
};
/** `sha256` in hex, as every store-facing digest. */
export type SignUploadOptions = SignOptions & { size: number; type: string; sha256: string };
export type SignDownloadOptions = SignOptions & { fileName: string; type: string };
export type SignedUpload = { url: string; method: "PUT"; headers: Record<string, string>; expiresAt: Date };

/** The store does not answer, or not in time: the change that needs it is a 503 the caller retries. */
export class StoreUnavailableError extends AppError {
  constructor(message = "The attachment store is unavailable or too slow right now; retry the request shortly", cause?: unknown) {
    super("SERVICE_UNAVAILABLE", message);
    if (cause !== undefined) this.cause = cause;
  }
}

/** The bytes are not the ones declared (size or SHA-256): nothing was kept. */
export class ObjectMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ObjectMismatchError";
  }
}

/** An object already exists under this key: objects are written once. */
export class ObjectExistsError extends Error {
  constructor(key: string) {
    super(`An object already exists under ${key}`);
    this.name = "ObjectExistsError";
  }
}

/** A store object's key: 128 random bits, hex; it carries no organization id, name or user input. */
export function newObjectKey(): string {
  return randomBytes(16).toString("hex");
}

export function isObjectKey(value: string): boolean {
  return /^[0-9a-f]{32}$/.test(value);
}

export const hexToBase64 = (hex: string) => Buffer.from(hex, "hex").toString("base64");
export const base64ToHex = (base64: string) => Buffer.from(base64, "base64").toString("hex");

/**
 * The headers a client sends with the bytes to an upload URL, the same for every store. Each is
 * signed: `If-None-Match: *` makes the PUT a conditional write, which no store lets change an
 * object already there.
 */
export function uploadHeaders(o: { size: number; type: string; sha256: string }): Record<string, string> {
  return {
    "Content-Type": o.type,
    "Content-Length": String(o.size),
    "x-amz-checksum-sha256": hexToBase64(o.sha256),
    "If-None-Match": "*",
  };
}

/**
 * `Content-Disposition: attachment` with the file name as RFC 6266 says: an ASCII fallback in
 * `filename`, the UTF-8 name percent-encoded in `filename*` (RFC 8187). The fallback is made after
 * NFKD, which turns characters a name may hold into ones it may not (U+FF0F, U+2044 into `/`), so
 * path separators are replaced after it, with controls and quotes.
 */
export function contentDisposition(fileName: string): string {
  const fallback = fileName
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^\x20-\x7e]|["\\%/]/g, "_");
  const encoded = encodeURIComponent(fileName).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/**
 * The headers of every answer that serves stored bytes from the API's origin (both download
 * routes, every store the service serves itself): the stored type never runs as a page there
 * (`text/xml` may carry script), is never sniffed into another, and is saved, not shown.
 */
export function storedBytesHeaders(o: { type: string; size: number; fileName: string }): Record<string, string> {
  return {
    "content-type": o.type,
    "content-length": String(o.size),
    "content-disposition": contentDisposition(o.fileName),
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
  };
}

/**
 * Passes bytes through while counting and hashing them: fails as soon as they pass `size`, and at
 * the end unless they are exactly `size` bytes hashing to `sha256` (hex).
 */
export function checkedBytes(expect: ObjectFacts): Transform {
  const hash = createHash("sha256");
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      seen += chunk.length;
      if (seen > expect.size) return done(new ObjectMismatchError(`The bytes are longer than the declared ${expect.size}`));
      hash.update(chunk);
      done(null, chunk);
    },
    flush(done: TransformCallback) {
      if (seen !== expect.size)
        return done(new ObjectMismatchError(`The bytes are ${seen} long, not the declared ${expect.size}`));
      if (hash.digest("hex") !== expect.sha256)
        return done(new ObjectMismatchError("The bytes do not hash to the declared SHA-256"));
      done();
    },
  });
}

/** Size and SHA-256 (hex) of a stream, read through. */
export async function measure(body: Readable): Promise<ObjectFacts> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    hash.update(chunk);
  }
  return { size, sha256: hash.digest("hex") };
}

/** `work`, or StoreUnavailableError once `ms` passed without an answer. */
export async function withinTimeout<T>(ms: number, what: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new StoreUnavailableError(`The attachment store did not answer within ${ms} ms (${what}); retry shortly`));
    }, ms);
  });
  const running = work(controller.signal);
  running.catch(() => {});
  try {
    return await Promise.race([running, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
