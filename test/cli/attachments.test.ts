import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { type CommandContext, type CommandResult, commands } from "../../src/cli/commands.js";
import { runCli as runCliInProcess } from "../../src/cli/run.js";
import * as services from "../../src/cli/services.js";
import { deleteDueObjects } from "../../src/modules/comments/attachments.jobs.js";
import { objectFile } from "../../src/platform/attachments/filesystem.js";
import type { StoreKind } from "../../src/platform/attachments/store.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import { type StoreFixture, storeFixture } from "../helpers/attachment-stores.js";
import { runCli, spawnCli } from "../helpers/cli-process.js";
import { freshDataDir } from "../helpers/data-dir.js";
import { createTestApp, openOwnDatabase, type TestApp, usePostgres } from "../helpers/test-app.js";

/**
 * `attachments verify` and `attachments move` (contract section 15), in process against the three
 * stores on real parts (the command as run.ts runs it, with the stores of test/helpers/attachment-stores.ts),
 * and as a real process where a process proves something: an exit code, and a move killed midway.
 */

const logger = pino({ level: "silent" });
let own: Awaited<ReturnType<typeof openOwnDatabase>>;
let database: Database;
let fixture: StoreFixture;
let app: TestApp;
let org: SeedResult;

beforeAll(async () => {
  own = await openOwnDatabase();
  database = own.database;
  fixture = await storeFixture(database.db);
  // New files on the database store; every store readable (downloads follow a move).
  app = await createTestApp({ database, attachmentStores: fixture.storesFor("database") });
  org = await app.seedOrg();
}, 60_000);

afterAll(async () => {
  await fixture?.close();
  await own?.close();
});

const hex = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** Runs a command in process as run.ts does once its arguments parsed. */
async function command(words: string, values: Record<string, string>): Promise<CommandResult> {
  const found = commands.find((c) => c.path.join(" ") === words);
  if (!found) throw new Error(`no command ${words}`);
  const context: CommandContext = {
    jobQueue: async () => undefined,
    auditSigner: () => {
      throw new Error("not used");
    },
    attachmentStores: async () => fixture.storesFor("database").storeOf,
    downloadTtlSeconds: 300,
  };
  return found.prepare(values, services)(database.db, context);
}

/** Comments with one attachment each, written through the app (database store): id -> bytes. */
async function attachments(organization: SeedResult, files: Buffer[]): Promise<Map<string, Buffer>> {
  const made = new Map<string, Buffer>();
  for (const bytes of files) {
    const created = await app.rest("POST", "/v1/comments", {
      key: organization.apiKey,
      body: {
        content: "Evidence",
        entityId: organization.taskIds[0],
        entityType: "task",
        userId: organization.userIds[0],
        attachments: [{ fileName: "evidence.csv", fileType: "text/csv", fileData: bytes.toString("base64") }],
      },
    });
    expect(created.status, created.text).toBe(201);
    made.set(created.body.attachments[0].id, bytes);
  }
  return made;
}

async function download(id: string): Promise<Buffer> {
  const answer = await app.app.fetch(new Request(`http://test/v1/attachments/${id}`, { headers: { "x-api-key": org.apiKey } }));
  expect(answer.status).toBe(200);
  return Buffer.from(await answer.arrayBuffer());
}

describe("attachments move", { timeout: 120_000 }, () => {
  it("moves database -> filesystem -> s3 -> database keeping every byte; a second run moves nothing", async () => {
    const files = await attachments(org, [
      randomBytes(10),
      randomBytes(1024 * 1024 + 17),
      randomBytes(1),
      randomBytes(3 * 1024 * 1024),
    ]);
    const ids = [...files.keys()];
    const total = [...files.values()].reduce((sum, b) => sum + b.length, 0);
    const recorded = new Map(
      (await database.db.attachment.findMany({ where: { id: { in: ids } } })).map((row) => [row.id, row.sha256]),
    );
    for (const [id, bytes] of files) expect(recorded.get(id)).toBe(hex(bytes));

    for (const to of ["filesystem", "s3", "database"] as const) {
      const before = await database.db.attachment.findMany({ where: { id: { in: ids } } });
      const moved = await command("attachments move", { to });
      expect(moved.json).toEqual({ moved: ids.length, bytes: total, skipped: 0, failed: [] });
      expect(moved.exitCode).toBe(0);

      const after = await database.db.attachment.findMany({ where: { id: { in: ids } } });
      for (const row of after) {
        expect(row.store).toBe(to);
        expect(row.sha256).toBe(recorded.get(row.id));
        expect((await download(row.id)).equals(files.get(row.id) as Buffer)).toBe(true);
      }
      // The old objects go once the URLs handed out for them expired (300 s), not before.
      expect(await deleteDueObjects(database.db, fixture.storesFor(to).storeOf, logger)).toMatchObject({ deleted: 0 });
      await deleteDueObjects(database.db, fixture.storesFor(to).storeOf, logger, new Date(Date.now() + 301_000));
      for (const old of before) {
        expect(
          await fixture
            .storesFor(to)
            .storeOf(old.store as StoreKind)
            ?.open(old.objectKey),
        ).toBeNull();
      }
      expect(await command("attachments verify", { org: org.organizationId })).toMatchObject({
        json: { checked: ids.length, mismatched: [] },
        exitCode: 0,
      });

      const again = await command("attachments move", { to });
      expect(again.json).toEqual({ moved: 0, bytes: 0, skipped: ids.length, failed: [] });
    }
    // Out of the way of the other tests' moves, which move every attachment: these 4 MiB would go to
    // and from each store again.
    for (const row of await database.db.attachment.findMany({ where: { id: { in: ids } }, select: { commentId: true } })) {
      const deleted = await app.rest("DELETE", `/v1/comments/${row.commentId}?userId=${org.userIds[0]}`, { key: org.apiKey });
      expect(deleted.status).toBe(204);
    }
  });

  it("refuses files over 10 MiB into the database store, naming them, and exits 1", async () => {
    const other = await app.seedOrg();
    const big = randomBytes(10 * 1024 * 1024 + 1);
    // Written to the filesystem store (the database store takes no more than 10 MiB).
    const fsApp = await createTestApp({ database, attachmentStores: fixture.storesFor("filesystem") });
    const created = await fsApp.rest("POST", "/v1/attachment-uploads", {
      key: other.apiKey,
      body: {
        fileName: "dump.csv",
        fileType: "text/csv",
        size: big.length,
        sha256: createHash("sha256").update(big).digest("base64"),
      },
    });
    expect(created.status, created.text).toBe(201);
    const put = await fsApp.app.fetch(
      new Request(created.body.uploadUrl, { method: "PUT", headers: created.body.headers, body: new Uint8Array(big) }),
    );
    expect(put.status).toBe(200);
    const comment = await fsApp.rest("POST", "/v1/comments", {
      key: other.apiKey,
      body: {
        content: "Dump",
        entityId: other.taskIds[0],
        entityType: "task",
        userId: other.userIds[0],
        attachments: [{ uploadId: created.body.id }],
      },
    });
    expect(comment.status, comment.text).toBe(201);
    const id = comment.body.attachments[0].id;

    const result = await command("attachments move", { to: "database" });
    expect(result.exitCode).toBe(1);
    expect(result.json.failed).toEqual([{ id, reason: expect.stringMatching(/at most 10485760/) }]);
    expect(await database.db.attachment.findUniqueOrThrow({ where: { id } })).toMatchObject({ store: "filesystem" });
    expect(await command("attachments verify", { org: other.organizationId })).toMatchObject({
      json: { checked: 1, mismatched: [] },
    });
    // Out of the way of the other tests' moves.
    expect(
      (await fsApp.rest("DELETE", `/v1/comments/${comment.body.id}?userId=${other.userIds[0]}`, { key: other.apiKey })).status,
    ).toBe(204);
  });

  it("names a wrong store as a usage error (exit 2) before opening any database", async () => {
    const out: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => out.push(t), env: {} };
    expect(await runCliInProcess(["attachments", "move", "--to", "ftp", "--json"], io)).toBe(2);
    expect(out.join("")).toMatch(/Unknown store "ftp"; use one of s3, filesystem, database/);
    expect(await runCliInProcess(["attachments", "verify", "--json"], io)).toBe(2);
    expect(out.join("")).toMatch(/Missing required option --org/);
  });
});

describe("attachments verify", () => {
  it("refuses an organization that does not exist, naming it (exit 1), rather than verifying nothing", async () => {
    await expect(command("attachments verify", { org: "org_missing" })).rejects.toThrow(/No organization org_missing/);
    const dataDir = mkdtempSync(path.join(tmpdir(), "verify-unknown-"));
    try {
      const out: string[] = [];
      const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => out.push(t), env: { DATA_DIR: dataDir } };
      expect(await runCliInProcess(["attachments", "verify", "--org", "org_missing", "--json"], io)).toBe(1);
      expect(out.join("")).toContain("No organization org_missing");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  const alter: Record<StoreKind, (objectKey: string, bytes: Buffer) => Promise<void>> = {
    async filesystem(objectKey, bytes) {
      writeFileSync(objectFile(fixture.dir, objectKey), flipped(bytes));
    },
    async s3(objectKey, bytes) {
      await fixture.s3.client.send(new PutObjectCommand({ Bucket: fixture.s3.bucket, Key: objectKey, Body: flipped(bytes) }));
    },
    async database(objectKey) {
      const part = await database.db.attachmentObjectPart.findFirstOrThrow({ where: { objectKey }, orderBy: { part: "asc" } });
      await database.db.attachmentObjectPart.update({
        where: { objectKey_part: { objectKey, part: part.part } },
        data: { data: flipped(Buffer.from(part.data)) },
      });
    },
  };
  /** The same bytes with one bit of the last byte changed. */
  const flipped = (bytes: Buffer) => {
    const copy = Buffer.from(bytes);
    copy[copy.length - 1] = (copy[copy.length - 1] as number) ^ 1;
    return copy;
  };

  it.each(["database", "filesystem", "s3"] as const)(
    "on the %s store: names the attachment whose stored bytes changed, and one whose object is gone; exit 1",
    async (kind) => {
      const own = await app.seedOrg();
      const files = await attachments(own, [randomBytes(2000), randomBytes(2000), randomBytes(2000)]);
      if (kind !== "database") expect((await command("attachments move", { to: kind })).json).toMatchObject({ failed: [] });
      expect(await command("attachments verify", { org: own.organizationId })).toMatchObject({
        json: { checked: 3, mismatched: [] },
        exitCode: 0,
      });
      const [changed, gone] = await database.db.attachment.findMany({
        where: { organizationId: own.organizationId },
        orderBy: { id: "asc" },
      });
      if (!changed || !gone) throw new Error("two attachments expected");
      await alter[kind](changed.objectKey, files.get(changed.id) as Buffer);
      await fixture.storesFor(kind).storeOf(kind)?.delete(gone.objectKey);

      const result = await command("attachments verify", { org: own.organizationId });
      expect(result.json).toEqual({ checked: 3, mismatched: [changed.id, gone.id] });
      expect(result.exitCode).toBe(1);
      expect(result.text).toContain(changed.id);
      // Back to the database store for the next test; the damaged ones cannot move and are deleted.
      for (const row of [changed, gone]) {
        const comment = await database.db.attachment.findUniqueOrThrow({ where: { id: row.id }, select: { commentId: true } });
        const deleted = await app.rest("DELETE", `/v1/comments/${comment.commentId}?userId=${own.userIds[0]}`, {
          key: own.apiKey,
        });
        expect(deleted.status).toBe(204);
      }
      expect((await command("attachments move", { to: "database" })).json).toMatchObject({ failed: [] });
    },
  );
});

// A real process: its exit code, and a move killed while it copies ------------------------------

const { DATABASE_URL: _serverDatabase, ...inheritedEnv } = process.env;

/** A database of its own the CLI process can open: a data directory (closed before the process runs) or a PostgreSQL database. */
async function processDatabase() {
  if (usePostgres) {
    const db = await openOwnDatabase();
    return { env: { DATABASE_URL: db.url }, open: async () => db.database, release: async () => {}, close: () => db.close() };
  }
  const dataDir = freshDataDir("cli-attachments-");
  let opened: Database | undefined;
  return {
    env: { DATA_DIR: dataDir },
    open: async () => {
      opened ??= await openDatabase({ kind: "embedded", dataDir });
      return opened;
    },
    /** The embedded database is one process's at a time. */
    release: async () => {
      await opened?.close();
      opened = undefined;
    },
    close: async () => {
      await opened?.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

describe("as a process", { timeout: 180_000 }, () => {
  it("verify exits 1 naming the file altered on disk; a move killed while copying and run again loses and duplicates nothing", async () => {
    const shared = await processDatabase();
    const targetDir = mkdtempSync(path.join(tmpdir(), "cli-attachment-files-"));
    const env = {
      ...inheritedEnv,
      ...shared.env,
      LOG_LEVEL: "silent",
      ATTACHMENT_DIR: targetDir,
      ATTACHMENT_URL_SECRET: "a-test-secret-of-at-least-32-characters!",
    };
    try {
      const db = await shared.open();
      const stores = await import("../../src/platform/attachments/create-store.js");
      const onDatabase = stores.openAttachmentStores(
        {
          store: "database",
          dir: targetDir,
          s3: undefined,
          publicUrl: undefined,
          timeoutMs: 5_000,
          urlSecret: env.ATTACHMENT_URL_SECRET,
        },
        { db: db.db },
      );
      const local = await createTestApp({ database: db, attachmentStores: onDatabase });
      const seeded = await local.seedOrg();
      const files = new Map<string, Buffer>();
      for (let i = 0; i < 8; i++) {
        const bytes = randomBytes(256 * 1024);
        const created = await local.rest("POST", "/v1/comments", {
          key: seeded.apiKey,
          body: {
            content: `Screenshot ${i}`,
            entityId: seeded.taskIds[0],
            entityType: "task",
            userId: seeded.userIds[0],
            attachments: [{ fileName: `shot-${i}.png`, fileType: "image/png", fileData: bytes.toString("base64") }],
          },
        });
        expect(created.status, created.text).toBe(201);
        files.set(created.body.attachments[0].id, bytes);
      }
      await shared.release();

      // Killed as soon as the first copy appears in the target directory.
      const child = await spawnCli(["attachments", "move", "--to", "filesystem", "--json"], env, "ignore");
      const killed = await new Promise<number | null>((resolve, reject) => {
        const watch = setInterval(() => {
          if (readdirSync(targetDir, { recursive: true }).some((name) => String(name).length > 2)) {
            clearInterval(watch);
            child.kill("SIGKILL");
          }
        }, 5);
        child.on("error", reject);
        child.on("exit", (code) => {
          clearInterval(watch);
          resolve(code);
        });
      });
      expect(killed).toBeNull();

      const resumed = await runCli(["attachments", "move", "--to", "filesystem", "--json"], env);
      expect(resumed.stderr).toBe("");
      expect(resumed.code).toBe(0);
      const result = JSON.parse(resumed.stdout);
      expect(result.failed).toEqual([]);
      expect(result.moved + result.skipped).toBe(files.size);
      expect(result.moved).toBeGreaterThan(0);

      const again = await runCli(["attachments", "move", "--to", "filesystem", "--json"], env);
      expect(JSON.parse(again.stdout)).toEqual({ moved: 0, bytes: 0, skipped: files.size, failed: [] });

      // Every attachment once, on the filesystem, with its bytes; a copy the killed run left is deleted in time.
      const reopened = await shared.open();
      const rows = await reopened.db.attachment.findMany({ where: { organizationId: seeded.organizationId } });
      expect(rows).toHaveLength(files.size);
      for (const row of rows) {
        expect(row.store).toBe("filesystem");
        expect(readFileSync(objectFile(targetDir, row.objectKey)).equals(files.get(row.id) as Buffer)).toBe(true);
      }
      const storeOf = stores.openAttachmentStores(
        {
          store: "filesystem",
          dir: targetDir,
          s3: undefined,
          publicUrl: undefined,
          timeoutMs: 5_000,
          urlSecret: env.ATTACHMENT_URL_SECRET,
        },
        { db: reopened.db },
      ).storeOf;
      await deleteDueObjects(reopened.db, storeOf, logger, new Date(Date.now() + 7 * 3_600_000));
      const objects = readdirSync(targetDir, { recursive: true }).filter((name) => /[0-9a-f]{32}$/.test(String(name)));
      expect(objects).toHaveLength(files.size);

      // A byte changed on disk: verify names it and exits 1.
      const [changed] = rows;
      if (!changed) throw new Error("no attachment");
      const bytes = readFileSync(objectFile(targetDir, changed.objectKey));
      bytes[0] = (bytes[0] as number) ^ 0xff;
      writeFileSync(objectFile(targetDir, changed.objectKey), bytes);
      await shared.release();
      const verified = await runCli(["attachments", "verify", "--org", seeded.organizationId, "--json"], env);
      expect(verified.code).toBe(1);
      expect(JSON.parse(verified.stdout)).toEqual({ checked: files.size, mismatched: [changed.id] });
    } finally {
      await shared.close();
      rmSync(targetDir, { recursive: true, force: true });
    }
  });
});
