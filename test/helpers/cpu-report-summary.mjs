// Summarizes a TEST_CPU_REPORT file (test/helpers/cpu-report.ts): totals, each worker's busy and
// wall time, and the files by CPU (their own and their child processes').
import { readFileSync } from "node:fs";
import path from "node:path";

const file = process.argv[2];
if (!file) {
  console.error("usage: node test/helpers/cpu-report-summary.mjs <TEST_CPU_REPORT file> [rows]");
  process.exit(2);
}
const rows = readFileSync(file, "utf8")
  .trim()
  .split("\n")
  .map((line) => JSON.parse(line));
const s = (ms) => (ms / 1000).toFixed(1);
const total = (r) => r.cpuMs + r.childrenMs;
const sum = (list, f) => list.reduce((n, r) => n + f(r), 0);
console.log(
  `${rows.length} files: ${s(sum(rows, total))} s of CPU (${s(sum(rows, (r) => r.cpuMs))} in workers, ${s(sum(rows, (r) => r.childrenMs))} in child processes)`,
);
for (const worker of new Set(rows.map((r) => r.worker))) {
  const own = rows.filter((r) => r.worker === worker);
  console.log(`worker ${worker}: ${own.length} files, ${s(sum(own, (r) => r.wallMs))} s wall, ${s(sum(own, total))} s CPU`);
}
console.log("\n     CPU  children   wall  file");
for (const r of rows.sort((a, b) => total(b) - total(a)).slice(0, Number(process.argv[3] ?? 25))) {
  console.log(
    `${s(r.cpuMs).padStart(8)}${s(r.childrenMs).padStart(10)}${s(r.wallMs).padStart(7)}  ${path.relative(process.cwd(), r.file)}`,
  );
}
