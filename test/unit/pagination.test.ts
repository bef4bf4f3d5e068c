import { describe, expect, it } from "vitest";
import { pageQuery, toPage } from "../../src/graphql/pagination.js";

const cursorOf = (values: unknown) => Buffer.from(JSON.stringify(values)).toString("base64url");

describe(pageQuery.name, () => {
  it("defaults to 20 and refuses limits outside 1 to 100", () => {
    expect(pageQuery({}, ["createdAt", "id"]).limit).toBe(20);
    for (const limit of [0, 101, -1, 1.5]) expect(() => pageQuery({ limit }, ["id"])).toThrow(/limit/);
  });

  it("refuses cursors that do not fit the list's keys", () => {
    for (const cursor of [
      "bogus",
      cursorOf(["x"]),
      cursorOf([{ d: "2020-01-01T00:00:00Z" }]),
      cursorOf(["2020", "id"]),
      cursorOf([1.5]),
      cursorOf(null),
    ]) {
      expect(() => pageQuery({ cursor }, cursor === cursorOf([1.5]) ? ["version"] : ["createdAt", "id"]), cursor).toThrow(
        /cursor/,
      );
    }
    expect(() => pageQuery({ cursor: cursorOf(["x"]) }, ["version"])).toThrow(/cursor/);
  });

  it("round-trips its own cursors", () => {
    const rows = [
      { createdAt: new Date("2026-01-03"), id: "c" },
      { createdAt: new Date("2026-01-02"), id: "b" },
      { createdAt: new Date("2026-01-01"), id: "a" },
    ];
    const page = toPage(rows, { limit: 2, keys: ["createdAt", "id"] });
    expect(page.items).toHaveLength(2);
    const next = pageQuery({ cursor: page.nextCursor }, ["createdAt", "id"]);
    expect(next.where).toEqual({
      OR: [{ createdAt: { lt: new Date("2026-01-02") } }, { createdAt: new Date("2026-01-02"), id: { lt: "b" } }],
    });
  });
});
