import "./dev-mode.js";
import { ApolloClient, ApolloLink, type FieldPolicy, HttpLink, InMemoryCache, Observable } from "@apollo/client";
import { loadDevMessages, loadErrorMessages } from "@apollo/client/dev";
import { relayStylePagination } from "@apollo/client/utilities";
import { fetchExchange, subscriptionExchange, Client as UrqlClient } from "@urql/core";
import { cacheExchange } from "@urql/exchange-graphcache";
import { relayPagination } from "@urql/exchange-graphcache/extras";
import { OperationTypeNode, print } from "graphql";
import { createClient as createSseClient, type Client as SseClient, type ClientOptions as SseClientOptions } from "graphql-sse";
import {
  Environment,
  type GraphQLResponse,
  Network,
  RecordSource,
  Observable as RelayObservable,
  type RequestParameters,
  Store,
  type Variables,
} from "relay-runtime";
import { afterEach, beforeEach, expect, type MockInstance, vi } from "vitest";
import type { TestApp } from "../helpers/test-app.js";

loadDevMessages();
loadErrorMessages();

/** The headers of one credential: `X-API-Key`, or a session's bearer token and `X-Organization-Id`. */
export type Credential = Record<string, string>;

/** What went over the wire: one entry per HTTP request, the operation's name (or "?" when unnamed). */
export type Traffic = { operations: string[] };

const url = "http://test/graphql";

/**
 * The `fetch` every library gets: the app in process, no socket. It records the operations sent
 * (so a test can tell a cache answer from a refetch), and resolves `streaming()` once the server
 * has started reading an event stream's source (its first bytes, the `:` ping, were read), that is,
 * once a subscription listens for events.
 */
function fetchThrough(t: TestApp, traffic: Traffic, streaming: Waiters) {
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const body =
      request.method === "POST"
        ? ((await request.clone().json()) as { operationName?: string })
        : { operationName: new URL(request.url).searchParams.get("operationName") ?? undefined };
    traffic.operations.push(body.operationName ?? "?");
    const response = await t.app.fetch(request);
    if (!response.headers.get("content-type")?.startsWith("text/event-stream") || !response.body) return response;
    const seen = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(chunk);
        streaming.resolve();
      },
    });
    return new Response(response.body.pipeThrough(seen), response);
  };
}

type Waiters = { resolve: () => void; next: () => Promise<void> };
function waiters(): Waiters {
  let pending: (() => void)[] = [];
  return {
    resolve() {
      // The read that gave these bytes asked the source for its next event; the subscription's
      // listener is in place once the microtasks that started have run.
      for (const resolve of pending) setImmediate(resolve);
      pending = [];
    },
    next: () => new Promise<void>((resolve) => pending.push(resolve)),
  };
}

/**
 * graphql-sse's Apollo recipe: an ApolloLink that hands each operation to graphql-sse's client
 * (distinct connections mode, the client's default, which Yoga serves on /graphql).
 */
class SseLink extends ApolloLink {
  private readonly client: SseClient;

  constructor(options: SseClientOptions) {
    super();
    this.client = createSseClient(options);
  }

  override request(operation: ApolloLink.Operation): Observable<ApolloLink.Result> {
    return new Observable((sink) =>
      this.client.subscribe(
        { ...operation, query: print(operation.query) },
        {
          next: (result) => sink.next(result as ApolloLink.Result),
          complete: () => sink.complete(),
          error: (error) => sink.error(error),
        },
      ),
    );
  }
}

/**
 * The cache configuration a frontend needs, and all of it: the stock Relay pagination helper on
 * each list field, with the arguments that name a list (everything but first/after/last/before).
 */
/** Makes the field policy of a list from the arguments that name it. */
export type Pagination = (keyArgs: string[]) => FieldPolicy;

export function apolloCache(pagination: Pagination = relayStylePagination) {
  return new InMemoryCache({
    typePolicies: {
      Query: {
        fields: {
          comments: pagination(["entityId", "entityType", "filter", "orderBy"]),
          members: pagination(["filter", "orderBy"]),
          tasks: pagination(["filter", "orderBy"]),
        },
      },
      Task: { fields: { comments: pagination(["filter", "orderBy"]) } },
      Policy: { fields: { versions: pagination(["filter", "orderBy"]) } },
    },
  });
}

/**
 * `relayStylePagination()` whose cache keeps a refused list null. The stock merge stores a null
 * connection as an empty one (no edges, `hasNextPage: true`, no extra fields such as totalCount),
 * so a refused list would read back as an empty list with more to load (docs/frontends.md).
 */
export const relayStylePaginationKeepingNull: Pagination = (keyArgs) => {
  const policy = relayStylePagination(keyArgs) as FieldPolicy;
  const merge = policy.merge;
  if (typeof merge !== "function") return policy;
  return { ...policy, merge: (existing, incoming, options) => (incoming === null ? null : merge(existing, incoming, options)) };
};

/**
 * The object types that have no `id`: values, not records (who is calling, a delete's answer,
 * counts). graphcache warns about each one it meets unless `keys` says it has no key.
 */
export const typesWithoutId = [
  "AttachmentDownloadUrl",
  "AuditVerification",
  "ControlReason",
  "ControlStatus",
  "CurrentEvidenceRequest",
  "DeleteCommentPayload",
  "DeleteControlPayload",
  "DeleteEvidencePayload",
  "DeleteTaskItemPayload",
  "EvidenceRequestFile",
  "FrameworkReadiness",
  "MarkNotificationsReadPayload",
  "NotificationEmailPreferences",
  "NotificationPreferences",
  "PolicyVersionCreated",
  "RequirementApplicability",
  "RequirementMappingSet",
  "RequirementStatus",
  "TaskItemStats",
  "TaskItemStatusCounts",
  "Viewer",
  "WebhookEventType",
  "WebhookReplay",
];

/**
 * The same for urql's graphcache: `relayPagination()` on each list field, and `keys` for the types
 * without `id`, as graphcache documents for objects that are not records.
 */
export function urqlCache() {
  return cacheExchange({
    keys: Object.fromEntries(typesWithoutId.map((name) => [name, () => null])),
    resolvers: {
      Query: { comments: relayPagination(), members: relayPagination(), tasks: relayPagination() },
      Task: { comments: relayPagination() },
      Policy: { versions: relayPagination() },
    },
  });
}

export type Clients = {
  apollo: ApolloClient;
  urql: UrqlClient;
  traffic: Traffic;
  /** Resolves when the next subscription's event stream is open and listening. */
  streaming: () => Promise<void>;
};

/** Apollo Client and urql, each with its normalized cache, on `t`'s app as `credential`. */
export function connectClients(t: TestApp, credential: Credential, options: { apolloPagination?: Pagination } = {}): Clients {
  const traffic: Traffic = { operations: [] };
  const stream = waiters();
  const fetch = fetchThrough(t, traffic, stream);

  // No retries: a refused subscription fails the test at once with the server's answer.
  const sseOptions = { url, fetchFn: fetch, headers: credential, retryAttempts: 0 };
  const apollo = new ApolloClient({
    cache: apolloCache(options.apolloPagination),
    link: ApolloLink.split(
      ({ operationType }) => operationType === OperationTypeNode.SUBSCRIPTION,
      new SseLink(sseOptions),
      new HttpLink({ uri: url, fetch, headers: credential }),
    ),
  });

  // graphql-sse's urql recipe: subscriptions forwarded to its client.
  const sse = createSseClient(sseOptions);
  const urql = new UrqlClient({
    url,
    fetch,
    fetchOptions: { headers: credential },
    exchanges: [
      urqlCache(),
      subscriptionExchange({
        forwardSubscription: (operation) => ({
          subscribe: (sink) => ({ unsubscribe: sse.subscribe({ ...operation, query: operation.query ?? "" }, sink) }),
        }),
      }),
      fetchExchange,
    ],
  });

  return { apollo, urql, traffic, streaming: stream.next };
}

/**
 * Fails the test when either library warned or logged an error: their warnings ("no key",
 * "missing field", "cache data may be lost") are how they say the graph needs custom code.
 * `expectWarning(pattern)` names the one warning a test documents: it must then occur.
 */
export function failOnLibraryWarnings() {
  let spies: MockInstance[] = [];
  let expected: RegExp | undefined;
  beforeEach(() => {
    // Kept quiet here: what they said is in the assertion below.
    spies = [vi.spyOn(console, "warn").mockImplementation(() => {}), vi.spyOn(console, "error").mockImplementation(() => {})];
    expected = undefined;
  });
  afterEach(() => {
    const said = spies.flatMap((spy) => spy.mock.calls.map((args) => args.map(String).join(" ")));
    for (const spy of spies) spy.mockRestore();
    if (expected) {
      const pattern = expected;
      expect(
        said.some((line) => pattern.test(line)),
        `a warning matching ${pattern}`,
      ).toBe(true);
      expect(said.filter((line) => !pattern.test(line))).toEqual([]);
    } else {
      expect(said).toEqual([]);
    }
  });
  return {
    expectWarning(pattern: RegExp) {
      expected = pattern;
    },
  };
}

/**
 * Relay on the app, through graphql-sse's documented Relay network: one function that sends
 * queries, mutations and subscriptions alike over server-sent events.
 */
export function connectRelay(t: TestApp, credential: Credential) {
  const traffic: Traffic = { operations: [] };
  const stream = waiters();
  const sse = createSseClient({ url, fetchFn: fetchThrough(t, traffic, stream), headers: credential, retryAttempts: 0 });
  const fetchOrSubscribe = (operation: RequestParameters, variables: Variables) =>
    RelayObservable.create<GraphQLResponse>((sink) => {
      if (!operation.text) return sink.error(new Error("Operation text cannot be empty"));
      return sse.subscribe(
        { operationName: operation.name, query: operation.text, variables },
        {
          next: (result) => sink.next(result as GraphQLResponse),
          complete: () => sink.complete(),
          error: (error) => sink.error(error as Error),
        },
      );
    });
  const environment = new Environment({
    network: Network.create(fetchOrSubscribe, fetchOrSubscribe),
    store: new Store(new RecordSource()),
  });
  return { environment, traffic, streaming: stream.next };
}
