// What the standalone scenarios (bench/webhooks.mjs, notifications.mjs, audit-chain.mjs,
// trusted-documents.mjs, streams.mjs, soak.mjs) share: a throwaway PostgreSQL database, the
// environment of a service process on it, a seeded organization, and a replica of the built
// server started on a free port. What each one registers to undo goes on the caller's `cleanups`.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { freePort } from "./free-port.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `sql` on the server's maintenance database. */
async function onServer(postgresUrl, sql) {
  const client = new pg.Client({ connectionString: postgresUrl });
  // A server stopped or a database dropped while the client is connected must not end the bench.
  client.on("error", () => {});
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A new database `<prefix>_<pid>_<random>` on the server of `postgresUrl`, dropped at cleanup; its URL. */
export async function throwawayDatabase(postgresUrl, prefix, cleanups) {
  const name = `${prefix}_${process.pid}_${randomBytes(3).toString("hex")}`;
  await onServer(postgresUrl, `CREATE DATABASE ${name}`);
  cleanups.push(() => onServer(postgresUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** This process's environment for a service on `databaseUrl`, without what would point it elsewhere. */
export function replicaEnv(databaseUrl, drop = []) {
  const env = { ...process.env, DATABASE_URL: databaseUrl };
  for (const key of ["DATA_DIR", "REDIS_URL", "PORT", "HOST", "NODE_OPTIONS", ...drop]) delete env[key];
  return env;
}

/** A demo organization seeded through the CLI (`seed --json`): its ids and API key. */
export function seedOrganization(env) {
  const seeded = spawnSync("npm", ["run", "--silent", "cli", "--", "seed", "--json"], { cwd: root, env, encoding: "utf8" });
  if (seeded.status !== 0) throw new Error(`seed failed: ${seeded.stderr}`);
  return JSON.parse(seeded.stdout);
}

/**
 * The built server (`dist/server.js` with the Node flags of `npm start`, unless `command`/`args`
 * say otherwise) in production mode on a free port: `env` (replicaEnv), then the bench's defaults,
 * then the scenario's `settings`. Resolves once /ready answers 200 (60 s at most), and stops it
 * (SIGTERM) at cleanup.
 */
export async function startReplica({
  env,
  settings = {},
  cleanups,
  command = process.execPath,
  args = ["--max-semi-space-size=16", "--liftoff-only", "dist/server.js"],
}) {
  const port = await freePort();
  const child = spawn(command, args, {
    cwd: root,
    env: {
      ...env,
      NODE_ENV: "production",
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "1000000000",
      SEED_DEMO_DATA: "false",
      ...settings,
      PORT: String(port),
      HOST: "127.0.0.1",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  });
  const base = `http://127.0.0.1:${port}`;
  for (const started = Date.now(); ; ) {
    if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode}) during start`);
    if (Date.now() - started > 60_000) throw new Error("the service did not become ready in 60 s");
    const ready = await fetch(`${base}/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    await sleep(50);
  }
  return { base, port, pid: child.pid, child };
}
