import type { Plugin } from "graphql-yoga";
import type { Redis } from "ioredis";
import pino from "pino";
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { AuthState } from "../auth/caller.js";
import { AppError } from "../platform/errors.js";
import { type RedisHealth, watchRedis } from "../platform/redis.js";
import { transportErrorResponse } from "./error-response.js";

const WINDOW_SECONDS = 60;

export type RateLimitOptions = {
  perMinute: number;
  /** Shared counters for replicas; in memory (per process) when absent. */
  redis?: Redis;
  /** Whether Redis answers now; how long a request may wait on it. Made from `redis` when absent. */
  redisHealth?: RedisHealth;
  /** Take the client address from X-Forwarded-For (only behind a proxy that sets it). */
  trustProxy?: boolean;
  /** How many trusted proxies append to X-Forwarded-For (1 unless configured). */
  trustProxyHops?: number;
  /** The request's verified caller, which the limit keys on. */
  authenticate?: (request: Request) => Promise<AuthState>;
  /** Redis key prefix (tests use their own). */
  keyPrefix?: string;
};

/** What the limits use of a limiter. */
export type Limiter = Pick<RateLimiterAbstract, "consume" | "get" | "penalty">;

/**
 * Counters shared through Redis while it answers within its timeout; this process's own counters
 * while it does not (the limit then holds per replica), without waiting on Redis again until a
 * probe finds it back (see redis.ts).
 */
export function createRateLimiter({ perMinute, redis, redisHealth, keyPrefix = "cwg:rate" }: RateLimitOptions): Limiter {
  const memory = new RateLimiterMemory({ points: perMinute, duration: WINDOW_SECONDS });
  if (!redis) return memory;
  const health = redisHealth ?? watchRedis(redis, { timeoutMs: 200, logger: pino({ level: "silent" }) });
  const shared = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix,
    points: perMinute,
    duration: WINDOW_SECONDS,
    rejectIfRedisNotReady: true,
  });
  async function either<T>(fromRedis: () => Promise<T>, fromMemory: () => Promise<T>): Promise<T> {
    if (health.available) {
      try {
        return await health.within(fromRedis());
      } catch (error) {
        // Over the limit is an answer, not a failure.
        if (error instanceof RateLimiterRes) throw error;
        health.failed(error);
      }
    }
    health.counts.localRateLimitDecisions++;
    return fromMemory();
  }
  return {
    consume: (key, points) =>
      either(
        () => shared.consume(key, points),
        () => memory.consume(key, points),
      ),
    get: (key) =>
      either(
        () => shared.get(key),
        () => memory.get(key),
      ),
    penalty: (key, points) =>
      either(
        () => shared.penalty(key, points),
        () => memory.penalty(key, points),
      ),
  };
}

/**
 * Who a request counts against: the verified identity (API key id; user and organization for a
 * JWT or session, however the credential is spelt), else the client address. Never a raw header,
 * which a caller can re-encode to count as many.
 */
export function rateLimitKey(auth: AuthState | undefined, clientAddress: string | undefined): string {
  if (auth && "caller" in auth) {
    const { caller } = auth;
    return caller.apiKeyId ? `key:${caller.apiKeyId}` : `user:${caller.userId}:${caller.organizationId}`;
  }
  return `ip:${clientAddress ?? "unknown"}`;
}

/**
 * The client address: the socket's, or behind `hops` trusted proxies that each append the address
 * they received from to X-Forwarded-For, the entry the outermost of them added. Entries further
 * left were written by the client and prove nothing.
 */
export function clientAddress(forwardedFor: string | null, socketAddress: string | undefined, hops: number | undefined): string {
  if (hops && forwardedFor) {
    const entries = forwardedFor.split(",").map((entry) => entry.trim());
    const added = entries[Math.max(0, entries.length - hops)];
    if (added) return added;
  }
  return socketAddress || "unknown";
}

const exempt = new Set(["/health", "/ready", "/metrics"]);

/** Client address of each request, as the rate limit saw it (authentication failures count by it). */
const addresses = new WeakMap<Request, string>();
export const clientAddressOf = (request: Request) => addresses.get(request) ?? "unknown";

/**
 * Guessing credentials costs: after `perMinute` failed authentications from one client address,
 * that address is refused for the rest of the minute, whatever credential it sends.
 */
export function limitAuthenticationFailures(
  authenticate: (request: Request) => Promise<AuthState>,
  options: { perMinute: number; redis?: Redis; redisHealth?: RedisHealth; keyPrefix?: string },
): (request: Request) => Promise<AuthState> {
  const limiter = createRateLimiter({
    perMinute: options.perMinute,
    redis: options.redis,
    redisHealth: options.redisHealth,
    keyPrefix: `${options.keyPrefix ?? "cwg:rate"}:authfail`,
  });
  return async (request) => {
    const address = clientAddressOf(request);
    const record = await limiter.get(address);
    if (record && record.consumedPoints >= options.perMinute) {
      const seconds = Math.max(1, Math.ceil(record.msBeforeNext / 1000));
      return { error: new AppError("RATE_LIMITED", `Too many failed authentications from this address. Retry in ${seconds} s.`) };
    }
    const auth = await authenticate(request);
    if ("error" in auth && auth.error.code === "UNAUTHENTICATED") await limiter.penalty(address).catch(() => {});
    return auth;
  };
}

/** Every API request, on both transports, counts against a per-minute budget. */
export function useRateLimit(options: RateLimitOptions): Plugin {
  const limiter = createRateLimiter(options);
  // By server context, which stays the same object for a request even when a plugin replaces the request.
  const states = new WeakMap<object, RateLimiterRes>();

  function headers(state: RateLimiterRes): Record<string, string> {
    const reset = Math.ceil(state.msBeforeNext / 1000);
    return {
      "ratelimit-limit": String(options.perMinute),
      "ratelimit-remaining": String(Math.max(0, state.remainingPoints)),
      "ratelimit-reset": String(reset),
      "ratelimit-policy": `${options.perMinute};w=${WINDOW_SECONDS}`,
    };
  }

  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      if (exempt.has(url.pathname) || /^\/(v1\/docs|graphiql)(\/|$)/.test(url.pathname)) return;
      const socketAddress = (serverContext as { req?: { socket?: { remoteAddress?: string } } }).req?.socket?.remoteAddress;
      const address = clientAddress(
        request.headers.get("x-forwarded-for"),
        socketAddress,
        options.trustProxy ? (options.trustProxyHops ?? 1) : undefined,
      );
      addresses.set(request, address);
      const key = rateLimitKey(await options.authenticate?.(request), address);
      try {
        states.set(serverContext, await limiter.consume(key));
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        const message = `Too many requests: at most ${options.perMinute} a minute. Retry in ${Math.ceil(rejection.msBeforeNext / 1000)} s.`;
        endResponse(
          transportErrorResponse(url.pathname, "RATE_LIMITED", message, {
            "retry-after": String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000))),
            ...headers(rejection),
          }),
        );
      }
    },
    onResponse({ serverContext, response }) {
      const state = states.get(serverContext);
      if (!state) return;
      for (const [name, value] of Object.entries(headers(state))) response.headers.set(name, value);
    },
  };
}
