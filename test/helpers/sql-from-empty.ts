import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { testCacheDir as cacheDir, writeAtomically } from "./test-cache.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Where `scripts/prisma.mjs sql-from-empty` (Prisma 6's schema engine: about 6 s of CPU) keeps its
 * answer: a key of everything its output depends on (schema.prisma, the script, the Prisma 6
 * version). A schema.prisma without a migration changes the key, so the drift test finds it all
 * the same.
 */
function sqlFromEmptyCacheFile(): string {
  const read = (file: string) => readFileSync(path.join(root, file), "utf8");
  const key = createHash("sha256")
    .update(read("prisma/schema.prisma"))
    .update(read("scripts/prisma.mjs"))
    .update(JSON.parse(read("node_modules/prisma6/package.json")).version)
    .digest("hex")
    .slice(0, 16);
  return path.join(cacheDir, `sql-from-empty-${key}.sql`);
}

/**
 * The SQL that creates schema.prisma from nothing (schema-contracts.test.ts compares the migrations
 * with it), from the cache or made and cached. The global setup makes it beside the PGlite caches
 * when it makes those (a fresh clone), on the core their single-threaded build leaves idle.
 */
export async function sqlFromEmpty(): Promise<string> {
  const file = sqlFromEmptyCacheFile();
  if (existsSync(file)) return readFileSync(file, "utf8");
  const { stdout } = await run(process.execPath, ["scripts/prisma.mjs", "sql-from-empty"], {
    cwd: root,
    maxBuffer: 16 * 1024 * 1024,
  });
  mkdirSync(cacheDir, { recursive: true });
  writeAtomically(file, stdout);
  for (const old of readdirSync(cacheDir)) {
    if (old.startsWith("sql-from-empty-") && old.endsWith(".sql") && old !== path.basename(file))
      rmSync(path.join(cacheDir, old), { force: true });
  }
  return stdout;
}
