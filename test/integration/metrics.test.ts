import { setTimeout as sleep } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";
import { createTestApp, type TestApp, usePostgres } from "../helpers/test-app.js";

const { t, org, appWith } = await openFixture({ organizations: 1 });

async function scrape(app: Pick<TestApp["app"], "fetch"> = t.app): Promise<string> {
  const res = await app.fetch(new Request("http://test/metrics"));
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return res.text();
}

/** The value of the sample with exactly these labels, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line) ?? /^([a-z_]+) (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const rawLabels = m.length === 4 ? (m[2] as string) : "";
    const parsed = Object.fromEntries([...rawLabels.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    const wanted = Object.entries(labels);
    if (wanted.length === Object.keys(parsed).length && wanted.every(([k, v]) => parsed[k] === v)) return Number(m[m.length - 1]);
  }
  return undefined;
}

describe("GET /metrics", () => {
  it("answers Prometheus text without a credential", async () => {
    const text = await scrape();
    expect(text).toContain("# TYPE http_requests_total counter");
    expect(text).toContain("# TYPE http_request_duration_seconds histogram");
    expect(text).toContain("# TYPE graphql_operations_total counter");
    expect(text).toContain("# TYPE graphql_operation_duration_seconds histogram");
    expect(text).toContain("process_cpu_seconds_total");
  });

  // The counting tests count on an app of their own: other tests' requests (and the operation
  // names they use up) must not reach their counters.
  it("counts REST requests by route pattern and status, never by raw path", async () => {
    const own = await appWith();
    const taskId = org.taskIds[0] as string;
    const before = await scrape(own.app);
    const labels = { method: "GET", route: "/v1/tasks/:taskId", status: "200", transport: "rest" };
    const start = sample(before, "http_requests_total", labels) ?? 0;
    expect((await own.rest("GET", `/v1/tasks/${taskId}`, { key: org.apiKey })).status).toBe(200);
    expect((await own.rest("GET", `/v1/tasks/${taskId}`, { key: org.apiKey })).status).toBe(200);
    expect((await own.rest("GET", "/v1/tasks/tsk_missing", { key: org.apiKey })).status).toBe(404);
    expect((await own.rest("GET", `/v1/tasks/${taskId}`)).status).toBe(401);
    expect((await own.rest("GET", `/v1/no/such/${taskId}`, { key: org.apiKey })).status).toBe(404);

    const text = await scrape(own.app);
    expect(sample(text, "http_requests_total", labels)).toBe(start + 2);
    expect(sample(text, "http_requests_total", { ...labels, status: "404" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "http_requests_total", { ...labels, status: "401" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "http_requests_total", { method: "GET", route: "unmatched", status: "404", transport: "rest" })).toBe(1);
    expect(text).not.toContain(taskId);
    expect(text).not.toContain("tsk_missing");
    const count = sample(text, "http_request_duration_seconds_count", {
      method: "GET",
      route: "/v1/tasks/:taskId",
      transport: "rest",
    });
    expect(count).toBeGreaterThanOrEqual(4);
    expect(
      sample(text, "http_request_duration_seconds_bucket", {
        method: "GET",
        route: "/v1/tasks/:taskId",
        transport: "rest",
        le: "+Inf",
      }),
    ).toBe(count);
  });

  it("counts GraphQL operations on both transports, by type, name and result", async () => {
    const own = await appWith();
    const gql = await own.gql(
      "query TaskTitle($id: ID!) { task(taskId: $id) { title } }",
      { id: org.taskIds[0] },
      { key: org.apiKey },
    );
    expect(gql.status).toBe(200);
    const failed = await own.gql(
      "query TaskTitle($id: ID!) { task(taskId: $id) { title } }",
      { id: "tsk_missing" },
      { key: org.apiKey },
    );
    expect(failed.body.errors[0].extensions.code).toBe("NOT_FOUND");
    const rest = await own.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: "Metrics" } });
    expect(rest.status).toBe(201);

    const text = await scrape(own.app);
    const graphql = { operation_type: "query", operation_name: "TaskTitle", transport: "graphql" };
    expect(sample(text, "graphql_operations_total", { ...graphql, result: "success" })).toBe(1);
    expect(sample(text, "graphql_operations_total", { ...graphql, result: "error" })).toBe(1);
    expect(sample(text, "graphql_operation_duration_seconds_count", graphql)).toBe(2);
    const restLabels = { operation_type: "mutation", operation_name: "createTask", transport: "rest" };
    expect(sample(text, "graphql_operations_total", { ...restLabels, result: "success" })).toBe(1);
    expect(sample(text, "graphql_operation_duration_seconds_count", restLabels)).toBe(1);
    expect(
      sample(text, "http_requests_total", { method: "POST", route: "/graphql", status: "200", transport: "graphql" }),
    ).toBeGreaterThanOrEqual(2);
    expect(sample(text, "http_requests_total", { method: "POST", route: "/v1/tasks", status: "201", transport: "rest" })).toBe(1);
  });

  it("counts a REST delete with the 204 its client gets, not Sofa's 200", async () => {
    const own = await appWith();
    const item = await own.rest("POST", "/v1/task-management", {
      key: org.apiKey,
      body: { title: "Counted delete", entityId: org.vendorIds[0], entityType: "vendor" },
    });
    expect(item.status).toBe(201);
    const deleted = await own.rest("DELETE", `/v1/task-management/${item.body.id}`, { key: org.apiKey });
    expect(deleted.status).toBe(204);
    const text = await scrape(own.app);
    const labels = { method: "DELETE", route: "/v1/task-management/:id", transport: "rest" };
    expect(sample(text, "http_requests_total", { ...labels, status: "204" })).toBe(1);
    expect(sample(text, "http_requests_total", { ...labels, status: "200" })).toBeUndefined();
  });

  it("keeps client-chosen operation names to a bounded set", async () => {
    for (let i = 0; i < 105; i++) {
      const res = await t.gql(`query Op${i} { __typename }`, {}, { key: org.apiKey });
      expect(res.status).toBe(200);
    }
    await t.gql("{ __typename }", {}, { key: org.apiKey });
    const text = await scrape();
    const names = new Set(
      [...text.matchAll(/^graphql_operations_total\{[^}]*operation_name="([^"]*)"[^}]*transport="graphql"/gm)].map((m) => m[1]),
    );
    expect(names.size).toBeLessThanOrEqual(102);
    expect(names).toContain("other");
    expect(names).toContain("anonymous");
  });

  it("collects the process's metrics once per process, whatever number of apps it makes", async () => {
    // prom-client's default metrics start a garbage-collection observer and an event-loop timer
    // that nothing stops: made for each app, every app's stayed, running, in a process that makes
    // many (the tests' workers). Shared, a new app's collections count from the process's start.
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as (options?: { type: "minor"; execution: "sync" }) => void;
    const first = await appWith();
    // The observer hears of collections after the fact, and prom-client counts one a notice.
    for (let i = 0; i < 30; i++) {
      gc({ type: "minor", execution: "sync" });
      await sleep(10);
    }
    await sleep(100);
    const seenByFirst = sample(await scrape(first.app), "nodejs_gc_duration_seconds_count", { kind: "minor" }) ?? 0;
    expect(seenByFirst).toBeGreaterThanOrEqual(10);

    const second = await appWith();
    const seenBySecond = sample(await scrape(second.app), "nodejs_gc_duration_seconds_count", { kind: "minor" }) ?? 0;
    expect(seenBySecond).toBeGreaterThanOrEqual(seenByFirst);
  });

  it("reports the database pool when there is one", async () => {
    const text = await scrape();
    if (usePostgres) expect(sample(text, "db_pool_max_connections", {})).toBe(20);
    else expect(text).not.toContain("db_pool_");

    const pooled = await createTestApp({
      database: { ...t.database, poolStats: () => ({ total: 4, idle: 1, waiting: 2, max: 10 }) },
    });
    const withPool = await scrape(pooled.app);
    expect(sample(withPool, "db_pool_connections", {})).toBe(4);
    expect(sample(withPool, "db_pool_idle_connections", {})).toBe(1);
    expect(sample(withPool, "db_pool_waiting_requests", {})).toBe(2);
    expect(sample(withPool, "db_pool_max_connections", {})).toBe(10);
  });
});
