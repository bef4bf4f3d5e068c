import { randomBytes } from "node:crypto";
import { renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Where the tests keep what they make once and reuse from run to run (global-setup.ts, sql-from-empty.ts). */
export const testCacheDir = path.join(fileURLToPath(new URL("../..", import.meta.url)), "node_modules/.cache/gateway-tests");

/** A unique name beside `file`, to write under and rename, so a concurrent run never reads half of it. */
export const partialOf = (file: string) => `${file}.${process.pid}.${randomBytes(4).toString("hex")}.partial`;

export function writeAtomically(file: string, data: string | Uint8Array) {
  const partial = partialOf(file);
  writeFileSync(partial, data);
  renameSync(partial, file);
}
