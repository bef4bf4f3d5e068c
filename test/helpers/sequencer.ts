import { createHash } from "node:crypto";
import path from "node:path";
// Types only: importing vitest/node from the config costs every run about 1 s of CPU.
import type { TestSequencer, TestSpecification, Vitest } from "vitest/node";

/**
 * Seconds a file took in the whole suite on the 2-core machine (test/results/, issue 12), for
 * the files that take long. Used for a file that vitest has no timing of yet (a fresh install or
 * a new file): vitest would otherwise start the largest files first, and some of the longest are
 * small (the e2e files, codegen), so they started last and the run waited on them alone.
 */
const estimates: Record<string, number> = {
  "test/cli/cli.test.ts": 40,
  "test/cli/documents.test.ts": 38,
  "test/e2e/faults.test.ts": 32,
  "test/e2e/pgbouncer.test.ts": 40,
  "test/integration/isolation-matrix.test.ts": 25,
  "test/clients/trusted-documents.test.ts": 25,
  "test/e2e/memory.test.ts": 25,
  "test/fuzz/graphql-queries.fuzz.test.ts": 14,
  "test/fuzz/graphql-mutations.fuzz.test.ts": 12,
  "test/fuzz/rest-reads.fuzz.test.ts": 10,
  "test/fuzz/rest-writes.fuzz.test.ts": 10,
  "test/e2e/shutdown.test.ts": 18,
  "test/e2e/crash.test.ts": 16,
  "test/codegen/codegen.test.ts": 14,
  "test/integration/comments.test.ts": 12,
  "test/integration/docs-examples.test.ts": 12,
  "test/integration/live-streams.test.ts": 12,
  "test/e2e/server.test.ts": 11,
  "test/integration/hostile-callers.test.ts": 9,
  "test/integration/trusted-documents.test.ts": 8,
  "test/e2e/replicas.test.ts": 8,
  "test/e2e/webhooks.test.ts": 32,
  "test/integration/webhooks.test.ts": 18,
  "test/integration/migrations.test.ts": 6,
  "test/integration/user-auth.test.ts": 6,
  "test/integration/permissions.test.ts": 15,
  // Added since (issue 45, 2026-11-28: vitest's durations of a whole run at load 10 to 17, halved).
  "test/integration/audit-export-memory.test.ts": 30,
  "test/cli/attachments.test.ts": 30,
  "test/integration/attachment-stores.test.ts": 25,
  "test/integration/differential.test.ts": 25,
  "test/e2e/notification-mail.test.ts": 25,
  "test/integration/schema-contracts.test.ts": 20,
  "test/integration/attachments.test.ts": 15,
  "test/integration/notification-mail.test.ts": 12,
  "test/integration/connections.test.ts": 12,
  "test/integration/database.test.ts": 10,
  "test/integration/fresh-embedded.test.ts": 10,
  "test/unit/layers.test.ts": 10,
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
