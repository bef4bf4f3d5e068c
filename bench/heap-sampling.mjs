// A sampling heap profile of what `run` allocates in this process: every allocation, also those the
// next collection frees (which is most of a request's). For bench/heap-profile.mjs and
// bench/framework-inprocess.mjs (FW_HEAP=1); open the profile in Chrome DevTools > Memory.
import { Session } from "node:inspector/promises";

/** `run`'s result and the profile of what it allocated (V8's sampling heap profiler, one sample per 4 KB). */
export async function allocationProfile(run) {
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.enable");
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  try {
    const result = await run();
    const { profile } = await session.post("HeapProfiler.stopSampling");
    return { result, profile };
  } finally {
    session.disconnect();
  }
}
