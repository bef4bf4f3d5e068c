import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../../src/db/database.js";
import { applyMigrations, readMigrations } from "../../src/db/migrate.js";

/**
 * Migrates one database before any test file starts, so that each file gets a copy instead of
 * running initdb and every migration itself (that set-up was most of the suite's time).
 * Embedded: a `dumpDataDir()` archive of a migrated PGlite, cached on disk under a key of the
 * migrations and the PGlite version. PostgreSQL: a migrated database that `createTestApp()` copies
 * with `CREATE DATABASE ... TEMPLATE`, dropped when the run ends.
 */
declare module "vitest" {
  export interface ProvidedContext {
    /** Path of a migrated PGlite data directory archive, or "" when there is none. */
    pgliteSnapshot: string;
    /** Name of a migrated database on the test PostgreSQL server, or "" when there is none. */
    postgresTemplate: string;
  }
}

const root = fileURLToPath(new URL("../..", import.meta.url));
const cacheDir = path.join(root, "node_modules/.cache/gateway-tests");
export const postgresAdminUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

export default async function setup(project: TestProject) {
  project.provide("pgliteSnapshot", "");
  project.provide("postgresTemplate", "");
  if (process.env.TEST_DATABASE === "postgres") {
    const { name, drop } = await createPostgresTemplate();
    project.provide("postgresTemplate", name);
    return drop;
  }
  project.provide("pgliteSnapshot", await pgliteSnapshot());
}

/** The archive's file, made when the migrations or PGlite changed since it was last made. */
async function pgliteSnapshot(): Promise<string> {
  const pgliteVersion = JSON.parse(
    readFileSync(path.join(root, "node_modules/@electric-sql/pglite/package.json"), "utf8"),
  ).version;
  const key = createHash("sha256")
    .update(pgliteVersion)
    .update(
      readMigrations()
        .map((m) => `${m.name}:${m.checksum}`)
        .join("\n"),
    )
    .digest("hex")
    .slice(0, 16);
  const file = path.join(cacheDir, `pglite-${key}.tar`);
  if (existsSync(file)) return file;

  // The service's own migrator; each test's openDatabase() then finds nothing pending to apply.
  const pglite = new PGlite();
  await applyMigrations(
    {
      query: async (sql, params) => (await pglite.query<Record<string, unknown>>(sql, params)).rows,
      transaction: async (script, after) => {
        await pglite.transaction(async (tx) => {
          await tx.exec(script);
          await tx.query(after.sql, after.params);
        });
      },
    },
    readMigrations(),
  );
  const archive = await pglite.dumpDataDir("none");
  await pglite.close();
  mkdirSync(cacheDir, { recursive: true });
  // Written under a unique name and renamed, so a concurrent run never reads half a file.
  const partial = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  writeFileSync(partial, Buffer.from(await archive.arrayBuffer()));
  renameSync(partial, file);
  for (const old of readdirSync(cacheDir)) {
    if (old.startsWith("pglite-") && old !== path.basename(file) && !old.includes(".tar.")) {
      rmSync(path.join(cacheDir, old), { force: true });
    }
  }
  return file;
}

async function createPostgresTemplate(): Promise<{ name: string; drop: () => Promise<void> }> {
  const name = `gateway_test_template_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  // The service's own migrator, so the copies are exactly what it would leave.
  const database = await openDatabase({ kind: "postgres", url: url.toString(), poolSize: 1 });
  // CREATE DATABASE ... TEMPLATE refuses while anyone is connected to the template.
  await database.close();
  return {
    name,
    drop: async () => {
      const client = new pg.Client({ connectionString: postgresAdminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}
