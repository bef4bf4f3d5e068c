import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Transform, type TransformCallback } from "node:stream";
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
 * `withoutCorrections` runs a request against the server as published, so that a test shows each
 * correction is needed. s3rver never checks `x-amz-checksum-sha256` (S3 does): other bytes than
 * declared are found by the service's own digest check only.
 */
export type S3TestServer = {
  endpoint: string;
  bucket: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** The SDK's own client on this server, for checking what landed. */
  client: S3Client;
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
  return S3rver as NonNullable<typeof S3rver>;
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
