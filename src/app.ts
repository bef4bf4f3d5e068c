import { useDisableIntrospection } from "@graphql-yoga/plugin-disable-introspection";
import { useSofa } from "@graphql-yoga/plugin-sofa";
import type { Tracer } from "@opentelemetry/api";
import { createYoga, type Plugin, useReadinessCheck } from "graphql-yoga";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { createAuthenticator } from "./auth/authenticate.js";
import type { AuthState } from "./auth/caller.js";
import type { Config } from "./config.js";
import type { Context } from "./context.js";
import type { Database } from "./db/database.js";
import { maskError, restErrorsResponse, useUnexpectedErrorLog } from "./error-masking.js";
import { useCsrfPreventionExceptSameOriginEventStreams } from "./event-streams.js";
import type { Events } from "./events.js";
import { graphiqlExamples, renderLocalGraphiQL, useGraphiQLAssets } from "./graphiql.js";
import { useIdempotency } from "./idempotency.js";
import { useGraphqlInputHygiene } from "./input-hygiene.js";
import { useMetrics } from "./metrics.js";
import type { DeviceManagement } from "./modules/members/device-management.js";
import { useOperationLimits } from "./operation-limits.js";
import { limitAuthenticationFailures, useRateLimit } from "./rate-limit.js";
import { requestIdOf, useRequestId } from "./request-context.js";
import { useRequestLog } from "./request-log.js";
import { errorResponse } from "./rest/error-response.js";
import { buildOpenApiDocument } from "./rest/openapi.js";
import { compileRoutes } from "./rest/request-validation.js";
import { useRestGuard } from "./rest/rest-plugin.js";
import { REST_BASE, restRoutes } from "./rest/routes.js";
import { schema } from "./schema.js";
import { createServices } from "./services.js";
import { useTracing } from "./tracing.js";

export type AppDeps = {
  database: Database;
  config: Pick<Config, "production" | "bodyLimitBytes"> &
    Partial<Pick<Config, "jwt" | "rateLimitPerMinute" | "authFailuresPerMinute" | "trustProxy" | "introspection" | "graphiql">>;
  logger: Logger;
  deviceManagement?: DeviceManagement;
  /** Shared events (Redis) for replicas; in memory when absent. */
  events?: Events;
  /** Shares rate-limit counters between replicas; in memory when absent. */
  redis?: Redis;
  /** Redis key prefix of the rate-limit counters. */
  rateLimitKeyPrefix?: string;
  /** OpenTelemetry tracer: a span per request and per GraphQL execution. */
  tracer?: Tracer;
  /** True once the process is shutting down: /ready answers 503 so load balancers stop sending. */
  isShuttingDown?: () => boolean;
};

export function createApp(deps: AppDeps) {
  const { database, config, logger } = deps;
  const services = createServices(database.db, { deviceManagement: deps.deviceManagement, events: deps.events });
  const authenticate = limitAuthenticationFailures(createAuthenticator(database.db, config.jwt), {
    perMinute: config.authFailuresPerMinute ?? 30,
    redis: deps.redis,
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
  const routes = compileRoutes(schema, restRoutes);
  let openApi: unknown;

  const bodyLimit: Plugin = {
    onRequest({ request, endResponse }) {
      const length = Number(request.headers.get("content-length") ?? 0);
      if (length > config.bodyLimitBytes) {
        endResponse(errorResponse("PAYLOAD_TOO_LARGE", `The request body is larger than ${config.bodyLimitBytes} bytes`));
      }
    },
  };

  const yoga = createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: "/graphql",
    maxRequestBodySize: config.bodyLimitBytes,
    landingPage: false,
    logging: {
      debug: (...args) => logger.debug(args.map(String).join(" ")),
      info: (...args) => logger.info(args.map(String).join(" ")),
      warn: (...args) => logger.warn(args.map(String).join(" ")),
      error: (...args) => logger.error(args.map(String).join(" ")),
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
    // Yoga builds the context on the request's server context, which carries the request id.
    context: async (initial) => ({
      requestId: requestIdOf(initial),
      auth: await authenticateOnce(initial.request),
      services,
      logger,
    }),
    plugins: [
      // First, so that every answer carries the id and its log lines too.
      useRequestId(),
      useUnexpectedErrorLog(logger),
      // Next, so that it times every request, including those other plugins answer early.
      useMetrics({ routes, poolStats: database.poolStats }),
      ...((config.graphiql ?? !config.production) ? [useGraphiQLAssets()] : []),
      useRequestLog(logger),
      ...(deps.tracer ? [useTracing(deps.tracer)] : []),
      useReadinessCheck({
        endpoint: "/ready",
        async check() {
          if (deps.isShuttingDown?.()) return Response.json({ status: "shutting down" }, { status: 503 });
          try {
            await database.ping();
            return Response.json({ status: "ready" });
          } catch (error) {
            logger.warn({ err: error }, "readiness check: the database does not answer");
            return Response.json({ status: "database unavailable" }, { status: 503 });
          }
        },
      }),
      useRateLimit({
        perMinute: config.rateLimitPerMinute ?? 1200,
        redis: deps.redis,
        trustProxy: config.trustProxy,
        keyPrefix: deps.rateLimitKeyPrefix,
      }),
      bodyLimit,
      useGraphqlInputHygiene(),
      useRestGuard({
        routes,
        bodyLimitBytes: config.bodyLimitBytes,
        authenticate: authenticateOnce,
        rememberAuth: (request, auth) => authByRequest.set(request, Promise.resolve(auth)),
        openApiDocument: () => {
          openApi ??= buildOpenApiDocument(schema, routes);
          return openApi;
        },
      }),
      useIdempotency({ db: database.db, authenticate: authenticateOnce, logger }),
      // Limits on the shape of GraphQL documents. REST operations are fixed documents and skip
      // validation, so these only ever concern /graphql.
      useOperationLimits({ suggestFields: config.introspection ?? !config.production }),
      // A simple POST with a form content type cannot carry a GraphQL request: no cross-site writes.
      // A same-origin EventSource (GET, cookie) is let through: it cannot be cross-site (event-streams.ts).
      useCsrfPreventionExceptSameOriginEventStreams({ requestHeaders: ["x-api-key", "authorization", "x-graphql-yoga-csrf"] }),
      ...((config.introspection ?? !config.production) ? [] : [useDisableIntrospection()]),
      useSofa({
        basePath: REST_BASE,
        routes: restRoutes,
        openAPI: { endpoint: false } as never,
        swaggerUI: { endpoint: false } as never,
        // Sofa types its own Response class; ours is the same WHATWG Response.
        errorHandler: (errors) => restErrorsResponse(errors) as never,
      }),
    ],
  });

  return {
    yoga,
    services,
    /** Handles one request in process, as the HTTP server does. */
    async fetch(request: Request): Promise<Response> {
      return yoga.fetch(request);
    },
  };
}

export type App = ReturnType<typeof createApp>;
