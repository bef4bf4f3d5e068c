/**
 * Freed native memory of closed connections goes back to the system (src/platform/native-memory.ts):
 * a real HTTP server, real connections, real full collections and glibc's real malloc_trim.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import pino from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { nativeMemoryMetrics } from "../../src/http/metrics.js";
import { createNativeMemoryTrim, type NativeMemoryTrim, runsOnGlibc } from "../../src/platform/native-memory.js";
import { openAndClose as openConnectionsAndClose } from "../helpers/connections.js";

// A full collection on demand, as a replica gets one from V8 once its allocation slows down.
setFlagsFromString("--expose-gc");
const fullCollection = runInNewContext("gc") as () => void;

const logger = pino({ level: "silent" });

/** Connections to the server, one request each, all closed; then the server has seen each close. */
async function openAndClose(server: Server, count: number) {
  await openConnectionsAndClose((server.address() as AddressInfo).port, count);
  await new Promise((r) => setTimeout(r, 200));
}

async function metric(trim: NativeMemoryTrim, name: string): Promise<number> {
  const registry = new Registry();
  nativeMemoryMetrics(registry, trim.counts);
  const text = await registry.metrics();
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
}

async function until(check: () => boolean, ms = 3_000) {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

describe.runIf(runsOnGlibc())("native memory of closed connections", () => {
  let server: Server;
  let trim: NativeMemoryTrim;

  const start = async (afterClosed: number) => {
    // Each request's response stays open until its client closes it, as a live stream does.
    server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(":\n\n");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    trim = createNativeMemoryTrim({ afterClosed, logger });
    trim.watch(server);
  };

  afterEach(async () => {
    trim?.stop();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("is given back at the first full collection after AFTER_CLOSED connections closed, once", async () => {
    await start(100);
    await openAndClose(server, 150);
    fullCollection();
    await until(() => trim.counts.trims > 0);
    expect(trim.counts.trims).toBe(1);
    expect(await metric(trim, "native_memory_trims_total")).toBe(1);
    expect(await metric(trim, "native_memory_trim_seconds_total")).toBeGreaterThan(0);
    expect(await metric(trim, "native_memory_trim_released_bytes_total")).toBeGreaterThanOrEqual(0);

    // Nothing closed since: the next collections trim nothing.
    fullCollection();
    await new Promise((r) => setTimeout(r, 200));
    expect(trim.counts.trims).toBe(1);

    // As many closed again: one more.
    await openAndClose(server, 100);
    fullCollection();
    await until(() => trim.counts.trims > 1);
    expect(trim.counts.trims).toBe(2);
  });

  it("asks V8 for the full collection itself once no connection closed for 3 s", async () => {
    await start(100);
    await openAndClose(server, 150);
    const closedAt = Date.now();
    await until(() => trim.counts.trims > 0, 10_000);
    expect(trim.counts.trims).toBe(1);
    // V8's own memory reducer would collect about 8 s after the allocation stopped, if at all.
    expect(Date.now() - closedAt).toBeLessThan(6_000);
  });

  it.each([
    { what: "fewer than AFTER_CLOSED connections closed", afterClosed: 100, connections: 60 },
    { what: "NATIVE_MEMORY_TRIM_AFTER_CLOSED=0", afterClosed: 0, connections: 30 },
  ])("trims nothing with $what", async ({ afterClosed, connections }) => {
    await start(afterClosed);
    await openAndClose(server, connections);
    fullCollection();
    await new Promise((r) => setTimeout(r, 300));
    expect(trim.counts.trims).toBe(0);
  });
});
