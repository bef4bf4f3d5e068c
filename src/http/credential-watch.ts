import type { ExecutionResult } from "graphql";
import type { Plugin } from "graphql-yoga";
import { CREDENTIAL_CACHE_MS } from "../auth/authenticate.js";
import type { AuthState } from "../auth/caller.js";
import { type AppError, ForbiddenError } from "../platform/errors.js";

/** How often an open stream checks its credential again (the cache answers most checks). */
const CHECK_EVERY_MS = Math.max(100, Math.floor(CREDENTIAL_CACHE_MS / 4));

/** Why the credential of `before` no longer holds, or null while it does. */
function lapsed(before: AuthState, now: AuthState): AppError | null {
  if ("error" in now) return now.error;
  if (!("caller" in now) || !("caller" in before)) return new ForbiddenError("The credential of this stream no longer holds");
  const lost = [...before.caller.permissions].find((p) => !now.caller.permissions.has(p));
  return lost ? new ForbiddenError(`The credential of this stream lost the permission ${lost}`) : null;
}

/** `source`, ended with one error event as soon as `check` reports one. */
function endWhenLapsed(
  source: AsyncIterable<ExecutionResult>,
  check: () => Promise<AppError | null>,
): AsyncIterableIterator<ExecutionResult> {
  const iterator = source[Symbol.asyncIterator]();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const failure = new Promise<AppError>((resolve) => {
    const tick = async () => {
      if (stopped) return;
      const error = await check().catch(() => null);
      if (error) resolve(error);
      else if (!stopped) timer = setTimeout(tick, CHECK_EVERY_MS);
    };
    timer = setTimeout(tick, CHECK_EVERY_MS);
  });
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    await iterator.return?.();
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (stopped) return { done: true, value: undefined };
      const next = await Promise.race([iterator.next(), failure.then((error) => ({ error }))]);
      if ("error" in next) {
        await stop();
        return { done: false, value: { errors: [next.error] } };
      }
      if (next.done) await stop();
      return next;
    },
    async return() {
      await stop();
      return { done: true, value: undefined };
    },
  };
}

/**
 * Open subscriptions end (with an error event) once their credential is revoked or expires, the
 * member is deactivated or loses a permission: the request's credential is checked again every
 * CHECK_EVERY_MS, so a stream outlives its credential by at most the credential cache's lifetime.
 */
export function useCredentialWatch(authenticate: (request: Request) => Promise<AuthState>): Plugin {
  return {
    onSubscribe({ args }) {
      const context = args.contextValue as { request?: Request; auth?: AuthState };
      const { request, auth } = context;
      if (!request || !auth || !("caller" in auth)) return;
      return {
        onSubscribeResult({ result, setResult }) {
          if (!(Symbol.asyncIterator in result)) return;
          setResult(endWhenLapsed(result, async () => lapsed(auth, await authenticate(request))));
        },
      };
    },
  };
}
