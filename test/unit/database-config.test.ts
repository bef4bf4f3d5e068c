import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/platform/config.js";
import { statementNames } from "../../src/platform/db/prepared-statements.js";
import { timeoutMismatches } from "../../src/platform/db/session-defaults.js";

const primary = "postgres://app@pgbouncer.internal:6432/app";

describe("EMBEDDED_SHARED_BUFFERS", () => {
  it("takes a size in PostgreSQL's units from 128kB to 1GB, and refuses anything else at start", () => {
    for (const size of ["128kB", "16MB", "1GB", "1024MB"])
      expect(() => loadConfig({ EMBEDDED_SHARED_BUFFERS: size })).not.toThrow();
    for (const size of ["16 MB", "16mb", "16", "64kB", "2GB", "0MB", "-1MB", "16MB;fsync=off"]) {
      expect(() => loadConfig({ EMBEDDED_SHARED_BUFFERS: size })).toThrow(/EMBEDDED_SHARED_BUFFERS/);
    }
  });
});

describe("PgBouncer and read-replica configuration", () => {
  it("reads the direct URL, the replicas (comma-separated, spaces trimmed) and the lag bound", () => {
    const config = loadConfig({
      DATABASE_URL: primary,
      DATABASE_DIRECT_URL: "postgres://app@db.internal:5432/app",
      DATABASE_READ_URLS: " postgres://app@pgbouncer.internal:6432/app_r1, postgresql://app@r2.internal/app ,",
      DATABASE_READ_MAX_LAG_MS: "2500",
    });
    expect(config.databaseDirectUrl).toBe("postgres://app@db.internal:5432/app");
    expect(config.databaseReadUrls).toEqual([
      "postgres://app@pgbouncer.internal:6432/app_r1",
      "postgresql://app@r2.internal/app",
    ]);
    expect(config.databaseReadMaxLagMs).toBe(2500);
  });

  it("bounds lock waits by the statement timeout unless told otherwise, and idle transactions by 10 s", () => {
    expect(loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: "4000" })).toMatchObject({
      databaseLockTimeoutMs: 4000,
      databaseIdleInTransactionTimeoutMs: 10_000,
      databaseReadUrls: [],
    });
    expect(loadConfig({ DATABASE_LOCK_TIMEOUT_MS: "700" }).databaseLockTimeoutMs).toBe(700);
  });

  it("closes pooled connections idle for 10 s unless told another time (0: never), and refuses a negative one", () => {
    expect(loadConfig({}).databasePoolIdleTimeoutMs).toBe(10_000);
    expect(loadConfig({ DATABASE_POOL_IDLE_TIMEOUT_MS: "300000" }).databasePoolIdleTimeoutMs).toBe(300_000);
    expect(loadConfig({ DATABASE_POOL_IDLE_TIMEOUT_MS: "0" }).databasePoolIdleTimeoutMs).toBe(0);
    expect(() => loadConfig({ DATABASE_POOL_IDLE_TIMEOUT_MS: "-1" })).toThrow(/DATABASE_POOL_IDLE_TIMEOUT_MS/);
  });

  it("refuses a direct or replica URL without DATABASE_URL, and a replica that is not PostgreSQL", () => {
    expect(() => loadConfig({ DATABASE_DIRECT_URL: primary })).toThrow(/set DATABASE_URL too/);
    expect(() => loadConfig({ DATABASE_READ_URLS: primary })).toThrow(/set DATABASE_URL too/);
    expect(() => loadConfig({ DATABASE_URL: primary, DATABASE_READ_URLS: "mysql://r1/app" })).toThrow(/DATABASE_READ_URLS/);
  });

  it("prepares statements on a direct connection, not through a pooler unless told so", () => {
    expect(loadConfig({ DATABASE_URL: primary }).databasePreparedStatements).toBe(true);
    expect(
      loadConfig({ DATABASE_URL: primary, DATABASE_DIRECT_URL: "postgres://app@db.internal:5432/app" })
        .databasePreparedStatements,
    ).toBe(false);
    expect(
      loadConfig({
        DATABASE_URL: primary,
        DATABASE_DIRECT_URL: "postgres://app@db.internal:5432/app",
        DATABASE_PREPARED_STATEMENTS: "true",
      }).databasePreparedStatements,
    ).toBe(true);
    expect(loadConfig({ DATABASE_URL: primary, DATABASE_PREPARED_STATEMENTS: "false" }).databasePreparedStatements).toBe(false);
    expect(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: "yes" })).toThrow(/DATABASE_PREPARED_STATEMENTS/);
  });

  it("names a statement by its text, the same name each time, and stops naming new texts at the limit", () => {
    const name = statementNames(2);
    const first = name({ sql: "SELECT 1" });
    expect(first).toMatch(/^prisma_[0-9a-f]{24}$/);
    expect(name({ sql: "SELECT 1" })).toBe(first);
    expect(statementNames(2)({ sql: "SELECT 1" })).toBe(first);
    const second = name({ sql: "SELECT 2" });
    expect(second).not.toBe(first);
    expect(name({ sql: "SELECT 3" })).toBeUndefined();
    expect(name({ sql: "SELECT 2" })).toBe(second);
  });

  it("names each timeout a connection does not have", () => {
    const configured = { statementTimeoutMs: 5000, lockTimeoutMs: 5000, idleInTransactionTimeoutMs: 10_000 };
    expect(timeoutMismatches(configured, configured)).toEqual([]);
    expect(timeoutMismatches(configured, { ...configured, statementTimeoutMs: 0 })).toEqual([
      "statement_timeout: in force 0 ms, configured 5000 ms",
    ]);
  });
});
