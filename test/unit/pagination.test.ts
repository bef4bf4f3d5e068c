import { describe, expect, it } from "vitest";
import { Prisma } from "../../src/generated/prisma/client.js";
import { containsPattern, keyset, sortBy, validDate } from "../../src/graphql/lists.js";
import { pageSizeOf } from "../../src/graphql/pagination.js";

describe(pageSizeOf.name, () => {
  it("defaults to 20 and refuses limits outside 1 to 100", () => {
    expect(pageSizeOf(undefined)).toBe(20);
    expect(pageSizeOf(100)).toBe(100);
    for (const limit of [0, 101, -1, 1.5]) expect(() => pageSizeOf(limit)).toThrow(/limit/);
  });
});

describe(keyset.name, () => {
  const after = (valueIsNull: boolean) => ({ value: Prisma.sql`${"v"}`, id: Prisma.sql`${"i"}`, valueIsNull });

  it("orders by the key then id in one direction, nulls last for a nullable key", () => {
    expect(keyset(sortBy.timestamp("createdAt"), "desc").orderBy.sql).toBe('t."createdAt" DESC, t."id" DESC');
    expect(keyset(sortBy.date("dueDate"), "desc").orderBy.sql).toBe('t."dueDate" DESC NULLS LAST, t."id" DESC');
    expect(keyset(sortBy.date("dueDate"), "asc").orderBy.sql).toBe('t."dueDate" ASC NULLS LAST, t."id" ASC');
  });

  it("continues after a value with a row comparison, and after a null among the nulls only", () => {
    expect(keyset(sortBy.text("title"), "asc", after(false)).where.sql).toBe('(t."title", t."id") > (?, ?)');
    expect(keyset(sortBy.date("dueDate"), "desc", after(false)).where.sql).toBe(
      '((t."dueDate", t."id") < (?, ?) OR t."dueDate" IS NULL)',
    );
    expect(keyset(sortBy.date("dueDate"), "asc", after(true)).where.sql).toBe('(t."dueDate" IS NULL AND t."id" > ?)');
  });
});

describe("search and dates", () => {
  it("takes the term's wildcards literally", () => {
    expect(containsPattern("50%_off\\")).toBe("%50\\%\\_off\\\\%");
  });

  it("accepts only real calendar dates", () => {
    expect(validDate("2024-02-29")).toBe(true);
    for (const date of ["2026-02-29", "2026-13-01", "2026-1-1", "0000-01-01x"]) expect(validDate(date)).toBe(false);
  });
});
