import { fromPrisma } from "pg-boss";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { type JobQueue, startJobQueue } from "../../src/platform/jobs.js";
import { createTestApp, openOwnDatabase } from "../helpers/test-app.js";

// pg-boss and Prisma on one database: on PGlite they share its single connection (fromPglite),
// on PostgreSQL pg-boss has a small pool of its own. Jobs sent in a Prisma transaction belong to it.
const own = await openOwnDatabase();
const t = await createTestApp({ database: own.database });
const started = Date.now();
const queue: JobQueue = await startJobQueue({ pglite: own.database.pglite, url: own.url, logger: pino({ level: "silent" }) });
const startMs = Date.now() - started;
afterAll(async () => {
  await queue.stop(1_000);
  await own.close();
});

async function within<T>(ms: number, what: string, poll: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await poll();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("pg-boss beside Prisma on the same database", () => {
  it("starts in a few seconds, its schema created by start()", () => {
    expect(startMs).toBeLessThan(20_000);
  });

  it("a job sent in a Prisma transaction commits and rolls back with it", async () => {
    const { boss } = queue;
    await boss.createQueue("probe-tx");
    await expect(
      t.db.$transaction(async (tx) => {
        await boss.send("probe-tx", { n: 1 }, { db: fromPrisma(tx) });
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await boss.findJobs("probe-tx")).toEqual([]);

    const id = await t.db.$transaction(async (tx) => {
      const org = await tx.organization.count();
      expect(org).toBeGreaterThanOrEqual(0);
      return boss.send("probe-tx", { n: 2 }, { db: fromPrisma(tx) });
    });
    const jobs = await boss.findJobs("probe-tx");
    expect(jobs.map((job) => [job.id, job.data])).toEqual([[id, { n: 2 }]]);
  });

  it("a worker on the same database takes the job while Prisma requests keep being answered", async () => {
    const { boss } = queue;
    await boss.createQueue("probe-work");
    const worked: unknown[] = [];
    await boss.work("probe-work", { pollingIntervalSeconds: 0.5 }, async (jobs) => {
      // The handler itself uses Prisma while pg-boss holds the job.
      await t.db.organization.count();
      for (const job of jobs) worked.push(job.data);
    });
    await t.db.$transaction(async (tx) => {
      await boss.send("probe-work", { n: 3 }, { db: fromPrisma(tx) });
    });
    // Prisma keeps answering, each request promptly, while the worker polls, fetches and completes.
    let answered = 0;
    let slowest = 0;
    await within(10_000, "the worker took the job", async () => {
      const began = performance.now();
      await t.db.organization.findFirst();
      slowest = Math.max(slowest, performance.now() - began);
      answered++;
      return worked.length ? true : undefined;
    });
    expect(worked).toEqual([{ n: 3 }]);
    expect(answered).toBeGreaterThan(0);
    expect(slowest).toBeLessThan(2_000);
    const [job] = await boss.findJobs("probe-work");
    await within(5_000, "the job completed", async () =>
      (await boss.getJobById("probe-work", job!.id))?.state === "completed" ? true : undefined,
    );
    await boss.offWork("probe-work", { wait: true });
  });
});
