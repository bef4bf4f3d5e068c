import { describe, expect, it } from "vitest";
import { isoDate, isoDateTime } from "../../src/graphql/builder.js";

describe("the DateTime and Date scalars' text (builder.ts isoDateTime, isoDate)", () => {
  // Every field of the text at its edges: single and double digits, 0 and 999 ms, leap days, and the
  // years written by V8 itself (before 1000, after 9999, before year 0).
  const times = [
    Date.UTC(1000, 0, 1, 0, 0, 0, 0),
    Date.UTC(2024, 1, 29, 23, 59, 59, 999),
    Date.UTC(2026, 11, 5, 9, 5, 7, 8),
    Date.UTC(2026, 9, 10, 10, 10, 10, 10),
    Date.UTC(1970, 0, 1, 0, 0, 0, 100),
    Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    Date.UTC(999, 11, 31, 23, 59, 59, 999),
    Date.UTC(1, 0, 1),
    Date.UTC(10000, 0, 1),
    Date.UTC(-5, 6, 1),
  ];
  for (let i = 0; i < 2000; i++)
    times.push(Date.UTC(1000, 0, 1) + Math.floor(Math.random() * (Date.UTC(9999, 11, 31) - Date.UTC(1000, 0, 1))));

  it("is what toISOString writes, for every year", () => {
    for (const time of times) {
      const date = new Date(time);
      expect(isoDateTime(date)).toBe(date.toISOString());
      expect(isoDate(date)).toBe(date.toISOString().slice(0, 10));
    }
  });

  it("refuses an invalid date as toISOString does", () => {
    expect(() => isoDateTime(new Date(Number.NaN))).toThrow(RangeError);
    expect(() => isoDate(new Date(Number.NaN))).toThrow(RangeError);
  });
});
