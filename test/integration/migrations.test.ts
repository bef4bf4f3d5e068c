import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import canonicalize from "canonicalize";
import pg from "pg";
import { describe, expect, it } from "vitest";
import {
  applyMigrations,
  NO_TRANSACTION_MARKER,
  pgliteMigrationSession,
  pgMigrationSession,
  readMigrations,
} from "../../src/platform/db/migrate.js";
import { pgliteExtensions } from "../../src/platform/db/pglite-extensions.js";
import { emptyCluster } from "../helpers/data-dir.js";
import { createPostgresDatabase, usePostgres } from "../helpers/test-app.js";

const session = pgliteMigrationSession;

function migrationsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "migrations-"));
  for (const [name, sql] of Object.entries(files)) {
    mkdirSync(path.join(dir, name));
    writeFileSync(path.join(dir, name, "migration.sql"), sql);
  }
  return dir;
}

describe("applyMigrations", () => {
  it("applies pending migrations once, in order, recording them as Prisma does", async () => {
    const db = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    const applied = await applyMigrations(session(db), readMigrations());
    expect(applied.length).toBeGreaterThan(0);
    expect(await applyMigrations(session(db), readMigrations())).toEqual([]);
    const { rows } = await db.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" ORDER BY migration_name`,
    );
    expect(rows.map((r) => r.migration_name)).toEqual(applied);
    expect(rows.every((r) => r.checksum.length === 64 && r.finished_at)).toBe(true);
    await db.close();
  });

  it("rolls back a failing migration entirely and records nothing", async () => {
    const dir = migrationsDir({ "1_ok": "CREATE TABLE a (id int);", "2_bad": "CREATE TABLE b (id int); SELECT * FROM missing;" });
    const db = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    await expect(applyMigrations(session(db), readMigrations(dir))).rejects.toThrow(/missing/);
    const tables = await db.query<{ tablename: string }>(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`,
    );
    expect(tables.rows.map((r) => r.tablename)).toEqual(["_prisma_migrations", "a"]);
    const recorded = await db.query(`SELECT 1 FROM "_prisma_migrations" WHERE migration_name = '2_bad'`);
    expect(recorded.rows).toHaveLength(0);
    await db.close();
    rmSync(dir, { recursive: true });
  });

  it("refuses to start when an applied migration was edited", async () => {
    const dir = migrationsDir({ "1_ok": "CREATE TABLE a (id int);" });
    const db = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    await applyMigrations(session(db), readMigrations(dir));
    writeFileSync(path.join(dir, "1_ok", "migration.sql"), "CREATE TABLE a (id bigint);");
    await expect(applyMigrations(session(db), readMigrations(dir))).rejects.toThrow(/changed after it was applied/);
    await db.close();
    rmSync(dir, { recursive: true });
  });
});

describe("a migration that cannot run in a transaction (an index built concurrently)", () => {
  const files = (marker: string) => ({
    "1_table": "CREATE TABLE a (id int, note text);",
    "2_index": `${marker}ALTER TABLE a ADD COLUMN IF NOT EXISTS extra text;\nCREATE INDEX CONCURRENTLY IF NOT EXISTS a_note ON a (note);\n`,
    "3_after": "CREATE TABLE b (id int);",
  });
  const check = async (query: (sql: string) => Promise<Record<string, unknown>[]>) => {
    expect(await query(`SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = 'a_note'::regclass`)).toEqual([
      { valid: true },
    ]);
    const names = await query(`SELECT migration_name FROM "_prisma_migrations" ORDER BY 1`);
    expect(names.map((r) => r.migration_name)).toEqual(["1_table", "2_index", "3_after"]);
  };

  it.runIf(usePostgres)(
    "runs statement by statement outside a transaction on PostgreSQL, once, and refuses it unmarked",
    async () => {
      const { url, drop } = await createPostgresDatabase();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const unmarked = migrationsDir(files(""));
        await expect(applyMigrations(pgMigrationSession(client), readMigrations(unmarked))).rejects.toThrow(/transaction block/);
        const dir = migrationsDir(files(`${NO_TRANSACTION_MARKER}\n`));
        expect(await applyMigrations(pgMigrationSession(client), readMigrations(dir))).toEqual(["2_index", "3_after"]);
        expect(await applyMigrations(pgMigrationSession(client), readMigrations(dir))).toEqual([]);
        await check(async (sql) => (await client.query(sql)).rows);
        // The session lock is released: another session can take it.
        const other = new pg.Client({ connectionString: url });
        await other.connect();
        expect((await other.query("SELECT pg_try_advisory_lock(72707369) AS got")).rows[0].got).toBe(true);
        await other.end();
        rmSync(unmarked, { recursive: true });
        rmSync(dir, { recursive: true });
      } finally {
        await client.end();
        await drop();
      }
    },
  );

  it("runs on PGlite too", async () => {
    const db = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    const dir = migrationsDir(files(`${NO_TRANSACTION_MARKER}\n`));
    expect(await applyMigrations(session(db), readMigrations(dir))).toEqual(["1_table", "2_index", "3_after"]);
    await check(async (sql) => (await db.query<Record<string, unknown>>(sql)).rows);
    await db.close();
    rmSync(dir, { recursive: true });
  });
});

describe("20261125122600_policy_version_submitter", () => {
  it("fills the submitter of versions already submitted from their latest policy.version_submitted event", async () => {
    const db = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    const all = readMigrations();
    const target = "20261125122600_policy_version_submitter";
    await applyMigrations(
      session(db),
      all.filter((m) => m.name < target),
    );
    await db.exec(`
      INSERT INTO "Organization" ("id", "name", "updatedAt") VALUES ('org_m', 'M', now());
      INSERT INTO "User" ("id", "name", "email", "updatedAt") VALUES ('usr_a', 'A', 'a@m.test', now()), ('usr_b', 'B', 'b@m.test', now());
      INSERT INTO "Member" ("id", "organizationId", "userId", "role", "updatedAt") VALUES ('mem_a', 'org_m', 'usr_a', 'owner', now());
      INSERT INTO "Policy" ("id", "organizationId", "name", "updatedAt") VALUES ('pol_m', 'org_m', 'P', now());
      INSERT INTO "PolicyVersion" ("id", "organizationId", "policyId", "version", "status", "content", "approverId")
        VALUES ('pv_review', 'org_m', 'pol_m', 1, 'in_review', '[]', 'mem_a'), ('pv_draft', 'org_m', 'pol_m', 2, 'draft', '[]', NULL);
      INSERT INTO "AuditEvent" ("id", "organizationId", "actorUserId", "action", "entityType", "entityId", "data", "createdAt") VALUES
        ('aud_1', 'org_m', 'usr_a', 'policy.version_submitted', 'policy', 'pol_m', '{"versionId":"pv_review"}', now() - interval '1 hour'),
        ('aud_2', 'org_m', 'usr_b', 'policy.version_submitted', 'policy', 'pol_m', '{"versionId":"pv_review"}', now());
    `);
    expect(await applyMigrations(session(db), all)).toContain(target);
    const rows = await db.query<{ id: string; submittedByUserId: string | null }>(
      `SELECT "id", "submittedByUserId" FROM "PolicyVersion" ORDER BY "id"`,
    );
    expect(rows.rows).toEqual([
      { id: "pv_draft", submittedByUserId: null },
      { id: "pv_review", submittedByUserId: "usr_b" },
    ]);
    await db.close();
  });
});

describe("20261126100000_audit_chain", () => {
  it("gives existing events their sequence and hash per organization in their order (createdAt, id), and each organization its head", async () => {
    const db = new PGlite({ loadDataDir: emptyCluster(), extensions: pgliteExtensions });
    const all = readMigrations();
    const target = "20261126100000_audit_chain";
    await applyMigrations(
      session(db),
      all.filter((m) => m.name < target),
    );
    // Ids out of time order, two events at the same instant, two organizations interleaved, 1,500 in one (two batches).
    await db.exec(`
      INSERT INTO "Organization" ("id", "name", "updatedAt") VALUES ('org_a', 'A', now()), ('org_b', 'B', now());
      INSERT INTO "AuditEvent" ("id", "organizationId", "actorUserId", "actorApiKeyId", "action", "entityType", "entityId", "data", "requestId", "createdAt") VALUES
        ('aud_3', 'org_a', 'usr_a', NULL, 'task.created', 'task', 'tsk_1', '{"title":"T","n":1.5,"z":{"b":null,"a":[1,"é"]}}', 'req-1', '2026-01-01 10:00:00.123'),
        ('aud_1', 'org_a', NULL, 'key_1', 'task.updated', 'task', 'tsk_1', NULL, NULL, '2026-01-01 10:00:01.000'),
        ('aud_2', 'org_a', NULL, 'key_1', 'task.updated', 'task', 'tsk_1', '{"changes":{}}', NULL, '2026-01-01 10:00:01.000'),
        ('aud_0', 'org_b', 'usr_b', NULL, 'vendor.created', 'vendor', 'vnd_1', '{}', 'req-2', '2025-12-31 23:59:59.999');
      INSERT INTO "AuditEvent" ("id", "organizationId", "action", "entityType", "entityId", "createdAt")
        SELECT 'aud_m' || lpad(g::text, 5, '0'), 'org_b', 'task.updated', 'task', 'tsk_2', '2026-01-02'::timestamp + g * interval '1 second'
        FROM generate_series(1, 1500) g;
    `);
    expect(await applyMigrations(session(db), all)).toContain(target);

    const { rows } = await db.query<Record<string, unknown>>(
      `SELECT "sequence", "id", "organizationId", "action", "entityType", "entityId", "actorUserId", "actorApiKeyId", "data", "requestId", "createdAt", "hash"
       FROM "AuditEvent" ORDER BY "organizationId", "sequence"`,
    );
    const a = rows.filter((r) => r.organizationId === "org_a");
    expect(a.map((r) => [r.id, r.sequence])).toEqual([
      ["aud_3", 1],
      ["aud_1", 2],
      ["aud_2", 3],
    ]);
    const b = rows.filter((r) => r.organizationId === "org_b");
    expect(b.map((r) => r.sequence)).toEqual(Array.from({ length: 1501 }, (_, i) => i + 1));
    expect(b[0]?.id).toBe("aud_0");
    for (const chain of [a, b]) {
      let previous = "0".repeat(64);
      for (const row of chain) {
        const { hash, ...line } = row;
        // PGlite reads timestamp without time zone as the UTC instant it holds.
        const canonical = canonicalize({ ...line, createdAt: (line.createdAt as Date).toISOString() });
        expect(hash).toBe(createHash("sha256").update(`${previous}\n${canonical}`).digest("hex"));
        previous = hash as string;
      }
      const head = await db.query<{ sequence: number; hash: string }>(
        `SELECT "sequence", "hash" FROM "AuditChainHead" WHERE "organizationId" = $1`,
        [chain[0]?.organizationId],
      );
      expect(head.rows).toEqual([{ sequence: chain.length, hash: previous }]);
    }
    // The next migration made them required and the table append-only.
    await expect(db.query(`UPDATE "AuditEvent" SET "action" = 'x' WHERE "id" = 'aud_1'`)).rejects.toThrow(/append-only/);
    await expect(
      db.query(
        `INSERT INTO "AuditEvent" ("id", "organizationId", "action", "entityType", "entityId") VALUES ('aud_x', 'org_a', 'a', 't', 'e')`,
      ),
    ).rejects.toThrow(/null value/);
    await db.close();
  });
});
