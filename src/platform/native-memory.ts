import { constants, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { Logger } from "pino";

/** What the process needs of a server: each connection it accepts. */
type Connections = {
  on(event: "connection", listener: (socket: { once(event: "close", listener: () => void): unknown }) => void): unknown;
};

export type NativeMemoryCounts = { trims: number; releasedBytes: number; seconds: number };

/** Whether this process runs on glibc (Linux but not musl), the allocator `malloc_trim` belongs to. */
export function runsOnGlibc(): boolean {
  if (process.platform !== "linux") return false;
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return Boolean(report?.header?.glibcVersionRuntime);
}

/** A wave of closes has settled when no connection closed for this long. */
const QUIET_MS = 3_000;

/** V8's full collection on demand (what `--expose-gc` gives), made once. */
type FullCollection = (options: { type: "major"; execution: "async"; flavor: "last-resort" }) => Promise<void>;
let fullCollection: FullCollection | undefined;
function collectGarbage(): Promise<void> {
  if (!fullCollection) {
    setFlagsFromString("--expose-gc");
    fullCollection = runInNewContext("gc") as FullCollection;
  }
  return fullCollection({ type: "major", execution: "async", flavor: "last-resort" });
}

/**
 * Gives the memory of closed connections back to the system, on glibc.
 *
 * Each HTTP connection costs Node about 7 KB of native memory (the socket's handle, its HTTP
 * parser), allocated with malloc beside everything else. Once thousands of connections close (a
 * replica's 10,000 live streams, when their clients move to another replica), glibc keeps the freed
 * memory for reuse instead of returning it: the replica stayed 20 to 80 MB above its idle RSS for
 * as long as it ran (bench/results/2026-11-26-streams.md). `malloc_trim(0)` returns those pages.
 *
 * Node frees a closed connection's native half when V8 collects its JavaScript half, in a full
 * (major) garbage collection; so the trim runs after the first full collection that follows
 * `afterClosed` closed connections, once, and waits for as many again. Under load V8 collects
 * often enough; a replica that goes quiet after a wave of closes may not collect for minutes, so
 * once no connection has closed for `QUIET_MS`, it asks V8 for that collection itself, in the form
 * V8 uses under memory pressure ("last resort": it also gives V8's own free pages back; with a
 * single ordinary collection, V8 still held 65 to 143 MB of free pages 10 s after 10,000 streams
 * closed). That costs the event loop about a quarter of a second once after such a wave (one to
 * three full collections, 176 to 313 ms, in bench/streams.mjs). The trim takes a few milliseconds
 * (15 ms for 60 MB), counted in `native_memory_trim_seconds_total`.
 *
 * Elsewhere (musl, macOS, Windows) there is no `malloc_trim`: the first wave's collection finds
 * that out and nothing follows. Under jemalloc (LD_PRELOAD) the trim is a no-op, jemalloc returning
 * memory itself, and the collection still gives V8's pages back. `malloc_trim` is called through
 * koffi (a foreign function interface with prebuilt binaries), loaded at the first trim.
 */
export function createNativeMemoryTrim({ afterClosed, logger }: { afterClosed: number; logger: Logger }) {
  let closed = 0;
  let trimming = false;
  let unavailable = afterClosed <= 0;
  let trimFn: Promise<((pad: number) => number) | null> | undefined;
  let observer: PerformanceObserver | undefined;
  let quiet: NodeJS.Timeout | undefined;
  const counts: NativeMemoryCounts = { trims: 0, releasedBytes: 0, seconds: 0 };

  const loadTrim = (): Promise<((pad: number) => number) | null> =>
    (trimFn ??= (async () => {
      if (!runsOnGlibc()) return null;
      const { default: koffi } = await import("koffi");
      return koffi.load("libc.so.6").func("int malloc_trim(size_t pad)") as (pad: number) => number;
    })().catch((error: Error) => {
      logger.warn(
        { err: error },
        "malloc_trim could not be loaded: native memory of closed connections stays with the allocator",
      );
      return null;
    }));

  async function trim(closedConnections: number) {
    const malloc_trim = await loadTrim();
    if (!malloc_trim) {
      unavailable = true;
      clearTimeout(quiet);
      observer?.disconnect();
      return;
    }
    const before = process.memoryUsage.rss();
    const started = performance.now();
    malloc_trim(0);
    const seconds = (performance.now() - started) / 1000;
    const released = Math.max(0, before - process.memoryUsage.rss());
    counts.trims++;
    counts.releasedBytes += released;
    counts.seconds += seconds;
    logger.debug(
      { closedConnections, releasedMb: Math.round(released / 1e5) / 10, ms: Math.round(seconds * 1e4) / 10 },
      "gave the native memory of closed connections back to the system",
    );
  }

  function onFullCollection(entries: PerformanceEntry[]) {
    if (trimming || closed < afterClosed) return;
    const major = entries.some(
      (entry) =>
        (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR,
    );
    if (!major) return;
    const closedConnections = closed;
    closed = 0;
    trimming = true;
    // After the collection's weak callbacks, which free the connections' native halves.
    setImmediate(() => {
      trim(closedConnections)
        .catch((error: Error) => logger.warn({ err: error }, "malloc_trim failed"))
        .finally(() => {
          trimming = false;
        });
    });
  }

  return {
    /** Trims so far, the resident bytes they gave back and the seconds they took (/metrics). */
    counts: counts as Readonly<NativeMemoryCounts>,
    /** Counts the connections the server accepts as they close, and trims after full collections. */
    watch(server: Connections) {
      if (unavailable) return;
      // Past the threshold and quiet: the collection that frees what the trim returns.
      quiet = setTimeout(() => {
        if (!unavailable && !trimming && closed >= afterClosed) void collectGarbage();
      }, QUIET_MS).unref();
      server.on("connection", (socket) => {
        socket.once("close", () => {
          closed++;
          quiet?.refresh();
        });
      });
      observer = new PerformanceObserver((list) => onFullCollection(list.getEntries()));
      observer.observe({ entryTypes: ["gc"] });
    },
    stop() {
      clearTimeout(quiet);
      quiet = undefined;
      observer?.disconnect();
    },
  };
}

export type NativeMemoryTrim = ReturnType<typeof createNativeMemoryTrim>;
