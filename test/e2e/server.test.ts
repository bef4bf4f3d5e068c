import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runsOnGlibc } from "../../src/platform/native-memory.js";
import { openAndClose } from "../helpers/connections.js";
import { type ServerProcess, startServer as start } from "../helpers/server-process.js";

let dataDir: string;

// NATIVE_MEMORY_TRIM_AFTER_CLOSED: a few connections are enough to see the trim (below).
const startServer = (until: "listening" | "spawned" = "spawned") =>
  start({ DATA_DIR: dataDir, DATABASE_URL: "", LOG_LEVEL: "info", NATIVE_MEMORY_TRIM_AFTER_CLOSED: "50" }, { until });

describe("the server process (npm start)", () => {
  let server: ServerProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), "gateway-e2e-"));
    server = await startServer("listening");
  });
  afterAll(() => {
    server?.child.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("creates demo data on first start and prints a working API key and the GraphiQL URL", async () => {
    const out = server.output();
    // PORT=0: the banner names the port the OS chose.
    expect(out).toContain(`GraphiQL:     ${server.url}/graphql`);
    const key = /API key:\s+(cwk_\S+)/.exec(out)?.[1];
    const taskUrl = /(http:\/\/127\.0\.0\.1:\d+\/v1\/tasks\/tsk_\w+)/.exec(out)?.[1];
    expect(key).toBeDefined();
    const res = await fetch(taskUrl as string, { headers: { "x-api-key": key as string } });
    expect(res.status).toBe(200);
    expect((await res.json()).id).toMatch(/^tsk_/);
    const graphiql = await fetch(`${server.url}/graphql`, { headers: { accept: "text/html" } });
    expect(graphiql.status).toBe(200);
    expect(await graphiql.text()).toContain("X-API-Key");
  });

  it("adopts SOC 2 in the demo organization with controls behind it, so its readiness says something", async () => {
    const out = server.output();
    const key = /API key:\s+(cwk_\S+)/.exec(out)?.[1] as string;
    const frameworkUrl = /its readiness: (http:\/\/127\.0\.0\.1:\d+\/v1\/frameworks\/fw_\w+)/.exec(out)?.[1];
    expect(frameworkUrl, out).toBeDefined();
    const framework = await (await fetch(frameworkUrl as string, { headers: { "x-api-key": key } })).json();
    expect(framework).toMatchObject({
      key: "soc2-tsc-2017",
      adopted: true,
      readiness: { notApplicable: 5, ready: 4, notReady: 4, partial: 0 },
    });
    expect(framework.readiness.unmapped).toBe(framework.readiness.assessable - 13);
    const controls = await (await fetch(`${server.url}/v1/controls?sort=code`, { headers: { "x-api-key": key } })).json();
    expect(controls.items.map((c: { code: string; status: { state: string } }) => [c.code, c.status.state])).toEqual([
      ["AC-01", "not_ready"],
      ["CR-01", "not_ready"],
      ["HR-01", "ready"],
      ["IR-01", "ready"],
    ]);
    // Made through the services: each step is in the organization's audit trail.
    const audit = await (
      await fetch(`${server.url}/v1/audit-events?entityType=control&limit=100`, { headers: { "x-api-key": key } })
    ).json();
    const actions = new Set(audit.items.map((e: { action: string }) => e.action));
    for (const action of ["control.created", "control.mapped", "control.linked"]) expect(actions, action).toContain(action);
  });

  // src/platform/native-memory.ts: once NATIVE_MEMORY_TRIM_AFTER_CLOSED connections closed and no
  // more closed for 3 s, a full collection and one malloc_trim follow, counted in /metrics.
  it.runIf(runsOnGlibc())(
    "gives the native memory of closed connections back: one trim after 50 closed and 3 s without a close",
    async () => {
      const trims = async () =>
        Number(/^native_memory_trims_total (\S+)$/m.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1]);
      expect(await trims()).toBe(0);
      await openAndClose(server.port, 80, "/ready");
      // The polls share one kept-alive connection (fetch's pool): they close nothing, so the quiet comes.
      await server.waitFor(async () => (await trims()) > 0, "a trim", 20_000);
      expect(await trims()).toBe(1);
    },
  );

  it("keeps an idle keep-alive connection open past Node's 5 s (KEEP_ALIVE_TIMEOUT_MS): reused after 6 s, it answers", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status?: number; keepAlive?: string; reused: boolean }>((resolve, reject) => {
        const request = http.get(`${server.url}/ready`, { agent }, (response) => {
          response.resume();
          response.on("end", () =>
            resolve({
              status: response.statusCode,
              keepAlive: String(response.headers["keep-alive"]),
              reused: request.reusedSocket,
            }),
          );
        });
        request.on("error", reject);
      });
    try {
      const first = await get();
      expect(first).toMatchObject({ status: 200, keepAlive: "timeout=65", reused: false });
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      // Node's default would have closed it at 5 s: "socket hang up" or a new connection.
      expect(await get()).toMatchObject({ status: 200, reused: true });
    } finally {
      agent.destroy();
    }
  }, 20_000);

  it("stops a second process on the same data directory with a clear message", async () => {
    const second = await startServer();
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`The embedded database in ${dataDir} is in use by process ${server.child.pid}`);
  });

  it("exits 0 on SIGTERM and reopens the same data without seeding again", async () => {
    server.child.kill("SIGTERM");
    expect(await server.exited, server.output()).toBe(0);
    expect(server.output()).not.toContain("PUBLIC_URL is not set");
    const again = await startServer("listening");
    expect(again.output()).not.toContain("Demo data created");
    again.child.kill("SIGTERM");
    expect(await again.exited, again.output()).toBe(0);
  });

  it("warns once, in its log format, when started in production without PUBLIC_URL", async () => {
    const production = await start(
      { DATA_DIR: dataDir, DATABASE_URL: "", LOG_LEVEL: "info", NODE_ENV: "production", PUBLIC_URL: "" },
      { until: "listening" },
    );
    production.child.kill("SIGTERM");
    expect(await production.exited, production.output()).toBe(0);
    const warnings = production
      .output()
      .split("\n")
      .filter((line) => line.includes("PUBLIC_URL is not set"))
      .map((line) => JSON.parse(line));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, service: "compliance-gateway", setting: "PUBLIC_URL" });
    expect(warnings[0].msg).toContain("Host header");
  });
});
