import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

// cwk_<16 hex lookup id>_<43 chars: 256 random bits, base64url>
const KEY_PATTERN = /^cwk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export type NewApiKey = { key: string; lookupId: string; secretHash: Uint8Array<ArrayBuffer> };

export function generateApiKey(): NewApiKey {
  const lookupId = randomBytes(8).toString("hex");
  const key = `cwk_${lookupId}_${randomBytes(32).toString("base64url")}`;
  return { key, lookupId, secretHash: hashApiKey(key) };
}

export function hashApiKey(key: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash("sha256").update(key).digest());
}

/** The lookup id of a well-formed key, or null. */
export function parseApiKey(key: string): string | null {
  return KEY_PATTERN.exec(key)?.[1] ?? null;
}

const decoy = hashApiKey("cwk_0000000000000000_decoy");

/** Constant-time check; pass `null` as the stored hash for an unknown key so both paths cost the same. */
export function apiKeyMatches(key: string, storedHash: Uint8Array | null): boolean {
  const presented = hashApiKey(key);
  const expected = storedHash && storedHash.length === presented.length ? storedHash : decoy;
  return timingSafeEqual(presented, expected) && storedHash !== null;
}
