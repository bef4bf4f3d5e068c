import type { Plugin } from "graphql-yoga";
import type { Logger } from "pino";
import { requestIdOf } from "./request-id.js";
import { documentOutcomeOf } from "./trusted-documents.js";
import { loggablePath } from "./unsubscribe.js";

/**
 * One JSON line per request: id, method, path, status, duration, and the trusted document it ran
 * or was refused (its id, app and version). Never headers or bodies (secrets).
 */
export function useRequestLog(logger: Logger): Plugin {
  const started = new WeakMap<object, { at: number; method: string; path: string }>();
  return {
    onRequest({ request, url, serverContext }) {
      started.set(serverContext, { at: performance.now(), method: request.method, path: loggablePath(url.pathname) });
    },
    onResponse({ serverContext, response }) {
      const start = started.get(serverContext);
      if (!start) return;
      const document = documentOutcomeOf(serverContext);
      logger.info(
        {
          requestId: requestIdOf(serverContext),
          method: start.method,
          path: start.path,
          status: response.status,
          ms: Math.round((performance.now() - start.at) * 10) / 10,
          ...(document ? { document } : {}),
        },
        "request",
      );
    },
  };
}
