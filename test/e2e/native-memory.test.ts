/**
 * The built server gives the native memory of closed connections back to the system
 * (src/platform/native-memory.ts): once NATIVE_MEMORY_TRIM_AFTER_CLOSED connections closed and no
 * more closed for 3 s, a full collection and one malloc_trim follow, counted in /metrics.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServer } from "../helpers/server-process.js";

const glibc = Boolean(
  (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime,
);

const trims = async (url: string) =>
  Number(/^native_memory_trims_total (\S+)$/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1]);

/** `count` connections, each with one request answered, then all closed. */
async function openAndClose(port: number, count: number) {
  const requests = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<{ destroy(): void }>((resolve, reject) => {
          const req = request({ host: "127.0.0.1", port, path: "/ready", agent: false }, (res) => {
            res.resume();
            res.once("end", () => resolve(req));
          });
          req.on("error", reject);
          req.end();
        }),
    ),
  );
  for (const req of requests) req.destroy();
}

describe.runIf(process.platform === "linux" && glibc)("native memory of closed connections (built server)", () => {
  let dir: string;
  let server: ServerProcess;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "gateway-native-memory-"));
    server = await startServer(
      { DATA_DIR: path.join(dir, "data"), DATABASE_URL: "", LOG_LEVEL: "warn", NATIVE_MEMORY_TRIM_AFTER_CLOSED: "50" },
      { until: "ready" },
    );
  }, 60_000);

  afterAll(() => {
    server?.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("trims once after 50 connections closed and 3 s without a close", async () => {
    expect(await trims(server.url)).toBe(0);
    await openAndClose(server.port, 80);
    // The polls share one kept-alive connection (fetch's pool): they close nothing, so the quiet comes.
    const deadline = Date.now() + 20_000;
    while ((await trims(server.url)) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await trims(server.url), server.output()).toBe(1);
  }, 30_000);
});
