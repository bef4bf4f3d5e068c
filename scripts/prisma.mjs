// Runs the Prisma CLIs without network access (see docs/development.md, "Database and migrations").
//   generate             Prisma 7 client + Pothos types (Prisma 7 wants an engine path it never uses)
//   migration NAME       writes prisma/migrations/<timestamp>_NAME/migration.sql from the schema change
//   sql-from-empty       prints the SQL that creates schema.prisma from nothing (used by the drift test)
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const schemaPath = path.join(root, "prisma", "schema.prisma");
const placeholder = path.join(root, "package.json");

function run(cli, args, cwd = root) {
  const result = spawnSync(process.execPath, [path.join(root, "node_modules", cli, "build", "index.js"), ...args], {
    cwd,
    encoding: "utf8",
    env: {
      ...process.env,
      PATH: `${path.join(root, "node_modules", ".bin")}${path.delimiter}${process.env.PATH}`,
      PRISMA_SCHEMA_ENGINE_BINARY: placeholder,
      PRISMA_QUERY_ENGINE_LIBRARY: placeholder,
      PRISMA_HIDE_UPDATE_MESSAGE: "1",
      // No update check: it starts a process that looks up Prisma's servers, which this offline use never needs.
      CHECKPOINT_DISABLE: "1",
      DATABASE_URL: "postgresql://unused@127.0.0.1:1/unused",
    },
  });
  if (result.status !== 0) {
    process.stderr.write(result.stdout + result.stderr);
    process.exit(result.status ?? 1);
  }
  return result.stdout;
}

// Prisma 6's WebAssembly schema engine computes diffs without a database; it needs `url` in the
// datasource (Prisma 7 forbids it) and no generators.
function prisma6Schema(source) {
  return source
    .replace(/generator \w+ \{[^}]*\}/g, "")
    .replace(/datasource db \{[^}]*\}/, 'datasource db {\n  provider = "postgresql"\n  url = env("DATABASE_URL")\n}');
}

function diff(fromSchema) {
  const dir = mkdtempSync(path.join(root, "node_modules", ".prisma6-"));
  try {
    writeFileSync(path.join(dir, "to.prisma"), prisma6Schema(readFileSync(schemaPath, "utf8")));
    if (fromSchema !== undefined) writeFileSync(path.join(dir, "from.prisma"), prisma6Schema(fromSchema));
    writeFileSync(
      path.join(dir, "prisma.config.mjs"),
      `import { PGlite } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter";
// PostgreSQL arms a 10 s timer at start (log_startup_progress_interval, never disarmed in PGlite),
// and Prisma never closes the adapter's database: the CLI then sat 10 s after printing the diff
// (13 s instead of 4). PGlite's own timers no longer keep this process alive.
const setTimeoutOf = globalThis.setTimeout;
globalThis.setTimeout = (callback, ms, ...args) => {
  const timer = setTimeoutOf(callback, ms, ...args);
  if (String(callback).includes("__emscripten_timeout")) timer.unref();
  return timer;
};
export default {
  experimental: { adapter: true },
  engine: "js",
  schema: "to.prisma",
  async adapter() { return new PrismaPGlite(new PGlite()); },
};
`,
    );
    const from = fromSchema === undefined ? ["--from-empty"] : ["--from-schema-datamodel", "from.prisma"];
    return run(
      "prisma6",
      ["migrate", "diff", "--config", "prisma.config.mjs", ...from, "--to-schema-datamodel", "to.prisma", "--script"],
      dir,
    )
      .split("\n")
      .filter((line) => !line.startsWith("Loaded Prisma config"))
      .join("\n")
      .trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const [command, name] = process.argv.slice(2);
if (command === "generate") {
  process.stdout.write(run("prisma", ["generate"]));
} else if (command === "sql-from-empty") {
  process.stdout.write(`${diff(undefined)}\n`);
} else if (command === "migration") {
  if (!name || !/^[a-z0-9_]+$/.test(name)) {
    console.error("usage: npm run db:migration -- <name in snake_case>");
    process.exit(2);
  }
  // The committed schema is what the existing migrations produce (a test keeps it so).
  const committed = execFileSync("git", ["show", "HEAD:prisma/schema.prisma"], { cwd: root, encoding: "utf8" });
  const sql = diff(committed);
  if (!sql || sql === "-- This is an empty migration.") {
    console.error("schema.prisma has no change against HEAD: nothing to migrate");
    process.exit(1);
  }
  const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
  const dir = path.join(root, "prisma", "migrations", `${stamp}_${name}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "migration.sql"), `${sql}\n`);
  console.log(`wrote ${path.relative(root, dir)}/migration.sql`);
} else {
  console.error("usage: node scripts/prisma.mjs generate | migration NAME | sql-from-empty");
  process.exit(2);
}
