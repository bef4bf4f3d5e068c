import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

type RequestStore = { requestId: string; span?: unknown };

const storage = new AsyncLocalStorage<RequestStore>();

/** Runs `fn` with a request id: the caller's X-Request-Id when it is sane, else a new one. */
export function withRequestId<T>(headerValue: string | null | undefined, fn: () => T): T {
  const requestId = headerValue && /^[\w.:-]{1,128}$/.test(headerValue) ? headerValue : randomUUID();
  return storage.run({ requestId }, fn);
}

export function currentRequestId(): string {
  return storage.getStore()?.requestId ?? "none";
}

/** Per-request slot for the request's tracing span (see tracing.ts). */
export function requestStore(): RequestStore | undefined {
  return storage.getStore();
}
