import { randomBytes } from "node:crypto";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough, type Readable, Writable } from "node:stream";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { openAttachmentStores } from "../../src/platform/attachments/create-store.js";
import { createDatabaseStore } from "../../src/platform/attachments/database.js";
import { createS3Store } from "../../src/platform/attachments/s3.js";
import type { AttachmentStore, StoreKind } from "../../src/platform/attachments/store.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import { type FaultyRelay, faultyRelay } from "../helpers/attachment-stores.js";
import { type S3TestServer, startS3Server } from "../helpers/s3-server.js";
import { createTestApp, migratedPostgresDatabase, usePostgres } from "../helpers/test-app.js";

/**
 * A download whose store fails, stalls or loses its database in the middle of the file ends within
 * ATTACHMENT_STORE_TIMEOUT_MS of the last byte moved (issue 58, item 3): the connection is reset,
 * so the client sees fewer bytes than Content-Length promised and an error, never a hang; the
 * replica goes on; the log line is ours, with the request id. Every store, both routes that serve
 * stored bytes: GET /v1/attachments/{id} and the service's own signed URL (S3 serves its own).
 */

const MiB = 1024 * 1024;
const timeoutMs = 1_000;
const size = 6 * MiB;
const file = Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(size - 9)]);

/** Log lines of the app, as JSON objects. */
function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: "info" }, destination), lines };
}

type Outcome = {
  status: number;
  length: number;
  received: number;
  ended: "complete" | "cut";
  afterLastByteMs: number;
  requestId: string;
};

/** A GET over a real socket, read to its end however it comes: complete, or cut short. */
function download(url: string, headers: Record<string, string> = {}): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const request = httpRequest(url, { headers, agent: false }, (response) => {
      answered = true;
      let received = 0;
      let lastByteAt = performance.now();
      let settled = false;
      const settle = (ended: Outcome["ended"]) => {
        if (settled) return;
        settled = true;
        resolve({
          status: response.statusCode ?? 0,
          length: Number(response.headers["content-length"]),
          received,
          ended,
          afterLastByteMs: performance.now() - lastByteAt,
          requestId: String(response.headers["x-request-id"]),
        });
      };
      response.on("data", (chunk: Buffer) => {
        received += chunk.length;
        lastByteAt = performance.now();
      });
      response.on("end", () => settle(received === Number(response.headers["content-length"]) ? "complete" : "cut"));
      response.on("error", () => settle("cut"));
      response.on("aborted", () => settle("cut"));
      response.on("close", () => settle(response.complete ? "complete" : "cut"));
    });
    // Reset once the answer began, the request errs too: the answer's own events settle it.
    request.on("error", (error) => {
      if (!answered) reject(error);
    });
    request.end();
  });
}

/** A store whose open() passes `bytes` of the real object, then stops sending (or fails with EIO), never ending. */
function stoppingAfter(real: AttachmentStore, bytes: number, how: { fail: boolean }): AttachmentStore {
  return {
    ...real,
    async open(key) {
      const object = await real.open(key);
      if (!object) return null;
      const out = new PassThrough();
      let passed = 0;
      object.body.on("data", (chunk: Buffer) => {
        if (passed >= bytes) {
          object.body.pause();
          if (how.fail) out.destroy(Object.assign(new Error("EIO: i/o error, read"), { code: "EIO" }));
          return;
        }
        passed += chunk.length;
        out.write(chunk);
      });
      out.on("close", () => (object.body as Readable).destroy());
      return { body: out, size: object.size };
    },
  };
}

/** The app served over real HTTP, one attachment of `size` bytes stored by it, and what it logged. */
async function servedWithFile(options: { stores: Parameters<typeof createTestApp>[0] }) {
  const { logger, lines } = capturedLogger();
  const t = await createTestApp({ ...options.stores, logger, attachments: { timeoutMs } });
  const server: Server = createServer((req, res) => t.app.yoga(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const org: SeedResult = await t.seedOrg();
  const created = await t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: {
      content: "the pen test report",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: org.userIds[0],
      attachments: [{ fileName: "pentest.pdf", fileType: "application/pdf", fileData: file.toString("base64") }],
    },
  });
  expect(created.status, created.text).toBe(201);
  const id = created.body.attachments[0].id as string;
  return {
    t,
    base,
    lines,
    byRoute: () => download(`${base}/v1/attachments/${id}`, { "x-api-key": org.apiKey }),
    byUrl: async () => {
      // Asked over the socket: the URL's origin is the one the request reached.
      const signed = await fetch(`${base}/v1/attachments/${id}/download-url`, { headers: { "x-api-key": org.apiKey } });
      return download(((await signed.json()) as { url: string }).url);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await t.close();
    },
  };
}

type Served = Awaited<ReturnType<typeof servedWithFile>>;

const unexpected = vi.spyOn(console, "error");
afterEach(() => {
  // The server adapter's own line ("Unexpected error while handling request: aborted") is never written.
  expect(unexpected.mock.calls.map(String).filter((line) => line.includes("Unexpected error"))).toEqual([]);
  unexpected.mockClear();
});

/** Cut short, within the timeout of its last byte, logged by us with the request id; the replica goes on. */
async function expectCutShort(served: Served, outcome: Outcome, heal: () => void) {
  expect(outcome.status).toBe(200);
  expect(outcome.length).toBe(size);
  expect(outcome.ended).toBe("cut");
  expect(outcome.received).toBeLessThan(size);
  // Bounded by the store timeout (with room for a loaded machine), not by a socket's minutes.
  expect(outcome.afterLastByteMs).toBeLessThan(3 * timeoutMs + 1_000);
  await expect
    .poll(() => served.lines.filter((line) => line.requestId === outcome.requestId && line.level === 40).map((l) => l.msg))
    .toContain("attachment download cut off: the store failed or stalled mid-stream");
  heal();
  expect((await fetch(`${served.base}/ready`)).status).toBe(200);
  const whole = await served.byRoute();
  expect([whole.ended, whole.received]).toEqual(["complete", size]);
}

describe("a download from S3 that stops mid-stream", () => {
  let s3: S3TestServer;
  let relay: FaultyRelay;
  let served: Served;
  beforeAll(async () => {
    s3 = await startS3Server();
    relay = await faultyRelay({ host: "127.0.0.1", port: Number(new URL(s3.endpoint).port) });
    const through = (ms: number) =>
      createS3Store({ ...s3.settings, endpoint: `http://127.0.0.1:${relay.port}`, credentials: s3.credentials, timeoutMs: ms });
    // The download under test is held to `timeoutMs`; the set-up's upload (the comment's file, to
    // S3 through the relay) gets ten times that: on a loaded machine it passed the one second and
    // the comment was a 503 (a clean-clone CI run, 2026-12-04), which is not what this file tests.
    const store = { ...through(10 * timeoutMs), open: through(timeoutMs).open };
    const base = openAttachmentStores(
      { store: "database", dir: "", s3: undefined, publicUrl: undefined, timeoutMs, urlSecret: randomBytes(32).toString("hex") },
      { db: (await createTestApp()).db },
    );
    served = await servedWithFile({
      stores: { attachmentStores: { ...base, store, storeOf: (k) => (k === "s3" ? store : base.storeOf(k)) } },
    });
  });
  afterAll(async () => {
    await served?.close();
    await relay?.close();
    await s3?.close();
  });

  it.each(["stall", "reset"] as const)(
    "GET /v1/attachments/{id}, the server %s after 1 MiB: cut short, logged, the replica goes on",
    async (how) => {
      relay.failAfter(MiB, how);
      await expectCutShort(served, await served.byRoute(), () => relay.heal());
    },
  );
});

describe.each(["stops", "fails"] as const)("a download from the filesystem store that %s mid-stream", (how) => {
  let served: Served;
  let fault = false;
  beforeAll(async () => {
    const own = await createTestApp({ attachmentStore: "filesystem" });
    const real = own.attachmentStores.store;
    const stopping = stoppingAfter(real, MiB, { fail: how === "fails" });
    const store: AttachmentStore = { ...real, open: (key) => (fault ? stopping.open(key) : real.open(key)) };
    served = await servedWithFile({
      stores: {
        attachmentStores: {
          ...own.attachmentStores,
          store,
          storeOf: (k: StoreKind) => (k === "filesystem" ? store : own.attachmentStores.storeOf(k)),
        },
      },
    });
  });
  afterAll(() => served?.close());

  it.each(["GET /v1/attachments/{id}", "the service's download URL"])(
    "%s: cut short, logged, the replica goes on",
    async (route) => {
      fault = true;
      const outcome = route.startsWith("GET") ? await served.byRoute() : await served.byUrl();
      await expectCutShort(served, outcome, () => {
        fault = false;
      });
    },
  );
});

// The database store's connections cut or frozen behind a relay: a PostgreSQL server is what drops them.
describe.runIf(usePostgres)("a download from the database store whose connections are cut or freeze mid-stream", () => {
  let relay: FaultyRelay;
  let database: Database;
  let drop: () => Promise<void>;
  let served: Served;
  beforeAll(async () => {
    const created = await migratedPostgresDatabase();
    drop = created.drop;
    const url = new URL(created.url);
    relay = await faultyRelay({ host: url.hostname, port: Number(url.port || 5432) });
    url.port = String(relay.port);
    database = await openDatabase({ kind: "postgres", url: url.toString(), poolSize: 4, connectTimeoutMs: timeoutMs });
    const app = await createTestApp({ database });
    const store = createDatabaseStore({ db: database.db, urls: app.attachmentStores.urls, timeoutMs });
    served = await servedWithFile({
      stores: {
        database,
        attachmentStores: {
          ...app.attachmentStores,
          store,
          storeOf: (k: StoreKind) => (k === "database" ? store : app.attachmentStores.storeOf(k)),
        },
      },
    });
  });
  afterEach(() => relay.heal());
  afterAll(async () => {
    await served?.close();
    await database?.close().catch(() => {});
    await relay?.close();
    await drop?.();
  });

  it.each([
    ["GET /v1/attachments/{id}", "reset"],
    ["GET /v1/attachments/{id}", "stall"],
    ["the service's download URL", "reset"],
    ["the service's download URL", "stall"],
  ] as const)("%s, connections %s after the first part: cut short, logged, the replica goes on", async (route, how) => {
    const pending = route.startsWith("GET") ? served.byRoute() : served.byUrl();
    // Armed as the request goes: its small reads and first part pass (a part of 1 MiB is 2 MiB of
    // hex on the wire); the next part is cut off.
    relay.failAfter(3 * MiB, how);
    await expectCutShort(served, await pending, () => relay.heal());
  });
});
