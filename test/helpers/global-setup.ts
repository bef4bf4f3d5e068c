import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../../src/platform/db/database.js";
import { applyMigrations, pgliteMigrationSession, readMigrations } from "../../src/platform/db/migrate.js";
import { pgliteExtensions } from "../../src/platform/db/pglite-extensions.js";
import { dropPostgresTemplate, ensurePostgresTemplate } from "./postgres-template.js";
import { sqlFromEmpty } from "./sql-from-empty.js";
import { testCacheDir as cacheDir, partialOf, writeAtomically } from "./test-cache.js";

/**
 * Makes once, before any test file starts, the databases that test files would otherwise each
 * create from nothing (initdb and every migration were most of the suite's time). Cached on disk
 * under node_modules/.cache/gateway-tests/, keyed by the PGlite version (and the migrations, for
 * the migrated ones), so a run after an unchanged one makes none of them:
 * - an empty cluster (`dumpDataDir()` archive of a PGlite straight after initdb), for tests of the
 *   migrations themselves (test/helpers/data-dir.ts `emptyCluster()`);
 * - a migrated cluster, an archive that `createTestApp()` starts each file's database from;
 * - a migrated data directory as the service leaves it in DATA_DIR (without its lock), that
 *   `freshDataDir()` copies for the CLI and the server processes of the e2e tests.
 * PostgreSQL: the name of the run's migrated template database (test/helpers/postgres-template.ts),
 * that `createTestApp()` (once per worker) and the e2e files copy with `CREATE DATABASE ...
 * TEMPLATE`. Made here on TEST_DATABASE=postgres runs; on the others by the first file that needs
 * it, if any does. Dropped with its copies when the run ends.
 */
declare module "vitest" {
  export interface ProvidedContext {
    /** Path of a migrated PGlite data directory archive, or "" when the suite runs on PostgreSQL. */
    pgliteSnapshot: string;
    /** Path of an archive of an empty PGlite cluster (initdb done, nothing migrated). */
    pgliteEmptySnapshot: string;
    /** A migrated embedded data directory to copy (never to open in place). */
    migratedDataDir: string;
    /**
     * Name of this run's migrated template on the test PostgreSQL server: made before any file on
     * TEST_DATABASE=postgres runs, else made by `postgresTemplate()` (test-app.ts) on first need.
     */
    postgresTemplate: string;
  }
}

const root = fileURLToPath(new URL("../..", import.meta.url));
export default async function setup(project: TestProject) {
  const { empty, migrated, dataDir } = await pgliteCaches(
    // When the PGlite caches are made (a fresh clone, new migrations), Prisma's SQL for
    // schema-contracts.test.ts is made beside them (when not cached): their build runs on one core, the CLI on the other.
    sqlFromEmpty,
  );
  project.provide("pgliteEmptySnapshot", empty);
  project.provide("migratedDataDir", dataDir);
  // The run's own name: two runs on one server (two checkouts, other migrations) never share one.
  const template = `gateway_test_template_${randomBytes(6).toString("hex")}`;
  project.provide("postgresTemplate", template);
  if (process.env.TEST_DATABASE === "postgres") {
    project.provide("pgliteSnapshot", "");
    await ensurePostgresTemplate(template);
  } else {
    project.provide("pgliteSnapshot", migrated);
  }
  return async () => {
    // The CLI bundles this run's workers built (spawnCli in cli-process.ts), named after this process.
    const dist = path.join(root, "dist");
    for (const entry of existsSync(dist) ? readdirSync(dist) : []) {
      if (entry.startsWith(`.cli-${process.pid}-`)) rmSync(path.join(dist, entry), { recursive: true, force: true });
    }
    await dropPostgresTemplate(template);
  };
}

function hash(...parts: string[]): string {
  const h = createHash("sha256");
  for (const part of parts) h.update(part).update("\0");
  return h.digest("hex").slice(0, 16);
}

/**
 * Removes the cache entries named like `pattern` other than `keep` that no run has used for a day.
 * An entry of another key is not necessarily stale: a run on another branch of the same checkout
 * (worktrees sharing node_modules), with other migrations, may be copying it right now; removing
 * such entries at once made those runs fail on a missing file (ENOENT) while two of them ran.
 */
function removeStale(pattern: RegExp, keep: string) {
  for (const old of readdirSync(cacheDir)) {
    if (!pattern.test(old) || old === keep || old.endsWith(".partial")) continue;
    const entry = path.join(cacheDir, old);
    try {
      if (Date.now() - statSync(entry).mtimeMs < unusedFor) continue;
    } catch {
      continue; // removed by another run meanwhile
    }
    rmSync(entry, { recursive: true, force: true });
  }
}

const unusedFor = 24 * 3_600_000;

/** Marks a cache entry as used by this run (removeStale keeps it a day from now). */
function markUsed(entry: string) {
  const now = new Date();
  utimesSync(entry, now, now);
}

/**
 * The three PGlite caches, each made when missing (from one initdb between them). `alongside` is
 * started when any of them is to be made, and awaited with them.
 */
async function pgliteCaches(alongside: () => Promise<unknown>): Promise<{ empty: string; migrated: string; dataDir: string }> {
  const pgliteVersion = JSON.parse(readFileSync(path.join(root, "node_modules/@electric-sql/pglite/package.json"), "utf8"))
    .version as string;
  const migrations = readMigrations()
    .map((m) => `${m.name}:${m.checksum}`)
    .join("\n");
  // The migrated archive's key is the one it always had: the PGlite version and the migrations.
  const migratedKey = createHash("sha256").update(pgliteVersion).update(migrations).digest("hex").slice(0, 16);
  const empty = path.join(cacheDir, `pglite-empty-${hash(pgliteVersion)}.tar`);
  const migrated = path.join(cacheDir, `pglite-${migratedKey}.tar`);
  const dataDir = path.join(cacheDir, `datadir-${migratedKey}`);
  mkdirSync(cacheDir, { recursive: true });
  const besides = [empty, migrated, dataDir].every((entry) => existsSync(entry)) ? undefined : alongside();
  besides?.catch(() => {}); // awaited below, after the caches: its failure is thrown there, not reported as unhandled

  if (!existsSync(empty)) {
    const pglite = new PGlite();
    writeAtomically(empty, await dump(pglite));
    await pglite.close();
  }

  if (!existsSync(migrated)) {
    // The service's own migrator; each test's openDatabase() then finds nothing pending to apply.
    const pglite = new PGlite({ loadDataDir: new Blob([readFileSync(empty)]), extensions: pgliteExtensions });
    await applyMigrations(pgliteMigrationSession(pglite), readMigrations());
    writeAtomically(migrated, await dump(pglite));
    await pglite.close();
  }

  if (!existsSync(dataDir)) {
    // What the service leaves in DATA_DIR: openDatabase() on the directory, closed again (which
    // removes its lock). It starts from the migrated archive instead of a second initdb.
    const partial = partialOf(dataDir);
    const database = await openDatabase({ kind: "embedded", dataDir: partial, loadDataDir: new Blob([readFileSync(migrated)]) });
    await database.close();
    rmSync(path.join(partial, "gateway.lock"), { force: true });
    try {
      renameSync(partial, dataDir);
    } catch (error) {
      // A concurrent run renamed its own copy into place first.
      rmSync(partial, { recursive: true, force: true });
      if (!existsSync(dataDir)) throw error;
    }
  }
  await besides;
  for (const entry of [empty, migrated, dataDir]) markUsed(entry);
  removeStale(/^pglite-empty-[0-9a-f]{16}\.tar$/, path.basename(empty));
  removeStale(/^pglite-[0-9a-f]{16}\.tar$/, path.basename(migrated));
  removeStale(/^datadir-[0-9a-f]{16}$/, path.basename(dataDir));
  return { empty, migrated, dataDir };
}

async function dump(pglite: PGlite): Promise<Uint8Array> {
  // dumpDataDir() does not wait for the start (initdb) to finish.
  await pglite.waitReady;
  return new Uint8Array(await (await pglite.dumpDataDir("none")).arrayBuffer());
}
