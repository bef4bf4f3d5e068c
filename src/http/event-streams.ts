import { useCSRFPrevention } from "@graphql-yoga/plugin-csrf-prevention";
import type { Plugin } from "graphql-yoga";
import { isSameOriginEventStream } from "../auth/event-stream-requests.js";

/** Yoga's CSRF prevention, letting a same-origin EventSource through (see auth/event-stream-requests.ts). */
export function useCsrfPreventionExceptSameOriginEventStreams(options: { requestHeaders: string[] }): Plugin {
  const csrf = useCSRFPrevention(options) as Plugin;
  return {
    onRequestParse(payload) {
      if (isSameOriginEventStream(payload.request)) return;
      return csrf.onRequestParse?.(payload);
    },
  };
}
