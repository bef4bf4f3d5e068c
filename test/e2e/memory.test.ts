/**
 * Memory is bounded: 40 concurrent comments of 25 MiB of attachments keep the built server under
 * 1 GB of RSS, each answered 201 or 503 (refused before its body is read), and RSS returns near
 * its idle level within 30 s. Runs on the local PostgreSQL (the embedded database lives in the
 * process and would count its own pages).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SeedResult, seedDemo } from "../../src/admin/seed.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { createPostgresDatabase } from "../helpers/test-app.js";

const root = path.resolve(import.meta.dirname, "../..");
const MiB = 1024 * 1024;

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => {
      socket.end();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}
const postgresUp = await reachable(5432);

/** The built server on `databaseUrl`, once /ready answers. */
async function startServer(databaseUrl: string, port: number) {
  let output = "";
  const child = spawn(process.execPath, ["dist/server.js"], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: "production",
      DATABASE_URL: databaseUrl,
      REDIS_URL: "",
      PORT: String(port),
      LOG_LEVEL: "warn",
    },
  });
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, output: () => output };
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server did not get ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

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

describe.runIf(postgresUp)("memory under concurrent large bodies", () => {
  let server: { child: ChildProcess; output: () => string } | undefined;
  let database: Database;
  let drop: () => Promise<void>;
  let org: SeedResult;
  const port = 21_000 + Math.floor(Math.random() * 20_000);

  beforeAll(async () => {
    execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: root });
    const created = await createPostgresDatabase();
    drop = created.drop;
    server = await startServer(created.url, port);
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

    const deadline = Date.now() + 30_000;
    let now = rssOf(pid);
    while (now > idle + 150 * MiB && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      now = rssOf(pid);
    }
    console.log(`RSS ${Math.round(now / MiB)} MiB after the burst`);
    expect(now).toBeLessThan(idle + 150 * MiB);
  }, 180_000);
});
