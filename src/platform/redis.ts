import type { Redis } from "ioredis";
import type { Logger } from "pino";

/**
 * Whether this replica can count on Redis right now, and what it did without it. A command that
 * fails or does not answer within `timeoutMs` marks Redis unavailable at once; from then on callers
 * skip it (no request waits on a Redis that is down or frozen), and a PING every second, bounded by
 * the same timeout, finds out when it is back.
 */
export type RedisHealth = {
  readonly available: boolean;
  /** Redis's answer, or a rejection once `timeoutMs` has passed without one. */
  within<T>(command: Promise<T>): Promise<T>;
  /** A command failed or timed out: Redis is unavailable until a PING answers again. */
  failed(error: unknown): void;
  /** Decisions taken without Redis, and events that could not be published (metrics). */
  readonly counts: { localRateLimitDecisions: number; publishFailures: number };
  stop(): void;
};

export type RedisHealthOptions = { timeoutMs: number; logger: Logger };

const PROBE_INTERVAL_MS = 1_000;

export function watchRedis(client: Redis, { timeoutMs, logger }: RedisHealthOptions): RedisHealth {
  let down = false;
  let stopped = false;
  let probe: NodeJS.Timeout | undefined;
  const counts = { localRateLimitDecisions: 0, publishFailures: 0 };

  function within<T>(command: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      // After the I/O of this loop turn: when the event loop itself ran late, an answer that
      // arrived in time is read before the deadline is declared missed.
      timer = setTimeout(() => setImmediate(() => reject(new Error(`Redis did not answer within ${timeoutMs} ms`))), timeoutMs);
    });
    // A late answer or failure of an abandoned command must not become an unhandled rejection.
    command.catch(() => {});
    return Promise.race([command, timeout]).finally(() => clearTimeout(timer));
  }

  function failed(error: unknown) {
    if (down || stopped) return;
    down = true;
    logger.warn(
      { err: error, fallback: "per-replica rate limits; live events across replicas paused" },
      "redis unavailable: rate limits are counted per replica until it answers again",
    );
    probe = setInterval(() => {
      if (client.status !== "ready") return;
      within(client.ping()).then(recovered, () => {});
    }, PROBE_INTERVAL_MS);
    probe.unref();
  }

  function recovered() {
    if (!down) return;
    down = false;
    clearInterval(probe);
    logger.info("redis available again: rate limits are shared across replicas again");
  }

  // A closed connection is known at once: nothing need wait for a command to fail first.
  client.on("close", () => failed(new Error("the connection to Redis closed")));
  client.on("ready", () => {
    if (down) within(client.ping()).then(recovered, () => {});
  });

  return {
    get available() {
      return !down && client.status === "ready";
    },
    within,
    failed,
    counts,
    stop() {
      stopped = true;
      clearInterval(probe);
    },
  };
}

/**
 * The Redis clients of one replica: one for commands (rate-limit counters, publishing), one for
 * subscriptions. Neither queues commands while disconnected, and a command that does not answer
 * within `timeoutMs` fails: a Redis that is down or frozen costs a request at most that long.
 * ioredis is loaded here, only when Redis is configured (it is a twentieth of a start's time).
 */
export async function connectRedis(url: string, { timeoutMs, logger }: RedisHealthOptions) {
  const { Redis } = await import("ioredis");
  const options = {
    enableOfflineQueue: false,
    // Requests stop waiting after `timeoutMs` (RedisHealth.within); this only ends commands a
    // frozen Redis never answers, so that they do not pile up.
    commandTimeout: Math.max(1_000, timeoutMs * 5),
    connectTimeout: 5_000,
    maxRetriesPerRequest: 0,
    // Keep trying to reconnect, at most every 2 s, for as long as the process runs.
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 2_000),
  };
  const client = new Redis(url, options);
  // The subscriber waits for its replies (SUBSCRIBE) with no deadline: nothing waits on them.
  const subscriber = new Redis(url, { ...options, commandTimeout: undefined });
  let lastError = "";
  for (const [name, c] of [
    ["redis", client],
    ["redis subscriber", subscriber],
  ] as const) {
    // Once per kind of failure, not at every reconnection attempt.
    c.on("error", (error: Error) => {
      if (error.message === lastError) return;
      lastError = error.message;
      logger.warn({ err: error }, name);
    });
    c.on("ready", () => {
      lastError = "";
    });
  }
  const health = watchRedis(client, { timeoutMs, logger });
  return {
    client,
    subscriber,
    health,
    async close() {
      health.stop();
      await Promise.all([client.quit().catch(() => client.disconnect()), subscriber.quit().catch(() => subscriber.disconnect())]);
    },
  };
}

export type RedisConnection = Awaited<ReturnType<typeof connectRedis>>;
