import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/platform/db/database.js";
import { migratedCluster } from "../helpers/data-dir.js";
import { reachable } from "../helpers/server-process.js";
import { migratedPostgresDatabase } from "../helpers/test-app.js";

describe("openDatabase", () => {
  it("observes statements only when opened to count them", async () => {
    const plain = await openDatabase({ kind: "embedded", loadDataDir: migratedCluster() });
    try {
      expect(() => plain.onQuery(() => {})).toThrow(/countQueries/);
    } finally {
      await plain.close();
    }

    const counted = await openDatabase({ kind: "embedded", countQueries: true, loadDataDir: migratedCluster() });
    try {
      const statements: string[] = [];
      counted.onQuery((sql) => statements.push(sql));
      await counted.db.organization.count();
      expect(statements.some((sql) => /SELECT COUNT/i.test(sql))).toBe(true);
    } finally {
      await counted.close();
    }
  });
});

describe.runIf(await reachable(5432))("prepared statements on PostgreSQL", () => {
  it("prepares each statement Prisma sends once per connection when asked, and not otherwise", async () => {
    const { url, drop } = await migratedPostgresDatabase();
    try {
      for (const preparedStatements of [true, false]) {
        // One connection: the statement that reads pg_prepared_statements runs where the others ran.
        const database = await openDatabase({ kind: "postgres", url, poolSize: 1, preparedStatements });
        try {
          await database.db.organization.findMany({ where: { name: "a" } });
          await database.db.organization.findMany({ where: { name: "b" } });
          const prepared = await database.db.$queryRaw<{ name: string; statement: string }[]>`
            SELECT name, statement FROM pg_prepared_statements
            WHERE statement LIKE '%"Organization"%' AND statement NOT LIKE '%pg_prepared_statements%'`;
          if (preparedStatements) {
            // The two reads differ only in their parameter: one statement, named by its text.
            expect(prepared).toHaveLength(1);
            expect(prepared[0]?.name).toMatch(/^prisma_[0-9a-f]{24}$/);
          } else {
            expect(prepared).toHaveLength(0);
          }
        } finally {
          await database.close();
        }
      }
    } finally {
      await drop();
    }
  });
});
