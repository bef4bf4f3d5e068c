import { createRemoteJWKSet, type JWTVerifyGetKey, jwtVerify } from "jose";
import { LRUCache } from "lru-cache";
import type { MemberRole } from "../generated/prisma/enums.js";
import type { Config } from "../platform/config.js";
import type { Db } from "../platform/db/database.js";
import { BadUserInputError, ForbiddenError, UnauthenticatedError } from "../platform/errors.js";
import { commonLimits } from "../platform/limits.js";
import { apiKeyMatches, parseApiKey } from "./api-keys.js";
import type { AuthState, Caller } from "./caller.js";
import { eventStreamOrganization } from "./event-stream-requests.js";
import {
  DEAD_LINK_MESSAGE,
  hashLinkToken,
  isLinkToken,
  LINK_TOKEN_HEADER,
  linkTokenInPath,
  linkTokenMatches,
} from "./evidence-request-links.js";
import { isPermission, rolePermissions } from "./permissions.js";
import { hashSessionToken, isSessionToken } from "./sessions.js";

const LAST_USED_RESOLUTION_MS = 60_000;
/**
 * How long a credential row, session or membership is reused without asking the database again:
 * a revocation, expiry or deactivation takes effect within this time (on every replica).
 */
export const CREDENTIAL_CACHE_MS = 2_000;

/** Oldest accepted JWT (by iat) unless configured: a day. */
export const DEFAULT_JWT_MAX_AGE_SECONDS = 86_400;

export type Authenticator = (request: Request) => Promise<AuthState>;

const apiKeySelect = {
  id: true,
  organizationId: true,
  secretHash: true,
  scopes: true,
  expiresAt: true,
  revokedAt: true,
  lastUsedAt: true,
} as const;
type ApiKeyRow = {
  id: string;
  organizationId: string;
  secretHash: Uint8Array;
  scopes: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
};

/** The cookie's value; undefined when it is not valid percent-encoding (a malformed credential). */
function cookie(request: Request, name: string): string | null | undefined {
  for (const part of request.headers.get("cookie")?.split(";") ?? []) {
    const [key, ...value] = part.trim().split("=");
    if (key !== name) continue;
    try {
      return decodeURIComponent(value.join("="));
    } catch {
      return undefined;
    }
  }
  return null;
}

/**
 * Whether a request that authenticates with the session cookie came from where the cookie may be
 * used: no Origin (not a browser's cross-site request: curl, a server, a same-origin GET), this
 * server's own host, or an origin CORS_ORIGINS lists. A browser attaches the cookie to requests
 * that other sites make; refusing them here does not depend on the browser's preflight.
 */
function cookieMayComeFrom(request: Request, listed: ReadonlySet<string>): boolean {
  const origin = request.headers.get("origin");
  if (origin === null) return true;
  if (listed.has(origin)) return true;
  try {
    const host = request.headers.get("host") ?? new URL(request.url).host;
    return origin !== "null" && new URL(origin).host === host;
  } catch {
    return false;
  }
}

const looksLikeJwt = (value: string) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(value);

/**
 * Decides who is calling: API key (X-API-Key, which wins when present), JWT (Authorization:
 * Bearer <jwt>) or session (cookie session_token, or a bearer value that is not a JWT). User
 * credentials name the organization in X-Organization-Id and need an active membership there.
 */
export function createAuthenticator(
  db: Db,
  jwt: Config["jwt"] = {},
  options: { corsOrigins?: readonly string[] } = {},
): Authenticator {
  const cookieOrigins = new Set(options.corsOrigins ?? []);
  const cacheOptions = { max: 10_000, ttl: CREDENTIAL_CACHE_MS };
  const keys = new LRUCache<string, ApiKeyRow | { missing: true }>(cacheOptions);
  const sessions = new LRUCache<string, { userId: string; expiresAt: Date }>(cacheOptions);
  const memberships = new LRUCache<string, { role: MemberRole; isActive: boolean } | { missing: true }>(cacheOptions);
  const jwtKey: Uint8Array | JWTVerifyGetKey | null = jwt.secret
    ? new TextEncoder().encode(jwt.secret)
    : jwt.jwksUrl
      ? createRemoteJWKSet(new URL(jwt.jwksUrl))
      : null;

  async function byApiKey(key: string, organizationHeader: string | null): Promise<AuthState> {
    const lookupId = parseApiKey(key);
    // Unknown ids are cached too, so an unknown key and a wrong secret cost the same.
    let cached = lookupId ? keys.get(lookupId) : undefined;
    if (lookupId && !cached) {
      cached = (await db.apiKey.findUnique({ where: { lookupId }, select: apiKeySelect })) ?? { missing: true };
      keys.set(lookupId, cached);
    }
    const row = cached && !("missing" in cached) ? cached : undefined;
    const now = new Date();
    if (!apiKeyMatches(key, row?.secretHash ?? null) || !row || row.revokedAt || (row.expiresAt && row.expiresAt <= now)) {
      return { error: new UnauthenticatedError("The API key is invalid, expired or revoked") };
    }
    if (organizationHeader !== null && organizationHeader !== row.organizationId) {
      return { error: new ForbiddenError("X-Organization-Id does not match the API key's organization") };
    }
    if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      row.lastUsedAt = now;
      await db.apiKey.update({ where: { id: row.id }, data: { lastUsedAt: now }, select: { id: true } });
    }
    const caller: Caller = {
      kind: "apiKey",
      organizationId: row.organizationId,
      userId: null,
      apiKeyId: row.id,
      permissions: new Set(row.scopes.filter(isPermission)),
    };
    return { caller };
  }

  /**
   * An evidence request's link: one indexed lookup by the token's hash, a constant-time comparison,
   * and the request must still take submissions or await review (open, rejected, submitted) before
   * it expires. Never cached: a resend or a cancellation ends the old link at once. Every refusal
   * is the same, so a guess learns nothing; each counts against the address's failure limit.
   */
  async function byLinkToken(token: string): Promise<AuthState> {
    const dead: AuthState = { error: new UnauthenticatedError(DEAD_LINK_MESSAGE) };
    const presented = hashLinkToken(isLinkToken(token) ? token : "");
    const row = isLinkToken(token)
      ? await db.evidenceRequest.findUnique({
          where: { tokenHash: presented },
          select: { id: true, organizationId: true, recipientEmail: true, status: true, expiresAt: true, tokenHash: true },
        })
      : null;
    if (!linkTokenMatches(presented, row?.tokenHash ?? null) || !row) return dead;
    if (!["open", "rejected", "submitted"].includes(row.status) || row.expiresAt <= new Date()) return dead;
    return {
      recipient: { organizationId: row.organizationId, evidenceRequestId: row.id, recipientEmail: row.recipientEmail },
    };
  }

  async function userIdFromJwt(token: string): Promise<string | AuthState> {
    if (!jwtKey) return { error: new UnauthenticatedError("JWT authentication is not enabled on this server") };
    try {
      const { payload } = await jwtVerify(token, jwtKey as Uint8Array, {
        issuer: jwt.issuer,
        audience: jwt.audience,
        algorithms: jwt.secret ? ["HS256"] : undefined,
        // A token without an expiry would be valid forever.
        requiredClaims: ["exp"],
      });
      // Nor may one live longer than the maximum age: not issued (iat) longer ago, nor expiring later.
      const maxAge = jwt.maxAgeSeconds ?? DEFAULT_JWT_MAX_AGE_SECONDS;
      const now = Math.floor(Date.now() / 1000);
      if ((payload.exp as number) - now > maxAge || (typeof payload.iat === "number" && now - payload.iat > maxAge)) {
        return { error: new UnauthenticatedError(`The token may be valid for at most ${maxAge} s`) };
      }
      if (typeof payload.sub !== "string" || !payload.sub) {
        return { error: new UnauthenticatedError("The token names no subject (sub)") };
      }
      return payload.sub;
    } catch {
      return { error: new UnauthenticatedError("The token is invalid or expired") };
    }
  }

  async function userIdFromSession(token: string): Promise<string | AuthState> {
    if (!isSessionToken(token)) return { error: new UnauthenticatedError("The session is invalid or expired") };
    const tokenHash = hashSessionToken(token);
    const cacheKey = Buffer.from(tokenHash).toString("base64url");
    let session = sessions.get(cacheKey);
    if (!session) {
      session = (await db.session.findUnique({ where: { tokenHash }, select: { userId: true, expiresAt: true } })) ?? undefined;
      if (session) sessions.set(cacheKey, session);
    }
    if (!session || session.expiresAt <= new Date()) {
      return { error: new UnauthenticatedError("The session is invalid or expired") };
    }
    return session.userId;
  }

  async function asMember(kind: "jwt" | "session", userId: string, organizationId: string | null): Promise<AuthState> {
    if (!organizationId) {
      return {
        error: new BadUserInputError("X-Organization-Id is required with a user credential", [
          { path: "X-Organization-Id", message: "is required with a JWT or session" },
        ]),
      };
    }
    const cacheKey = `${userId} ${organizationId}`;
    let member = memberships.get(cacheKey);
    if (!member) {
      member = (await db.member.findUnique({
        where: { organizationId_userId: { organizationId, userId } },
        select: { role: true, isActive: true },
      })) ?? { missing: true };
      memberships.set(cacheKey, member);
    }
    if ("missing" in member || !member.isActive) {
      return { error: new ForbiddenError("You are not an active member of this organization") };
    }
    return {
      caller: { kind, organizationId, userId, apiKeyId: null, permissions: new Set(rolePermissions[member.role]) },
    };
  }

  return async function authenticate(request) {
    // The link's token decides when present: the page's calls (and the page itself) are the
    // recipient's, whatever session cookie the browser also holds for this origin.
    const linkToken = request.headers.get(LINK_TOKEN_HEADER) ?? linkTokenInPath(request);
    if (linkToken !== null) return byLinkToken(linkToken.trim());
    const organizationHeader = request.headers.get("x-organization-id")?.trim() || eventStreamOrganization(request);
    if (organizationHeader && organizationHeader.length > commonLimits.id.maxLength) {
      const message = `must be at most ${commonLimits.id.maxLength} characters`;
      return { error: new BadUserInputError(`X-Organization-Id ${message}`, [{ path: "X-Organization-Id", message }]) };
    }
    const apiKey = request.headers.get("x-api-key")?.trim();
    if (apiKey) return byApiKey(apiKey, organizationHeader);

    const authorization = request.headers.get("authorization");
    let bearer: string | null = null;
    if (authorization) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!match) return { error: new UnauthenticatedError("Authorization must be 'Bearer <token>'") };
      bearer = match[1] as string;
    }
    const sessionCookie = cookie(request, "session_token");
    if (sessionCookie === undefined && !bearer) {
      return {
        error: new BadUserInputError("The session_token cookie is not valid percent-encoding", [
          { path: "Cookie", message: "session_token has a malformed % escape" },
        ]),
      };
    }
    if (!bearer && !sessionCookie) return { anonymous: true };
    if (!bearer && !cookieMayComeFrom(request, cookieOrigins)) {
      return {
        error: new ForbiddenError(
          "A session cookie is accepted only from this server's own origin and the origins CORS_ORIGINS lists",
        ),
      };
    }

    const kind = bearer && looksLikeJwt(bearer) ? "jwt" : "session";
    const userId =
      kind === "jwt" ? await userIdFromJwt(bearer as string) : await userIdFromSession((bearer ?? sessionCookie) as string);
    if (typeof userId !== "string") return userId;
    return asMember(kind, userId, organizationHeader);
  };
}
