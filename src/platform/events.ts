import { setMaxListeners } from "node:events";
import type { PubSubEventTarget } from "graphql-yoga";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { afterCommit } from "./db/request-transaction.js";

/** A comment created or edited, on the entity whose stream carries it. */
export type CommentEvent = { id: string; organizationId: string; entityType: string; entityId: string };
export type CommentCreatedEvent = CommentEvent;
/** A comment deleted: what a DeleteCommentPayload is made of. */
export type CommentDeletedEvent = { deletedId: string; organizationId: string; entityType: string; entityId: string };
/** A policy changed: its fields, a new version, or a review step. */
export type PolicyChangedEvent = { id: string; organizationId: string };
/** A notification written for one member: its channel is the recipient's, so only they hear it. */
export type NotificationAddedEvent = { id: string; organizationId: string; recipientId: string };

type Channels = {
  "comment.created": [organizationId: string, event: CommentEvent];
  "comment.updated": [organizationId: string, event: CommentEvent];
  "comment.deleted": [organizationId: string, event: CommentDeletedEvent];
  "policy.changed": [organizationId: string, event: PolicyChangedEvent];
  "notification.added": [recipientId: string, event: NotificationAddedEvent];
};

/** At most this many events wait for a subscriber that reads slowly; past it, the oldest is lost. */
const MAX_WAITING = 256;

/**
 * One subscriber of one topic: the events `where` accepts, as an async iterator. Kept small (one
 * object, the listener itself, no closures), because a replica holds one per open stream.
 */
class TopicSubscription<T> implements AsyncIterableIterator<T> {
  private queue: T[] | undefined;
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private done = false;

  constructor(
    private readonly target: EventTarget,
    private readonly topic: string,
    private readonly where: ((event: T) => boolean) | undefined,
  ) {
    target.addEventListener(topic, this);
  }

  handleEvent(event: Event) {
    const value = (event as CustomEvent<T>).detail;
    if (this.done || (this.where && !this.where(value))) return;
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = undefined;
      waiting({ done: false, value });
      return;
    }
    this.queue ??= [];
    if (this.queue.length >= MAX_WAITING) this.queue.shift();
    this.queue.push(value);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.queue?.length) return Promise.resolve({ done: false, value: this.queue.shift() as T });
    if (this.done) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  return(): Promise<IteratorResult<T>> {
    if (!this.done) {
      this.done = true;
      this.queue = undefined;
      this.target.removeEventListener(this.topic, this);
      const waiting = this.waiting;
      this.waiting = undefined;
      waiting?.({ done: true, value: undefined });
    }
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

/**
 * Live events, on a channel per organization (per recipient for notifications). In memory by
 * default; a shared event target (Redis) lets subscribers on one replica see events published on
 * another.
 */
export function createEvents(eventTarget: PubSubEventTarget<Channels> = manyListeners()) {
  const target = eventTarget as unknown as EventTarget;
  return {
    /**
     * After the writer's answer: callers publish once their transaction has committed (a keyed
     * request's, which commits after the execution, defers it: `afterCommit`), and the fan-out to
     * subscribers (in memory, or the Redis PUBLISH) waits for the next turn of the event loop, by
     * when the writer's response has been handed to its socket.
     */
    publish<K extends keyof Channels>(channel: K, id: Channels[K][0], event: Channels[K][1]) {
      // A keyed request's change commits with the request, after the execution: not before then.
      afterCommit(() => setImmediate(() => target.dispatchEvent(new CustomEvent(`${channel}:${id}`, { detail: event }))));
    },
    /** The events of `channel` for `id` that `where` accepts, as they are published. */
    subscribe<K extends keyof Channels>(
      channel: K,
      id: Channels[K][0],
      where?: (event: Channels[K][1]) => boolean,
    ): AsyncIterableIterator<Channels[K][1]> {
      return new TopicSubscription(target, `${channel}:${id}`, where);
    },
  };
}

export type Events = ReturnType<typeof createEvents>;

/** An in-memory event target without Node's warning past 10 listeners: a channel has one per stream. */
function manyListeners(): PubSubEventTarget<Channels> {
  const target = new EventTarget();
  setMaxListeners(0, target);
  return target as unknown as PubSubEventTarget<Channels>;
}

type Listener = ((event: CustomEvent) => void) | { handleEvent(event: CustomEvent): void };

/**
 * Events through Redis pub/sub, for replicas. Live events are best effort: an event that cannot
 * be published (Redis down or slow) is logged and counted, and never fails the write that made it
 * nor the process. Subscriptions stay open through an outage; every channel is subscribed again
 * whenever the subscriber (re)connects, so events resume when Redis returns.
 */
export function createRedisEventTarget({
  publisher,
  subscriber,
  logger,
  onPublishFailure,
}: {
  publisher: Redis;
  subscriber: Redis;
  logger: Logger;
  onPublishFailure?: () => void;
}): PubSubEventTarget<Channels> {
  const listeners = new Map<string, Set<Listener>>();

  const subscribe = (channel: string) =>
    subscriber.subscribe(channel).catch((error: Error) => {
      // Retried when the subscriber is ready again.
      logger.warn({ err: error, channel }, "cannot subscribe to live events now; will when Redis answers");
    });

  subscriber.on("ready", () => {
    for (const channel of listeners.keys()) void subscribe(channel);
  });
  subscriber.on("message", (channel: string, message: string) => {
    const callbacks = listeners.get(channel);
    if (!callbacks) return;
    let detail: unknown;
    try {
      detail = message === "" ? null : JSON.parse(message);
    } catch (error) {
      logger.warn({ err: error, channel }, "ignored a live event that is not JSON");
      return;
    }
    const event = new CustomEvent(channel, { detail });
    for (const callback of callbacks) {
      if (typeof callback === "function") callback(event);
      else callback.handleEvent(event);
    }
  });

  const target = {
    addEventListener(channel: string, callback: Listener | null) {
      if (!callback) return;
      let callbacks = listeners.get(channel);
      if (!callbacks) {
        callbacks = new Set();
        listeners.set(channel, callbacks);
        void subscribe(channel);
      }
      callbacks.add(callback);
    },
    removeEventListener(channel: string, callback: Listener | null) {
      const callbacks = listeners.get(channel);
      if (!callbacks || !callback) return;
      callbacks.delete(callback);
      if (callbacks.size > 0) return;
      listeners.delete(channel);
      subscriber.unsubscribe(channel).catch(() => {});
    },
    dispatchEvent(event: CustomEvent) {
      const message = event.detail === undefined ? "" : JSON.stringify(event.detail);
      publisher.publish(event.type, message).catch((error: Error) => {
        onPublishFailure?.();
        logger.warn({ err: error, channel: event.type }, "a live event was not published (Redis unavailable)");
      });
      return true;
    },
  };
  return target as unknown as PubSubEventTarget<Channels>;
}
