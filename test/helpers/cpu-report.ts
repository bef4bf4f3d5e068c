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

/**
 * From /proc/self/stat (Linux), read once: the CPU of waited-for children (cutime + cstime, in
 * clock ticks of 10 ms) and the minor page faults of this process and of its waited-for children
 * (minflt, cminflt). Field n of proc(5) is index n - 3 after the command's name.
 */
function counters(): { childrenMs: number; faults: number; childrenFaults: number } {
  const fields = (readFileSync("/proc/self/stat", "utf8").split(") ")[1] ?? "").split(" ").map(Number);
  return {
    childrenMs: ((fields[13] ?? 0) + (fields[14] ?? 0)) * 10,
    faults: fields[7] ?? 0,
    childrenFaults: fields[8] ?? 0,
  };
}

const start = process.cpuUsage();
const startCounters = counters();
const startWall = performance.now();

afterAll(() => {
  const used = process.cpuUsage(start);
  const now = counters();
  // With --expose-gc (`npx vitest run --execArgv=--expose-gc`): the heap below is what the worker
  // keeps, not what awaits collection. After the CPU is read, so the collection is not the file's.
  (globalThis as { gc?: () => void }).gc?.();
  const line = {
    file: expect.getState().testPath,
    cpuMs: Math.round((used.user + used.system) / 1000),
    childrenMs: now.childrenMs - startCounters.childrenMs,
    wallMs: Math.round(performance.now() - startWall),
    worker: process.pid,
    // A first touch of memory is a page fault; on some virtual machines each costs tens of µs.
    faults: now.faults - startCounters.faults,
    childrenFaults: now.childrenFaults - startCounters.childrenFaults,
    // What the worker still holds after the file (isolate: false keeps the worker for the next).
    heapUsedMb: Math.round(process.memoryUsage().heapUsed / 1_048_576),
  };
  appendFileSync(report, `${JSON.stringify(line)}\n`);
});
