import { randomUUID } from "node:crypto";
import type { Plugin } from "graphql-yoga";

/**
 * What the service keeps on Yoga's server context. Yoga makes one server context per request and
 * passes it to every hook; the GraphQL context is built on it (on /graphql the same object, under
 * /v1 an object that inherits it, so values set in onRequest are seen by resolvers of both
 * transports). Per-request state without AsyncLocalStorage, whose promise hooks cost about a tenth
 * of the CPU of a request on Node 20.
 */
export type RequestState = { requestId?: string };

/** The caller's X-Request-Id when it is sane, else a new one. */
function requestIdFrom(headerValue: string | null): string {
  return headerValue && /^[\w.:-]{1,128}$/.test(headerValue) ? headerValue : randomUUID();
}

/** The id of the request whose server (or GraphQL) context this is. */
export function requestIdOf(context: object): string {
  return (context as RequestState).requestId ?? "none";
}

/** The first plugin: gives every request its id and returns it as X-Request-Id. */
export function useRequestId(): Plugin {
  return {
    onRequest({ request, serverContext }) {
      (serverContext as RequestState).requestId ??= requestIdFrom(request.headers.get("x-request-id"));
    },
    onResponse({ serverContext, response }) {
      response.headers.set("x-request-id", requestIdOf(serverContext));
    },
  };
}
