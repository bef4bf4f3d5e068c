import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, randomPort, type ServerProcess, startServer as start } from "../helpers/server-process.js";

let dataDir: string;

const startServer = (port: number, until: "listening" | "spawned" = "spawned") =>
  start({ DATA_DIR: dataDir, DATABASE_URL: "", LOG_LEVEL: "info" }, { port, until });

describe("the server process (npm start)", () => {
  const port = randomPort();
  let server: ServerProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), "gateway-e2e-"));
    server = await startServer(port, "listening");
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
    const second = await startServer(await freePort());
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`The embedded database in ${dataDir} is in use by process ${server.child.pid}`);
  });

  it("exits 0 on SIGTERM and reopens the same data without seeding again", async () => {
    server.child.kill("SIGTERM");
    expect(await server.exited, server.output()).toBe(0);
    const again = await startServer(port + 2, "listening");
    expect(again.output()).not.toContain("Demo data created");
    again.child.kill("SIGTERM");
    expect(await again.exited, again.output()).toBe(0);
  });
});
