import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer as createTcpServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough, Readable } from "node:stream";
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attachmentUrlSecret } from "../../src/platform/attachments/create-store.js";
import { createDatabaseStore } from "../../src/platform/attachments/database.js";
import { createFilesystemStore, objectFile } from "../../src/platform/attachments/filesystem.js";
import { createS3Store } from "../../src/platform/attachments/s3.js";
import { serviceUrls } from "../../src/platform/attachments/signed-urls.js";
import {
  type AttachmentStore,
  hexToBase64,
  newObjectKey,
  ObjectExistsError,
  ObjectMismatchError,
  type StoreKind,
  StoreUnavailableError,
} from "../../src/platform/attachments/store.js";
import { type S3TestServer, startS3Server, withoutCorrections } from "../helpers/s3-server.js";
import { createTestApp, openOwnDatabase, type TestApp, usePostgres } from "../helpers/test-app.js";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const facts = (bytes: Uint8Array, type = "application/pdf") => ({ size: bytes.length, sha256: sha256(bytes), type });
const MiB = 1024 * 1024;
const utf8Name = "Prüfbericht 2026 – Q3 (final).pdf";

async function bytesOf(body: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

/** A stream of `bytes` in uneven pieces, as a socket delivers them. */
function trickle(bytes: Buffer): Readable {
  const pieces: Buffer[] = [];
  for (let offset = 0, n = 1; offset < bytes.length; offset += n, n = (n * 7 + 13) % 200_000 || 1)
    pieces.push(bytes.subarray(offset, offset + n));
  return Readable.from(pieces);
}

/** The file name a client reads from RFC 6266's `filename*=UTF-8''…`. */
function utf8FileName(disposition: string | null): string | undefined {
  const encoded = /filename\*=UTF-8''([^;]+)/.exec(disposition ?? "")?.[1];
  return encoded === undefined ? undefined : decodeURIComponent(encoded);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(["database", "filesystem", "s3"] as StoreKind[])("the %s attachment store", (kind) => {
  let t: TestApp;
  let s3: S3TestServer | undefined;
  let server: Server;
  let origin: string;
  let store: AttachmentStore;

  beforeAll(async () => {
    s3 = kind === "s3" ? await startS3Server() : undefined;
    t = await createTestApp({ attachmentStore: kind, s3 });
    store = t.attachmentStores.store;
    server = createServer((req, res) => t.app.yoga(req, res));
    // fetch keeps connections for 4 s; on a loaded machine the server's 5 s may end one as it is reused.
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await t?.close();
    await s3?.close();
  });

  /** Whether the store's own medium holds anything under `key`: the bucket (SDK), the directory, the tables. */
  async function leftBehind(key: string): Promise<string[]> {
    if (kind === "s3" && s3) {
      const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key })).catch((error) => {
        if (error?.$metadata?.httpStatusCode === 404) return undefined;
        throw error;
      });
      return head ? [key] : [];
    }
    if (kind === "filesystem") {
      const dir = path.dirname(objectFile(t.attachmentDir as string, key));
      return existsSync(dir) ? readdirSync(dir).filter((name) => name.includes(key)) : [];
    }
    const parts = await t.db.attachmentObjectPart.findMany({
      where: { objectKey: { startsWith: key } },
      select: { objectKey: true },
    });
    const objects = await t.db.attachmentObject.findMany({ where: { objectKey: key }, select: { objectKey: true } });
    return [...parts, ...objects].map((row) => row.objectKey);
  }

  it("puts, opens, digests and deletes a multi-MiB object, streamed in and out", async () => {
    const bytes = randomBytes(3 * MiB + 17);
    const key = newObjectKey();
    await store.put(key, trickle(bytes), facts(bytes));

    const opened = await store.open(key);
    expect(opened?.size).toBe(bytes.length);
    expect((await bytesOf(opened?.body as NodeJS.ReadableStream)).equals(bytes)).toBe(true);
    expect(await store.digest(key)).toEqual({ size: bytes.length, sha256: sha256(bytes) });
    if (kind === "s3" && s3) {
      const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }));
      expect([head.ContentLength, head.ContentType]).toEqual([bytes.length, "application/pdf"]);
      const got = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
      expect(sha256(await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())).toBe(
        sha256(bytes),
      );
    }
    if (kind === "database") {
      const parts = await t.db.attachmentObjectPart.findMany({ where: { objectKey: key }, orderBy: { part: "asc" } });
      expect(parts.map((p) => p.data.length)).toEqual([MiB, MiB, MiB, 17]);
    }

    await store.delete(key);
    expect(await store.open(key)).toBeNull();
    expect(await store.digest(key)).toBeNull();
    expect(await leftBehind(key)).toEqual([]);
  });

  it("keeps an empty object, and answers null for an absent one; deleting an absent object is no error", async () => {
    const key = newObjectKey();
    await store.put(key, new Uint8Array(0), facts(new Uint8Array(0), "text/plain"));
    expect(await store.digest(key)).toEqual({ size: 0, sha256: sha256(new Uint8Array(0)) });
    const absent = newObjectKey();
    expect(await store.open(absent)).toBeNull();
    expect(await store.digest(absent)).toBeNull();
    await expect(store.delete(absent)).resolves.toBeUndefined();
  });

  it("writes an object once: a second put to its key is refused and the first bytes stay", async () => {
    const first = randomBytes(1000);
    const key = newObjectKey();
    await store.put(key, first, facts(first));
    const second = randomBytes(1000);
    await expect(store.put(key, second, facts(second))).rejects.toBeInstanceOf(ObjectExistsError);
    expect(await store.digest(key)).toEqual({ size: 1000, sha256: sha256(first) });
  });

  it.each([
    ["longer than declared", (b: Buffer) => ({ ...facts(b), size: b.length - 1 })],
    ["shorter than declared", (b: Buffer) => ({ ...facts(b), size: b.length + 1 })],
    ["of another SHA-256", (b: Buffer) => ({ ...facts(b), sha256: sha256(Buffer.from("other bytes")) })],
  ])("refuses bytes %s and leaves nothing behind", async (_, declared) => {
    const bytes = randomBytes(MiB + 5);
    const key = newObjectKey();
    await expect(store.put(key, trickle(bytes), declared(bytes))).rejects.toBeInstanceOf(ObjectMismatchError);
    expect(await store.open(key)).toBeNull();
    expect(await leftBehind(key)).toEqual([]);
  });

  describe("upload URLs", () => {
    async function signUpload(bytes: Buffer, type = "application/pdf", expiresInSeconds = 60) {
      const key = newObjectKey();
      const signed = await store.signUpload(key, { size: bytes.length, type, sha256: sha256(bytes), expiresInSeconds, origin });
      return { key, ...signed };
    }
    const put = (url: string, headers: Record<string, string>, body: Uint8Array) =>
      fetch(url, { method: "PUT", headers, body: body as Uint8Array<ArrayBuffer>, signal: AbortSignal.timeout(20_000) });

    it("admit exactly the declared bytes, by a plain HTTP PUT with the headers given", async () => {
      const bytes = randomBytes(2 * MiB + 3);
      const upload = await signUpload(bytes, "image/png");
      expect(upload.method).toBe("PUT");
      expect(upload.headers).toEqual({
        "Content-Type": "image/png",
        "Content-Length": String(bytes.length),
        "x-amz-checksum-sha256": hexToBase64(sha256(bytes)),
        "If-None-Match": "*",
      });
      expect(upload.expiresAt.getTime()).toBeGreaterThan(Date.now() + 55_000);
      expect(new URL(upload.url).pathname).toContain(upload.key);

      const response = await put(upload.url, upload.headers, bytes);
      expect(response.status).toBe(200);
      expect(await store.digest(upload.key)).toEqual({ size: bytes.length, sha256: sha256(bytes) });
      if (kind === "s3" && s3) {
        const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: upload.key }));
        expect([head.ContentLength, head.ContentType]).toEqual([bytes.length, "image/png"]);
      }
    });

    it("refuse another size or type (403) and keep nothing", async () => {
      const bytes = randomBytes(4096);
      const upload = await signUpload(bytes);
      const { "Content-Length": _, ...headers } = upload.headers;
      const longer = await put(upload.url, headers, Buffer.concat([bytes, Buffer.from("x")]));
      expect(longer.status).toBe(403);
      const otherType = await put(upload.url, { ...upload.headers, "Content-Type": "text/html" }, bytes);
      expect(otherType.status).toBe(403);
      expect(await store.open(upload.key)).toBeNull();
      expect(await leftBehind(upload.key)).toEqual([]);
    });

    it("refuse an altered URL (403): another key, another declared size, another signature", async () => {
      const bytes = randomBytes(4096);
      const upload = await signUpload(bytes);
      const url = new URL(upload.url);
      const otherKey = new URL(url);
      otherKey.pathname = url.pathname.replace(upload.key, newObjectKey());
      const signature = kind === "s3" ? "X-Amz-Signature" : "sig";
      const otherSig = new URL(url);
      const sig = url.searchParams.get(signature) as string;
      otherSig.searchParams.set(signature, `${sig[0] === "a" ? "b" : "a"}${sig.slice(1)}`);
      const altered = [otherKey, otherSig];
      if (kind !== "s3") {
        const otherSize = new URL(url);
        otherSize.searchParams.set("size", String(bytes.length + 1));
        altered.push(otherSize);
      }
      for (const target of altered) {
        const response = await put(target.toString(), upload.headers, bytes);
        expect(response.status, target.toString()).toBe(403);
      }
      expect(await store.open(upload.key)).toBeNull();
    });

    /** What answers a refused PUT: our envelope on the service's URLs, S3's XML error code on S3's. */
    const refusal = async (response: Response) =>
      kind === "s3" ? /<Code>(\w+)<\/Code>/.exec(await response.text())?.[1] : (await response.json()).code;

    it("refuse other bytes of the declared size (400) and keep nothing", async () => {
      const bytes = randomBytes(4096);
      const upload = await signUpload(bytes);
      const other = await put(upload.url, upload.headers, randomBytes(4096));
      expect(other.status).toBe(400);
      expect(await refusal(other)).toBe(kind === "s3" ? "BadDigest" : "BAD_USER_INPUT");
      expect(await store.open(upload.key)).toBeNull();
      expect(await leftBehind(upload.key)).toEqual([]);
    });

    it("never change an object once it is there: the same or other bytes again are refused, the object kept", async () => {
      const bytes = randomBytes(4096);
      const upload = await signUpload(bytes);
      expect((await put(upload.url, upload.headers, bytes)).status).toBe(200);
      // S3 answers a failed If-None-Match with 412; the service's own URLs with 409, as any conflict.
      const again = await put(upload.url, upload.headers, bytes);
      expect(again.status).toBe(kind === "s3" ? 412 : 409);
      expect(await refusal(again)).toBe(kind === "s3" ? "PreconditionFailed" : "CONFLICT");
      // Other bytes: S3 checks the checksum first (400), the service's URLs the key first (409).
      const other = await put(upload.url, upload.headers, randomBytes(4096));
      expect(other.status).toBe(kind === "s3" ? 400 : 409);
      await other.arrayBuffer();
      expect(await store.digest(upload.key)).toEqual({ size: 4096, sha256: sha256(bytes) });
      // Written by the service (an inline attachment) or by a URL, a key is written once.
      await expect(store.put(upload.key, bytes, facts(bytes))).rejects.toBeInstanceOf(ObjectExistsError);
    });

    it("refuse a PUT without If-None-Match: * (403): the condition is signed", async () => {
      const bytes = randomBytes(4096);
      const upload = await signUpload(bytes);
      if (kind === "s3") expect(new URL(upload.url).searchParams.get("X-Amz-SignedHeaders")).toContain("if-none-match");
      const { "If-None-Match": _, ...headers } = upload.headers;
      const response = await put(upload.url, headers, bytes);
      expect(response.status).toBe(403);
      await response.arrayBuffer();
      expect(await store.open(upload.key)).toBeNull();
    });

    /** Pieces of writes to `key` still in flight: temporary files, or staged parts. */
    async function inFlight(key: string): Promise<number> {
      if (kind === "database") {
        const staged = await t.db.attachmentObjectPart.findMany({
          where: { objectKey: { startsWith: `${key}.` } },
          select: { objectKey: true },
          distinct: ["objectKey"],
        });
        return staged.length;
      }
      const dir = kind === "s3" ? path.join((s3 as S3TestServer).directory, (s3 as S3TestServer).bucket) : t.attachmentDir;
      const names =
        kind === "s3"
          ? readdirSync(dir as string)
          : existsSync(path.dirname(objectFile(dir as string, key)))
            ? readdirSync(path.dirname(objectFile(dir as string, key)))
            : [];
      return names.filter((name) => name.includes(key) && name.endsWith(".partial")).length;
    }

    it("answer two PUTs at once to one URL: one 200, the other 409 (a conflict, not a store failure)", async () => {
      const bytes = randomBytes(2 * MiB + 1);
      const upload = await signUpload(bytes);
      const half = 1.5 * MiB;
      const sending = [0, 1].map(() => {
        const request = httpRequest(upload.url, { method: "PUT", headers: upload.headers });
        const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
          request.on("response", (response) => {
            const chunks: Buffer[] = [];
            response.on("data", (chunk: Buffer) => chunks.push(chunk));
            response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
          });
          request.on("error", reject);
        });
        request.write(bytes.subarray(0, half));
        return { request, answered };
      });
      // Both past every check made at the start, their bytes arriving.
      await expect.poll(() => inFlight(upload.key), { timeout: 10_000 }).toBe(2);
      const [first, second] = sending as [(typeof sending)[0], (typeof sending)[0]];
      first.request.end(bytes.subarray(half));
      expect((await first.answered).status).toBe(200);
      second.request.end(bytes.subarray(half));
      const lost = await second.answered;
      expect(lost.status).toBe(409);
      expect(lost.body).toContain(kind === "s3" ? "ConditionalRequestConflict" : "CONFLICT");
      expect(await store.digest(upload.key)).toEqual({ size: bytes.length, sha256: sha256(bytes) });
      expect(await inFlight(upload.key)).toBe(0);
    });
  });

  describe("download URLs", () => {
    let key: string;
    const bytes = randomBytes(MiB + 100);
    beforeAll(async () => {
      key = newObjectKey();
      await store.put(key, bytes, facts(bytes));
    });
    const get = (url: string) => fetch(url, { signal: AbortSignal.timeout(20_000) });

    it("serve the bytes with the stored type and Content-Disposition: attachment with a UTF-8 name (RFC 6266)", async () => {
      const signed = await store.signDownload(key, { fileName: utf8Name, type: "application/pdf", expiresInSeconds: 60, origin });
      expect(signed.expiresAt.getTime()).toBeGreaterThan(Date.now() + 55_000);
      const response = await get(signed.url);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/pdf");
      expect(Number(response.headers.get("content-length"))).toBe(bytes.length);
      const disposition = response.headers.get("content-disposition");
      expect(disposition).toMatch(/^attachment; filename="Prufbericht 2026 _ Q3 \(final\)\.pdf"; filename\*=UTF-8''/);
      expect(utf8FileName(disposition)).toBe(utf8Name);
      expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    });

    it("are refused once altered (403): another key, name or signature", async () => {
      const signed = await store.signDownload(key, {
        fileName: "report.pdf",
        type: "application/pdf",
        expiresInSeconds: 60,
        origin,
      });
      const url = new URL(signed.url);
      const other = newObjectKey();
      await store.put(other, bytes, facts(bytes));
      const otherKey = new URL(url);
      otherKey.pathname = url.pathname.replace(key, other);
      const otherName = new URL(url);
      if (kind === "s3") otherName.searchParams.set("response-content-disposition", 'attachment; filename="x.html"');
      else otherName.searchParams.set("name", "x.html");
      const signature = kind === "s3" ? "X-Amz-Signature" : "sig";
      const otherSig = new URL(url);
      otherSig.searchParams.set(signature, (url.searchParams.get(signature) as string).split("").reverse().join(""));
      for (const target of [otherKey, otherName, otherSig]) {
        const response = await get(target.toString());
        expect(response.status, target.toString()).toBe(403);
        await response.arrayBuffer();
      }
    });

    it("are answered through the app with no credential: 403 in our envelope when altered", async () => {
      if (kind === "s3") return;
      const signed = await store.signDownload(key, {
        fileName: "report.pdf",
        type: "application/pdf",
        expiresInSeconds: 60,
        origin,
      });
      const url = new URL(signed.url);
      url.searchParams.set("type", "text/html");
      const response = await t.app.fetch(new Request(url));
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ statusCode: 403, error: "Forbidden", code: "FORBIDDEN" });
      const head = await t.app.fetch(new Request(signed.url, { method: "HEAD" }));
      expect([head.status, head.headers.get("content-length"), head.headers.get("x-content-type-options")]).toEqual([
        200,
        String(bytes.length),
        "nosniff",
      ]);
      expect(head.headers.get("cache-control")).toBe("private, no-store");
      // Counted under the route's pattern: neither a key nor a signature becomes a label.
      const metrics = await (await t.app.fetch(new Request("http://test/metrics"))).text();
      expect(metrics).toMatch(/http_requests_total\{[^}]*route="\/attachment-objects\/\{key\}"[^}]*status="403"/);
      expect(metrics).not.toContain(key);
    });
  });

  it.skipIf(kind === "s3")(
    "admit a browser's upload from an allowed origin: the preflight allows the checksum header",
    async () => {
      const browserApp = await createTestApp({ attachmentStores: t.attachmentStores, corsOrigins: ["https://app.example.com"] });
      const bytes = randomBytes(64);
      const upload = await store.signUpload(newObjectKey(), { ...facts(bytes), expiresInSeconds: 60, origin });
      const preflight = await browserApp.app.fetch(
        new Request(upload.url, {
          method: "OPTIONS",
          headers: {
            origin: "https://app.example.com",
            "access-control-request-method": "PUT",
            "access-control-request-headers": "content-type,x-amz-checksum-sha256",
          },
        }),
      );
      expect(preflight.status).toBeLessThan(300);
      expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
      expect(preflight.headers.get("access-control-allow-headers")).toContain("x-amz-checksum-sha256");
      const sent = await browserApp.app.fetch(
        new Request(upload.url, {
          method: "PUT",
          headers: { ...upload.headers, origin: "https://app.example.com" },
          body: bytes,
        }),
      );
      expect(sent.status).toBe(200);
      expect(sent.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    },
  );

  it("refuses upload and download URLs once expired (403)", async () => {
    const bytes = randomBytes(100);
    const key = newObjectKey();
    await store.put(key, bytes, facts(bytes));
    const upload = await store.signUpload(newObjectKey(), {
      size: bytes.length,
      type: "text/plain",
      sha256: sha256(bytes),
      expiresInSeconds: 1,
      origin,
    });
    const download = await store.signDownload(key, { fileName: utf8Name, type: "text/plain", expiresInSeconds: 1, origin });
    await sleep(2_100);
    const put = await fetch(upload.url, { method: "PUT", headers: upload.headers, body: bytes });
    expect(put.status).toBe(403);
    const get = await fetch(download.url);
    expect(get.status).toBe(403);
    await get.arrayBuffer();
  });
});

describe("the service's download route", () => {
  it("releases the store's stream as soon as the client goes away mid-download", async () => {
    const base = await createTestApp({ attachmentStore: "filesystem" });
    const real = base.attachmentStores.store;
    const opened: Readable[] = [];
    const tracked: AttachmentStore = {
      ...real,
      async open(key) {
        const object = await real.open(key);
        if (object) opened.push(object.body);
        return object;
      },
    };
    const t = await createTestApp({ attachmentStores: { ...base.attachmentStores, store: tracked, storeOf: () => tracked } });
    const server = createServer((req, res) => t.app.yoga(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const bytes = randomBytes(32 * MiB);
      const key = newObjectKey();
      await real.put(key, bytes, facts(bytes));
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const { url } = await tracked.signDownload(key, {
        fileName: "big.bin",
        type: "application/octet-stream",
        expiresInSeconds: 60,
        origin,
      });
      const controller = new AbortController();
      const response = await fetch(url, { signal: controller.signal });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      controller.abort();
      await expect.poll(() => opened[0]?.destroyed, { timeout: 5_000 }).toBe(true);
      expect(opened).toHaveLength(1);
    } finally {
      server.closeAllConnections();
      server.close();
      await base.close();
    }
  });
});

describe("the secret of the service-signed URLs on PostgreSQL", () => {
  it("is made once and kept in the database, so every replica signs and checks with the same one", async () => {
    const t = await createTestApp();
    const config = { dataDir: "/nonexistent", databaseUrl: "postgresql://replica", attachments: { urlSecret: undefined } };
    await t.db.serviceSecret.deleteMany({ where: { name: "attachment-url" } });
    const replicaA = serviceUrls(attachmentUrlSecret(config, t.db), "https://api.example.com");
    const replicaB = serviceUrls(attachmentUrlSecret(config, t.db), "https://api.example.com");
    const grant = {
      op: "download",
      store: "database",
      key: newObjectKey(),
      expires: 4_000_000_000,
      name: "a.pdf",
      type: "application/pdf",
    } as const;
    const [a, b] = await Promise.all([replicaA.sign(grant, undefined), replicaB.sign(grant, undefined)]);
    expect(a).toBe(b);
    expect(await replicaB.verify(new URL(a))).toEqual(grant);
    const kept = await t.db.serviceSecret.findMany({ where: { name: "attachment-url" } });
    expect(kept).toHaveLength(1);
    expect(kept[0]?.value).toMatch(/^[\w-]{43}$/);
  });
});

describe("a store that is down", () => {
  const timeoutMs = 700;
  const bytes = randomBytes(1000);
  const refused = async (operation: () => Promise<unknown>) => {
    const started = performance.now();
    const error = await operation().then(
      () => undefined,
      (e) => e,
    );
    return { error, ms: performance.now() - started };
  };
  const everyOperation = (store: AttachmentStore) => [
    () => store.ping(),
    () => store.put(newObjectKey(), bytes, facts(bytes)),
    () => store.open(newObjectKey()),
    () => store.digest(newObjectKey()),
    () => store.delete(newObjectKey()),
  ];

  it("s3, its server stopped: every operation is StoreUnavailableError within the timeout", async () => {
    const s3 = await startS3Server();
    const store = createS3Store({ ...s3.settings, credentials: s3.credentials, timeoutMs });
    await store.ping();
    await s3.close();
    for (const operation of everyOperation(store)) {
      const { error, ms } = await refused(operation);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(ms).toBeLessThan(timeoutMs + 500);
    }
  });

  it("s3 behind an endpoint that accepts connections and never answers: StoreUnavailableError within the timeout", async () => {
    const sockets = new Set<Socket>();
    const silent = createTcpServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const store = createS3Store({
      bucket: "attachments",
      region: "us-east-1",
      endpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      forcePathStyle: true,
      credentials: { accessKeyId: "x", secretAccessKey: "y" },
      timeoutMs,
    });
    try {
      for (const operation of everyOperation(store)) {
        const { error, ms } = await refused(operation);
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(ms).toBeLessThan(timeoutMs + 500);
      }
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it("filesystem on a directory it cannot use: StoreUnavailableError", async () => {
    const file = path.join(tmpdir(), `not-a-directory-${randomBytes(4).toString("hex")}`);
    writeFileSync(file, "");
    const urls = serviceUrls(randomBytes(32).toString("hex"), undefined);
    const store = createFilesystemStore({ dir: path.join(file, "attachments"), urls, timeoutMs });
    for (const operation of [() => store.ping(), () => store.put(newObjectKey(), bytes, facts(bytes))]) {
      expect((await refused(operation)).error).toBeInstanceOf(StoreUnavailableError);
    }
  });

  // A closed pool is what PostgreSQL's outage looks like to the client; a closed PGlite is only ever shutdown.
  it.runIf(usePostgres)("database, its connection pool ended: StoreUnavailableError", async () => {
    const own = await openOwnDatabase();
    const store = createDatabaseStore({
      db: own.database.db,
      urls: serviceUrls(randomBytes(32).toString("hex"), undefined),
      timeoutMs,
    });
    await store.ping();
    await own.close();
    for (const operation of everyOperation(store)) {
      const { error, ms } = await refused(operation);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(ms).toBeLessThan(timeoutMs + 500);
    }
  });
});

describe("the test S3 server (s3rver 5.0.0, corrected where it refuses what S3 accepts)", () => {
  let s3: S3TestServer;
  beforeAll(async () => {
    s3 = await startS3Server({ bucket: "corrections" });
  });
  afterAll(() => s3?.close());

  const status = (error: unknown) => (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;

  it("1. accepts a path-style bucket-level request (the SDK signs /bucket/), which it refuses as published", async () => {
    const { HeadBucketCommand } = await import("@aws-sdk/client-s3");
    await expect(s3.client.send(new HeadBucketCommand({ Bucket: s3.bucket }))).resolves.toBeDefined();
    const uncorrected = await withoutCorrections(() =>
      s3.client.send(new HeadBucketCommand({ Bucket: s3.bucket })).catch((e) => e),
    );
    expect(status(uncorrected)).toBe(403);
  });

  it("2. accepts a presigned GET whose query holds ' ( ) * ! (RFC 6266's filename*), which it refuses as published", async () => {
    const store = createS3Store({ ...s3.settings, credentials: s3.credentials, timeoutMs: 5_000 });
    const key = newObjectKey();
    await store.put(key, Buffer.from("evidence"), facts(Buffer.from("evidence"), "text/plain"));
    const { url } = await store.signDownload(key, { fileName: "it's (final)*!.txt", type: "text/plain", expiresInSeconds: 60 });
    const corrected = await fetch(url);
    expect(corrected.status).toBe(200);
    expect(await corrected.text()).toBe("evidence");
    const uncorrected = await withoutCorrections(() => fetch(url));
    expect(uncorrected.status).toBe(403);
    await uncorrected.arrayBuffer();
  });

  /** S3's error code of a refused request made with the SDK, or "ok". */
  const outcome = (sending: Promise<unknown>) =>
    sending.then(
      () => "ok",
      (error: { name?: string; $metadata?: { httpStatusCode?: number } }) => `${status(error)} ${error.name}`,
    );
  const stored = async (key: string) => {
    const got = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key })).catch(() => undefined);
    if (!got) return undefined;
    return Buffer.from(await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray()).toString();
  };

  it("4. refuses bytes that do not hash to x-amz-checksum-sha256 (400 BadDigest, nothing stored), which it stores as published", async () => {
    const declared = hexToBase64(sha256(Buffer.from("the declared bytes")));
    const send = (key: string) =>
      s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: "other bytes", ChecksumSHA256: declared }));
    const key = newObjectKey();
    expect(await outcome(send(key))).toBe("400 BadDigest");
    expect(await stored(key)).toBeUndefined();
    const right = newObjectKey();
    const body = "the declared bytes";
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: right, Body: body, ChecksumSHA256: declared }));
    expect(await stored(right)).toBe(body);

    const published = newObjectKey();
    expect(await withoutCorrections(() => outcome(send(published)))).toBe("ok");
    expect(await stored(published)).toBe("other bytes");
  });

  it("5. honours If-None-Match: * (412 PreconditionFailed, the old object kept), which it overwrites as published", async () => {
    const send = (key: string, body: string) =>
      s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body, IfNoneMatch: "*" }));
    const key = newObjectKey();
    expect(await outcome(send(key, "first"))).toBe("ok");
    expect(await outcome(send(key, "second"))).toBe("412 PreconditionFailed");
    expect(await stored(key)).toBe("first");

    const published = newObjectKey();
    await send(published, "first");
    expect(await withoutCorrections(() => outcome(send(published, "second")))).toBe("ok");
    expect(await stored(published)).toBe("second");
  });

  it("5. answers the later of two racing If-None-Match: * PUTs 409 ConditionalRequestConflict; as published both land", async () => {
    const race = async (key: string, corrected = true) => {
      const bodies = [new PassThrough(), new PassThrough()];
      const sends = bodies.map((body, i) =>
        outcome(
          s3.client.send(
            new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body, ContentLength: 2 * 64 * 1024, IfNoneMatch: "*" }),
          ),
        ).then((result) => [i, result]),
      );
      for (const body of bodies) body.write(Buffer.alloc(64 * 1024, 65));
      // Both arriving: corrected, each has its temporary file; as published, nothing is checked to race.
      const bucket = path.join(s3.directory, s3.bucket);
      const partial = () => readdirSync(bucket).filter((name) => name.startsWith(`${key}.`) && name.endsWith(".partial"));
      if (corrected) await expect.poll(() => partial().length, { timeout: 10_000 }).toBe(2);
      (bodies[0] as PassThrough).end(Buffer.alloc(64 * 1024, 66));
      const first = await sends[0];
      (bodies[1] as PassThrough).end(Buffer.alloc(64 * 1024, 67));
      return [first, await sends[1]];
    };
    expect(await race(newObjectKey())).toEqual([
      [0, "ok"],
      [1, "409 ConditionalRequestConflict"],
    ]);
    expect(await withoutCorrections(() => race(newObjectKey(), false))).toEqual([
      [0, "ok"],
      [1, "ok"],
    ]);
  });

  it("3. takes a streamed PutObject with the SDK's default unsigned-payload trailer, decoded, which it refuses as published", async () => {
    const { S3Client } = await import("@aws-sdk/client-s3");
    // The SDK's defaults: a checksum on every PUT, sent as an aws-chunked trailer for a stream.
    const client = new S3Client({ region: s3.region, endpoint: s3.endpoint, forcePathStyle: true, credentials: s3.credentials });
    const bytes = randomBytes(200_000);
    const send = (key: string) =>
      client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: trickle(bytes), ContentLength: bytes.length }));
    const key = newObjectKey();
    const sent = await send(key);
    expect(sent.$metadata.httpStatusCode).toBe(200);
    const got = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
    const stored = Buffer.from(await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
    expect([stored.length, sha256(stored)]).toEqual([bytes.length, sha256(bytes)]);
    expect(got.ContentEncoding).toBeUndefined();

    const uncorrected = await withoutCorrections(() => send(newObjectKey()).catch((e) => e));
    expect(status(uncorrected)).toBeGreaterThanOrEqual(400);
    client.destroy();
  });
});
