import { appendFileSync, readFileSync } from "node:fs";
import { afterAll, expect } from "vitest";

/**
 * With TEST_CPU_REPORT=<file> (vitest.config.ts), each test file appends one JSON line to <file>:
 * the CPU its worker spent on it (import, set-up and tests), the CPU of the child processes it
 * started and waited for (servers, the CLI, tsc), and its wall time. The suite's time is bounded
 * by its CPU on two cores, so this is where to look before making a file faster
 * (how to read it: test/TIMINGS.md); `node test/helpers/cpu-report-summary.mjs <file>` sorts it.
 */
const report = process.env.TEST_CPU_REPORT as string;

/** CPU of waited-for children, from /proc (Linux): cutime + cstime, in clock ticks of 10 ms. */
function childrenMs(): number {
  const fields = (readFileSync("/proc/self/stat", "utf8").split(") ")[1] ?? "").split(" ");
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

const start = process.cpuUsage();
const startChildren = childrenMs();
const startWall = performance.now();

afterAll(() => {
  const used = process.cpuUsage(start);
  const line = {
    file: expect.getState().testPath,
    cpuMs: Math.round((used.user + used.system) / 1000),
    childrenMs: childrenMs() - startChildren,
    wallMs: Math.round(performance.now() - startWall),
    worker: process.pid,
  };
  appendFileSync(report, `${JSON.stringify(line)}\n`);
});
