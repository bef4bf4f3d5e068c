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

/** /proc/self/stat's fields after the command's name (Linux): field n of proc(5) is index n - 3. */
function stat(): number[] {
  return (readFileSync("/proc/self/stat", "utf8").split(") ")[1] ?? "").split(" ").map(Number);
}
/** CPU of waited-for children: cutime + cstime, in clock ticks of 10 ms. */
const childrenMs = () => ((stat()[13] ?? 0) + (stat()[14] ?? 0)) * 10;
/** Minor page faults of this process and of its waited-for children (minflt, cminflt). */
const faults = () => ({ own: stat()[7] ?? 0, children: stat()[8] ?? 0 });

const start = process.cpuUsage();
const startChildren = childrenMs();
const startWall = performance.now();
const startFaults = faults();

afterAll(() => {
  // With --expose-gc (TEST_CPU_REPORT_GC=1 in vitest.config.ts): what the worker keeps, not what awaits collection.
  (globalThis as { gc?: () => void }).gc?.();
  const used = process.cpuUsage(start);
  const line = {
    file: expect.getState().testPath,
    cpuMs: Math.round((used.user + used.system) / 1000),
    childrenMs: childrenMs() - startChildren,
    wallMs: Math.round(performance.now() - startWall),
    worker: process.pid,
    // A first touch of memory is a page fault; on some virtual machines each costs tens of µs.
    faults: faults().own - startFaults.own,
    childrenFaults: faults().children - startFaults.children,
    // What the worker still holds after the file (isolate: false keeps the worker for the next).
    heapUsedMb: Math.round(process.memoryUsage().heapUsed / 1_048_576),
  };
  appendFileSync(report, `${JSON.stringify(line)}\n`);
});
