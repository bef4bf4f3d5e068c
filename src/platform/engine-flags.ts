import { setFlagsFromString } from "node:v8";

// Prisma's query compiler is WebAssembly. V8's optimizing tier recompiles its hot functions under
// load and keeps that code: 50 to 100 MB of native memory, for no measurable gain in throughput
// (bench/results/2026-11-23.md). The baseline tier alone is enough. Set here at run time, it does not keep the
// embedded database's WebAssembly (PGlite) on that tier (measured: 620 to 730 MB RSS at start instead
// of 336), so `npm start` passes the flag on the command line too (docs/performance.md, Process settings).
setFlagsFromString("--liftoff-only");

// V8 lets the old generation grow to up to four times what survived the last full collection
// before it collects again: after a burst the service held 150 MB of garbage (RSS 300 to 390 MB)
// and, idle, never collected it. Growing by half at most keeps RSS near 200 to 230 MB under any
// load of the benchmark, for about 5 % more CPU per request and a longer tail (p99 at 32
// connections 48 -> 65 ms) from the more frequent full collections (bench/results/2026-11-23.md).
setFlagsFromString("--heap-growing-percent=50");

// Node 24's V8 lets the young generation grow to twice what Node 20's did: RSS 213 instead of 168 MB
// at start and 270 to 290 instead of 200 to 210 MB after the benchmark's load. Capping a semi-space
// at Node 20's 16 MB needs the command line (set here, it only applies partly: 290 MB after load),
// so `npm start` passes `--max-semi-space-size=16` and the benchmark starts the service the same way.
