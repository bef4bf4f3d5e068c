import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/platform/db/database.js";
import { emptyCluster } from "../helpers/data-dir.js";

describe("openDatabase", () => {
  it("observes statements only when opened to count them", async () => {
    const plain = await openDatabase({ kind: "embedded", loadDataDir: emptyCluster() });
    try {
      expect(() => plain.onQuery(() => {})).toThrow(/countQueries/);
    } finally {
      await plain.close();
    }

    const counted = await openDatabase({ kind: "embedded", countQueries: true, loadDataDir: emptyCluster() });
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
