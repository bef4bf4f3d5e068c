import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDataDir } from "../helpers/data-dir.js";
import { reachable, type ServerProcess, startServer, testNodeFlags } from "../helpers/server-process.js";

type Answer = { status: number; body: { id?: string } | string };

/**
 * A POST whose body is sent in two halves: the server has accepted it and is reading it when the
 * first half arrives, so it is certainly in flight until `finish()` sends the rest.
 */
function slowPost(port: number, pathname: string, headers: Record<string, string>, body: string) {
  const half = Math.floor(body.length / 2);
  const req = httpRequest({
    host: "127.0.0.1",
    port,
    path: pathname,
    method: "POST",
    headers: { ...headers, "content-length": Buffer.byteLength(body) },
  });
  const answer = new Promise<Answer>((resolve) => {
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on("error", (error) => resolve({ status: 0, body: error.message }));
  });
  req.write(body.slice(0, half));
  return { answer, finish: () => req.end(body.slice(half)) };
}

type DemoServer = ServerProcess & { key: string };

/**
 * The built server on an embedded database in `dataDir` (a copy of the migrated one: no
 * organization yet, so it seeds the demo data), once it listens; its demo API key from that first start.
 */
async function startDemoServer(dataDir: string, env: Record<string, string> = {}): Promise<DemoServer> {
  const server = await startServer(
    { DATA_DIR: dataDir, DATABASE_URL: "", REDIS_URL: "", LOG_LEVEL: "info", ...env },
    { until: "spawned" },
  );
  try {
    await server.waitFor(() => /API key:\s+cwk_/.test(server.output()), "the demo API key");
    await server.listening();
  } catch (error) {
    server.child.kill("SIGKILL");
    throw error;
  }
  const key = /API key:\s+(cwk_\S+)/.exec(server.output())?.[1] as string;
  return { ...server, key };
}

describe("graceful shutdown", () => {
  let dataDir: string;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    dataDir = freshDataDir("gateway-shutdown-");
  });
  afterAll(() => {
    child?.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("answers every request in flight when SIGTERM arrives during a burst of writes, then exits 0", async () => {
    const server = await startDemoServer(dataDir);
    child = server.child;
    const { port, key, exited, output } = server;
    const headers = { "x-api-key": key, "content-type": "application/json" };

    // One write certainly in flight, and a burst of others racing the signal.
    const slow = slowPost(
      port,
      "/v1/tasks",
      headers,
      JSON.stringify({ title: "finished after the signal", description: "x".repeat(4096) }),
    );
    const burst = Array.from({ length: 40 }, (_, i) =>
      fetch(`http://127.0.0.1:${port}/v1/tasks`, { method: "POST", headers, body: JSON.stringify({ title: `burst ${i}` }) }).then(
        async (r): Promise<Answer> => ({ status: r.status, body: await r.json() }),
        (error: Error & { cause?: { code?: string } }): Answer => ({ status: 0, body: error.cause?.code ?? error.message }),
      ),
    );
    await new Promise((r) => setTimeout(r, 100));
    server.child.kill("SIGTERM");
    while (!output().includes('"msg":"shutting down"')) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100));
    slow.finish();

    const finished = await slow.answer;
    expect(finished.status).toBe(201);
    const answers = await Promise.all(burst);
    // A request is either answered, or was never read: refused once the server stopped listening,
    // or reset while it still waited in the kernel's accept queue or unread on an idle connection
    // (what closing a listening socket does). Below: none of those was written, so a retry is safe.
    expect(answers.filter((a) => a.status !== 201 && a.body !== "ECONNREFUSED" && a.body !== "ECONNRESET")).toEqual([]);
    expect(await exited).toBe(0);
    // The slow write was answered after the server began to shut down.
    expect(output().lastIndexOf('"path":"/v1/tasks","status":201')).toBeGreaterThan(output().indexOf('"msg":"shutting down"'));
    expect(output()).toContain('"msg":"stopped"');

    // Everything acknowledged is there after a restart.
    const acknowledged = [finished, ...answers].filter((a) => a.status === 201).map((a) => (a.body as { id: string }).id);
    // A port of its own, the OS's choice: the one after the first server's may be any process's by now.
    const restarted = await startServer({ DATA_DIR: dataDir, DATABASE_URL: "", LOG_LEVEL: "warn" }, { until: "spawned" });
    const again = restarted.child;
    const againPort = await restarted.bound();
    try {
      const start = Date.now();
      let listed: { items: { id: string }[] } | null = null;
      while (!listed && Date.now() - start < 30_000) {
        listed = await fetch(`http://127.0.0.1:${againPort}/v1/tasks?limit=100`, { headers: { "x-api-key": key } }).then(
          (r) => (r.ok ? r.json() : null),
          () => null,
        );
        if (!listed) await new Promise((r) => setTimeout(r, 100));
      }
      const ids = new Set(listed?.items.map((t) => t.id));
      expect(acknowledged.filter((id) => !ids.has(id))).toEqual([]);
      // Nothing was written without an answer: the stored burst tasks are exactly the acknowledged ones.
      const written = (listed?.items ?? []).filter((t) => /^burst \d+$/.test((t as { title?: string }).title ?? ""));
      expect(written.map((t) => t.id).sort()).toEqual(
        answers
          .filter((a) => a.status === 201)
          .map((a) => (a.body as { id: string }).id)
          .sort(),
      );
    } finally {
      again.kill("SIGKILL");
    }
  });

  it("keeps serving for SHUTDOWN_DELAY_MS with /ready at 503, then closes and exits 0", async () => {
    const delayDir = freshDataDir("gateway-shutdown-delay-");
    let server: DemoServer | undefined;
    try {
      server = await startDemoServer(delayDir, { SHUTDOWN_DELAY_MS: "1500" });
      const { child: delayed, port, key, exited, output } = server;
      const base = `http://127.0.0.1:${port}`;
      expect((await fetch(`${base}/ready`)).status).toBe(200);

      const signalled = Date.now();
      delayed.kill("SIGTERM");
      while (!output().includes('"msg":"shutting down"')) await new Promise((r) => setTimeout(r, 20));
      // During the delay: not ready, yet a new connection is still accepted and served.
      expect((await fetch(`${base}/ready`)).status).toBe(503);
      const created = await fetch(`${base}/v1/tasks`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ title: "during the delay" }),
      });
      expect(created.status).toBe(201);
      expect(created.headers.get("connection")).toBe("close");

      expect(await exited).toBe(0);
      expect(Date.now() - signalled).toBeGreaterThanOrEqual(1500);
      expect(output()).toContain('"msg":"stopped"');
    } finally {
      server?.child.kill("SIGKILL");
      rmSync(delayDir, { recursive: true, force: true });
    }
  });
});

describe("shutdown that always ends", () => {
  const faultyClose = fileURLToPath(new URL("../helpers/faulty-close.mjs", import.meta.url));

  /** A server whose database close fails or hangs (test/helpers/faulty-close.mjs), once it listens. */
  async function faultyServer(fault: "fail" | "hang", env: Record<string, string>) {
    const dataDir = freshDataDir(`gateway-shutdown-${fault}-`);
    const server = await startServer(
      { DATA_DIR: dataDir, DATABASE_URL: "", REDIS_URL: "", LOG_LEVEL: "info", FAULTY_DATABASE_CLOSE: fault, ...env },
      { nodeFlags: [...testNodeFlags, "--import", faultyClose] },
    );
    return { ...server, cleanup: () => rmSync(dataDir, { recursive: true, force: true }) };
  }

  const logLines = (output: string) =>
    output
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it("runs every step after a failing one, and exits 1 with a log line naming the step that failed", async () => {
    const redis = await reachable(6379);
    const server = await faultyServer(
      "fail",
      redis ? { REDIS_URL: "redis://127.0.0.1:6379", REDIS_KEY_PREFIX: `shutdown-${process.pid}:` } : {},
    );
    try {
      const signalled = Date.now();
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(1);
      // Well before the 25 s deadline: a failed step does not wait for it.
      expect(Date.now() - signalled).toBeLessThan(20_000);
      const lines = logLines(server.output());
      const failures = lines.filter((line) => line.msg === "shutdown step failed: close the database");
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatchObject({
        level: 50,
        step: "close the database",
        err: { message: "injected: the database failed to close" },
      });
      const stopped = lines.find((line) => line.msg === "stopped");
      expect(stopped).toMatchObject({
        exitCode: 1,
        steps: {
          "close the listener and finish requests in flight": "done",
          "dispose the GraphQL server": "done",
          "close the database": "failed",
          "close Redis": "done",
          "stop tracing": "done",
        },
      });
      expect(lines.filter((line) => String(line.msg).startsWith("shutdown step failed"))).toHaveLength(1);
    } finally {
      server.child.kill("SIGKILL");
      server.cleanup();
    }
  });

  it("exits 1 at SHUTDOWN_TIMEOUT_MS when a close hangs, counted from the signal", async () => {
    const server = await faultyServer("hang", {
      SHUTDOWN_TIMEOUT_MS: "4000",
      SHUTDOWN_DELAY_MS: "1000",
      SHUTDOWN_GRACE_MS: "1000",
    });
    try {
      const signalled = Date.now();
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(1);
      const took = Date.now() - signalled;
      expect(took).toBeGreaterThanOrEqual(4_000);
      // Far above what a loaded machine needs past the deadline: without it the process never exits.
      expect(took).toBeLessThan(30_000);
      const deadline = logLines(server.output()).find((line) => String(line.msg).startsWith("shutdown did not finish"));
      expect(deadline).toMatchObject({ level: 60, step: "close the database", timeoutMs: 4000 });
      expect(server.output()).not.toContain('"msg":"stopped"');
    } finally {
      server.child.kill("SIGKILL");
      server.cleanup();
    }
  });

  it("refuses at start a delay and grace that do not fit within SHUTDOWN_TIMEOUT_MS", async () => {
    const dataDir = freshDataDir("gateway-shutdown-config-");
    try {
      const server = await startServer(
        { DATA_DIR: dataDir, DATABASE_URL: "", SHUTDOWN_DELAY_MS: "20000", SHUTDOWN_GRACE_MS: "10000" },
        { until: "spawned" },
      );
      expect(await server.exited).toBe(1);
      expect(server.output()).toMatch(
        /SHUTDOWN_DELAY_MS \(20000\) \+ SHUTDOWN_GRACE_MS \(10000\) must be less than SHUTDOWN_TIMEOUT_MS \(25000\)/,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
