import { readFileSync } from "node:fs";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { loadConfig } from "../../src/platform/config.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import type { TransactionLimits } from "../../src/platform/db/transaction-limits.js";
import { createTestApp, migratedPostgresDatabase, type TestApp, usePostgres } from "../helpers/test-app.js";

/** The settings a server gets with no configuration (pool, timeouts, transaction limits). */
const defaults = loadConfig({});
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/**
 * An app on a database of its own, opened as the server opens it: on PostgreSQL with the default
 * pool size and timeouts, unless `overrides` says otherwise.
 */
async function appOn(
  overrides: { poolSize?: number; connectTimeoutMs?: number; statementTimeoutMs?: number; transactions?: TransactionLimits } = {},
) {
  let database: Database;
  let url = "";
  if (usePostgres) {
    const created = await migratedPostgresDatabase();
    url = created.url;
    database = await openDatabase({
      kind: "postgres",
      url,
      poolSize: overrides.poolSize ?? defaults.databasePoolSize,
      connectTimeoutMs: overrides.connectTimeoutMs ?? defaults.databaseConnectTimeoutMs,
      statementTimeoutMs: overrides.statementTimeoutMs ?? defaults.databaseStatementTimeoutMs,
      transactions: overrides.transactions ?? defaults.databaseTransactions,
    });
    cleanups.push(async () => {
      await database.close();
      await created.drop();
    });
  } else {
    const snapshot = inject("pgliteSnapshot");
    database = await openDatabase({
      kind: "embedded",
      loadDataDir: snapshot ? new Blob([readFileSync(snapshot)]) : undefined,
      transactions: overrides.transactions ?? defaults.databaseTransactions,
    });
    cleanups.push(() => database.close());
  }
  const t: TestApp = await createTestApp({ database });
  const org: SeedResult = await t.seedOrg();
  return { t, org, url };
}

async function emptyPolicy(t: TestApp, org: SeedResult) {
  const policy = await t.db.policy.create({
    data: {
      id: `pol_tx_${Math.random().toString(36).slice(2)}`,
      organizationId: org.organizationId,
      name: "Load",
      lastVersionNumber: 0,
    },
  });
  return policy.id;
}

const createVersion = `mutation($id: ID!) { createPolicyVersion(id: $id) { versionId version } }`;

/** `n` concurrent new versions of one policy, alternately over REST and GraphQL, as status and body. */
async function concurrentVersions(t: TestApp, org: SeedResult, policyId: string, n: number) {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      if (i % 2) {
        const res = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: {} });
        return {
          status: res.status,
          code: res.body?.code,
          retryAfter: res.headers.get("retry-after"),
          version: res.body?.version,
        };
      }
      const res = await t.gql(createVersion, { id: policyId }, { key: org.apiKey });
      const error = res.body.errors?.[0];
      return {
        status: error ? (error.extensions.code === "SERVICE_UNAVAILABLE" ? 503 : 500) : 201,
        code: error?.extensions.code,
        retryAfter: error ? "graphql" : null,
        version: res.body.data?.createPolicyVersion?.version,
      };
    }),
  );
}

describe("interactive transactions run with the service's stated limits", () => {
  it("are refused at start when the run limit does not exceed the statement timeout, or the wait is shorter than a connection's", () => {
    expect(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: "5000", DATABASE_TRANSACTION_TIMEOUT_MS: "5000" })).toThrow(
      /DATABASE_TRANSACTION_TIMEOUT_MS \(5000\) must exceed DATABASE_STATEMENT_TIMEOUT_MS/,
    );
    expect(() => loadConfig({ DATABASE_CONNECT_TIMEOUT_MS: "4000", DATABASE_TRANSACTION_WAIT_MS: "3000" })).toThrow(
      /DATABASE_TRANSACTION_WAIT_MS \(3000\) must be at least DATABASE_CONNECT_TIMEOUT_MS/,
    );
    expect(defaults.databaseTransactions.timeoutMs).toBeGreaterThan(defaults.databaseStatementTimeoutMs);
  });

  it("give 50 concurrent new versions of one policy 50 consecutive numbers and no error", async () => {
    const { t, org } = await appOn();
    const policyId = await emptyPolicy(t, org);
    const results = await concurrentVersions(t, org, policyId, 50);
    expect(results.filter((r) => r.status !== 201)).toEqual([]);
    expect(results.map((r) => r.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it("give 100 concurrent new versions only 201s with consecutive numbers or 503s with Retry-After: none lost or duplicated", async () => {
    const { t, org } = await appOn();
    const policyId = await emptyPolicy(t, org);
    const results = await concurrentVersions(t, org, policyId, 100);
    const refused = results.filter((r) => r.status !== 201);
    for (const r of refused)
      expect(r).toMatchObject({ status: 503, code: "SERVICE_UNAVAILABLE", retryAfter: expect.any(String) });
    const numbers = results
      .filter((r) => r.status === 201)
      .map((r) => r.version)
      .sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => i + 1));
    const stored = await t.db.policyVersion.findMany({
      where: { policyId },
      select: { version: true },
      orderBy: { version: "asc" },
    });
    expect(stored.map((v) => v.version)).toEqual(numbers);
    expect((await t.db.policy.findUniqueOrThrow({ where: { id: policyId } })).lastVersionNumber).toBe(numbers.length);
  });

  it.skipIf(!usePostgres)("answer 503 with Retry-After, never 500, to a transaction that cannot start in time", async () => {
    // One connection, held by a long transaction: the next one cannot start within its wait.
    const { t, org } = await appOn({
      poolSize: 1,
      connectTimeoutMs: 10_000,
      transactions: { maxWaitMs: 300, timeoutMs: 15_000 },
    });
    const policyId = await emptyPolicy(t, org);
    // A first request caches the key's verification: the version's transaction is then the request's first use of the database.
    expect((await t.rest("GET", `/v1/policies/${policyId}`, { key: org.apiKey })).status).toBe(200);
    const holding = t.db.$transaction(async (tx) => tx.$executeRaw`SELECT pg_sleep(1.5)`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const rest = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: {} });
    expect(rest.status).toBe(503);
    expect(rest.body.code).toBe("SERVICE_UNAVAILABLE");
    expect(rest.headers.get("retry-after")).toMatch(/^\d+$/);
    const graphql = await t.gql(createVersion, { id: policyId }, { key: org.apiKey });
    expect(graphql.body.errors[0].extensions.code).toBe("SERVICE_UNAVAILABLE");
    await holding;
    expect(await t.db.policyVersion.count({ where: { policyId } })).toBe(0);
  });

  it.skipIf(!usePostgres)("answer 503 with Retry-After, never 500, to a transaction that cannot finish in time", async () => {
    const { t, org, url } = await appOn({ statementTimeoutMs: 1_000, transactions: { maxWaitMs: 3_000, timeoutMs: 1_500 } });
    const policyId = await emptyPolicy(t, org);
    // Another session holds the policy's row: the new version waits for it past its limits.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query(`SELECT 1 FROM "Policy" WHERE "id" = $1 FOR UPDATE`, [policyId]);
      const rest = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: {} });
      expect(rest.status).toBe(503);
      expect(rest.body.code).toBe("SERVICE_UNAVAILABLE");
      expect(rest.headers.get("retry-after")).toMatch(/^\d+$/);
      await other.query("ROLLBACK");
    } finally {
      await other.end();
    }
    expect(await t.db.policyVersion.count({ where: { policyId } })).toBe(0);
    expect((await t.db.policy.findUniqueOrThrow({ where: { id: policyId } })).lastVersionNumber).toBe(0);
  });
});
