import type { Plugin } from "graphql-yoga";
import type { Logger } from "pino";
import { cameAsHead } from "./head.js";
import { requestIdOf } from "./request-id.js";
import { documentOutcomeOf } from "./trusted-documents.js";
import { loggablePath } from "./unsubscribe.js";

/**
 * One JSON line per request: id, method, path, status, duration, and the trusted document it ran
 * or was refused (its id, app and version). Never headers or bodies (secrets). `start` goes early,
 * so that it times the requests other plugins answer early too; `line` goes last, so that it logs
 * the status the client gets (the REST guard turns a delete's 200 into 204 on the way out).
 */
export function useRequestLog(logger: Logger): { start: Plugin; line: Plugin } {
  const started = new WeakMap<object, { at: number; method: string; path: string }>();
  return {
    start: {
      onRequest({ request, url, serverContext }) {
        const method = cameAsHead(serverContext) ? "HEAD" : request.method;
        started.set(serverContext, { at: performance.now(), method, path: loggablePath(url.pathname) });
      },
    },
    line: {
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
    },
  };
}
