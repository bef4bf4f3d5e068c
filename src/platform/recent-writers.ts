import type { Redis } from "ioredis";
import type { RedisHealth } from "./redis.js";

/**
 * Callers who wrote within the last `windowMs`, shared by every replica of the service through
 * Redis (in this process only without it). Their reads stay on the primary for that long, so a
 * caller never misses its own write on a replica that is behind, whichever service replica it
 * reaches next. When Redis cannot say (down, too slow), every caller counts as a recent writer:
 * reads then go to the primary, never to a replica that may miss a write.
 */
export type RecentWriters = {
  wrote(caller: string): Promise<void>;
  wroteRecently(caller: string): Promise<boolean>;
};

export function recentWriters(options: {
  windowMs: number;
  redis?: Redis;
  redisHealth?: RedisHealth;
  keyPrefix: string;
}): RecentWriters {
  const { windowMs, redis, redisHealth, keyPrefix } = options;
  if (redis && redisHealth) {
    const key = (caller: string) => `${keyPrefix}${caller}`;
    return {
      async wrote(caller) {
        if (!redisHealth.available) return;
        await redisHealth.within(redis.set(key(caller), "1", "PX", windowMs)).catch((error) => redisHealth.failed(error));
      },
      async wroteRecently(caller) {
        if (!redisHealth.available) return true;
        try {
          return (await redisHealth.within(redis.exists(key(caller)))) === 1;
        } catch (error) {
          redisHealth.failed(error);
          return true;
        }
      },
    };
  }
  const until = new Map<string, number>();
  return {
    async wrote(caller) {
      const now = Date.now();
      if (until.size > 10_000) for (const [k, t] of until) if (t <= now) until.delete(k);
      until.set(caller, now + windowMs);
    },
    async wroteRecently(caller) {
      return (until.get(caller) ?? 0) > Date.now();
    },
  };
}
