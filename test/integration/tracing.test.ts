import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createApp } from "../../src/app.js";
import { startTracing } from "../../src/http/tracing.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

let t: TestApp;
let org: SeedResult;
let collector: Server;
const received: string[] = [];

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
  collector = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      received.push(`${req.method} ${req.url} ${body}`);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  await t.close();
  await new Promise((resolve) => collector.close(resolve));
});

describe("OpenTelemetry tracing", () => {
  it("exports a span per request and per GraphQL execution, on both transports, to the OTLP endpoint", async () => {
    const { port } = collector.address() as AddressInfo;
    const tracing = await startTracing(`http://127.0.0.1:${port}`);
    const app = createApp({
      database: t.database,
      config: { production: false, bodyLimitBytes: 1 << 20 },
      logger: pino({ level: "silent" }),
      tracer: tracing.tracer,
    });
    const rest = await app.fetch(new Request(`http://test/v1/tasks/${org.taskIds[0]}`, { headers: { "x-api-key": org.apiKey } }));
    expect(rest.status).toBe(200);
    const gql = await app.fetch(
      new Request("http://test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": org.apiKey },
        body: JSON.stringify({
          query: "query GetTask($id: ID!) { task(taskId: $id) { id } }",
          variables: { id: org.taskIds[0] },
        }),
      }),
    );
    expect(gql.status).toBe(200);
    await tracing.flush();
    await tracing.shutdown();
    const exported = received.join("\n");
    expect(exported).toContain("POST /v1/traces");
    for (const name of ["GET /v1", "POST /graphql", "graphql.query GetTask", "graphql.query task"])
      expect(exported).toContain(name);
    expect(exported).toContain("compliance-gateway");

    // Each execution span is a child of its own request's span.
    type OtlpSpan = { name: string; spanId: string; parentSpanId?: string; traceId: string };
    const spans: OtlpSpan[] = received.flatMap((line) => {
      const json = JSON.parse(line.slice(line.indexOf("{"))) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      return json.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    });
    const parentOf = (name: string) => {
      const child = spans.find((s) => s.name === name);
      return spans.find((s) => s.spanId === child?.parentSpanId && s.traceId === child?.traceId)?.name;
    };
    expect(parentOf("graphql.query GetTask")).toBe("POST /graphql");
    expect(parentOf("graphql.query task_query")).toBe("GET /v1");
  });
});
