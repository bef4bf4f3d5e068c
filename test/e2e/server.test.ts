import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
let dataDir: string;

type Started = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

function startServer(port: number): Started {
  let output = "";
  const child = spawn(process.execPath, ["dist/server.js"], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: "", LOG_LEVEL: "info" },
  });
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  return { child, output: () => output, exited };
}

async function waitFor(check: () => boolean, what: string, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the server process (npm start)", () => {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  let server: Started;

  beforeAll(async () => {
    execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: root });
    dataDir = mkdtempSync(path.join(tmpdir(), "gateway-e2e-"));
    server = startServer(port);
    await waitFor(() => server.output().includes('"msg":"listening"'), "the server to listen");
  });
  afterAll(() => {
    server?.child.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("creates demo data on first start and prints a working API key and the GraphiQL URL", async () => {
    const out = server.output();
    expect(out).toContain(`GraphiQL:     http://127.0.0.1:${port}/graphql`);
    const key = /API key:\s+(cwk_\S+)/.exec(out)?.[1];
    const taskUrl = /(http:\/\/127\.0\.0\.1:\d+\/v1\/tasks\/tsk_\w+)/.exec(out)?.[1];
    expect(key).toBeDefined();
    const res = await fetch(taskUrl as string, { headers: { "x-api-key": key as string } });
    expect(res.status).toBe(200);
    expect((await res.json()).id).toMatch(/^tsk_/);
    const graphiql = await fetch(`http://127.0.0.1:${port}/graphql`, { headers: { accept: "text/html" } });
    expect(graphiql.status).toBe(200);
    expect(await graphiql.text()).toContain("X-API-Key");
  });

  it("stops a second process on the same data directory with a clear message", async () => {
    const second = startServer(port + 1);
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`The embedded database in ${dataDir} is in use by process ${server.child.pid}`);
  });

  it("exits 0 on SIGTERM and reopens the same data without seeding again", async () => {
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    const again = startServer(port + 2);
    await waitFor(() => again.output().includes('"msg":"listening"'), "the restarted server");
    expect(again.output()).not.toContain("Demo data created");
    again.child.kill("SIGTERM");
    expect(await again.exited).toBe(0);
  });
});
