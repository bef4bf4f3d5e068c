import { Readable, type Writable } from "node:stream";
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

const PING = Buffer.from(":\n\n");
const COMPLETE = Buffer.from("event: complete\ndata:\n\n");

/** The SSE bytes of a result, once per result object however many streams carry it. */
const framed = new WeakMap<object, Buffer>();
function frame(result: ExecutionResult): Buffer {
  let bytes = framed.get(result);
  if (!bytes) {
    bytes = Buffer.from(`event: next\ndata: ${JSON.stringify(result)}\n\n`);
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

/** What authentication reads from a request: streams that send the same are checked together. */
const authHeaders = ["x-api-key", "authorization", "cookie", "x-organization-id", "origin", "host", "sec-fetch-site", "accept"];

/**
 * One credential as streams send it, checked again for all of them at once. It keeps a copy of
 * the headers authentication reads, not a stream's request (which holds its socket and body).
 */
type Credential = {
  readonly fingerprint: string;
  readonly request: Request;
  readonly streams: Set<Stream>;
  checkedAt: number;
  state: Promise<AuthState | null> | undefined;
};

const noop = () => {};

/**
 * A stream's SSE body. Under the HTTP server, which pipes a Node Readable body into the response,
 * it takes the response as its destination and writes the bytes to it directly: no stream
 * machinery between an event and the socket, nothing per stream but the response. Read in process
 * (`app.fetch`), it is an ordinary Readable.
 */
class SseBody extends Readable {
  private res: Writable | undefined;
  private ended = false;

  constructor(private readonly stream: Stream) {
    super({ read: noop });
    // A first comment line at once: some browsers hold a fetch until the body starts.
    this.push(PING);
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T): T {
    const res = destination as unknown as Writable;
    for (let chunk = this.read(); chunk !== null; chunk = this.read()) res.write(chunk);
    this.res = res;
    // Node keeps a response's header block for as long as the response lives, as the forty-odd
    // pieces it was concatenated from (about 1.2 KB a stream). Reading a character makes V8 flatten
    // it into one string; nothing is changed.
    const header = (res as { _header?: unknown })._header;
    if (typeof header === "string") header.charCodeAt(0);
    if (this.ended) res.end();
    return destination;
  }

  send(bytes: Buffer) {
    if (this.ended) return;
    if (this.res) this.res.write(bytes);
    else this.push(bytes);
  }

  finish() {
    if (this.ended) return;
    this.ended = true;
    if (this.res) this.res.end();
    else this.push(null);
  }

  /** Bytes written but not yet taken by the reader (Node's and the socket's buffers, or here). */
  get unread() {
    return this.res ? this.res.writableLength : this.readableLength;
  }

  /** Breaks the stream off: the reader finds its response cut short. */
  cutOff() {
    this.ended = true;
    this.destroy();
    this.res?.destroy();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void) {
    this.stream.stop();
    callback(error);
  }
}

/**
 * One open subscription: its event source, what executing an event needs (the selection and a
 * context factory, not the request's GraphQL context), its credential, and its SSE body once the
 * response starts. Without an SSE body (another transport) it is the async iterator Yoga reads.
 */
class Stream implements AsyncIterableIterator<ExecutionResult> {
  body: SseBody | undefined;
  private queue: ExecutionResult[] = [];
  private waiting: ((result: IteratorResult<ExecutionResult>) => void) | undefined;
  done = false;

  constructor(
    readonly events: AsyncIterator<unknown>,
    readonly args: ExecutionArgs,
    readonly key: string,
    readonly auth: AuthState,
    readonly credential: Credential,
    /** Frees the stream's places under the caps. */
    readonly release: () => void,
    private readonly onStop: (stream: Stream) => void,
  ) {}

  [Symbol.asyncIterator]() {
    return this;
  }

  /** Hands a result to the reader: written to the body, or queued for the iterator. */
  send(result: ExecutionResult) {
    if (this.done) return;
    if (this.body) return this.body.send(frame(result));
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ done: false, value: result });
    } else this.queue.push(result);
  }

  attach(body: SseBody) {
    this.body = body;
    for (const result of this.queue.splice(0)) body.send(frame(result));
    // Ended before its response started (refused, lapsed, shutdown): complete it all the same.
    if (this.done) {
      body.send(COMPLETE);
      body.finish();
    }
  }

  /** Ends the stream (`event: complete`), after one last error event when `error` is given. */
  end(error?: GraphQLError) {
    if (this.done) return;
    if (error) this.send({ errors: [error] });
    this.body?.send(COMPLETE);
    this.body?.finish();
    this.stop();
  }

  /** No more events: the source is let go and the stream's places are freed. */
  stop() {
    if (this.done) return;
    this.done = true;
    void this.events.return?.();
    this.onStop(this);
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
    this.stop();
    return Promise.resolve({ done: true, value: undefined });
  }
}

/**
 * Open GraphQL subscriptions of one app, served as server-sent events (graphql-sse's distinct
 * connections mode, as Yoga serves them), built to hold many thousands per replica:
 * - once a subscription is set up, a stream keeps its event source, its selection, a context
 *   factory and its credential; the request, its GraphQL context and Yoga's result chain are let go
 *   (each stream would otherwise hold about 30 KB: bench/results/2026-11-26-streams.md);
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
  eventContext,
  maskResult,
  limits,
}: {
  authenticate: (request: Request) => Promise<AuthState>;
  /**
   * From the subscriber's GraphQL context, what builds the context of one more execution (new
   * loaders): it keeps only what it needs, so that the stream does not hold the request's context.
   */
  eventContext: (context: unknown) => () => unknown;
  /** Masks the unexpected errors of a result (and logs their causes), as Yoga does for a response. */
  maskResult: (result: ExecutionResult) => ExecutionResult;
  limits: LiveStreamLimits;
}) {
  const streams = new Set<Stream>();
  const byRequest = new WeakMap<Request, Stream>();
  const turn = createTurns();
  const credentials = new Map<string, Credential>();
  const perCredential = new Map<string, number>();
  const perOrganization = new Map<string, number>();
  const counts = { droppedSlowReader: 0, refusedPerCredential: 0, refusedPerOrganization: 0, endedLapsed: 0 };
  /** One copy of each sharing key for all its streams (built per subscription, it is a tree of strings). */
  const sharingKeys = new Map<string, { key: string; streams: number }>();
  /** Results of one event by sharing key, for as long as the event object lives. */
  const shared = new WeakMap<object, Map<string, Promise<ExecutionResult>>>();
  let heartbeat: NodeJS.Timeout | undefined;
  let sweep: NodeJS.Timeout | undefined;

  /** An error as a stream's last event carries it: masked like any result's (and its cause logged). */
  const masked = (error: GraphQLError) => maskResult({ errors: [error] }).errors?.[0] as GraphQLError;

  /** Recent checks answer again: an event for 5,000 streams of a few users checks each user once. */
  const check = (credential: Credential): Promise<AuthState | null> => {
    const now = Date.now();
    if (credential.state && now - credential.checkedAt < CHECK_REUSE_MS) return credential.state;
    credential.checkedAt = now;
    credential.state = authenticate(credential.request).catch(() => null);
    return credential.state;
  };

  const credentialFor = (request: Request, caller: Caller): Credential => {
    const headers = authHeaders.flatMap((name): [string, string][] => {
      const value = request.headers.get(name);
      return value === null ? [] : [[name, value]];
    });
    const fingerprint = `${request.url}\u0000${caller.organizationId}\u0000${headers.join("\u0000")}`;
    let credential = credentials.get(fingerprint);
    if (!credential) {
      credential = {
        fingerprint,
        request: new Request(request.url, { headers }),
        streams: new Set(),
        checkedAt: 0,
        state: undefined,
      };
      credentials.set(fingerprint, credential);
    }
    return credential;
  };

  const bump = (map: Map<string, number>, key: string, by: number) => {
    const n = (map.get(key) ?? 0) + by;
    if (n > 0) map.set(key, n);
    else map.delete(key);
  };

  function startTimers() {
    heartbeat ??= setInterval(() => {
      for (const s of streams) if (s.body && s.body.unread === 0) s.body.send(PING);
    }, limits.heartbeatMs).unref();
    sweep ??= setInterval(async () => {
      for (const credential of credentials.values()) {
        const now = await check(credential);
        if (!now) continue;
        for (const s of credential.streams) {
          const error = lapsed(s.auth, now);
          if (error) {
            counts.endedLapsed++;
            s.end(masked(error));
          }
        }
      }
    }, CHECK_EVERY_MS).unref();
  }

  /** Shared by every stream: a closure made per subscription would hold its request. */
  function stopped(stream: Stream) {
    streams.delete(stream);
    stream.credential.streams.delete(stream);
    if (stream.credential.streams.size === 0) credentials.delete(stream.credential.fingerprint);
    const sharing = sharingKeys.get(stream.key);
    if (sharing && --sharing.streams === 0) sharingKeys.delete(stream.key);
    stream.release();
    if (streams.size === 0) {
      clearInterval(heartbeat);
      clearInterval(sweep);
      heartbeat = undefined;
      sweep = undefined;
    }
  }

  /** One event's result for this subscriber: shared with every subscriber of the same key. */
  function resultFor(stream: Stream, payload: unknown, context: () => unknown): Promise<ExecutionResult> {
    // Fresh loaders for each event: a stream lives for hours, and loaders would answer from what
    // they cached at the first event.
    const run = () => Promise.resolve(execute({ ...stream.args, contextValue: context(), rootValue: payload })).then(maskResult);
    if (typeof payload !== "object" || payload === null) return run();
    let byKey = shared.get(payload);
    if (!byKey) {
      byKey = new Map();
      shared.set(payload, byKey);
    }
    let result = byKey.get(stream.key);
    if (!result) {
      result = run();
      byKey.set(stream.key, result);
    }
    return result;
  }

  /** Writes the stream's events as they come, until its source ends or the stream stops. */
  async function deliver(stream: Stream, context: () => unknown) {
    try {
      for (;;) {
        const next = await stream.events.next();
        if (next.done || stream.done) break;
        // Checked before every event, so a subscriber who lost access hears nothing more.
        const now = await check(stream.credential);
        const error = now ? lapsed(stream.auth, now) : null;
        if (error) {
          counts.endedLapsed++;
          stream.end(masked(error));
          return;
        }
        const result = await resultFor(stream, next.value, context);
        // Thousands of streams get one event at once: they take turns, a batch per turn of the
        // event loop, so that requests in flight (the writer's own) are not held.
        await turn();
        stream.send(result);
        const body = stream.body;
        if (body && body.unread > limits.maxBufferedBytes) {
          counts.droppedSlowReader++;
          stream.stop();
          // Without an error: nothing listens for one on a body the server pipes, and an error
          // event nobody listens for would end the process.
          body.cutOff();
        }
      }
      stream.end();
    } catch (error) {
      stream.end(masked(error instanceof GraphQLError ? error : new GraphQLError((error as Error).message)));
    }
  }

  function subscribeFor(request: Request, auth: { caller: Caller }, release: () => void) {
    return async (args: ExecutionArgs) => {
      const { signal: _signal, contextValue, ...plain } = args as ExecutionArgs & { signal?: AbortSignal };
      let source: AsyncIterable<unknown> | ExecutionResult;
      try {
        source = await createSourceEventStream(args);
      } catch (error) {
        release();
        throw error;
      }
      if (!(Symbol.asyncIterator in source)) {
        release();
        return source;
      }
      const credential = credentialFor(request, auth.caller);
      const key = sharingKey(args, auth.caller);
      let sharing = sharingKeys.get(key);
      if (!sharing) {
        sharing = { key, streams: 0 };
        sharingKeys.set(key, sharing);
      }
      sharing.streams++;
      const stream = new Stream(
        (source as AsyncIterable<unknown>)[Symbol.asyncIterator](),
        plain,
        sharing.key,
        auth,
        credential,
        release,
        stopped,
      );
      streams.add(stream);
      credential.streams.add(stream);
      byRequest.set(request, stream);
      startTimers();
      void deliver(stream, eventContext(contextValue));
      return stream;
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
      const stream = byRequest.get(request);
      if (!stream) return;
      // Yoga's result (our stream behind its wrappers) is not read: the stream writes to its body.
      setResultProcessor((_result, fetchAPI) => {
        const body = new SseBody(stream);
        stream.attach(body);
        return new fetchAPI.Response(body as never, {
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
      }, "text/event-stream");
    },
  };

  return {
    plugin,
    counts: {
      get open() {
        return streams.size;
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
      for (const s of streams) s.end();
    },
  };
}

export type LiveStreams = ReturnType<typeof createLiveStreams>;
