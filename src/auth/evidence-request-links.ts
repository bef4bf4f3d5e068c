import { createHash, timingSafeEqual } from "node:crypto";

/** The header the page's calls carry the link's token in. */
export const LINK_TOKEN_HEADER = "x-evidence-request-token";
/** The page: `/requests/<token>`. */
export const LINK_PATH = "/requests/";
/** 256 bits, base64url without padding. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** What a link that does not work answers, whatever the reason: a wrong token reads as an expired one. */
export const DEAD_LINK_MESSAGE = "This link no longer works";

export function isLinkToken(value: string): boolean {
  return TOKEN_PATTERN.test(value);
}

/** SHA-256 of the token, hex: the only form the token is kept in (EvidenceRequest.tokenHash, unique). */
export function hashLinkToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

const decoy = hashLinkToken("decoy".padEnd(43, "x"));

/** Constant-time check of the presented token's hash against the stored one; null for a token no row has, so both cost the same. */
export function linkTokenMatches(presentedHash: string, storedHash: string | null): boolean {
  const presented = Buffer.from(presentedHash, "hex");
  const expected = Buffer.from(storedHash && storedHash.length === presentedHash.length ? storedHash : decoy, "hex");
  return timingSafeEqual(presented, expected) && storedHash !== null;
}

/** The token of a page request (`GET /requests/<token>`), or null for any other request. */
export function linkTokenInPath(request: Request): string | null {
  if (request.method !== "GET" && request.method !== "HEAD") return null;
  const { pathname } = new URL(request.url);
  if (!pathname.startsWith(LINK_PATH)) return null;
  return pathname.slice(LINK_PATH.length);
}

/** The path as logs, traces and metrics may keep it: the token is a credential. */
export function withoutLinkToken(pathname: string): string {
  return pathname.startsWith(LINK_PATH) ? `${LINK_PATH}{token}` : pathname;
}
