import { randomBytes } from "node:crypto";
import { useDisableIntrospection } from "@graphql-yoga/plugin-disable-introspection";
import { useSofa } from "@graphql-yoga/plugin-sofa";
import type { Tracer } from "@opentelemetry/api";
import { createYoga, type Plugin, useReadinessCheck } from "graphql-yoga";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { createAuthenticator } from "./auth/authenticate.js";
import type { AuthState } from "./auth/caller.js";
import type { Context } from "./graphql/context.js";
import { documentCaches, useValidationCache } from "./graphql/document-cache.js";
import { useOperationLimits } from "./graphql/operation-limits.js";
import { useQueryCost } from "./graphql/query-cost.js";
import { useAnswerHeaders } from "./http/answer-headers.js";
import { useAttachmentObjects } from "./http/attachment-objects.js";
import { createBodyBudget, createBodyReader, useGraphqlBodyAdmission } from "./http/body-admission.js";
import { corsFor, useVaryOnOrigin } from "./http/cors.js";
import { maskError, maskResult, restErrorsResponse, useUnexpectedErrorLog, withSafetyNet } from "./http/error-masking.js";
import { errorBody, errorResponse, RETRY_AFTER_SECONDS } from "./http/error-response.js";
import { useCsrfPreventionExceptSameOriginEventStreams } from "./http/event-streams.js";
import { useEvidenceRequestPage, useRecipientOperations } from "./http/evidence-request-page.js";
import { graphiqlExamples, renderLocalGraphiQL, useGraphiQLAssets } from "./http/graphiql.js";
import { useHeadAsGet } from "./http/head.js";
import { useIdempotency } from "./http/idempotency.js";
import { useGraphqlInputHygiene } from "./http/input-hygiene.js";
import { createLiveStreams } from "./http/live-streams.js";
import { useMetrics } from "./http/metrics.js";
import { limitAuthenticationFailures, useRateLimit } from "./http/rate-limit.js";
import { useReadRouting } from "./http/read-routing.js";
import { requestIdOf, useRequestId } from "./http/request-id.js";
import { useRequestLog } from "./http/request-log.js";
import { useTracing } from "./http/tracing.js";
import { useTrustedDocuments } from "./http/trusted-documents.js";
import { useUnsubscribe } from "./http/unsubscribe.js";
import { createWriteGate, writeGateMetrics } from "./http/write-gate.js";
import type { AuditSigner } from "./modules/audit/audit.keys.js";
import { auditRestHandlers } from "./modules/audit/audit.routes.js";
import { attachmentDownload } from "./modules/comments/attachments.routes.js";
import { evidenceRequestPage } from "./modules/evidence-requests/evidence-requests.page.js";
import type { LinkTokens } from "./modules/evidence-requests/evidence-requests.token.js";
import { frameworkRestHandlers } from "./modules/frameworks/frameworks.soa.js";
import type { DeviceManagement } from "./modules/members/device-management.js";
import type { NotificationMailer } from "./modules/notifications/notifications.mail.js";
import type { NotificationMail } from "./modules/notifications/notifications.service.js";
import type { Unsubscribe } from "./modules/notifications/notifications.unsubscribe.js";
import { loadersFor } from "./modules/request-loaders.js";
import { createServices } from "./modules/services.js";
import type { WebhookServiceOptions } from "./modules/webhooks/webhooks.service.js";
import type { WebhookWorker } from "./modules/webhooks/webhooks.worker.js";
import { type AttachmentStores, openAttachmentStores } from "./platform/attachments/create-store.js";
import {
  type Config,
  DEFAULT_BODY_BUDGET_BYTES,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_LIVE_STREAM_LIMITS,
  DEFAULT_UNATTACHED_MAX_BYTES,
  DEFAULT_WRITES_PER_ORGANIZATION,
  MAX_ATTACHMENT_BYTES,
  MAX_DATABASE_ATTACHMENT_BYTES,
} from "./platform/config.js";
import type { Database } from "./platform/db/database.js";
import type { Events } from "./platform/events.js";
import type { NativeMemoryCounts } from "./platform/native-memory.js";
import { recentWriters } from "./platform/recent-writers.js";
import { type RedisHealth, watchRedis } from "./platform/redis.js";
import { buildOpenApiDocument } from "./rest/openapi.js";
import { compileRoutes } from "./rest/request-validation.js";
import { createRestDispatch } from "./rest/rest-dispatch.js";
import { useRestGuard, withoutOmitted } from "./rest/rest-plugin.js";
import { restSchemaOf, withRestSchema } from "./rest/rest-schema.js";
import { REST_BASE, restRoutes, sofaRoutes } from "./rest/routes.js";
import { schema } from "./schema.js";

export type AppDeps = {
  database: Database;
  config: Pick<Config, "production" | "bodyLimitBytes"> &
    Partial<Pick<Config, "bodyBudgetBytes" | "corsOrigins" | "trustProxyHops" | "redisTimeoutMs" | "appUrl">> &
    Partial<Pick<Config, "jwt" | "rateLimitPerMinute" | "authFailuresPerMinute" | "trustProxy" | "introspection" | "graphiql">> &
    Partial<Pick<Config, "trustedDocuments" | "databaseWritesPerOrganization" | "databaseConnectTimeoutMs">> & {
      liveStreams?: Partial<Config["liveStreams"]>;
      attachments?: Partial<
        Pick<Config["attachments"], "maxBytes" | "uploadTtlSeconds" | "downloadTtlSeconds" | "timeoutMs" | "unattachedMaxBytes">
      >;
    };
  logger: Logger;
  deviceManagement?: DeviceManagement;
  /** Shared events (Redis) for replicas; in memory when absent. */
  events?: Events;
  /** Shares rate-limit counters between replicas; in memory when absent. */
  redis?: Redis;
  /** Whether Redis answers now (see redis.ts); watched here when absent and `redis` is given. */
  redisHealth?: RedisHealth;
  /** Redis key prefix of the rate-limit counters. */
  rateLimitKeyPrefix?: string;
  /** Redis key prefix of the callers who wrote recently (reads on replicas); "cwg:wrote:" when absent. */
  recentWritersKeyPrefix?: string;
  /** OpenTelemetry tracer: a span per request and per GraphQL execution. */
  tracer?: Tracer;
  /** True once the process is shutting down: /ready answers 503 so load balancers stop sending. */
  isShuttingDown?: () => boolean;
  /** E-mail for notifications (SMTP configured): the jobs changes enqueue, their counts (/metrics), and /unsubscribe. */
  mail?: { mailer: NotificationMail & Partial<Pick<NotificationMailer, "counts">>; unsubscribe?: Unsubscribe };
  /** Webhook target rules (WEBHOOK_*) and this replica's delivery worker, for /metrics. */
  webhooks?: { options?: Partial<WebhookServiceOptions>; worker?: Pick<WebhookWorker, "registerMetrics"> };
  /** Signs the audit checkpoints (AUDIT_SIGNING_KEY); a key of the app's own when absent (tests). */
  auditSigner?: AuditSigner;
  /** The replica's trims of freed native memory (server.ts), for /metrics. */
  nativeMemory?: NativeMemoryCounts;
  /**
   * Where attachments' bytes live (openAttachmentStores from the configuration); when absent, the
   * database store, with a URL secret of the app's own.
   */
  attachmentStores?: AttachmentStores;
  /**
   * Evidence requests' links: their tokens' derivation (EVIDENCE_REQUEST_LINK_SECRET, else the
   * service's kept secret; a secret of the app's own when absent) and PUBLIC_URL, their base (the
   * request's own origin when unset).
   */
  evidenceRequests?: { links?: LinkTokens; publicUrl?: string };
  /**
   * False: Sofa answers every REST route itself, as before rest-dispatch.ts answered the reads by
   * id and the writes without its second routing. For the test that proves both answer alike.
   */
  restDispatch?: boolean;
};

/** The unsubscribe form is one short field: a larger body is not one. */
const UNSUBSCRIBE_BODY_LIMIT_BYTES = 4_096;

/** /ready answers within a second whatever the database does: a load balancer's check must not hang. */
const READY_TIMEOUT_MS = 900;
function withinReadyTimeout(ping: Promise<void>, what = "the database"): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    // After the loop's I/O, so that a late event loop does not pass for a slow database.
    const late = () => setImmediate(() => reject(new Error(`${what} did not answer within ${READY_TIMEOUT_MS} ms`)));
    timer = setTimeout(late, READY_TIMEOUT_MS);
  });
  ping.catch(() => {});
  return Promise.race([ping, timeout]).finally(() => clearTimeout(timer));
}

/** /ready's 503: our error envelope, with the readiness status load balancers and people read. */
function notReady(status: string, message: string): Response {
  return Response.json(
    { ...errorBody("SERVICE_UNAVAILABLE", message), status },
    { status: 503, headers: { "retry-after": String(RETRY_AFTER_SECONDS) } },
  );
}

export function createApp(deps: AppDeps) {
  const { database, config, logger } = deps;
  const attachmentStores =
    deps.attachmentStores ??
    openAttachmentStores(
      {
        store: "database",
        dir: "",
        s3: undefined,
        publicUrl: undefined,
        timeoutMs: 5_000,
        urlSecret: randomBytes(32).toString("hex"),
      },
      { db: database.db },
    );
  const storeTimeoutMs = config.attachments?.timeoutMs ?? 5_000;
  const redisHealth =
    deps.redisHealth ?? (deps.redis ? watchRedis(deps.redis, { timeoutMs: config.redisTimeoutMs ?? 200, logger }) : undefined);
  const services = createServices(database.db, {
    deviceManagement: deps.deviceManagement,
    events: deps.events,
    mail: deps.mail?.mailer,
    links: { appUrl: config.appUrl, trustedOrigins: config.corsOrigins },
    webhooks: deps.webhooks?.options,
    auditSigner: deps.auditSigner,
    attachments: {
      store: attachmentStores.store,
      storeOf: attachmentStores.storeOf,
      maxBytes:
        config.attachments?.maxBytes ??
        (attachmentStores.store.kind === "database" ? MAX_DATABASE_ATTACHMENT_BYTES : MAX_ATTACHMENT_BYTES),
      uploadTtlSeconds: config.attachments?.uploadTtlSeconds ?? 900,
      downloadTtlSeconds: config.attachments?.downloadTtlSeconds ?? 300,
      unattachedMaxBytes: config.attachments?.unattachedMaxBytes ?? DEFAULT_UNATTACHED_MAX_BYTES,
    },
    evidenceRequests: deps.evidenceRequests,
  });
  const verify = createAuthenticator(database.db, config.jwt, { corsOrigins: config.corsOrigins });
  const authenticate = limitAuthenticationFailures(verify, {
    perMinute: config.authFailuresPerMinute ?? 30,
    redis: deps.redis,
    redisHealth,
    keyPrefix: deps.rateLimitKeyPrefix,
  });
  const authByRequest = new WeakMap<Request, Promise<AuthState>>();
  const authenticateOnce = (request: Request) => {
    let auth = authByRequest.get(request);
    if (!auth) {
      auth = authenticate(request);
      authByRequest.set(request, auth);
    }
    return auth;
  };
  const liveStreams = createLiveStreams({
    authenticate: verify,
    eventContext: (context) => {
      const { requestId, auth } = context as Context & { requestId: string };
      return () => ({ requestId, auth, services, logger, loaders: loadersFor(database.db, auth) });
    },
    maskResult: (result) => maskResult(logger, result, "live-stream"),
    limits: { ...DEFAULT_LIVE_STREAM_LIMITS, ...config.liveStreams },
  });
  const bodyBudget = createBodyBudget(config.bodyBudgetBytes ?? DEFAULT_BODY_BUDGET_BYTES);
  const bodyReader = createBodyReader(bodyBudget, config.bodyLimitBytes);
  const rememberAuth = (request: Request, auth: AuthState) => authByRequest.set(request, Promise.resolve(auth));
  const restSchema = restSchemaOf(schema);
  const routes = compileRoutes(restSchema, restRoutes);
  const restDispatch = createRestDispatch(restSchema, routes, (document, omit) =>
    withoutOmitted(restSchema, document, new Set(omit)),
  );
  let openApi: unknown;
  const trustedDocuments = useTrustedDocuments({
    db: database.db,
    policy: config.trustedDocuments ?? "allow",
    authenticate: authenticateOnce,
  });

  const requestPage = useEvidenceRequestPage({
    page: evidenceRequestPage(services.evidenceRequests, services.attachments.settings),
    authenticate: authenticateOnce,
  });

  const writeGate = createWriteGate({
    perOrganization: config.databaseWritesPerOrganization ?? DEFAULT_WRITES_PER_ORGANIZATION,
    maxWaitMs: config.databaseConnectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
  });
  const head = useHeadAsGet();
  const requestLog = useRequestLog(logger);

  const bodyLimit: Plugin = {
    onRequest({ request, endResponse }) {
      const length = Number(request.headers.get("content-length") ?? 0);
      if (length > config.bodyLimitBytes) {
        endResponse(errorResponse("PAYLOAD_TOO_LARGE", `The request body is larger than ${config.bodyLimitBytes} bytes`));
      }
    },
  };

  const metrics = useMetrics({
    routes,
    poolStats: database.poolStats,
    redisHealth,
    replicas: database.replicas?.statuses,
    mail: deps.mail?.mailer.counts,
    trustedDocuments: trustedDocuments.counts,
    register: [
      (registry) => writeGateMetrics(registry, writeGate),
      ...(deps.webhooks?.worker ? [(registry: Registry) => deps.webhooks?.worker?.registerMetrics(registry)] : []),
    ],
    liveStreams: liveStreams.counts,
    nativeMemory: deps.nativeMemory,
  });

  const yoga = createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: "/graphql",
    // Apollo Client 4 puts the operation's type in each request it hands a link; graphql-sse's
    // documented Apollo link sends the operation as it is, so the body carries `operationType`.
    // Yoga refuses body parameters it does not know (400): this one is harmless, so it is accepted.
    extraParamNames: ["operationType", "documentId"],
    // Body size is enforced by our own admission (body-admission.ts) on both transports, before a
    // byte is read and within the memory budget. Yoga's limit would pipe every admitted body through
    // a second web stream (a stream pipeline and an AbortController per request: bench/results/2026-11-23.md).
    maxRequestBodySize: false,
    // A document's parse and its validation (and so every limit of its shape) once per distinct
    // text, bounded in entries and in bytes of text (document-cache.ts); the cost rule keeps its own.
    parserAndValidationCache: documentCaches(),
    landingPage: false,
    logging: {
      // Yoga logs a few debug lines for every request: formatted only when they are written.
      debug: (...args) => {
        if (logger.isLevelEnabled("debug")) logger.debug(args.map(String).join(" "));
      },
      info: (...args) => {
        if (logger.isLevelEnabled("info")) logger.info(args.map(String).join(" "));
      },
      warn: (...args) => logger.warn(args.map(String).join(" ")),
      // Yoga logs the original of every error it masks, without the request: error-masking.ts logs
      // each once with its request id, at its level (a unique violation lost in a race is no error).
      error: (...args) =>
        args.length === 1 && args[0] instanceof Error
          ? logger.debug({ err: args[0] }, "masked error (logged with its request by error-masking.ts)")
          : logger.error(args.map(String).join(" ")),
    },
    renderGraphiQL: renderLocalGraphiQL,
    graphiql: !(config.graphiql ?? !config.production)
      ? false
      : {
          title: "Compliance Workspace Gateway",
          headers: JSON.stringify({ "X-API-Key": "" }, null, 2),
          defaultQuery: graphiqlExamples,
        },
    maskedErrors: { maskError },
    // Browsers on other origins get no access unless CORS_ORIGINS lists theirs exactly.
    cors: corsFor(config.corsOrigins ?? []),
    // Yoga builds the context on the request's server context, which carries the request id.
    context: async (initial) => {
      const auth = await authenticateOnce(initial.request);
      return {
        requestId: requestIdOf(initial),
        auth,
        services,
        logger,
        loaders: loadersFor(database.db, auth),
      };
    },
    plugins: withSafetyNet(logger, [
      // First, so that every answer carries the id and its log lines too.
      useRequestId(),
      // HEAD goes on as GET (its body dropped at the end): every route and check below sees a GET.
      head.asGet,
      useVaryOnOrigin(config.corsOrigins ?? []),
      useUnexpectedErrorLog(logger),
      // Next, so that it times every request, including those other plugins answer early.
      metrics,
      ...((config.graphiql ?? !config.production) ? [useGraphiQLAssets()] : []),
      requestLog.start,
      ...(deps.tracer ? [useTracing(deps.tracer)] : []),
      useReadinessCheck({
        endpoint: "/ready",
        async check() {
          if (deps.isShuttingDown?.()) return notReady("shutting down", "This replica is shutting down");
          // Still ready without Redis: the replica serves, with limits of its own.
          const shared = redisHealth
            ? {
                redis: redisHealth.available ? "available" : "unavailable",
                rateLimits: redisHealth.available ? "shared" : "per replica",
              }
            : {};
          // Still ready without replicas: the primary serves their reads. Which ones are skipped, and why.
          const replicas = database.replicas
            ? { readReplicas: Object.fromEntries(database.replicas.statuses().map((r) => [r.name, r.state])) }
            : {};
          // Still ready without its attachment store (contract section 15): only the changes that
          // need it answer 503. Said here, so that the store's failure (a refused credential too) shows.
          const attachmentStore = withinReadyTimeout(attachmentStores.store.ping(), "the attachment store").then(
            () => "available",
            (error) => {
              logger.warn({ err: error, store: attachmentStores.store.kind }, "readiness check: the attachment store fails");
              return "failing";
            },
          );
          try {
            await withinReadyTimeout(database.ping());
            return Response.json({ status: "ready", attachmentStore: await attachmentStore, ...shared, ...replicas });
          } catch (error) {
            logger.warn({ err: error }, "readiness check: the database does not answer");
            return notReady("database unavailable", "The database does not answer");
          }
        },
      }),
      // Signed URLs, their own credential: before the rate limit, the body limit and CSRF prevention.
      useAttachmentObjects({ urls: attachmentStores.urls, storeOf: attachmentStores.storeOf, logger, timeoutMs: storeTimeoutMs }),
      useRateLimit({
        perMinute: config.rateLimitPerMinute ?? 1200,
        redis: deps.redis,
        redisHealth,
        trustProxy: config.trustProxy,
        trustProxyHops: config.trustProxyHops,
        authenticate: authenticateOnce,
        keyPrefix: deps.rateLimitKeyPrefix,
      }),
      bodyLimit,
      ...(deps.mail?.unsubscribe
        ? [
            useUnsubscribe({
              handler: deps.mail.unsubscribe,
              bodyReader: createBodyReader(bodyBudget, Math.min(config.bodyLimitBytes, UNSUBSCRIBE_BODY_LIMIT_BYTES)),
            }),
          ]
        : []),
      // An evidence request's page and its assets: after the rate limit, which counts its guesses.
      requestPage.page,
      useGraphqlInputHygiene(),
      useGraphqlBodyAdmission({ reader: bodyReader, authenticate: authenticateOnce, rememberAuth }),
      useRestGuard({
        routes,
        bodyReader,
        authenticate: authenticateOnce,
        rememberAuth,
        dispatch: deps.restDispatch === false ? undefined : restDispatch,
        ownRoutes: { ...auditRestHandlers(services.audit), ...frameworkRestHandlers(database.db) },
        download: attachmentDownload(services.comments.attachments, { logger, timeoutMs: storeTimeoutMs }),
        openApiDocument: () => {
          openApi ??= buildOpenApiDocument(restSchema, routes);
          return openApi;
        },
      }),
      // Before every plugin that wraps the execution: a mutation holds its organization's place only while it executes.
      writeGate.plugin,
      useIdempotency({ db: database.db, authenticate: authenticateOnce, logger }),
      ...(database.replicas
        ? [
            useReadRouting(
              recentWriters({
                // A replica serves reads only while at most maxLagMs behind; the margin covers clock skew.
                windowMs: database.replicas.maxLagMs + 250,
                redis: deps.redis,
                redisHealth,
                keyPrefix: deps.recentWritersKeyPrefix ?? "cwg:wrote:",
              }),
            ),
          ]
        : []),
      // Subscriptions: shared results per event, credentials checked again, caps, SSE with keep-alives.
      liveStreams.plugin,
      // A stored document's id in place of text (and the policy on text), before the limits see the document.
      trustedDocuments.plugin,
      // Limits on the shape of GraphQL documents. REST operations are fixed documents and skip
      // validation, so these only ever concern /graphql.
      useOperationLimits({ suggestFields: config.introspection ?? !config.production }),
      // Worst-case objects, multiplied through nested lists, before any resolver runs.
      useQueryCost(),
      // A stored document's parse, kept by its id (after the limits, whose parser it wraps).
      trustedDocuments.parsing,
      // A simple POST with a form content type cannot carry a GraphQL request: no cross-site writes.
      // A same-origin EventSource (GET, cookie) is let through: it cannot be cross-site (event-streams.ts).
      useCsrfPreventionExceptSameOriginEventStreams({
        requestHeaders: ["x-api-key", "authorization", "x-evidence-request-token", "x-graphql-yoga-csrf"],
      }),
      // A link token runs the page's three operations only.
      useRecipientOperations(),
      ...((config.introspection ?? !config.production) ? [] : [useDisableIntrospection()]),
      // After every plugin that adds validation rules: validation's verdict kept per document, schema and rules.
      useValidationCache(),
      // Last before Sofa: the reads it answers have passed every check above, as Sofa's do.
      restDispatch.plugin,
      withRestSchema(
        useSofa({
          basePath: REST_BASE,
          routes: sofaRoutes(),
          openAPI: { endpoint: false } as never,
          swaggerUI: { endpoint: false } as never,
          // Sofa types its own Response class; ours is the same WHATWG Response.
          errorHandler: (errors) => restErrorsResponse(errors) as never,
        }),
      ),
      // Last, once every plugin above has made the answer final (a 204, an ETag, a 304).
      requestPage.callHeaders,
      useAnswerHeaders(),
      head.withoutBody,
      // The status the client gets, counted and logged.
      metrics.answered,
      requestLog.line,
    ]),
  });

  return {
    yoga,
    services,
    attachmentStores,
    /** The REST reads by id and writes answered past Sofa's second routing (rest-dispatch.ts). */
    restDispatch,
    /** Completes every open live stream (at shutdown), so that their clients reconnect elsewhere. */
    closeStreams: () => liveStreams.closeAll(),
    /** Handles one request in process, as the HTTP server does. */
    async fetch(request: Request): Promise<Response> {
      return yoga.fetch(request);
    },
  };
}

export type App = ReturnType<typeof createApp>;
