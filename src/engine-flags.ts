import { setFlagsFromString } from "node:v8";

// Prisma's query compiler is WebAssembly. V8's optimizing tier recompiles its hot functions under
// load and keeps that code: 50 to 100 MB of native memory, for no measurable gain in throughput
// (bench/README.md). The baseline tier alone is enough. Must run before Prisma's client loads.
setFlagsFromString("--liftoff-only");
