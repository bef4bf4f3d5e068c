import { describe, expect, it } from "vitest";
import { isStalePlan, statementNames } from "../../src/platform/db/prepared-statements.js";
import { isDatabaseUnavailable } from "../../src/platform/db/unavailable.js";

const stale = { code: "0A000", message: "cached plan must not change result type" };

describe("statement names after a stale plan", () => {
  it("gives a text a new name once per failure of its current name, for every caller", () => {
    const names = statementNames();
    const sql = 'SELECT "title" FROM "Task" WHERE "id" = $1';
    const first = names({ sql }) as string;
    const renewed = names.renew(sql, first);
    expect(renewed).not.toBe(first);
    expect(names({ sql })).toBe(renewed);
    // A second connection failing with the old name meanwhile does not rename it again.
    expect(names.renew(sql, first)).toBe(renewed);
    expect(names.renew(sql, renewed)).not.toBe(renewed);
    expect(names({ sql: "SELECT 1" })).not.toBe(names({ sql }));
  });

  it("tells a stale plan from any other 0A000, directly from pg and through Prisma's adapter", () => {
    expect(isStalePlan(stale)).toBe(true);
    expect(isStalePlan({ code: "0A000", message: "cannot do that" })).toBe(false);
    expect(isDatabaseUnavailable(stale)).toBe(true);
    expect(isDatabaseUnavailable({ code: "0A000", message: "cannot do that" })).toBe(false);
    const throughPrisma = {
      code: "P2010",
      meta: { driverAdapterError: { cause: { originalCode: "0A000", originalMessage: stale.message, kind: "postgres" } } },
    };
    expect(isDatabaseUnavailable(throughPrisma)).toBe(true);
  });
});
