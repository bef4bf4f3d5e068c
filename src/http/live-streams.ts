import {
  createSourceEventStream,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  execute,
  GraphQLError,
} from "graphql";
import type { Plugin } from "graphql-yoga";
import type { AuthState, Caller } from "../auth/caller.js";
import type { LiveStreamLimits } from "../platform/config.js";
import { TooManyStreamsError } from "../platform/errors.js";
import { CHECK_EVERY_MS, lapsed } from "./credential-watch.js";

export type LiveStreamCounts = {
  readonly open: number;
  readonly droppedSlowReader: number;
  readonly refusedPerCredential: number;
  readonly refusedPerOrganization: number;
  readonly endedLapsed: number;
};

const encoder = new TextEncoder();
const PING = encoder.encode(":\n\n");
const COMPLETE = encoder.encode("event: complete\ndata:\n\n");
const UNEXPECTED = encoder.encode(
  `event: next\ndata: ${JSON.stringify({ errors: [{ message: "Unexpected error.", extensions: { code: "INTERNAL_SERVER_ERROR" } }] })}\n\n`,
);

/** The SSE bytes of a result, once per result object however many streams carry it. */
const framed = new WeakMap<object, Uint8Array>();
function frame(result: ExecutionResult): Uint8Array {
  let bytes = framed.get(result);
  if (!bytes) {
    bytes = encoder.encode(`event: next\ndata: ${JSON.stringify(result)}\n\n`);
    framed.set(result, bytes);
  }
  return bytes;
}

/** Sequential ids of parsed documents: Yoga's parser cache hands out one object per query text. */
const documentIds = new WeakMap<DocumentNode, number>();
let nextDocumentId = 1;
function documentId(document: DocumentNode): number {
  let id = documentIds.get(document);
  if (id === undefined) {
    id = nextDocumentId++;
    documentIds.set(document, id);
  }
  return id;
}

/**
 * What the result of one event can depend on besides the event: the selection (document,
 * variables, operation) and what the caller may read. Member fields beyond the directory are open
 * to the member themself without `member:read` (members.schema.ts), so the user counts only then.
 */
function sharingKey(args: ExecutionArgs, caller: Caller): string {
  const permissions = [...caller.permissions].sort().join(",");
  const self = caller.permissions.has("member:read") ? "" : (caller.userId ?? "");
  return `${documentId(args.document)}\u0000${args.operationName ?? ""}\u0000${JSON.stringify(args.variableValues ?? {})}\u0000${caller.organizationId}\u0000${permissions}\u0000${self}`;
}

/** Streams that write an event in one turn of the event loop. */
const STREAMS_PER_TURN = 100;

/** A promise per caller, resolved STREAMS_PER_TURN at a time, one batch per turn of the event loop. */
function createTurns() {
  const waiting: (() => void)[] = [];
  let scheduled = false;
  const run = () => {
    for (const resolve of waiting.splice(0, STREAMS_PER_TURN)) resolve();
    if (waiting.length > 0) setImmediate(run);
    else scheduled = false;
  };
  return () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (!scheduled) {
        scheduled = true;
        setImmediate(run);
      }
    });
}

/** How long one check of a credential answers for every stream that sends it. */
const CHECK_REUSE_MS = 250;

/** Who a stream counts against: one API key, or one user's sessions or JWTs. */
const credentialOf = (caller: Caller) => (caller.apiKeyId ? `key:${caller.apiKeyId}` : `${caller.kind}:${caller.userId}`);

/** The headers that carry a credential: streams that send the same ones are checked together. */
const credentialHeaders = ["x-api-key", "authorization", "cookie", "x-organization-id"] as const;
const credentialFingerprint = (request: Request) => credentialHeaders.map((h) => request.headers.get(h) ?? "").join("\u0000");

/** A subscription's results as an async iterator, fed by a loop of its own and ended from outside. */
class Subscription implements AsyncIterableIterator<ExecutionResult> {
  private readonly queue: ExecutionResult[] = [];
  private waiting: ((result: IteratorResult<ExecutionResult>) => void) | undefined;
  private done = false;
  onEnd: (() => void) | undefined;

  constructor(
    readonly request: Request,
    readonly auth: AuthState,
    private readonly stopSource: () => void,
  ) {}

  [Symbol.asyncIterator]() {
    return this;
  }

  push(result: ExecutionResult) {
    if (this.done) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ done: false, value: result });
    } else this.queue.push(result);
  }

  /** Ends the stream, after one last error event when `error` is given. */
  end(error?: GraphQLError) {
    if (this.done) return;
    if (error) this.push({ errors: [error] });
    this.done = true;
    this.stopSource();
    this.onEnd?.();
    if (this.waiting && this.queue.length === 0) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ done: true, value: undefined });
    }
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    const value = this.queue.shift();
    if (value) return Promise.resolve({ done: false, value });
    if (this.done) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  return(): Promise<IteratorResult<ExecutionResult>> {
    this.queue.length = 0;
    this.end();
    return Promise.resolve({ done: true, value: undefined });
  }
}

/** An SSE response body: bytes wait here for the reader, and a reader that falls behind is dropped. */
type Writer = {
  chunks: Uint8Array[];
  bytes: number;
  closed: boolean;
  controller: ReadableStreamDefaultController<Uint8Array>;
  waiting: { controller: ReadableStreamDefaultController<Uint8Array>; resolve: () => void } | undefined;
  stop: () => void;
};

/**
 * Open GraphQL subscriptions of one app, served as server-sent events (graphql-sse's distinct
 * connections mode, as Yoga serves them), built to hold many thousands per replica:
 * - an event's result is executed once per sharing key (selection and permission set; see
 *   sharingKey), and its SSE bytes are encoded once, then written to every stream that shares them;
 * - each subscriber's credential is checked again before every event it receives, and on one timer
 *   for all streams (once per distinct credential), so a stream ends once its credential lapses;
 * - one heartbeat timer for all streams writes an SSE comment line to the idle ones;
 * - a stream whose unread bytes pass `maxBufferedBytes` is dropped, and the others are not held;
 * - open streams are capped per credential and per organization;
 * - `closeAll()` completes every stream (shutdown).
 */
export function createLiveStreams({
  authenticate,
  freshContext,
  limits,
}: {
  authenticate: (request: Request) => Promise<AuthState>;
  /** The subscriber's GraphQL context for one more execution (new loaders). */
  freshContext: (context: unknown) => unknown;
  limits: LiveStreamLimits;
}) {
  const subscriptions = new Set<Subscription>();
  const turn = createTurns();
  const writers = new Set<Writer>();
  const perCredential = new Map<string, number>();
  const perOrganization = new Map<string, number>();
  const counts = { droppedSlowReader: 0, refusedPerCredential: 0, refusedPerOrganization: 0, endedLapsed: 0 };
  /** Results of one event by sharing key, for as long as the event object lives. */
  const shared = new WeakMap<object, Map<string, Promise<ExecutionResult>>>();
  let heartbeat: NodeJS.Timeout | undefined;
  let sweep: NodeJS.Timeout | undefined;
  /** Recent checks by credential: an event for 5,000 streams of a few users checks each user once. */
  const checks = new Map<string, { at: number; state: Promise<AuthState | null> }>();
  const check = (request: Request): Promise<AuthState | null> => {
    const key = credentialFingerprint(request);
    const now = Date.now();
    const recent = checks.get(key);
    if (recent && now - recent.at < CHECK_REUSE_MS) return recent.state;
    const state = authenticate(request).catch(() => null);
    checks.set(key, { at: now, state });
    return state;
  };

  const bump = (map: Map<string, number>, key: string, by: number) => {
    const n = (map.get(key) ?? 0) + by;
    if (n > 0) map.set(key, n);
    else map.delete(key);
  };

  function write(writer: Writer, chunk: Uint8Array) {
    if (writer.closed) return;
    const waiting = writer.waiting;
    if (waiting) {
      writer.waiting = undefined;
      waiting.controller.enqueue(chunk);
      waiting.resolve();
      return;
    }
    writer.chunks.push(chunk);
    writer.bytes += chunk.byteLength;
    if (writer.bytes > limits.maxBufferedBytes) {
      counts.droppedSlowReader++;
      finish(writer);
      writer.chunks = [];
      writer.bytes = 0;
      writer.controller.error(new Error("the reader of this event stream fell behind"));
    }
  }

  /** No more bytes for this writer but those it holds. */
  function finish(writer: Writer) {
    if (writer.closed) return;
    writer.closed = true;
    writers.delete(writer);
    if (writers.size === 0) {
      clearInterval(heartbeat);
      heartbeat = undefined;
    }
    writer.stop();
  }

  function complete(writer: Writer) {
    if (writer.closed) return;
    write(writer, COMPLETE);
    finish(writer);
    const waiting = writer.waiting;
    if (waiting) {
      writer.waiting = undefined;
      waiting.controller.close();
      waiting.resolve();
    }
  }

  /** The reader left: nothing more to send, and a read it left pending ends. */
  function abandon(writer: Writer) {
    finish(writer);
    writer.chunks = [];
    writer.bytes = 0;
    const waiting = writer.waiting;
    writer.waiting = undefined;
    try {
      (waiting?.controller ?? writer.controller).close();
    } catch {
      // Already closed or errored.
    }
    waiting?.resolve();
  }

  function sseResponse(
    result: AsyncIterable<ExecutionResult>,
    fetchAPI: { ReadableStream: typeof ReadableStream; Response: typeof Response },
    signal: AbortSignal | undefined,
  ) {
    const iterator = result[Symbol.asyncIterator]();
    let writer: Writer;
    const body = new fetchAPI.ReadableStream<Uint8Array>({
      start(controller) {
        // A first comment line at once: some browsers hold a fetch until the body starts.
        controller.enqueue(PING);
        writer = {
          chunks: [],
          bytes: 0,
          closed: false,
          controller,
          waiting: undefined,
          stop: () => void iterator.return?.(),
        };
        writers.add(writer);
        signal?.addEventListener("abort", () => abandon(writer), { once: true });
        heartbeat ??= setInterval(() => {
          for (const w of writers) if (w.chunks.length === 0) write(w, PING);
        }, limits.heartbeatMs).unref();
        void (async () => {
          try {
            for (;;) {
              const next = await iterator.next();
              if (next.done) break;
              write(writer, frame(next.value));
            }
          } catch {
            write(writer, UNEXPECTED);
          }
          complete(writer);
        })();
      },
      pull(controller) {
        const chunk = writer.chunks.shift();
        if (chunk) {
          writer.bytes -= chunk.byteLength;
          controller.enqueue(chunk);
          return;
        }
        if (writer.closed) {
          controller.close();
          return;
        }
        return new Promise<void>((resolve) => {
          writer.waiting = { controller, resolve };
        });
      },
      cancel() {
        abandon(writer);
      },
    });
    return new fetchAPI.Response(body, {
      status: 200,
      headers: {
        "content-type": "text/event-stream",
        connection: "keep-alive",
        "cache-control": "no-cache",
        "content-encoding": "none",
        // nginx buffers responses unless told not to; a buffered stream never reaches its reader.
        "x-accel-buffering": "no",
      },
    });
  }

  function startSweep() {
    sweep ??= setInterval(async () => {
      if (subscriptions.size === 0) {
        clearInterval(sweep);
        sweep = undefined;
        return;
      }
      const stale = Date.now() - CHECK_REUSE_MS;
      for (const [key, recent] of checks) if (recent.at < stale) checks.delete(key);
      const groups = new Map<string, Subscription[]>();
      for (const s of subscriptions) {
        const key = credentialFingerprint(s.request);
        const group = groups.get(key);
        if (group) group.push(s);
        else groups.set(key, [s]);
      }
      for (const group of groups.values()) {
        const first = group[0] as Subscription;
        const now = await check(first.request);
        if (!now) continue;
        for (const s of group) {
          const error = lapsed(s.auth, now);
          if (error) {
            counts.endedLapsed++;
            s.end(error);
          }
        }
      }
    }, CHECK_EVERY_MS).unref();
  }

  /** One event's result for this subscriber: shared with every subscriber of the same key. */
  function resultFor(args: ExecutionArgs, key: string, payload: unknown): Promise<ExecutionResult> {
    // Fresh loaders for each event: a stream lives for hours, and its request's loaders would
    // answer from what they cached at the first event.
    const contextValue = freshContext(args.contextValue);
    const run = () => Promise.resolve(execute({ ...args, contextValue, rootValue: payload }));
    if (typeof payload !== "object" || payload === null) return run();
    let byKey = shared.get(payload);
    if (!byKey) {
      byKey = new Map();
      shared.set(payload, byKey);
    }
    let result = byKey.get(key);
    if (!result) {
      result = run();
      byKey.set(key, result);
    }
    return result;
  }

  function subscribeFor(request: Request, auth: { caller: Caller }, release: () => void) {
    return async (args: ExecutionArgs) => {
      const { signal: _signal, ...plain } = args as ExecutionArgs & { signal?: AbortSignal };
      let source: AsyncIterable<unknown> | ExecutionResult;
      try {
        source = await createSourceEventStream(plain);
      } catch (error) {
        release();
        throw error;
      }
      if (!(Symbol.asyncIterator in source)) {
        release();
        return source;
      }
      const events = (source as AsyncIterable<unknown>)[Symbol.asyncIterator]();
      const key = sharingKey(plain, auth.caller);
      const subscription = new Subscription(request, auth, () => void events.return?.());
      subscription.onEnd = () => {
        subscriptions.delete(subscription);
        release();
      };
      subscriptions.add(subscription);
      startSweep();
      void (async () => {
        try {
          for (;;) {
            const next = await events.next();
            if (next.done) break;
            // Checked before every event, so a subscriber who lost access hears nothing more.
            const now = await check(request);
            const error = now ? lapsed(auth, now) : null;
            if (error) {
              counts.endedLapsed++;
              subscription.end(error);
              return;
            }
            const result = await resultFor(plain, key, next.value);
            // Thousands of streams get one event at once: they take turns, a batch per turn of
            // the event loop, so that requests in flight (the writer's own) are not held.
            await turn();
            subscription.push(result);
          }
          subscription.end();
        } catch (error) {
          subscription.end(error instanceof GraphQLError ? error : new GraphQLError((error as Error).message));
        }
      })();
      return subscription;
    };
  }

  const plugin: Plugin = {
    onSubscribe({ args, setSubscribeFn, setResultAndStopExecution }) {
      const { request, auth } = args.contextValue as { request?: Request; auth?: AuthState };
      // Anonymous callers are refused by the fields themselves.
      if (!request || !auth || !("caller" in auth)) return;
      const { caller } = auth;
      const credential = credentialOf(caller);
      if ((perCredential.get(credential) ?? 0) >= limits.perCredential) {
        counts.refusedPerCredential++;
        setResultAndStopExecution({
          errors: [new TooManyStreamsError(`This credential has ${limits.perCredential} open streams, the most it may have`)],
        });
        return;
      }
      if ((perOrganization.get(caller.organizationId) ?? 0) >= limits.perOrganization) {
        counts.refusedPerOrganization++;
        setResultAndStopExecution({
          errors: [new TooManyStreamsError(`This organization has ${limits.perOrganization} open streams, the most it may have`)],
        });
        return;
      }
      bump(perCredential, credential, 1);
      bump(perOrganization, caller.organizationId, 1);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        bump(perCredential, credential, -1);
        bump(perOrganization, caller.organizationId, -1);
      };
      setSubscribeFn(subscribeFor(request, auth, release) as never);
    },
    onResultProcess({ request, result, setResultProcessor }) {
      if (!(Symbol.asyncIterator in (result as object))) return;
      if (!(request.headers.get("accept") ?? "").includes("text/event-stream")) return;
      setResultProcessor(
        (r, fetchAPI) => sseResponse(r as AsyncIterable<ExecutionResult>, fetchAPI as never, request.signal),
        "text/event-stream",
      );
    },
  };

  return {
    plugin,
    counts: {
      get open() {
        return subscriptions.size;
      },
      get droppedSlowReader() {
        return counts.droppedSlowReader;
      },
      get refusedPerCredential() {
        return counts.refusedPerCredential;
      },
      get refusedPerOrganization() {
        return counts.refusedPerOrganization;
      },
      get endedLapsed() {
        return counts.endedLapsed;
      },
    } satisfies LiveStreamCounts,
    /** Completes every open stream (`event: complete`), so that clients reconnect elsewhere. */
    closeAll() {
      for (const s of subscriptions) s.end();
      for (const w of writers) complete(w);
    },
  };
}

export type LiveStreams = ReturnType<typeof createLiveStreams>;
