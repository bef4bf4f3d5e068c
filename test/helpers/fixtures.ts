import { afterAll } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import type { Permission } from "../../src/auth/permissions.js";
import { createTestApp, type TestApp } from "./test-app.js";

export type Fixture = {
  /** The app on this file's own database (a copy of the migrated one). */
  t: TestApp;
  /** The file's first organization: demo records and an API key holding every scope. */
  org: SeedResult;
  /** A second organization, for tests that must not see or touch the first's data. */
  other: SeedResult;
  /** Every organization asked for, in order (`org` and `other` are the first two). */
  orgs: SeedResult[];
  /** A key of `organization` (default `org`) holding exactly `scopes`. */
  keyWith(scopes: Permission[], organization?: SeedResult, extra?: { expiresInMs?: number }): Promise<string>;
  /**
   * Another app on this file's database, with state of its own (metrics, caches, a
   * device-management client): for a test that counts what the app did or configures it.
   */
  appWith(options?: Omit<AppOptions, "database">): Promise<TestApp>;
};

type AppOptions = NonNullable<Parameters<typeof createTestApp>[0]>;

/**
 * Everything a test file starts from: its app and database, and `organizations` seeded
 * organizations (default 2), each with its records and a full-scope key. Call it at the top of the
 * file (`const { t, org, other } = await openFixture();`); it closes the app after the file.
 * Tests stay independent of each other by working in their organization, or in a new one from
 * `t.seedOrg()`, and never counting rows outside it.
 */
export async function openFixture(options: AppOptions & { organizations?: number } = {}): Promise<Fixture> {
  const { organizations = 2, ...appOptions } = options;
  const t = await createTestApp(appOptions);
  afterAll(() => t.close());
  const orgs: SeedResult[] = [];
  for (let i = 0; i < organizations; i++) orgs.push(await t.seedOrg());
  const org = orgs[0] as SeedResult;
  return {
    t,
    org,
    other: orgs[1] as SeedResult,
    orgs,
    keyWith: async (scopes, organization = org, extra = {}) => (await t.keyWith(organization.organizationId, scopes, extra)).key,
    appWith: (appOptions = {}) => createTestApp({ ...appOptions, database: t.database }),
  };
}
