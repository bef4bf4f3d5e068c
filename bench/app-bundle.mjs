// The pieces of an in-process bench: this tree's app bundled without its HTTP server and a
// throwaway PostgreSQL database seeded through the CLI (the Node flags of `npm start`: settings.mjs).
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";
import pg from "pg";
import { bundleOptions } from "../scripts/build.mjs";

/** Bundles the app of a source tree (createApp, loadConfig, openDatabase, schema) into `outdir`; the bundle's path. */
export async function appBundle(srcRoot, outdir) {
  mkdirSync(outdir, { recursive: true });
  const entry = path.join(outdir, "app-entry.ts");
  const rel = (p) => path.relative(outdir, path.join(srcRoot, p)).split(path.sep).join("/");
  writeFileSync(
    entry,
    [
      `import "${rel("src/platform/engine-flags.ts")}";`,
      `export { createApp } from "${rel("src/app.ts")}";`,
      `export { loadConfig } from "${rel("src/platform/config.ts")}";`,
      `export { openDatabase } from "${rel("src/platform/db/database.ts")}";`,
      `export { schema } from "${rel("src/schema.ts")}";`,
      "",
    ].join("\n"),
  );
  await build({ ...bundleOptions(outdir), entryPoints: { app: entry } });
  return path.join(outdir, "app.js");
}

/**
 * A throwaway database on the PostgreSQL server at `url` (default the local one), set as this
 * process's DATABASE_URL with the settings of a production run; `seed` fills it through the CLI.
 */
/**
 * Two bundles for an in-process A/B under `dir`: A of `baseRef`'s src/ (extracted with git archive,
 * with this tree's generated Prisma client, which git does not hold), B of this tree's src/. Both
 * sit two levels below the root, so that the migrations resolve as dist/'s do.
 */
export async function baseAndHeadBundles(root, dir, baseRef) {
  const baseTree = path.join(dir, "base-tree");
  rmSync(baseTree, { recursive: true, force: true });
  mkdirSync(baseTree, { recursive: true });
  execFileSync("sh", ["-c", `git archive ${JSON.stringify(baseRef)} src | tar -x -C ${JSON.stringify(baseTree)}`], { cwd: root });
  cpSync(path.join(root, "src", "generated"), path.join(baseTree, "src", "generated"), { recursive: true });
  return { A: await appBundle(baseTree, path.join(dir, "a")), B: await appBundle(root, path.join(dir, "b")) };
}

export async function throwawayDatabase(url = "postgresql://postgres@127.0.0.1:5432/postgres") {
  const admin = new pg.Client({ connectionString: url });
  admin.on("error", () => {});
  await admin.connect();
  const name = `bench_${process.pid}_${randomBytes(4).toString("hex")}`;
  await admin.query(`CREATE DATABASE "${name}"`);
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  Object.assign(process.env, {
    DATABASE_URL: dbUrl.toString(),
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "1000000000",
    SEED_DEMO_DATA: "false",
  });
  const drop = async () => {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => {});
    await admin.end().catch(() => {});
  };
  process.once("SIGINT", () => drop().then(() => process.exit(130)));
  return {
    url: dbUrl.toString(),
    drop,
    /** Seeds it with the CLI (`seed --json`): its organization, API key, users, tasks and vendors. */
    seed(cwd) {
      const run = spawnSync("npm", ["run", "--silent", "cli", "--", "seed", "--json"], {
        cwd,
        env: process.env,
        encoding: "utf8",
      });
      if (run.status !== 0) throw new Error(`seed failed:\n${run.stderr}`);
      return JSON.parse(
        run.stdout
          .trim()
          .split("\n")
          .findLast((l) => l.startsWith("{")),
      );
    },
  };
}
