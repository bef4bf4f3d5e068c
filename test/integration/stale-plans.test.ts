import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createTestApp, openOwnDatabase, usePostgres } from "../helpers/test-app.js";

/**
 * Named (prepared) statements and a migration that changes what they return: PostgreSQL answers
 * 0A000 "cached plan must not change result type" on every connection that prepared them, until
 * they are prepared again (src/platform/db/prepared-statements.ts).
 */
describe.runIf(usePostgres)("prepared statements across a column's type change", async () => {
  const own = await openOwnDatabase();
  const t = await createTestApp({ database: own.database });
  const org = await t.seedOrg();
  afterAll(() => own.close());
  const alter = async (type: string) => {
    const client = new pg.Client({ connectionString: own.url });
    await client.connect();
    await client.query(`ALTER TABLE "Task" ALTER COLUMN "title" TYPE ${type}`);
    await client.end();
  };
  const taskId = org.taskIds[0] as string;
  // Each read on its own pool connection as far as the pool spreads them: the direct by-id read
  // (REST), and Prisma's (a task with a relation over GraphQL).
  const reads = () =>
    Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 2 === 0
          ? t.rest("GET", `/v1/tasks/${taskId}`, { key: org.apiKey })
          : t.gql(
              `query($id: ID!) { task(taskId: $id) { title comments(limit: 1) { items { id } } } }`,
              { id: taskId },
              { key: org.apiKey },
            ),
      ),
    );

  it("prepares a statement again and runs it once more, outside transactions: no error", async () => {
    for (const type of ["varchar(1000)", "text"]) {
      const warm = await reads();
      expect(warm.map((r) => r.status)).toEqual(Array(40).fill(200));
      await alter(type);
      const after = await reads();
      expect(after.map((r) => r.status)).toEqual(Array(40).fill(200));
      expect(after.filter((r) => r.body.errors)).toEqual([]);
      expect(after[0]?.body.title).toBeTruthy();
      expect(after[1]?.body.data.task.title).toBe(after[0]?.body.title);
    }
  });

  it("answers a transaction that meets a stale statement 503 with Retry-After, and its retry runs", async () => {
    const update = (title: string) => t.rest("PATCH", `/v1/tasks/${taskId}`, { key: org.apiKey, body: { title } });
    await alter("text");
    const warm = await Promise.all(Array.from({ length: 20 }, (_, i) => update(`warm ${i}`)));
    expect(warm.map((r) => r.status)).toEqual(Array(20).fill(200));
    await alter("varchar(3000)");
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => update(`after ${i}`)));
    // Some connections had prepared the transaction's statements: those fail, and only those.
    expect(answers.some((answer) => answer.status === 503)).toBe(true);
    for (const answer of answers) {
      expect([200, 503]).toContain(answer.status);
      if (answer.status === 503) expect(answer.headers.get("retry-after")).toBeTruthy();
    }
    // Every name that failed was renewed: the next round runs everywhere.
    const again = await Promise.all(Array.from({ length: 20 }, (_, i) => update(`again ${i}`)));
    expect(again.map((r) => r.status)).toEqual(Array(20).fill(200));
  });
});
