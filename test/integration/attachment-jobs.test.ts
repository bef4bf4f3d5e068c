import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { GetObjectCommand, HeadObjectCommand } from "@aws-sdk/client-s3";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import {
  deleteDueObjects,
  INCOMPLETE_AFTER_MS,
  SWEEP_AFTER_EXPIRY_MS,
  scheduleObjectDeletions,
  startAttachmentJobs,
  sweepIncompleteWrites,
} from "../../src/modules/comments/attachments.jobs.js";
import { objectFile } from "../../src/platform/attachments/filesystem.js";
import { newObjectKey, type StoreKind } from "../../src/platform/attachments/store.js";
import type { Database } from "../../src/platform/db/database.js";
import { type StoreFixture, storeFixture } from "../helpers/attachment-stores.js";
import { createTestApp, openOwnDatabase, type TestApp } from "../helpers/test-app.js";

/**
 * What happens to attachments' objects after their rows go (contract section 15): a deleted
 * comment's objects are deleted once the deletion committed, retried while the store is down; an
 * upload never attached is swept an hour after its URL expired; an object a committed row names is
 * never deleted. Each against the three stores on real parts; the s3 runs check the bucket with
 * the SDK's own client.
 */

const logger = pino({ level: "silent" });
let own: Awaited<ReturnType<typeof openOwnDatabase>>;
let database: Database;
let fixture: StoreFixture;
const apps = new Map<StoreKind, TestApp>();
let org: SeedResult;

beforeAll(async () => {
  own = await openOwnDatabase();
  database = own.database;
  fixture = await storeFixture(database.db);
  for (const kind of ["database", "filesystem", "s3"] as const) {
    apps.set(kind, await createTestApp({ database, attachmentStores: fixture.storesFor(kind) }));
  }
  org = await (apps.get("database") as TestApp).seedOrg();
}, 60_000);

afterAll(async () => {
  await fixture?.close();
  await own?.close();
});

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest();

/** Whether the store holds the object, asked of the store's own parts (the bucket through the SDK's client). */
async function holds(kind: StoreKind, objectKey: string): Promise<boolean> {
  if (kind === "s3") {
    return fixture.s3.client.send(new HeadObjectCommand({ Bucket: fixture.s3.bucket, Key: objectKey })).then(
      () => true,
      (error) => {
        if (error?.$metadata?.httpStatusCode === 404) return false;
        throw error;
      },
    );
  }
  if (kind === "filesystem") return existsSync(objectFile(fixture.dir, objectKey));
  return Boolean(await database.db.attachmentObject.findUnique({ where: { objectKey } }));
}

/** A comment with one inline attachment, written through the app on `kind`: its ids and the attachment's row. */
async function commentWithFile(kind: StoreKind, bytes = randomBytes(3000)) {
  const t = apps.get(kind) as TestApp;
  const created = await t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: {
      content: "The access review export",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: org.userIds[0],
      attachments: [{ fileName: "review.csv", fileType: "text/csv", fileData: bytes.toString("base64") }],
    },
  });
  expect(created.status, created.text).toBe(201);
  const row = await database.db.attachment.findUniqueOrThrow({ where: { id: created.body.attachments[0].id } });
  expect(row.store).toBe(kind);
  return { commentId: created.body.id as string, row, bytes };
}

async function deleteComment(kind: StoreKind, commentId: string) {
  const deleted = await (apps.get(kind) as TestApp).rest("DELETE", `/v1/comments/${commentId}?userId=${org.userIds[0]}`, {
    key: org.apiKey,
  });
  expect(deleted.status, deleted.text).toBe(204);
}

const pendingFor = (objectKey: string) => database.db.attachmentDeletion.findMany({ where: { objectKey } });
const later = (ms: number) => new Date(Date.now() + ms);

describe.each(["database", "filesystem", "s3"] as const)("the %s store", (kind) => {
  it("deletes a deleted comment's object only once the deletion committed, then its record", async () => {
    const { commentId, row } = await commentWithFile(kind);
    expect(await holds(kind, row.objectKey)).toBe(true);
    await deleteComment(kind, commentId);
    // Committed: the row is gone, the object waits for the job.
    expect(await database.db.attachment.findUnique({ where: { id: row.id } })).toBeNull();
    expect(await pendingFor(row.objectKey)).toHaveLength(1);
    expect(await holds(kind, row.objectKey)).toBe(true);

    const pass = await deleteDueObjects(database.db, fixture.storesFor(kind).storeOf, logger);
    expect(pass.deleted).toBeGreaterThanOrEqual(1);
    expect(await holds(kind, row.objectKey)).toBe(false);
    expect(await pendingFor(row.objectKey)).toHaveLength(0);
  });

  it("never deletes an object a committed attachment names: the deletion is dropped, the file still downloads", async () => {
    const { row, bytes } = await commentWithFile(kind);
    await scheduleObjectDeletions(database.db, [{ store: row.store, objectKey: row.objectKey }]);
    const pass = await deleteDueObjects(database.db, fixture.storesFor(kind).storeOf, logger);
    expect(pass.kept).toBeGreaterThanOrEqual(1);
    expect(await pendingFor(row.objectKey)).toHaveLength(0);
    expect(await holds(kind, row.objectKey)).toBe(true);
    const download = await (apps.get(kind) as TestApp).app.fetch(
      new Request(`http://test/v1/attachments/${row.id}`, { headers: { "x-api-key": org.apiKey } }),
    );
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it("sweeps an upload never attached an hour after its URL expired (row and object), and leaves an attached one", async () => {
    const t = apps.get(kind) as TestApp;
    const upload = async (bytes: Buffer) => {
      const created = await t.rest("POST", "/v1/attachment-uploads", {
        key: org.apiKey,
        body: {
          fileName: "letter.pdf",
          fileType: "application/pdf",
          size: bytes.length,
          sha256: sha256(bytes).toString("base64"),
        },
      });
      expect(created.status, created.text).toBe(201);
      const put = new Request(created.body.uploadUrl, {
        method: "PUT",
        headers: created.body.headers,
        body: new Uint8Array(bytes),
      });
      // The service's own URLs are answered by the app; S3's by the bucket.
      const answer = new URL(put.url).origin === "http://test" ? await t.app.fetch(put) : await fetch(put);
      expect(answer.status, await answer.text()).toBe(200);
      return database.db.attachmentUpload.findUniqueOrThrow({ where: { id: created.body.id } });
    };
    const abandoned = await upload(Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(2000)]));
    const attached = await upload(Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(2000)]));
    const comment = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: {
        content: "Bridge letter",
        entityId: org.taskIds[0],
        entityType: "task",
        userId: org.userIds[0],
        attachments: [{ uploadId: attached.id }],
      },
    });
    expect(comment.status, comment.text).toBe(201);
    expect(await holds(kind, abandoned.objectKey)).toBe(true);

    const jobs = startAttachmentJobs({ db: database.db, storeOf: fixture.storesFor(kind).storeOf, logger, everyMs: 3_600_000 });
    try {
      // Expired, but not an hour ago: kept (a PUT that began in time may still be finishing).
      await jobs.runOnce(new Date(abandoned.expiresAt.getTime() + SWEEP_AFTER_EXPIRY_MS - 60_000));
      expect(await database.db.attachmentUpload.findUnique({ where: { id: abandoned.id } })).not.toBeNull();
      expect(await holds(kind, abandoned.objectKey)).toBe(true);

      const sweepAt = new Date(
        Math.max(abandoned.expiresAt.getTime(), attached.expiresAt.getTime()) + SWEEP_AFTER_EXPIRY_MS + 1_000,
      );
      await jobs.runOnce(sweepAt);
      expect(await database.db.attachmentUpload.findUnique({ where: { id: abandoned.id } })).toBeNull();
      expect(await holds(kind, abandoned.objectKey)).toBe(false);
      expect(await pendingFor(abandoned.objectKey)).toHaveLength(0);
      // The attached upload, its attachment and its object stay.
      expect(await database.db.attachmentUpload.findUnique({ where: { id: attached.id } })).not.toBeNull();
      expect(await holds(kind, attached.objectKey)).toBe(true);
    } finally {
      await jobs.stop();
    }
  });

  it.runIf(kind !== "database")("retries while the store is down, and deletes the object once it is back", async () => {
    const { commentId, row } = await commentWithFile(kind);
    await deleteComment(kind, commentId);
    const storeOf = fixture.storesFor(kind).storeOf;

    const outage = fixture.outage(kind as "s3" | "filesystem");
    let pass: Awaited<ReturnType<typeof deleteDueObjects>>;
    try {
      pass = await deleteDueObjects(database.db, storeOf, logger);
    } finally {
      outage.end();
    }
    expect(pass.failed).toBeGreaterThanOrEqual(1);
    const [pending] = await pendingFor(row.objectKey);
    expect(pending?.attempts).toBe(1);
    // Not again at once: 10 s (plus jitter) later.
    expect(pending?.nextAttemptAt.getTime()).toBeGreaterThan(Date.now() + 5_000);
    expect(await holds(kind, row.objectKey)).toBe(true);
    // Not due yet: nothing happens.
    expect((await deleteDueObjects(database.db, storeOf, logger)).deleted).toBe(0);
    expect(await holds(kind, row.objectKey)).toBe(true);

    // Back, and due: deleted, and its record with it.
    await deleteDueObjects(database.db, storeOf, logger, later(60_000));
    expect(await holds(kind, row.objectKey)).toBe(false);
    expect(await pendingFor(row.objectKey)).toHaveLength(0);
    if (kind === "s3") {
      await expect(
        fixture.s3.client.send(new GetObjectCommand({ Bucket: fixture.s3.bucket, Key: row.objectKey })),
      ).rejects.toThrow();
    }
  });
});

describe("what an interrupted write left behind", () => {
  it("is removed a day after the write started; a write in progress and every complete object stay", async () => {
    const stores = fixture.storesFor("filesystem");
    const filesystem = stores.storeOf("filesystem");
    const db = stores.storeOf("database");
    if (!filesystem?.sweepIncomplete || !db?.sweepIncomplete) throw new Error("both stores sweep what a crash left");
    const now = Date.now();
    const bytes = randomBytes(3000);
    const facts = { size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex"), type: "text/plain" };
    const complete = newObjectKey();
    await filesystem.put(complete, bytes, facts);
    await db.put(complete, bytes, facts);

    // A crashed put leaves a temporary file beside the objects, and parts under a staging key.
    const [crashed, running] = [newObjectKey(), newObjectKey()];
    const partial = (key: string) => path.join(path.dirname(objectFile(fixture.dir, key)), `.${key}.0a0b0c.partial`);
    for (const key of [crashed, running]) {
      mkdirSync(path.dirname(partial(key)), { recursive: true });
      writeFileSync(partial(key), "half a file");
    }
    const dayAgo = new Date(now - INCOMPLETE_AFTER_MS - 60_000);
    utimesSync(partial(crashed), dayAgo, dayAgo);
    const staged = (key: string, startedAt: number) => `${key}.${startedAt}.0a0b0c`;
    await database.db.attachmentObjectPart.createMany({
      data: [
        { objectKey: staged(crashed, dayAgo.getTime()), part: 0, data: Buffer.from("half") },
        { objectKey: staged(running, now - 60_000), part: 0, data: Buffer.from("half") },
      ],
    });

    expect(await sweepIncompleteWrites(stores.storeOf, new Date(now))).toBe(2);
    expect(existsSync(partial(crashed))).toBe(false);
    expect(existsSync(partial(running))).toBe(true);
    const parts = await database.db.attachmentObjectPart.findMany({
      where: { objectKey: { in: [staged(crashed, dayAgo.getTime()), staged(running, now - 60_000)] } },
    });
    expect(parts.map((p) => p.objectKey)).toEqual([staged(running, now - 60_000)]);
    for (const store of [filesystem, db])
      expect(await store.digest(complete)).toEqual({ size: facts.size, sha256: facts.sha256 });
  });
});
