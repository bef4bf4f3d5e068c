import { GraphQLError } from "graphql";
import pg from "pg";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { Prisma } from "../../src/generated/prisma/client.js";
import { maskError } from "../../src/http/error-masking.js";
import { isDatabaseUnavailable } from "../../src/platform/db/unavailable.js";
import { createTestApp } from "../helpers/test-app.js";

/** Lines a logger wrote, parsed. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe("errors outside any GraphQL execution", () => {
  it("answers a failing credential lookup in our envelope with X-Request-Id, a log line and a metric, never a stack", async () => {
    const { logger, lines } = capture();
    const t = await createTestApp({ logger, ownDatabase: true });
    const org = await t.seedOrg();
    // The REST guard looks the key up before Sofa runs; a closed database makes that lookup throw.
    await t.database.close();
    const response = await t.app.fetch(
      new Request(`http://test/v1/tasks/${org.taskIds[0]}`, { headers: { "x-api-key": org.apiKey, "x-request-id": "net-1" } }),
    );
    // PGlite throws an unexpected error there (500); PostgreSQL's closed pool reads as a database
    // that cannot answer (503). Either way: our envelope, the request id, a log line, a metric.
    const unavailable = response.status === 503;
    const [status, phrase, message, code] = unavailable
      ? [503, "Service Unavailable", expect.any(String), "SERVICE_UNAVAILABLE"]
      : [500, "Internal Server Error", "Internal server error", "INTERNAL_SERVER_ERROR"];
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(response.headers.get("x-request-id")).toBe("net-1");
    const text = await response.text();
    expect(text).not.toMatch(/\n\s+at |\.(ts|js):\d+/);
    expect(JSON.parse(text)).toEqual({ statusCode: status, error: phrase, message, code });
    const logged = unavailable ? "database unavailable" : "unexpected error";
    expect(lines.some((l) => l.msg === logged && l.requestId === "net-1")).toBe(true);
    expect(lines.some((l) => l.msg === "request" && l.requestId === "net-1" && l.status === status)).toBe(true);
    const metrics = await (await t.app.fetch(new Request("http://test/metrics"))).text();
    expect(metrics).toContain(
      `http_requests_total{method="GET",route="/v1/tasks/:taskId",status="${status}",transport="rest"} 1`,
    );
  });
});

describe(isDatabaseUnavailable.name, () => {
  // Shapes observed from Prisma 7 with @prisma/adapter-pg against a PostgreSQL 15 that was stopped,
  // frozen or restarting, and from pg directly.
  it.each([
    ["refused (Prisma P1001)", { code: "P1001", meta: { driverAdapterError: { cause: { kind: "DatabaseNotReachable" } } } }],
    [
      "refused in a raw query (P2010)",
      { code: "P2010", meta: { driverAdapterError: { cause: { kind: "DatabaseNotReachable" } } } },
    ],
    [
      "statement timeout",
      { code: "P2010", meta: { driverAdapterError: { cause: { originalCode: "57014", kind: "postgres" } } } },
    ],
    ["admin shutdown", { code: "P2010", meta: { driverAdapterError: { cause: { originalCode: "57P01", kind: "postgres" } } } }],
    ["starting up", { code: "57P03", message: "the database system is starting up", severity: "FATAL" }],
    ["read-only standby", { code: "P2010", meta: { driverAdapterError: { cause: { originalCode: "25006" } } } }],
    ["pool connect timeout", new Error("Connection terminated due to connection timeout")],
    ["client connect timeout", new Error("timeout expired")],
    ["frozen mid-query", new Error("Query read timeout")],
    ["socket refused", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
  ])("recognizes %s", (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ["unique violation", { code: "P2002", meta: { driverAdapterError: { cause: { originalCode: "23505" } } } }],
    ["bad input", { code: "P2010", meta: { driverAdapterError: { cause: { originalCode: "22P02" } } } }],
    ["a defect", new TypeError("Cannot read properties of undefined")],
  ])("does not take %s for an outage", (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});

describe("a unique violation", () => {
  // Raised by Prisma's adapter (P2002) or by the pool itself (a statement of writeText): both are a 409.
  it.each([
    [
      "through Prisma's adapter",
      new Prisma.PrismaClientKnownRequestError("Unique constraint failed", { code: "P2002", clientVersion: "7" }),
    ],
    [
      "from the pool directly",
      Object.assign(new pg.DatabaseError("duplicate key value violates unique constraint", 0, "error"), { code: "23505" }),
    ],
  ])("%s is CONFLICT, not a masked 500", (_, original) => {
    const masked = maskError(
      new GraphQLError("write failed", { originalError: original, path: ["createComment"] }),
    ) as GraphQLError;
    expect(masked.extensions?.code).toBe("CONFLICT");
    expect(masked.message).toBe("A record with the same unique values already exists");
  });
});
