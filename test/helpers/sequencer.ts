import { createHash } from "node:crypto";
import path from "node:path";
// Types only: importing vitest/node from the config costs every run about 1 s of CPU.
import type { TestSequencer, TestSpecification, Vitest } from "vitest/node";

/**
 * Seconds a file took in a whole run on the 2-core machine, for the files over 5 s: each file's
 * wall time from import to its last test (TEST_CPU_REPORT, 2026-11-28, third session), on the
 * embedded database, and on PostgreSQL for the files only `npm run test:postgres` runs. Used for a
 * file that vitest has no timing of (every file in a fresh clone, as CI runs; a new file): vitest
 * would otherwise start the largest files first, and some of the longest are small (the e2e
 * files, codegen), so they started last and the run waited on them alone. The PostgreSQL-only
 * files have no timing even after `npm test` has run: haproxy (80 s) without its estimate started
 * last in CI's PostgreSQL run, which waited 48 s on it alone. Only the order matters, not the values.
 */
const estimates: Record<string, number> = {
  "test/e2e/haproxy.test.ts": 80, // PostgreSQL only
  // 2026-12-03: the files this round grew or added, scaled from their CPU (test/results/2026-12-03.md).
  "test/integration/isolation-matrix.test.ts": 65,
  "test/integration/permissions.test.ts": 45,
  "test/integration/connections.test.ts": 30,
  "test/integration/attachments.test.ts": 30,
  "test/integration/attachment-downloads.test.ts": 20,
  "test/e2e/evidence-request-page.test.ts": 20, // chromium, started by the test
  "test/integration/differential.test.ts": 20,
  "test/integration/controls.test.ts": 15,
  "test/cli/frameworks.test.ts": 10,
  "test/integration/mutation-payloads.test.ts": 10,
  "test/e2e/notification-mail.test.ts": 63,
  "test/e2e/faults.test.ts": 55, // PostgreSQL only
  "test/integration/audit-export-memory.test.ts": 49,
  "test/cli/cli.test.ts": 49,
  "test/e2e/server.test.ts": 48,
  "test/fuzz/graphql-mutations.fuzz.test.ts": 47,
  "test/cli/attachments.test.ts": 46,
  "test/e2e/shutdown.test.ts": 46,
  "test/e2e/pgbouncer.test.ts": 45, // PostgreSQL only
  "test/e2e/crash.test.ts": 31,
  "test/integration/live-streams.test.ts": 29,
  "test/integration/attachment-stores.test.ts": 28,
  "test/integration/webhooks.test.ts": 27,
  "test/e2e/memory.test.ts": 26, // PostgreSQL only
  "test/fuzz/rest-writes.fuzz.test.ts": 25,
  "test/integration/list-plans.test.ts": 25, // PostgreSQL only
  "test/e2e/write-crash.test.ts": 21, // PostgreSQL only
  "test/integration/notification-mail.test.ts": 19,
  "test/e2e/webhooks.test.ts": 17, // PostgreSQL only
  "test/integration/migrations.test.ts": 17,
  "test/fuzz/graphql-queries.fuzz.test.ts": 16,
  "test/fuzz/rest-reads.fuzz.test.ts": 16,
  "test/codegen/codegen.test.ts": 16,
  "test/unit/layers.test.ts": 14,
  "test/e2e/replicas.test.ts": 13, // PostgreSQL only
  "test/integration/schema-contracts.test.ts": 11,
  "test/e2e/idempotency-crash.test.ts": 11, // PostgreSQL only
  "test/integration/attachment-jobs.test.ts": 11,
  "test/integration/database.test.ts": 11,
  "test/integration/transaction-limits.test.ts": 11,
  "test/integration/hostile-callers.test.ts": 10,
  "test/clients/trusted-documents.test.ts": 10,
  "test/integration/docs-examples.test.ts": 8,
  "test/cli/documents.test.ts": 8,
  "test/integration/native-memory.test.ts": 7,
  "test/integration/comments.test.ts": 7,
  "test/integration/audit-chain.test.ts": 7,
  "test/integration/fresh-embedded.test.ts": 6,
  "test/unit/build-freshness.test.ts": 6,
  "test/integration/notifications-inbox.test.ts": 5,
};

/**
 * Longest first, so that the last files to finish are short ones: vitest's own duration of each
 * file from its last run when it has one, else the estimate above, else 0 (then the larger file
 * first, as vitest does). Files that failed last time still go first. `--sequence.shuffle` still
 * shuffles the files (seeded by --sequence.seed, as vitest's own random order is).
 */
export class LongestFirst implements TestSequencer {
  constructor(private readonly ctx: Vitest) {}

  /** `--shard=i/n`, as vitest's own sequencer splits: by a hash of each file's path. */
  async shard(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { root, shard } = this.ctx.config;
    if (!shard) return files;
    const hashOf = (spec: TestSpecification) => createHash("sha1").update(path.relative(root, spec.moduleId)).digest("hex");
    const sorted = [...files].sort((a, b) => (hashOf(a) < hashOf(b) ? -1 : 1));
    const size = Math.floor(sorted.length / shard.count);
    const extra = sorted.length % shard.count;
    const start = (shard.index - 1) * size + Math.min(shard.index - 1, extra);
    return sorted.slice(start, start + size + (shard.index <= extra ? 1 : 0));
  }

  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { config } = this.ctx;
    if (config.sequence.shuffle) return shuffled(files, config.sequence.seed ?? Date.now());
    const cache = this.ctx.cache;
    const facts = new Map(
      files.map((spec) => {
        const relative = path.relative(config.root, spec.moduleId).split(path.sep).join("/");
        const key = `${spec.project.name}:${relative}`;
        const result = cache.getFileTestResults(key);
        return [
          spec,
          {
            failed: result?.failed ?? false,
            duration: result?.duration ?? (estimates[relative] ?? 0) * 1000,
            size: cache.getFileStats(key)?.size ?? 0,
          },
        ] as const;
      }),
    );
    return [...files].sort((a, b) => {
      const x = facts.get(a) as { failed: boolean; duration: number; size: number };
      const y = facts.get(b) as { failed: boolean; duration: number; size: number };
      if (x.failed !== y.failed) return x.failed ? -1 : 1;
      return y.duration - x.duration || y.size - x.size;
    });
  }
}

/** Fisher-Yates with a small seeded generator (mulberry32). */
function shuffled<T>(items: T[], seed: number): T[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const result = [...items];
  for (let i = result.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [result[i], result[j]] = [result[j] as T, result[i] as T];
  }
  return result;
}
