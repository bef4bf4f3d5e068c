// The settings of `npm run bench` (bench/README.md lists them), read once from the environment,
// and the small helpers every part of the harness shares.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { GUARD_STEPS } from "./guards.mjs";

const env = process.env;
export const settings = {
  durationS: Number(env.BENCH_DURATION ?? 5),
  warmupS: Number(env.BENCH_WARMUP ?? 2),
  // Before the first scenario on PostgreSQL, the service takes every scenario's requests in turn
  // for this many seconds (every other process as many turns): a service just started spent 10 to
  // 40 s of load at 1.5 to 2 times its settled CPU per request (bench/results/2026-12-04-levers.md),
  // which fell on the first scenario's rounds.
  firstWarmupS: Number(env.BENCH_FIRST_WARMUP ?? 40),
  rounds: Number(env.BENCH_ROUNDS ?? 2),
  connections: (env.BENCH_CONNECTIONS ?? "32,128").split(",").map(Number),
  databases: env.BENCH_ONLY ? env.BENCH_ONLY.split(",") : ["postgres", "pglite"],
  scenarios: env.BENCH_SCENARIOS ? env.BENCH_SCENARIOS.split(",") : null,
  postgresUrl: env.BENCH_POSTGRES_URL ?? env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
  profile: env.BENCH_PROFILE !== "0",
  waitQuietS: Number(env.BENCH_WAIT_QUIET ?? 0),
  profileDurationS: Number(env.BENCH_PROFILE_DURATION ?? Math.max(6, Number(env.BENCH_DURATION ?? 5))),
  profileScenario: env.BENCH_PROFILE_SCENARIO ?? "rest-task",
  /** BENCH_AGAINST_ENV="NAME=value,...": the A/B baseline's environment over the service's (a setting against itself). */
  againstEnv: Object.fromEntries(
    (env.BENCH_AGAINST_ENV ?? "")
      .split(",")
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
  ),
  // A/B mode: another build of the service (e.g. a copy of an earlier dist/) takes the floor's place.
  against: env.BENCH_AGAINST ? path.resolve(env.BENCH_AGAINST) : null,
  // The peer (PostGraphile) and the framework ceiling run beside service and floor on PostgreSQL;
  // off by default in A/B mode, where only the two builds matter. BENCH_PEER=0 / 1 decides.
  peer: env.BENCH_PEER ? env.BENCH_PEER !== "0" : !env.BENCH_AGAINST,
  // The price of each per-request step (bench/guards.mjs), on PostgreSQL after the scenarios: on
  // unless BENCH_GUARDS=0 (and in A/B mode); a list of step ids prices only those.
  guards: env.BENCH_GUARDS ? env.BENCH_GUARDS !== "0" : !env.BENCH_AGAINST,
  guardSteps: env.BENCH_GUARDS && !["0", "1"].includes(env.BENCH_GUARDS) ? env.BENCH_GUARDS.split(",") : null,
  // In process (app.fetch, one request at a time, fine-grained rotation: robust on a busy machine),
  // or over HTTP (two processes under load at once).
  guardsMode: env.BENCH_GUARDS_MODE === "http" ? "http" : "inprocess",
  guardRounds: Number(env.BENCH_GUARD_ROUNDS ?? 5),
  guardDurationS: Number(env.BENCH_GUARD_DURATION ?? 2),
  guardBlocks: Number(env.BENCH_GUARD_BLOCKS ?? 60),
  guardRequests: Number(env.BENCH_GUARD_REQUESTS ?? 10),
};
for (const id of settings.guardSteps ?? []) {
  if (!GUARD_STEPS.some((s) => s.id === id)) {
    console.error(`BENCH_GUARDS: unknown step ${id} (known: ${GUARD_STEPS.map((s) => s.id).join(", ")})`);
    process.exit(2);
  }
}
/** Peer and framework ceiling are measured at this connection count only (the targets' one). */
export const PEER_CONNECTIONS = 32;

/** A run counts when the machine's other processes used at most this many cores meanwhile (issue 46, item 6). */
export const QUIET_CORES = Number(process.env.BENCH_QUIET_CORES ?? 0.1);

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const log = (line) => process.stdout.write(`${line}\n`);

export const median = (xs) => {
  const v = xs.filter((x) => typeof x === "number" && !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};

export const num = (x, digits = 0) => (x === null || x === undefined || Number.isNaN(x) ? "-" : x.toFixed(digits));
export const ratioPct = (x) => (x === null || x === undefined ? "-" : `${(100 * x).toFixed(0)}%`);
export const ratioX = (x) => (x === null || x === undefined ? "-" : `x${x.toFixed(2)}`);

/**
 * The Node flags `npm start` gives the service, read from the scripts of `dir`'s package.json (this
 * tree's by default; an older revision's start script ran `node <flags> dist/server.js`).
 */
export function startFlagsOf(dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")) {
  const start = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).scripts.start;
  return /\bnode\s+((?:--?\S+\s+)*)(?:dist\/server\.js|scripts\/start\.mjs)/.exec(start)?.[1].split(/\s+/).filter(Boolean) ?? [];
}

/**
 * Where a script run alone writes its reading: `bench/results/<today>-<name>.md`, or `-2`, `-3`...
 * when that file exists. A results file is committed with its reading: a second run the same day
 * adds a file instead of overwriting it.
 */
export function newResultsFile(name) {
  const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "results");
  mkdirSync(dir, { recursive: true });
  const base = path.join(dir, `${new Date().toISOString().slice(0, 10)}-${name}`);
  let file = `${base}.md`;
  for (let n = 2; existsSync(file); n++) file = `${base}-${n}.md`;
  return file;
}
