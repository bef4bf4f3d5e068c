// Each test file run alone (`npx vitest run <file>`), one after the other: its wall time, the CPU
// of vitest and every process it waited for (user + system), and its tests, as a table sorted by
// CPU. Issue 45's target is any one file alone within 20 s, end-to-end files (test/e2e/) excepted:
// a file over 20 s of wall or CPU is flagged.
//
//   node scripts/file-times.mjs [--no-e2e] [--only-e2e] [--json=FILE] [paths or folders...]
//   TEST_DATABASE=postgres node scripts/file-times.mjs ...   (on PostgreSQL: the files that run there)
//
// CPU is read from this process's children's times in /proc/self/stat (cutime + cstime): what the
// run's processes used and were waited for. Processes that detach (PostgreSQL clusters started by
// pg_ctl, PgBouncer) and the local PostgreSQL server are not in it. Give the machine's load with
// any wall time (test/TIMINGS.md); the load average is printed before and after.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";

const LIMIT_S = 20;
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const jsonOut = args.find((arg) => arg.startsWith("--json="))?.slice("--json=".length);
const paths = args.filter((arg) => !arg.startsWith("--"));

function testFiles(entry) {
  if (statSync(entry).isFile()) return [entry];
  return readdirSync(entry, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? testFiles(path.join(entry, d.name)) : d.name.endsWith(".test.ts") ? [path.join(entry, d.name)] : [],
  );
}

const isE2e = (file) => file.split(path.sep).includes("e2e");
let files = (paths.length ? paths : ["test"]).flatMap(testFiles).sort();
if (flag("--no-e2e")) files = files.filter((file) => !isE2e(file));
if (flag("--only-e2e")) files = files.filter(isE2e);

const ticks = 100; // USER_HZ on Linux
function childrenCpu() {
  // Fields after the command's closing parenthesis: state is field 3, cutime and cstime 16 and 17.
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[13]) + Number(fields[14])) / ticks;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const dir = mkdtempSync(path.join(tmpdir(), "file-times-"));
const rows = [];
console.log(`${files.length} files, ${process.env.TEST_DATABASE === "postgres" ? "PostgreSQL" : "embedded"}; load ${load()}`);

// QUIET_FILE=<path>: on a shared machine, no file starts while that file exists (someone measures).
const quiet = process.env.QUIET_FILE;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

for (const file of files) {
  while (quiet && existsSync(quiet)) await sleep(20_000);
  const report = path.join(dir, "report.json");
  const cpuBefore = childrenCpu();
  const started = performance.now();
  const code = await new Promise((resolve) => {
    const child = spawn("npx", ["vitest", "run", file, "--reporter=json", `--outputFile=${report}`], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr = (stderr + chunk).slice(-2_000);
    });
    child.on("close", (status) => {
      if (status !== 0) process.stderr.write(`${file}: exit ${status}\n${stderr}\n`);
      resolve(status);
    });
  });
  const wall = (performance.now() - started) / 1000;
  const cpu = childrenCpu() - cpuBefore;
  let counts = { passed: 0, failed: 0, skipped: 0 };
  try {
    const result = JSON.parse(readFileSync(report, "utf8"));
    counts = {
      passed: result.numPassedTests,
      failed: result.numFailedTests,
      skipped: result.numPendingTests + result.numTodoTests,
    };
    rmSync(report);
  } catch {
    // No report: the run failed before writing one; the exit code says so.
  }
  const row = { file, wall, cpu, code, ...counts, load: loadavg()[0] };
  rows.push(row);
  console.log(
    `${wall.toFixed(1).padStart(6)} s wall ${cpu.toFixed(1).padStart(6)} s CPU  ${file}  (${counts.passed} passed, ${counts.skipped} skipped${counts.failed ? `, ${counts.failed} FAILED` : ""}; load ${row.load.toFixed(2)})`,
  );
}
rmSync(dir, { recursive: true, force: true });

const over = (row) => !isE2e(row.file) && (row.wall > LIMIT_S || row.cpu > LIMIT_S);
const table = [
  "|  wall s |   CPU s | passed | skipped | failed | file |",
  "| ------: | ------: | -----: | ------: | -----: | ---- |",
  ...[...rows]
    .sort((a, b) => b.cpu - a.cpu)
    .map(
      (r) =>
        `| ${r.wall.toFixed(1).padStart(7)} | ${r.cpu.toFixed(1).padStart(7)} | ${String(r.passed).padStart(6)} | ${String(r.skipped).padStart(7)} | ${String(r.failed).padStart(6)} | ${r.file}${over(r) ? ` **over ${LIMIT_S} s**` : ""}${isE2e(r.file) ? " (e2e)" : ""} |`,
    ),
];
console.log(`\n${table.join("\n")}\n`);
const flagged = rows.filter(over);
console.log(
  flagged.length
    ? `Non-e2e files over ${LIMIT_S} s (wall or CPU): ${flagged.map((r) => r.file).join(", ")}`
    : `No non-e2e file over ${LIMIT_S} s.`,
);
console.log(`Load average at the end: ${load()}`);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(rows, null, 2));
process.exitCode = rows.some((r) => r.code !== 0) ? 1 : 0;
