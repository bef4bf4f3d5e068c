import { createHash, randomBytes } from "node:crypto";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { link, mkdir, rename, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";

/**
 * A real S3-compatible server for tests: @20minutes/s3rver 5.0.0, which checks Signature V4,
 * expiry and signed headers as S3 does, in a temporary directory on a free port, with a bucket.
 *
 * It refuses three things S3 accepts from the current AWS SDK (../shared/guides/stack.md, "Object
 * storage"); each is corrected here at run time by wrapping the functions of its
 * `lib/signature/v4.js` before its controllers load them (node_modules stays as installed):
 *  1. bucket-level requests in path style: the SDK signs `/bucket/`, s3rver drops the slash;
 *  2. `'`, `*`, `(`, `)`, `!` in a presigned query (RFC 6266's `filename*=UTF-8''…`): SigV4
 *     percent-encodes them (RFC 3986), s3rver's encodeURIComponent does not;
 *  3. a streamed PUT with `x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER` (aws-chunked,
 *     unsigned chunks, a checksum trailer): refused, and not decoded.
 * It also lacks two checks S3 makes on a PutObject, which a test of "other bytes than declared" or
 * "written once" needs (a request that S3 refuses and s3rver answers 200); both are added here by
 * wrapping its object controller's `putObject`, which its router calls at each request:
 *  4. `x-amz-checksum-sha256`: bytes that do not hash to it are 400 `BadDigest`, nothing stored;
 *  5. `If-None-Match: *`: a key that holds an object is 412 `PreconditionFailed`, the old object
 *     kept; of two such PUTs racing to an absent key, the later to finish is 409
 *     `ConditionalRequestConflict`.
 * For both, the body goes to a temporary file beside the object and is moved into place once
 * accepted: as published, s3rver writes into the object's file while the body is still arriving.
 * `withoutCorrections` runs a request against the server as published, so that a test shows each
 * correction is needed.
 */
export type S3TestServer = {
  endpoint: string;
  bucket: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** The SDK's own client on this server, for checking what landed. */
  client: S3Client;
  /** Where it keeps the buckets (a test sees a PUT in flight there: `….partial` files). */
  directory: string;
  /** The store settings (config.ts' S3StoreConfig) that reach this server. */
  settings: { bucket: string; region: string; endpoint: string; forcePathStyle: true };
  close(): Promise<void>;
};

const require = createRequire(import.meta.url);
const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
const region = "us-east-1";

type CanonicalRequest = { uri: string; querystring: string; headers: Record<string, string> };
type KoaContext = {
  header: Record<string, string>;
  headers: Record<string, string>;
  req: NodeJS.ReadableStream;
  request: { body: unknown };
};
type V4 = {
  getStringToSign(canonicalRequest: CanonicalRequest, request: unknown): string;
  parseHeader(headers: Record<string, string>): unknown;
  aws4SignatureBodyParser(ctx: KoaContext): void;
};

let corrections = true;
type ObjectController = { putObject(ctx: PutContext): Promise<void> };
type PutContext = KoaContext & { store: FilesystemStore; params: { bucket: string; key: string } };
type StoredObject = { bucket: string; key: string; content: NodeJS.ReadableStream; metadata: Record<string, string> };
type FilesystemStore = {
  getResourcePath(bucket: string, key: string, resource: string): string;
  existsObject(bucket: string, key: string): Promise<boolean>;
  putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
  putObject(object: StoredObject): Promise<{ size: number; md5: string }>;
};
type S3ErrorClass = new (code: string, message: string) => Error & { status: number };
let S3rver: (new (options: Record<string, unknown>) => S3rverInstance) | undefined;
type S3rverInstance = { run(): Promise<AddressInfo>; close(): Promise<void> };

/** Runs `fn` against s3rver as published (no correction), then puts the corrections back. */
export async function withoutCorrections<T>(fn: () => Promise<T>): Promise<T> {
  corrections = false;
  try {
    return await fn();
  } finally {
    corrections = true;
  }
}

const UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

function loadCorrectedS3rver() {
  if (S3rver) return S3rver;
  const v4 = require("@20minutes/s3rver/lib/signature/v4.js") as V4;
  const { getStringToSign, parseHeader, aws4SignatureBodyParser } = v4;
  v4.getStringToSign = (canonicalRequest, request) => {
    if (!corrections) return getStringToSign(canonicalRequest, request);
    // 1. `/bucket` -> `/bucket/`, the URI the SDK signed for a bucket-level request.
    const uri = /^\/[^/]+$/.test(canonicalRequest.uri) ? `${canonicalRequest.uri}/` : canonicalRequest.uri;
    // 2. The query's pairs encoded as RFC 3986 says (encodeURIComponent leaves !'()* as they are).
    const querystring = canonicalRequest.querystring
      .split("&")
      .map((pair) => pair.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
      .sort()
      .join("&");
    return getStringToSign({ ...canonicalRequest, uri, querystring }, request);
  };
  v4.parseHeader = (headers) => {
    // 3. The unsigned-payload trailer is a valid x-amz-content-sha256 (what is signed does not change).
    if (!corrections || headers["x-amz-content-sha256"] !== UNSIGNED_TRAILER) return parseHeader(headers);
    return parseHeader({ ...headers, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" });
  };
  v4.aws4SignatureBodyParser = (ctx) => {
    if (!corrections || ctx.header["x-amz-content-sha256"] !== UNSIGNED_TRAILER) return aws4SignatureBodyParser(ctx);
    // 3. Decoded as S3 decodes it: the object is the chunks' data, its length the declared decoded length.
    const decodedLength = ctx.headers["x-amz-decoded-content-length"] ?? "";
    ctx.headers["content-length"] = decodedLength;
    const encoding = (ctx.headers["content-encoding"] ?? "")
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e && e !== "aws-chunked");
    if (encoding.length > 0) ctx.headers["content-encoding"] = encoding.join(",");
    else delete ctx.headers["content-encoding"];
    ctx.request.body = ctx.req.pipe(new UnsignedChunks(Number(decodedLength)));
  };
  // Loaded after the wrapping: its controllers keep the functions they import at load.
  S3rver = require("@20minutes/s3rver") as typeof S3rver;
  const objects = require("@20minutes/s3rver/lib/controllers/object.js") as ObjectController;
  const S3Error = require("@20minutes/s3rver/lib/models/error.js") as S3ErrorClass;
  const { putObject } = objects;
  objects.putObject = async (ctx) => {
    if (!corrections) return putObject(ctx);
    // 4 and 5: this request's writes go through a store whose putObject checks, then publishes.
    const store = ctx.store;
    const checks = { checksum: ctx.headers["x-amz-checksum-sha256"], ifNoneMatch: ctx.headers["if-none-match"] };
    ctx.store = Object.create(store, {
      putObject: { value: (object: StoredObject) => checkedPut(store, object, checks, S3Error) },
    });
    try {
      return await putObject(ctx);
    } finally {
      ctx.store = store;
    }
  };
  return S3rver as NonNullable<typeof S3rver>;
}

/** PutObject as S3 answers it: the body checked against its checksum, then published at once, or refused whole. */
async function checkedPut(
  store: FilesystemStore,
  object: StoredObject,
  checks: { checksum?: string; ifNoneMatch?: string },
  S3Error: S3ErrorClass,
): Promise<{ size: number; md5: string }> {
  const file = store.getResourcePath(object.bucket, object.key, "object");
  await mkdir(path.dirname(file), { recursive: true });
  const existedAtStart = await store.existsObject(object.bucket, object.key);
  const temp = `${file}.${randomBytes(6).toString("hex")}.partial`;
  const md5 = createHash("md5");
  const sha256 = createHash("sha256");
  let size = 0;
  try {
    await pipeline(
      object.content,
      new Transform({
        transform(chunk: Buffer, _encoding, done) {
          md5.update(chunk);
          sha256.update(chunk);
          size += chunk.length;
          done(null, chunk);
        },
      }),
      createWriteStream(temp, { flags: "wx" }),
    );
    if (checks.checksum !== undefined && sha256.digest("base64") !== checks.checksum)
      throw new S3Error("BadDigest", "The SHA256 you specified did not match the calculated checksum.");
    if (checks.ifNoneMatch === "*") {
      // A link never replaces a file: of two racing writers, exactly one publishes.
      await link(temp, file).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
        if (existedAtStart)
          throw new S3Error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
        const conflict = new S3Error(
          "ConditionalRequestConflict",
          "A conflicting conditional operation is currently in progress against this resource. Please try again.",
        );
        conflict.status = 409;
        throw conflict;
      });
    } else {
      await rename(temp, file);
    }
    const digest = md5.digest("hex");
    await store.putMetadata(object.bucket, object.key, object.metadata, digest);
    return { size, md5: digest };
  } finally {
    await rm(temp, { force: true });
  }
}

/** aws-chunked with unsigned chunks: `<hex size>\r\n<data>\r\n` ... `0\r\n<trailers>\r\n\r\n`. */
class UnsignedChunks extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private remaining = -1; // bytes of data left in the current chunk; -1 while reading a size line
  private done = false;
  private decoded = 0;

  constructor(private readonly expected: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    try {
      while (!this.done) {
        if (this.remaining < 0) {
          const end = this.pending.indexOf("\r\n");
          if (end < 0) break;
          const size = Number.parseInt(this.pending.subarray(0, end).toString().split(";")[0] as string, 16);
          if (!Number.isInteger(size) || size < 0) throw new Error("bad aws-chunked size line");
          this.pending = this.pending.subarray(end + 2);
          if (size === 0) this.done = true;
          else this.remaining = size;
        } else if (this.remaining > 0) {
          if (this.pending.length === 0) break;
          const data = this.pending.subarray(0, this.remaining);
          this.push(data);
          this.decoded += data.length;
          this.remaining -= data.length;
          this.pending = this.pending.subarray(data.length);
        } else {
          if (this.pending.length < 2) break;
          this.pending = this.pending.subarray(2); // the CRLF after a chunk's data
          this.remaining = -1;
        }
      }
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback) {
    // The trailer (x-amz-checksum-*) is left unchecked, as s3rver leaves every checksum.
    if (!this.done || this.decoded !== this.expected) return callback(new Error("The request body terminated unexpectedly"));
    callback();
  }
}

export async function startS3Server(options: { bucket?: string } = {}): Promise<S3TestServer> {
  const Server = loadCorrectedS3rver();
  const directory = mkdtempSync(path.join(tmpdir(), "s3rver-"));
  const server = new Server({ address: "127.0.0.1", port: 0, silent: true, directory });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const bucket = options.bucket ?? "attachments";
  const client = new S3Client({
    region,
    endpoint,
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  let closed = false;
  return {
    endpoint,
    bucket,
    region,
    credentials,
    client,
    directory,
    settings: { bucket, region, endpoint, forcePathStyle: true },
    async close() {
      if (closed) return;
      closed = true;
      client.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
