import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";
import { LongestFirst } from "./test/helpers/sequencer.js";

// `npm run test:postgres` runs again on PostgreSQL only what can differ between the databases: the
// files whose outcome depends on SQL (queries, transactions, concurrency, migrations, tenancy).
// These do not: they run once, on the embedded database, or start servers of their own.
const sameOnEveryDatabase = [
  "test/unit/**",
  "test/fuzz/**",
  "test/codegen/**",
  "test/cli/**",
  // Apollo Client and urql against the app: what they see is the graph's shape, not the database's.
  "test/clients/**",
  "test/e2e/**",
  // The request pipeline and the documents it serves, the same code whatever answers behind it.
  "test/integration/browser-event-streams.test.ts",
  "test/integration/cors-vary.test.ts",
  "test/integration/credential-attacks.test.ts",
  "test/integration/docs.test.ts",
  // The docs' examples: what a page shows, on the same code whatever database answers.
  "test/integration/docs-examples.test.ts",
  "test/integration/error-safety-net.test.ts",
  "test/integration/etag.test.ts",
  // An embedded database migrated by the test's own process, whatever TEST_DATABASE says.
  "test/integration/fresh-embedded.test.ts",
  "test/integration/graphiql-examples.test.ts",
  "test/integration/graphql-limits.test.ts",
  "test/integration/hostile-callers.test.ts",
  "test/integration/input-bounds.test.ts",
  "test/integration/metrics.test.ts",
  "test/integration/openapi.test.ts",
  "test/integration/permissions.test.ts",
  "test/integration/rate-limit.test.ts",
  "test/integration/request-id.test.ts",
  "test/integration/rest-shapes.test.ts",
  "test/integration/rest-surface.test.ts",
  "test/integration/schema-contracts.test.ts",
  "test/integration/subscriptions.test.ts",
  "test/integration/tracing.test.ts",
];
const onPostgres = process.env.TEST_DATABASE === "postgres";
// `npm test` needs no PostgreSQL server: the end-to-end files about the service on PostgreSQL run in
// `npm run test:postgres` only. Those whose every test needs it (replicas behind HAProxy or PgBouncer,
// PostgreSQL's outages, replicas sharing a database or a queue, a write load killed) are left out
// of `npm test`; those with a part on each database run in both, each run its own part
// (`describe.skipIf(usePostgres)` / `describe.runIf(usePostgres)` in the file). So each test still
// runs once in CI, and `npm test` runs the same tests whether or not a PostgreSQL server answers.
const postgresOnlyE2e = [
  "faults",
  "haproxy",
  "idempotency-crash",
  "memory",
  "pgbouncer",
  "replicas",
  "webhooks",
  "write-crash",
].map((name) => `test/e2e/${name}.test.ts`);
const bothDatabases = ["test/e2e/crash.test.ts", "test/e2e/notification-mail.test.ts", "test/cli/cli.test.ts"];
const onPostgresRun = [...postgresOnlyE2e, ...bothDatabases];
for (const path of [...sameOnEveryDatabase, ...onPostgresRun]) {
  if (!path.endsWith("**") && !existsSync(path)) throw new Error(`vitest.config.ts names ${path}, which does not exist`);
}
// The PostgreSQL run leaves out what is the same on every database, except the files above.
const exceptOnPostgresRun = (path: string) => {
  if (!path.endsWith("/**")) return path;
  const dir = path.slice(0, -2);
  const names = onPostgresRun.filter((file) => file.startsWith(dir)).map((file) => file.slice(dir.length, -".test.ts".length));
  return names.length ? `${dir}!(${names.join("|")}).test.ts` : path;
};

export default defineConfig({
  resolve: {
    // One copy of graphql: otherwise errors from the other copy fail `instanceof` and are masked as 500s.
    alias: [{ find: /^graphql$/, replacement: "graphql/index.js" }],
  },
  test: {
    // The PostgreSQL run is a project of its own name, so that vitest keeps each run's durations
    // apart (the sequencer orders files by them): a file whose every test is skipped on the
    // embedded database took ~0 s there and would otherwise start last on PostgreSQL.
    ...(onPostgres ? { name: "postgres" } : {}),
    include: ["test/**/*.test.ts"],
    exclude: onPostgres
      ? [...configDefaults.exclude, ...sameOnEveryDatabase.map(exceptOnPostgresRun)]
      : [...configDefaults.exclude, ...postgresOnlyE2e],
    // Every embedded database the tests open (in the workers, and in the servers and CLI processes
    // they start, which inherit it) with 16MB of shared buffers instead of 128MB: PostgreSQL
    // zero-fills them at every start, and the suite starts a few hundred. On a machine whose page
    // faults are dear (2026-11-28: 13 µs each), a start cost 1.46 s of CPU with 128MB, 0.72 s with
    // 16MB. The tests' databases hold a few MB; EMBEDDED_SHARED_BUFFERS set outside still wins.
    env: { EMBEDDED_SHARED_BUFFERS: process.env.EMBEDDED_SHARED_BUFFERS ?? "16MB" },
    // Migrates once for the run; createTestApp() gives each file a copy.
    globalSetup: ["test/helpers/global-setup.ts"],
    // TEST_CPU_REPORT=<file>: each file's CPU, its child processes' and its wall time (test/TIMINGS.md).
    setupFiles: process.env.TEST_CPU_REPORT ? ["test/helpers/cpu-report.ts"] : [],
    pool: "forks",
    // Vitest's default is one worker fewer than there are cores: one worker on a 2-core machine.
    // One more worker than cores: files wait on their servers (shutdown's drains, server's idle
    // keep-alive, S3 URLs expiring, mail retries), and a third worker runs other files meanwhile
    // (2 cores, warm, alternated, 2026-12-02: 161 and 156 s with two, 131 and 136 s with three, the
    // same CPU). The PostgreSQL run, with most of the e2e files (HAProxy's idle connections,
    // PostgreSQL's outages, PgBouncer's replica lag: waits), two more (2 cores: 134 -> 123 s, the
    // same CPU).
    maxWorkers: availableParallelism() + (onPostgres ? 2 : 1),
    // A worker keeps the modules it loaded from one test file to the next instead of importing the
    // app again for every file (measured: less than half the CPU). Each file still gets its own
    // app and database from createTestApp(); module-level state of src/ must stay per app.
    isolate: false,
    // The longest files first (vitest's timings of the last run, else estimates): see the sequencer.
    sequence: { sequencer: LongestFirst },
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
