import { createPubSub, type PubSubEventTarget, SlidingBuffer } from "graphql-yoga";

export type CommentCreatedEvent = { id: string; organizationId: string; entityType: string; entityId: string };

type Channels = { "comment.created": [organizationId: string, event: CommentCreatedEvent] };

/**
 * Live events, on a channel per organization. In memory by default; a shared event target (Redis)
 * lets subscribers on one replica see events published on another.
 */
export function createEvents(eventTarget?: PubSubEventTarget<Channels>) {
  // A slow subscriber loses the oldest events rather than holding memory without bound.
  return createPubSub<Channels>({ eventTarget, repeaterBuffer: new SlidingBuffer(256) });
}

export type Events = ReturnType<typeof createEvents>;
