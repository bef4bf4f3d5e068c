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

/** The export line of the g-th bulk event, as the INSERT ... SELECT below writes it (test/integration/audit-export-memory.test.ts). */
function bulkLine(organizationId: string, g: number, sequence: number, base: number) {
  return {
    sequence,
    id: `aud_bulk${String(g).padStart(8, "0")}`,
    organizationId,
    action: "task.updated",
    entityType: "task",
    entityId: `tsk_${g % 50}`,
    actorUserId: null,
    actorApiKeyId: "key_bulk",
    data: { changes: { title: { from: `t${g}`, to: `t${g + 1}` } } },
    requestId: `req-${g}`,
    createdAt: new Date(base + g).toISOString(),
  };
}

// Contract section 14: memory stays flat however many events a range holds. Read slowly (a client
// behind a slow link), the export must not run ahead of it: RSS grows by less than 64 MB. What it
// holds: one batch of at most AUDIT_BATCH events (about 0.4 MB of text) at a time, read only when
// the client asked for more, and what the socket's buffers take; the rest of the growth is V8's
// heap headroom. Measured here (2 cores, PostgreSQL): +35 to +40 MB with npm start's flags, at 8
// and 2 MiB/s; +117 MB without --max-semi-space-size=16 (Node 24's young generation grows twice
// as far), which is how a run could pass 64 MB.
describe.runIf(usePostgres)("a slowly read JSONL export of 153,000 audit events", () => {
  const EVENTS = 153_000;
  let server: ServerProcess | undefined;
  let database: Database;
  let drop: () => Promise<void>;
  let org: SeedResult;

  beforeAll(async () => {
    const created = await migratedPostgresDatabase();
    drop = created.drop;
    database = await openDatabase({ kind: "postgres", url: created.url, poolSize: 2 });
    org = await seedDemo(database.db, "Export memory");
    const { chainHash } = await import("../../src/platform/audit-chain.js");
    const head = await database.db.auditChainHead.findUniqueOrThrow({ where: { organizationId: org.organizationId } });
    const base = Date.parse("2026-01-01T00:00:00.000Z");
    const hashes: string[] = [];
    let previous = head.hash;
    for (let g = 1; g <= EVENTS; g++) {
      previous = chainHash(previous, bulkLine(org.organizationId, g, head.sequence + g, base));
      hashes.push(previous);
    }
    await database.db.$executeRawUnsafe(
      `INSERT INTO "AuditEvent" ("id", "organizationId", "actorUserId", "actorApiKeyId", "action", "entityType", "entityId", "data", "requestId", "createdAt", "sequence", "hash")
       SELECT 'aud_bulk' || lpad(g::text, 8, '0'), $1, NULL, 'key_bulk', 'task.updated', 'task', 'tsk_' || (g % 50),
              jsonb_build_object('changes', jsonb_build_object('title', jsonb_build_object('from', 't' || g, 'to', 't' || (g + 1)))),
              'req-' || g, $2::timestamp(3) + g * interval '1 millisecond', $3::int + g, h."hash"
       FROM generate_series(1, ${EVENTS}) g JOIN unnest($4::text[]) WITH ORDINALITY AS h("hash", "n") ON h."n" = g`,
      org.organizationId,
      new Date(base).toISOString(),
      head.sequence,
      hashes,
    );
    await database.db.auditChainHead.update({
      where: { organizationId: org.organizationId },
      data: { sequence: head.sequence + EVENTS, hash: previous },
    });
    // As `npm start` runs it (package.json): the young generation's cap is part of the memory bound.
    server = await startServer(
      { NODE_ENV: "production", DATABASE_URL: created.url, REDIS_URL: "", LOG_LEVEL: "warn" },
      { until: "ready", nodeFlags: ["--max-semi-space-size=16", "--liftoff-only"] },
    );
  }, 180_000);

  afterAll(async () => {
    server?.child.kill("SIGKILL");
    await database?.close();
    await drop?.();
  });

  /** The export read at `bytesPerSecond`, with the server's RSS sampled: its peak, and what arrived. */
  function slowExport(port: number, bytesPerSecond: number, pid: number) {
    return new Promise<{ peak: number; bytes: number; lines: number; last: string }>((resolve, reject) => {
      let peak = 0;
      let bytes = 0;
      let lines = 0;
      let tail = "";
      let last = "";
      const request = httpRequest(
        { host: "127.0.0.1", port, path: "/v1/audit-events/export?format=jsonl", headers: { "x-api-key": org.apiKey } },
        (response) => {
          expect(response.statusCode).toBe(200);
          const started = performance.now();
          response.on("data", (chunk: Buffer) => {
            bytes += chunk.length;
            const text = tail + chunk.toString("latin1");
            const parts = text.split("\n");
            tail = parts.pop() as string;
            lines += parts.length;
            if (parts.length) last = parts[parts.length - 1] as string;
            peak = Math.max(peak, rssOf(pid));
            // Behind the pace: wait until the reader would have taken these bytes.
            const ahead = (bytes / bytesPerSecond) * 1000 - (performance.now() - started);
            if (ahead > 0) {
              response.pause();
              setTimeout(() => response.resume(), ahead);
            }
          });
          response.on("end", () => resolve({ peak: Math.max(peak, rssOf(pid)), bytes, lines, last }));
          response.on("error", reject);
        },
      );
      request.on("error", reject);
      request.end();
    });
  }

  it("holds RSS growth under 64 MB, to its signed checkpoint", async () => {
    const pid = server?.child.pid as number;
    const port = server?.port as number;
    // Warm up (code paths, the pool): a small range, then the idle level.
    const warm = await fetch(`http://127.0.0.1:${port}/v1/audit-events/export?format=jsonl&to=5000`, {
      headers: { "x-api-key": org.apiKey },
    });
    expect(warm.status).toBe(200);
    await warm.arrayBuffer();
    await new Promise((r) => setTimeout(r, 1_000));
    const idle = rssOf(pid);
    const read = await slowExport(port, 8 * MiB, pid);
    const events = await database.db.auditEvent.count({ where: { organizationId: org.organizationId } });
    console.log(
      `export of ${events} events, ${Math.round(read.bytes / MiB)} MiB read at 8 MiB/s: RSS idle ${Math.round(idle / MiB)} MiB, peak ${Math.round(read.peak / MiB)} MiB (+${Math.round((read.peak - idle) / MiB)} MiB)`,
    );
    expect(read.lines).toBe(events + 1);
    expect(JSON.parse(read.last).checkpoint).toMatchObject({ organizationId: org.organizationId });
    expect(read.peak - idle).toBeLessThan(64 * 1000 * 1000);
  }, 180_000);
});
