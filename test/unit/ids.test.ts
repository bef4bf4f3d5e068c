import { describe, expect, it } from "vitest";
import { newId, randomHex } from "../../src/platform/ids.js";

describe("ids and their random bytes (ids.ts)", () => {
  it("writes a prefix, 12 hex digits of time and 20 random, and a user id of 32 random", () => {
    const before = Date.now();
    const id = newId("cmt");
    expect(id).toMatch(/^cmt_[0-9a-f]{32}$/);
    expect(Number.parseInt(id.slice(4, 16), 16)).toBeGreaterThanOrEqual(before);
    expect(newId("usr")).toMatch(/^usr_[0-9a-f]{32}$/);
  });

  it("never hands out the same bytes twice, across many refills of the pool", () => {
    // 50,000 draws of 10 bytes: about 122 refills of the 4 KiB pool, draws straddling each end.
    const seen = new Set<string>();
    for (let i = 0; i < 50_000; i++) seen.add(randomHex(i % 7 === 0 ? 16 : 10));
    expect(seen.size).toBe(50_000);
    const ids = new Set(Array.from({ length: 20_000 }, () => newId("aud")));
    expect(ids.size).toBe(20_000);
  });

  it("draws bytes that look random: every hex digit about equally often", () => {
    const text = Array.from({ length: 4_000 }, () => randomHex(10)).join("");
    const counts = new Map<string, number>();
    for (const digit of text) counts.set(digit, (counts.get(digit) ?? 0) + 1);
    expect(counts.size).toBe(16);
    // 80,000 digits: 5,000 expected each; a spread beyond ±10 % would be a broken draw (an unfilled pool is all zeros).
    for (const n of counts.values()) expect(Math.abs(n - 5_000)).toBeLessThan(500);
  });
});
