import { createHash } from "node:crypto";
import path from "node:path";
// Types only: importing vitest/node from the config costs every run about 1 s of CPU.
import type { TestSequencer, TestSpecification, Vitest } from "vitest/node";

/**
 * Seconds a file took in a whole `npm test` on the 2-core machine: its duration in vitest's
 * report of the clean-clone CI of 2026-12-04 (eighth session), for the files over 6.5 s. Used for
 * a file that vitest has no timing of (every file in a fresh clone, as CI runs; a new file):
 * vitest would otherwise start the largest files first, and some of the longest are small (the
 * e2e files, codegen), so they started last and the run waited on them alone. Only the order
 * matters, not the values.
 */
const estimates: Record<string, number> = {
  "test/fuzz/graphql-mutations.fuzz.test.ts": 78,
  "test/integration/isolation-matrix.test.ts": 68,
  "test/e2e/shutdown.test.ts": 58,
  "test/cli/attachments.test.ts": 55,
  "test/e2e/server.test.ts": 50,
  "test/integration/permissions.test.ts": 45,
  "test/integration/audit-export-memory.test.ts": 43,
  "test/cli/cli.test.ts": 40,
  "test/fuzz/rest-writes.fuzz.test.ts": 37,
  "test/integration/attachments.test.ts": 35,
  "test/fuzz/rest-reads.fuzz.test.ts": 28,
  "test/fuzz/graphql-queries.fuzz.test.ts": 26,
  "test/e2e/evidence-request-page.test.ts": 23,
  "test/integration/attachment-stores.test.ts": 22,
  "test/integration/live-streams.test.ts": 21,
  "test/integration/connections.test.ts": 20,
  "test/codegen/codegen.test.ts": 18,
  "test/e2e/crash.test.ts": 17,
  "test/integration/notification-mail.test.ts": 17,
  "test/integration/database.test.ts": 17,
  "test/e2e/notification-mail.test.ts": 15,
  "test/integration/differential.test.ts": 14,
  "test/integration/migrations.test.ts": 14,
  "test/integration/webhooks.test.ts": 12,
  "test/integration/attachment-downloads.test.ts": 12,
  "test/clients/trusted-documents.test.ts": 11,
  "test/integration/attachment-jobs.test.ts": 11,
  "test/integration/mutation-payloads.test.ts": 11,
  "test/integration/transaction-limits.test.ts": 11,
  "test/cli/frameworks.test.ts": 10,
  "test/unit/layers.test.ts": 10,
  "test/integration/hostile-callers.test.ts": 10,
  "test/integration/controls.test.ts": 9,
  "test/integration/trusted-documents.test.ts": 8,
  "test/integration/native-memory.test.ts": 8,
  "test/integration/schema-contracts.test.ts": 8,
  "test/integration/docs-examples.test.ts": 8,
  "test/cli/documents.test.ts": 7,
  "test/integration/audit-chain.test.ts": 7,
  "test/unit/build-freshness.test.ts": 7,
};

/**
 * The same for `npm run test:postgres` (its own project, "postgres": vitest keeps its durations
 * apart), from the clean-clone CI of 2026-12-04 (eighth session), files over 7 s. Many files take
 * another time there (notification-mail's end-to-end test 15 s embedded, 52 s on PostgreSQL;
 * the CLI's 40 and 6 s), and some run only there: before this table, the PostgreSQL run ordered
 * its files by the embedded run's durations, and list-plans (25 s, every test skipped on the
 * embedded database, so ~0 s there) started last.
 */
const postgresEstimates: Record<string, number> = {
  "test/e2e/haproxy.test.ts": 111,
  "test/e2e/memory.test.ts": 78,
  "test/e2e/faults.test.ts": 76,
  "test/e2e/notification-mail.test.ts": 52,
  "test/integration/isolation-matrix.test.ts": 50,
  "test/integration/database.test.ts": 49,
  "test/e2e/pgbouncer.test.ts": 48,
  "test/integration/attachments.test.ts": 46,
  "test/integration/live-streams.test.ts": 42,
  "test/integration/migrations.test.ts": 39,
  "test/integration/attachment-stores.test.ts": 33,
  "test/e2e/webhooks.test.ts": 30,
  "test/integration/connections.test.ts": 29,
  "test/integration/notification-mail.test.ts": 27,
  "test/integration/list-plans.test.ts": 25,
  "test/e2e/write-crash.test.ts": 25,
  "test/integration/audit-export-memory.test.ts": 24,
  "test/e2e/crash.test.ts": 22,
  "test/integration/attachment-downloads.test.ts": 22,
  "test/e2e/idempotency-crash.test.ts": 22,
  "test/integration/webhooks.test.ts": 22,
  "test/integration/transaction-limits.test.ts": 20,
  "test/e2e/replicas.test.ts": 18,
  "test/integration/differential.test.ts": 18,
  "test/integration/attachment-jobs.test.ts": 14,
  "test/integration/mutation-payloads.test.ts": 13,
  "test/integration/comments.test.ts": 13,
  "test/integration/controls.test.ts": 11,
  "test/integration/people-crud.test.ts": 9,
  "test/integration/lists.test.ts": 9,
  "test/integration/trusted-documents.test.ts": 8,
  "test/integration/native-memory.test.ts": 8,
  "test/integration/evidence.test.ts": 8,
  "test/integration/evidence-requests.test.ts": 8,
  "test/integration/stale-plans.test.ts": 7,
  "test/integration/frameworks.test.ts": 7,
  "test/integration/audit-chain.test.ts": 7,
};

/**
 * Longest first, so that the last files to finish are short ones: vitest's own duration of each
 * file from its last run of the same project (database) when it has one, else that run's estimate
 * above, else 0 (then the larger file first, as vitest does). Files that failed last time still go first. `--sequence.shuffle` still
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
        const estimate = (spec.project.name === "postgres" ? postgresEstimates : estimates)[relative] ?? 0;
        return [
          spec,
          {
            failed: result?.failed ?? false,
            duration: result?.duration ?? estimate * 1000,
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
