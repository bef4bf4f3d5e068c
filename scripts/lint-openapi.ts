// Lints the OpenAPI document the app serves (GET /v1/openapi.json through app.fetch, no socket)
// with Spectral and the rulesets of .spectral.mjs; exits 1 on any error. `--out FILE` keeps the
// document. No network: the rulesets are imported from node_modules.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";
import { createApp } from "../src/app.js";
import { openDatabase } from "../src/platform/db/database.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const database = await openDatabase({ kind: "embedded" });
let document: string;
try {
  const app = createApp({
    database,
    config: { production: true, bodyLimitBytes: 1024 * 1024 },
    logger: pino({ level: "silent" }),
  });
  const response = await app.fetch(new Request("http://localhost/v1/openapi.json"));
  if (response.status !== 200) throw new Error(`GET /v1/openapi.json answered ${response.status}`);
  document = await response.text();
} finally {
  await database.close();
}

const outArg = process.argv.indexOf("--out");
const dir = mkdtempSync(path.join(tmpdir(), "openapi-lint-"));
const file = outArg > 0 ? path.resolve(process.argv[outArg + 1] as string) : path.join(dir, "openapi.json");
writeFileSync(file, document);
const spectral = spawnSync(
  process.execPath,
  [
    path.join(root, "node_modules/@stoplight/spectral-cli/dist/index.js"),
    "lint",
    file,
    "--ruleset",
    path.join(root, ".spectral.mjs"),
    "--fail-severity",
    "error",
    ...process.argv.slice(2).filter((a, i, all) => a !== "--out" && all[i - 1] !== "--out"),
  ],
  { stdio: "inherit", cwd: root },
);
rmSync(dir, { recursive: true, force: true });
process.exit(spectral.status ?? 1);
