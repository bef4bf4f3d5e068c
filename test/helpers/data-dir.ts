import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { inject } from "vitest";

/**
 * A new temporary DATA_DIR holding a copy of the migrated data directory that
 * test/helpers/global-setup.ts made for the run: a server or CLI process opening it finds a
 * database with nothing to migrate (about 4 s of CPU less than initdb and the migrations). For a
 * test about a first start on an empty directory, use an empty `mkdtempSync` instead. The caller
 * removes it.
 */
export function freshDataDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  cpSync(inject("migratedDataDir"), dir, { recursive: true });
  return dir;
}

let empty: Blob | undefined;

/**
 * An archive of an empty PGlite cluster (initdb done, nothing migrated) for
 * `new PGlite({ loadDataDir: emptyCluster() })`: the same database as `new PGlite()`, without
 * running initdb again (about 4.5 s of CPU each).
 */
export function emptyCluster(): Blob {
  empty ??= new Blob([readFileSync(inject("pgliteEmptySnapshot"))]);
  return empty;
}

let migrated: Blob | undefined;

/**
 * An archive of the migrated cluster that `createTestApp()` starts its databases from: a database
 * opened on it has nothing to migrate. Runs on PostgreSQL make none; there it is the empty cluster,
 * which `openDatabase()` migrates.
 */
export function migratedCluster(): Blob {
  const file = inject("pgliteSnapshot");
  if (!file) return emptyCluster();
  migrated ??= new Blob([readFileSync(file)]);
  return migrated;
}
