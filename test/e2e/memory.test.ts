/**
 * Memory is bounded: 40 concurrent comments of 25 MiB of attachments keep the built server under
 * 1 GB of RSS, each answered 201 or 503 (refused before its body is read), and RSS returns near
 * its idle level within 30 s. Runs on the local PostgreSQL (the embedded database lives in the
 * process and would count its own pages).
 */
import { readFileSync } from "node:fs";
import { Agent, type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SeedResult, seedDemo } from "../../src/admin/seed.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import { type ServerProcess, startServer } from "../helpers/server-process.js";
import { migratedPostgresDatabase, usePostgres } from "../helpers/test-app.js";

const MiB = 1024 * 1024;

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;

/** A POST with a body from one shared buffer (the client must not be what runs out of memory). */
function post(port: number, pathname: string, headers: Record<string, string>, body: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: "127.0.0.1", port, path: pathname, method: "POST", headers: { ...headers, "content-length": body.length } },
      (res) => {
        // A refusal may come while the body is still being sent: its status is the answer.
        resolve(res.statusCode ?? 0);
        res.resume();
      },
    );
    req.on("error", () => resolve(-1));
    req.end(body);
  });
}

// `npm run test:postgres` only (vitest.config.ts).
describe.runIf(usePostgres)("memory under concurrent large bodies", () => {
  let server: ServerProcess | undefined;
  let database: Database;
  let drop: () => Promise<void>;
  let org: SeedResult;

  beforeAll(async () => {
    const created = await migratedPostgresDatabase();
    drop = created.drop;
    server = await startServer(
      { NODE_ENV: "production", DATABASE_URL: created.url, REDIS_URL: "", LOG_LEVEL: "warn" },
      // No flags, as before: memory is what this measures, with V8's usual WebAssembly tiers.
      { until: "ready", nodeFlags: [] },
    );
    database = await openDatabase({ kind: "postgres", url: created.url, poolSize: 2 });
    org = await seedDemo(database.db, "Memory");
  }, 120_000);

  afterAll(async () => {
    server?.child.kill("SIGKILL");
    await database?.close();
    await drop?.();
  });

  it("40 concurrent 25 MiB comments: under 1 GB RSS, each 201 or 503, back near idle within 30 s", async () => {
    const pid = server?.child.pid as number;
    const port = server?.port as number;
    const file = (size: number) => Buffer.concat([Buffer.from("%PDF-1.7\n"), Buffer.alloc(size - 9, 0x41)]).toString("base64");
    const body = Buffer.from(
      JSON.stringify({
        content: "evidence",
        entityId: org.taskIds[0],
        entityType: "task",
        userId: org.userIds[0],
        attachments: [
          { fileName: "a.pdf", fileType: "application/pdf", fileData: file(10 * MiB) },
          { fileName: "b.pdf", fileType: "application/pdf", fileData: file(10 * MiB) },
          { fileName: "c.pdf", fileType: "application/pdf", fileData: file(5 * MiB) },
        ],
      }),
    );
    const headers = { "content-type": "application/json", "x-api-key": org.apiKey };
    // Warm up (code paths, pools), then take the idle level.
    expect(await post(port, "/v1/comments", headers, body)).toBe(201);
    await new Promise((r) => setTimeout(r, 2_000));
    const idle = rssOf(pid);

    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssOf(pid));
    }, 50);
    const statuses = await Promise.all(Array.from({ length: 40 }, () => post(port, "/v1/comments", headers, body)));
    clearInterval(sampler);

    const counts: Record<string, number> = {};
    for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
    console.log(`idle ${Math.round(idle / MiB)} MiB, peak ${Math.round(peak / MiB)} MiB, answers ${JSON.stringify(counts)}`);
    expect(peak).toBeLessThan(1024 * MiB);
    for (const status of statuses) expect([201, 503]).toContain(status);
    expect(counts[201] ?? 0).toBeGreaterThan(0);

    // "Near idle": within 256 MiB of it, against a peak 500 MiB or more above it. Alone, RSS gets
    // within 130 to 140 MiB in 15 s; beside the rest of the suite on 2 cores it was 153 and 207 MiB
    // at 30 s.
    const nearIdle = idle + 256 * MiB;
    const deadline = Date.now() + 30_000;
    let now = rssOf(pid);
    while (now > nearIdle && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      now = rssOf(pid);
    }
    console.log(`RSS ${Math.round(now / MiB)} MiB after the burst`);
    expect(now).toBeLessThan(nearIdle);
  }, 180_000);
  it("a caller refused while still sending its body gets the answer, can finish sending, and keeps the connection", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const port = server?.port as number;
    const body = Buffer.alloc(8 * MiB, 0x41);
    try {
      let failed: Error | undefined;
      const request = httpRequest({
        agent,
        host: "127.0.0.1",
        port,
        path: "/graphql",
        method: "POST",
        headers: { "content-type": "application/json", "content-length": body.length },
      });
      request.on("error", (error) => {
        failed = error;
      });
      const answered = new Promise<IncomingMessage>((resolve) => request.once("response", resolve));
      const write = (req: ClientRequest, chunk: Buffer) =>
        new Promise<void>((resolve, reject) => req.write(chunk, (error) => (error ? reject(error) : resolve())));
      // No credential: refused before a byte of the body is read, while most of it is still to come.
      await write(request, body.subarray(0, 64 * 1024));
      const refused = await answered;
      expect(refused.statusCode).toBe(401);
      let text = "";
      for await (const chunk of refused) text += chunk;
      expect(JSON.parse(text).errors[0].extensions.code).toBe("UNAUTHENTICATED");
      // The rest of the body is read and discarded, not met with a reset.
      for (let offset = 64 * 1024; offset < body.length; offset += MiB) await write(request, body.subarray(offset, offset + MiB));
      await new Promise<void>((resolve) => request.end(resolve));
      expect(failed).toBeUndefined();
      // And the same connection serves the next request.
      const next = httpRequest({ agent, host: "127.0.0.1", port, path: "/health" });
      next.end();
      const health = await new Promise<IncomingMessage>((resolve, reject) =>
        next.once("response", resolve).once("error", reject),
      );
      expect(health.statusCode).toBe(200);
      expect(next.reusedSocket).toBe(true);
      health.resume();
    } finally {
      agent.destroy();
    }
  }, 30_000);
});
