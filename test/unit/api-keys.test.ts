import { describe, expect, it } from "vitest";
import { apiKeyMatches, generateApiKey, hashApiKey, parseApiKey } from "../../src/auth/api-keys.js";

describe("API keys", () => {
  it("have a recognisable prefix, a lookup id and 256 random bits", () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a.key).toMatch(/^cwk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(a.key).not.toBe(b.key);
    expect(parseApiKey(a.key)).toBe(a.lookupId);
    expect(parseApiKey(`${a.key}x`)).toBeNull();
  });

  it("match only their own hash", () => {
    const a = generateApiKey();
    expect(apiKeyMatches(a.key, a.secretHash)).toBe(true);
    expect(apiKeyMatches(generateApiKey().key, a.secretHash)).toBe(false);
    expect(apiKeyMatches(a.key, null)).toBe(false);
    expect(apiKeyMatches(a.key, hashApiKey(a.key).subarray(0, 10))).toBe(false);
  });
});
