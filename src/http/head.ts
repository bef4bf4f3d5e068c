import type { Plugin } from "graphql-yoga";

/** The requests that came as HEAD, by their server context (the request object is replaced on the way). */
const heads = new WeakSet<object>();

/** Whether the request of this server context came as HEAD (the request log names the method sent). */
export function cameAsHead(serverContext: object): boolean {
  return heads.has(serverContext);
}

/**
 * HEAD answers as GET without a body, wherever GET is allowed (RFC 9110, 9.3.2): the REST routes,
 * GraphQL over GET, the OpenAPI document and its docs, /ready, /metrics. `asGet` goes early and
 * hands the request on as a GET, so every route, check and limit treats it as one; `withoutBody`
 * goes last, once the answer has its final status and headers (its ETag and Content-Length are
 * the GET's), and drops the body.
 */
export function useHeadAsGet(): { asGet: Plugin; withoutBody: Plugin } {
  return {
    asGet: {
      onRequest({ request, serverContext, setRequest, fetchAPI }) {
        if (request.method !== "HEAD") return;
        heads.add(serverContext);
        setRequest(new fetchAPI.Request(request.url, { method: "GET", headers: request.headers, signal: request.signal }));
      },
    },
    withoutBody: {
      onResponse({ serverContext, response, setResponse, fetchAPI }) {
        if (!heads.has(serverContext) || response.body === null) return;
        // A stream (an export) is cancelled rather than read.
        response.body.cancel().catch(() => {});
        setResponse(new fetchAPI.Response(null, { status: response.status, headers: response.headers }));
      },
    },
  };
}
