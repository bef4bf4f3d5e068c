// A sampling heap profile of what `run` allocates in this process: every allocation, also those the
// next collection frees (which is most of a request's). For bench/heap-profile.mjs and
// bench/framework-inprocess.mjs (FW_HEAP=1); open the profile in Chrome DevTools > Memory.
import { Session } from "node:inspector/promises";
import path from "node:path";

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

/** The profile's samples, each with its allocating function's frame and its key (function, package or file, line). */
export function samplesOf(profile) {
  const samples = [];
  const walk = (node) => {
    if (node.selfSize > 0) {
      const { url: file, functionName, lineNumber } = node.callFrame;
      const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];
      const key = `${functionName || "(anonymous)"} ${pkg ?? path.basename(file || "native")}:${lineNumber + 1}`;
      samples.push({ file, pkg, key, size: node.selfSize });
    }
    for (const child of node.children ?? []) walk(child);
  };
  walk(profile.head);
  return samples;
}
