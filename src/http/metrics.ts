import { type DocumentNode, getOperationAST } from "graphql";
import type { Plugin } from "graphql-yoga";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { LINK_PATH } from "../auth/evidence-request-links.js";
import { OBJECTS_PATH } from "../platform/attachments/signed-urls.js";
import type { PoolStats } from "../platform/db/database.js";
import type { ReplicaStatus } from "../platform/db/read-replicas.js";
import type { NativeMemoryCounts } from "../platform/native-memory.js";
import type { RedisHealth } from "../platform/redis.js";
import type { CompiledRoute } from "../rest/request-validation.js";
import { REST_BASE } from "../rest/routes.js";
import { PAGE_ASSETS_PATH } from "./evidence-request-page.js";
import type { LiveStreamCounts } from "./live-streams.js";
import type { TrustedDocumentCounts } from "./trusted-documents.js";

type Transport = "graphql" | "rest" | "other";

const methods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const fixedRoutes = new Set(["/metrics", "/health", "/ready"]);
const UNSUBSCRIBE_PREFIX = "/unsubscribe/";
/** Distinct client-chosen operation names kept as label values; the rest are counted as "other". */
const MAX_OPERATION_NAMES = 100;
const operationNamePattern = /^[_A-Za-z][_0-9A-Za-z]{0,63}$/;

export type MetricsOptions = {
  routes: CompiledRoute[];
  /** Connections of the PostgreSQL pool; absent for the embedded database, which has no pool. */
  poolStats?: () => PoolStats;
  /** Whether Redis answers, and what the replica did without it; absent without Redis. */
  redisHealth?: RedisHealth;
  /** Streaming replicas for reads; absent when none is configured. */
  replicas?: () => ReplicaStatus[];
  /** Notification e-mail this replica sent, retried and gave up on; absent when mail is off. */
  mail?: { readonly sent: number; readonly retried: number; readonly failed: number };
  /** Trusted documents run (by app and version), texts refused by the policy, unknown ids. */
  trustedDocuments?: TrustedDocumentCounts;
  /** Metrics a module registers itself (the webhook worker's). */
  register?: ((registry: Registry) => void)[];
  /** Live streams (subscriptions over SSE) of this app. */
  liveStreams?: LiveStreamCounts;
  /** The replica's trims of freed native memory (src/platform/native-memory.ts); absent in process (tests). */
  nativeMemory?: NativeMemoryCounts;
};

let processRegistry: Registry | undefined;

/**
 * The process's own metrics (CPU, memory, event loop delay, garbage collections), collected once
 * per process and served by every app's `/metrics` beside its own. prom-client's
 * collectDefaultMetrics starts a garbage-collection observer and an event-loop-delay timer that
 * nothing stops: called for each app, every app made in a process (the tests make hundreds) stayed
 * reachable, and each one's timer woke the event loop every 10 ms for good.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * Prometheus metrics of one app: HTTP requests by route pattern (never the raw path, whose ids
 * would make a series per record), GraphQL operations on both transports, the database pool and
 * the process. `GET /metrics` serves them and needs no credential.
 */
export function useMetrics({
  routes,
  poolStats,
  redisHealth,
  replicas,
  mail,
  trustedDocuments,
  register,
  liveStreams,
  nativeMemory,
}: MetricsOptions): Plugin & { answered: Plugin } {
  const registry = new Registry();

  const httpRequests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered, by method, route pattern, status and transport",
    labelNames: ["method", "route", "status", "transport"] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from receiving a request to sending its response headers, by method, route pattern and transport",
    labelNames: ["method", "route", "transport"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const operations = new Counter({
    name: "graphql_operations_total",
    help: "GraphQL operations executed, on /graphql and through REST routes, by type, name, transport and result",
    labelNames: ["operation_type", "operation_name", "transport", "result"] as const,
    registers: [registry],
  });
  const operationDuration = new Histogram({
    name: "graphql_operation_duration_seconds",
    help: "Time to execute a GraphQL operation (resolvers and database), by type, name and transport",
    labelNames: ["operation_type", "operation_name", "transport"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });

  if (poolStats) {
    const gauges = [
      ["db_pool_connections", "Connections the database pool holds, idle or in use", "total"],
      ["db_pool_idle_connections", "Connections of the database pool waiting for a query", "idle"],
      ["db_pool_waiting_requests", "Queries waiting for a connection of the database pool", "waiting"],
      ["db_pool_max_connections", "Most connections the database pool may open", "max"],
    ] as const;
    for (const [name, help, key] of gauges) {
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(poolStats()[key]);
        },
      });
    }
  }

  if (replicas) replicaMetrics(registry, replicas);
  if (mail) mailMetrics(registry, mail);
  if (trustedDocuments) trustedDocumentMetrics(registry, trustedDocuments);
  if (liveStreams) liveStreamMetrics(registry, liveStreams);
  if (nativeMemory) nativeMemoryMetrics(registry, nativeMemory);
  for (const add of register ?? []) add(registry);

  if (redisHealth) {
    new Gauge({
      name: "redis_available",
      help: "1 while Redis answers within its timeout (shared rate limits, live events across replicas), else 0",
      registers: [registry],
      collect() {
        this.set(redisHealth.available ? 1 : 0);
      },
    });
    const counters = [
      [
        "rate_limit_local_decisions_total",
        "Rate-limit decisions taken by this replica alone because Redis did not answer",
        "localRateLimitDecisions",
      ],
      [
        "events_publish_failures_total",
        "Live events that could not be published because Redis did not answer",
        "publishFailures",
      ],
    ] as const;
    countersOf(registry, redisHealth.counts, counters);
  }

  const seenNames = new Set<string>();
  function operationLabel(name: string | null | undefined): string {
    if (!name) return "anonymous";
    if (!operationNamePattern.test(name)) return "other";
    if (seenNames.has(name)) return name;
    if (seenNames.size >= MAX_OPERATION_NAMES) return "other";
    seenNames.add(name);
    return name;
  }

  function routeOf(method: string, pathname: string): { route: string; transport: Transport } {
    if (pathname === "/graphql") return { route: pathname, transport: "graphql" };
    if (pathname === REST_BASE || pathname.startsWith(`${REST_BASE}/`)) {
      const path = pathname.slice(REST_BASE.length);
      // The document and its docs are not API calls.
      if (pathname === `${REST_BASE}/openapi.json`) return { route: pathname, transport: "other" };
      if (path === "/docs" || path.startsWith("/docs/")) return { route: `${REST_BASE}/docs`, transport: "other" };
      const route = routes.find((r) => r.method === method && r.pattern.test(path)) ?? routes.find((r) => r.pattern.test(path));
      return { route: route ? `${REST_BASE}${route.path}` : "unmatched", transport: "rest" };
    }
    if (fixedRoutes.has(pathname)) return { route: pathname, transport: "other" };
    if (pathname.startsWith(UNSUBSCRIBE_PREFIX)) return { route: "/unsubscribe/{token}", transport: "other" };
    if (pathname.startsWith(LINK_PATH)) return { route: `${LINK_PATH}{token}`, transport: "other" };
    if (pathname.startsWith(PAGE_ASSETS_PATH)) return { route: PAGE_ASSETS_PATH, transport: "other" };
    if (pathname.startsWith(OBJECTS_PATH)) return { route: `${OBJECTS_PATH}{key}`, transport: "other" };
    if (pathname.startsWith("/graphiql/")) return { route: "/graphiql", transport: "other" };
    return { route: "unmatched", transport: "other" };
  }

  /**
   * What onRequest learnt of a request, so that neither the URL nor the route is worked out twice.
   * Kept on the server context, where the GraphQL context of either transport finds it (see
   * request-context.ts), also when the REST guard has replaced the request to hand on its body.
   */
  type Seen = { requestMetrics?: { start: number; route: string; transport: Transport } };

  // Only a verified caller's operation may take one of the label slots, which are never freed.
  const authenticated = (context: unknown) => {
    const auth = (context as { auth?: object }).auth;
    return !!auth && "caller" in auth;
  };

  function observeOperation(document: DocumentNode, operationName: string | null | undefined, context: unknown) {
    const operation = getOperationAST(document, operationName);
    const type = operation?.operation ?? "unknown";
    const rest = (context as Seen).requestMetrics?.transport === "rest";
    const transport: Transport = rest ? "rest" : "graphql";
    // Sofa names its operations itself: the root field is the stable name of a REST operation.
    const firstField = operation?.selectionSet.selections.find((s) => s.kind === "Field");
    const name = rest
      ? firstField && "name" in firstField
        ? firstField.name.value
        : "unknown"
      : authenticated(context)
        ? operationLabel(operationName ?? operation?.name?.value)
        : "unauthenticated";
    const start = performance.now();
    return (hasErrors: boolean) => {
      operations.inc({ operation_type: type, operation_name: name, transport, result: hasErrors ? "error" : "success" });
      if (type !== "subscription") {
        operationDuration.observe({ operation_type: type, operation_name: name, transport }, (performance.now() - start) / 1000);
      }
    };
  }

  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      const { route, transport } = routeOf(request.method, url.pathname);
      (serverContext as Seen).requestMetrics = { start: performance.now(), route, transport };
      if (url.pathname === "/metrics" && (request.method === "GET" || request.method === "HEAD")) {
        const served = Registry.merge([processMetrics(), registry]);
        endResponse(new Response(await served.metrics(), { headers: { "content-type": served.contentType } }));
      }
    },
    /**
     * The request counted with the status its client gets: a plugin of its own, placed after every
     * plugin that makes the answer final (the REST layer's 204 for a delete, an ETag's 304).
     */
    answered: {
      onResponse({ request, response, serverContext }) {
        const method = methods.has(request.method) ? request.method : "other";
        const known = (serverContext as Seen).requestMetrics;
        const { route, transport } = known ?? routeOf(request.method, new URL(request.url).pathname);
        httpRequests.inc({ method, route, status: String(response.status), transport });
        if (known) httpDuration.observe({ method, route, transport }, (performance.now() - known.start) / 1000);
      },
    },
    onExecute({ args }) {
      const done = observeOperation(args.document, args.operationName, args.contextValue);
      return {
        onExecuteDone({ result }) {
          done(!(Symbol.asyncIterator in result) && !!result.errors?.length);
        },
      };
    },
    onSubscribe({ args }) {
      const done = observeOperation(args.document, args.operationName, args.contextValue);
      return {
        onSubscribeResult({ result }) {
          done(!(Symbol.asyncIterator in result) && !!result.errors?.length);
        },
      };
    },
  };
}

function replicaMetrics(registry: Registry, replicas: () => ReplicaStatus[]) {
  const gauges = [
    [
      "db_read_replica_available",
      "1 while the read replica serves reads; 0 while it is skipped (down, or further behind than DATABASE_READ_MAX_LAG_MS)",
      (r: ReplicaStatus) => (r.state === "available" ? 1 : 0),
    ],
    [
      "db_read_replica_lag_seconds",
      "How far behind the primary the read replica may be (last check plus time since); -1 when unknown",
      (r: ReplicaStatus) => (r.lagMs === null ? -1 : r.lagMs / 1000),
    ],
  ] as const;
  for (const [name, help, value] of gauges) {
    new Gauge({
      name,
      help,
      labelNames: ["replica"] as const,
      registers: [registry],
      collect() {
        for (const r of replicas()) this.set({ replica: r.name }, value(r));
      },
    });
  }
  const counters = [
    ["db_read_replica_reads_total", "Reads the replica served", "reads"],
    [
      "db_read_replica_fallbacks_total",
      "Reads the replica failed (down, stopped, too slow) that the primary then served",
      "fallbacks",
    ],
  ] as const;
  for (const [name, help, key] of counters) {
    new Counter({
      name,
      help,
      labelNames: ["replica"] as const,
      registers: [registry],
      collect() {
        // Counted by the replica set; copied here when scraped.
        this.reset();
        for (const r of replicas()) this.inc({ replica: r.name }, r[key]);
      },
    });
  }
}

function mailMetrics(registry: Registry, mail: NonNullable<MetricsOptions["mail"]>) {
  const counters = [
    ["notification_mail_sent_total", "Notification e-mail messages this replica handed to the SMTP server", "sent"],
    [
      "notification_mail_retried_total",
      "Attempts at a notification e-mail that failed and will be retried (with backoff)",
      "retried",
    ],
    [
      "notification_mail_failed_total",
      "Notification e-mail messages whose last attempt failed: kept as failed jobs (npm run cli -- mail failed)",
      "failed",
    ],
  ] as const;
  countersOf(registry, mail, counters);
}

/** The native memory of closed connections the replica gave back to the system (malloc_trim). */
export function nativeMemoryMetrics(registry: Registry, counts: NativeMemoryCounts) {
  countersOf(registry, counts, [
    [
      "native_memory_trims_total",
      "Times the replica gave freed native memory (of closed connections) back to the system with malloc_trim",
      "trims",
    ],
    ["native_memory_trim_released_bytes_total", "Resident memory the trims gave back to the system", "releasedBytes"],
    ["native_memory_trim_seconds_total", "Time the trims held the event loop (malloc_trim)", "seconds"],
  ]);
}

/** Prometheus counters that follow tallies kept elsewhere (each scrape adds what they grew by). */
function countersOf<K extends string>(
  registry: Registry,
  counts: Readonly<Record<K, number>>,
  specs: readonly (readonly [name: string, help: string, key: K])[],
) {
  for (const [name, help, key] of specs) {
    let reported = 0;
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.inc(counts[key] - reported);
        reported = counts[key];
      },
    });
  }
}

function trustedDocumentMetrics(registry: Registry, counts: TrustedDocumentCounts) {
  new Counter({
    name: "trusted_document_runs_total",
    help: "Requests that ran a stored trusted document, by the app and version that published it",
    labelNames: ["app", "version"] as const,
    registers: [registry],
    collect() {
      // Counted by the plugin; copied here when scraped.
      this.reset();
      for (const { app, version, count } of counts.runs.values()) this.inc({ app, version }, count);
    },
  });
  countersOf(registry, counts, [
    [
      "trusted_document_refused_total",
      "GraphQL text refused by the TRUSTED_DOCUMENTS policy (PERSISTED_QUERY_REQUIRED)",
      "refused",
    ],
    ["trusted_document_unknown_total", "Requests naming a document id that is not stored (PERSISTED_QUERY_NOT_FOUND)", "unknown"],
    ["trusted_document_parses_total", "Stored documents this replica parsed: once each, then kept by id", "parsed"],
  ] as const);
}

/** Open live streams, and those dropped, refused or ended by the replica. */
function liveStreamMetrics(registry: Registry, counts: LiveStreamCounts) {
  new Gauge({
    name: "live_streams_open",
    help: "Subscriptions open on this replica (server-sent events)",
    registers: [registry],
    collect() {
      this.set(counts.open);
    },
  });
  countersOf(registry, counts, [
    [
      "live_streams_dropped_total",
      "Live streams dropped because their reader left more unread bytes than LIVE_STREAM_BUFFER_BYTES",
      "droppedSlowReader",
    ],
    [
      "live_streams_refused_credential_total",
      "Subscriptions refused with TOO_MANY_STREAMS: the credential had LIVE_STREAMS_PER_CREDENTIAL open",
      "refusedPerCredential",
    ],
    [
      "live_streams_refused_organization_total",
      "Subscriptions refused with TOO_MANY_STREAMS: the organization had LIVE_STREAMS_PER_ORGANIZATION open",
      "refusedPerOrganization",
    ],
    [
      "live_streams_lapsed_total",
      "Live streams ended because their credential was revoked, expired or lost a permission",
      "endedLapsed",
    ],
  ]);
}
