import { CREDENTIAL_CACHE_MS } from "../auth/authenticate.js";
import type { AuthState } from "../auth/caller.js";
import { type AppError, ForbiddenError } from "../platform/errors.js";

/**
 * How often open streams have their credentials checked again (the cache answers most checks):
 * a stream outlives its credential (revoked, expired, member deactivated, a permission lost) by
 * at most the credential cache's lifetime and this. live-streams.ts runs the checks, on one timer
 * for all streams, and before every event a stream receives.
 */
export const CHECK_EVERY_MS = Math.max(100, Math.floor(CREDENTIAL_CACHE_MS / 4));

/** Why the credential of `before` no longer holds, or null while it does. */
export function lapsed(before: AuthState, now: AuthState): AppError | null {
  if ("error" in now) return now.error;
  if (!("caller" in now) || !("caller" in before)) return new ForbiddenError("The credential of this stream no longer holds");
  const lost = [...before.caller.permissions].find((p) => !now.caller.permissions.has(p));
  return lost ? new ForbiddenError(`The credential of this stream lost the permission ${lost}`) : null;
}
