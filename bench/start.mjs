// Start-up time (issue 34): from spawning the service to its first answered request, on a
// throwaway PostgreSQL database. Two ways of starting, taking turns run by run:
//   - `npm start`               what an operator runs (the build step, then the server);
//   - `node <flags> dist/server.js`  the bundle alone, with the Node flags of `npm start`.
// For each: spawn to the first 200 of /ready, and to the first 200 of an authenticated
// GET /v1/tasks/{id}. Prints medians with ranges and writes bench/results/<date>-start.md.
// Alone: `npx node bench/start.mjs` (BENCH_START_RUNS, 5 by default); dist/ is built first.
// BENCH_START_AGAINST=<revision> adds both ways of that revision to the same alternation (its
// src/, scripts/, prisma/ and package.json extracted with git archive into .exp/start-<rev>/, with
// this tree's node_modules and generated client): before and after on the same seconds of the machine.
import { execSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { otherCoresDuring, systemBusyMs } from "./cpu.mjs";
import { freePort } from "./free-port.mjs";
import { newResultsFile, QUIET_CORES, startFlagsOf } from "./settings.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const runs = Number(process.env.BENCH_START_RUNS ?? 5);
const postgresUrl =
  process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line) => process.stdout.write(`${line}\n`);

const nodeFlags = startFlagsOf();

function cleanEnv(databaseUrl) {
  const base = { ...process.env };
  for (const name of ["DATABASE_URL", "DATA_DIR", "REDIS_URL", "PORT", "HOST", "NODE_OPTIONS"]) delete base[name];
  return {
    ...base,
    DATABASE_URL: databaseUrl,
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    SEED_DEMO_DATA: "false",
  };
}

/** Spawns `command` in a process group of its own; times spawn to /ready 200 and to the first authenticated 200. */
async function timeStart(command, args, env, probe, cwd = root) {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(command, args, {
    cwd,
    env: { ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  let exited = null;
  const exit = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  exit.then((code) => {
    exited = code;
  });
  const base = `http://127.0.0.1:${port}`;
  const until = async (request) => {
    for (;;) {
      if (exited !== null) throw new Error(`${command} exited (${exited}) during start:\n${stderr}`);
      if (performance.now() - started > 60_000) throw new Error(`${command} did not answer in 60 s`);
      try {
        const response = await fetch(base + request.path, { headers: request.headers });
        await response.arrayBuffer();
        if (response.status === 200) return performance.now() - started;
      } catch {}
      await sleep(5);
    }
  };
  try {
    const readyMs = await until({ path: "/ready" });
    const firstMs = await until(probe);
    return { readyMs, firstMs };
  } finally {
    process.kill(-child.pid, "SIGTERM");
    const timer = setTimeout(() => process.kill(-child.pid, "SIGKILL"), 10_000);
    await exit;
    clearTimeout(timer);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const summary = (xs) => `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`;

/** A revision's tree beside this one (.exp/start-<rev>), built, sharing node_modules and the generated client. */
function checkout(revision) {
  const dir = path.join(root, ".exp", `start-${revision}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execSync(`git archive ${revision} src scripts prisma package.json tsconfig.json | tar -x -C ${dir}`, { cwd: root });
  symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
  if (!existsSync(path.join(dir, "src", "generated")))
    cpSync(path.join(root, "src", "generated"), path.join(dir, "src", "generated"), { recursive: true });
  return dir;
}

export async function benchStart() {
  const against = process.env.BENCH_START_AGAINST ? checkout(process.env.BENCH_START_AGAINST) : null;
  for (const dir of [root, against].filter(Boolean)) {
    const build = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: dir, encoding: "utf8" });
    if (build.status !== 0) throw new Error(`build failed:\n${build.stderr}`);
  }
  const admin = new pg.Client({ connectionString: postgresUrl });
  admin.on("error", () => {});
  await admin.connect();
  const name = `bench_start_${process.pid}_${randomBytes(3).toString("hex")}`;
  await admin.query(`CREATE DATABASE "${name}"`);
  try {
    const url = new URL(postgresUrl);
    url.pathname = `/${name}`;
    const env = cleanEnv(url.toString());
    const seeded = spawnSync("npm", ["run", "--silent", "cli", "--", "seed", "--json"], { cwd: root, env, encoding: "utf8" });
    if (seeded.status !== 0) throw new Error(`seed failed:\n${seeded.stderr}`);
    const seed = JSON.parse(
      seeded.stdout
        .trim()
        .split("\n")
        .findLast((l) => l.startsWith("{")),
    );
    const probe = { path: `/v1/tasks/${seed.taskIds[0]}`, headers: { "x-api-key": seed.apiKey } };
    // The first start applies the migrations (already applied by the seed) and warms the OS cache.
    await timeStart(process.execPath, [...nodeFlags, "dist/server.js"], env, probe);
    const ways = {
      "npm start": () => timeStart("npm", ["start", "--silent"], env, probe),
      "node dist/server.js": () => timeStart(process.execPath, [...nodeFlags, "dist/server.js"], env, probe),
    };
    if (against) {
      const rev = process.env.BENCH_START_AGAINST;
      ways[`npm start (${rev})`] = () => timeStart("npm", ["start", "--silent"], env, probe, against);
      ways[`node dist/server.js (${rev})`] = () =>
        timeStart(process.execPath, [...startFlagsOf(against), "dist/server.js"], env, probe, against);
    }
    const results = Object.fromEntries(Object.keys(ways).map((way) => [way, []]));
    // Issue 46, item 6: the other processes' CPU, measured over 3 s with nothing of ours running
    // (a start's own CPU cannot be told from theirs while it runs).
    const others = await otherCoresDuring(() => new Promise((resolve) => setTimeout(resolve, 3000)));
    const busyBefore = systemBusyMs();
    const wallBefore = performance.now();
    for (let run = 0; run < runs; run++) {
      const order = run % 2 ? Object.keys(ways).reverse() : Object.keys(ways);
      for (const way of order) {
        const r = await ways[way]();
        results[way].push(r);
        log(`  run ${run + 1} ${way}: /ready ${r.readyMs.toFixed(0)} ms, first authenticated 200 ${r.firstMs.toFixed(0)} ms`);
      }
    }
    const busyCores = (systemBusyMs() - busyBefore) / (performance.now() - wallBefore);
    const lines = [
      `| start | spawn to /ready 200 | spawn to first authenticated 200 |`,
      `|---|---:|---:|`,
      ...Object.entries(results).map(
        ([way, rs]) => `| \`${way}\` | ${summary(rs.map((r) => r.readyMs))} | ${summary(rs.map((r) => r.firstMs))} |`,
      ),
    ];
    const quiet =
      others <= QUIET_CORES
        ? `other processes ${others.toFixed(2)} cores before the runs`
        : `NOT COUNTED: other processes used ${others.toFixed(2)} cores before the runs (at most ${QUIET_CORES})`;
    const header = `Node ${process.version}, flags ${nodeFlags.join(" ")}; PostgreSQL; ${runs} runs of each, alternating; median (min-max); machine ${busyCores.toFixed(2)} cores busy on average during the runs (all processes, the starts included); ${quiet}`;
    log(`\n${header}\n${lines.join("\n")}`);
    return { header, lines, results };
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { header, lines } = await benchStart();
  const file = newResultsFile("start");
  writeFileSync(file, `# Start-up time (bench/start.mjs)\n\n${header}\n\n${lines.join("\n")}\n`);
  log(`written to ${path.relative(root, file)}`);
}
