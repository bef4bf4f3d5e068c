import { context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import type { Plugin } from "graphql-yoga";
import { requestIdOf } from "./request-id.js";
import { loggablePath } from "./unsubscribe.js";

/**
 * OpenTelemetry traces sent over OTLP/HTTP to `endpoint` (e.g. http://collector:4318). The SDK is
 * loaded here, only when tracing is configured: it is about a tenth of a start's time otherwise.
 */
export async function startTracing(endpoint: string, serviceName = "compliance-gateway") {
  const [{ OTLPTraceExporter }, { resourceFromAttributes }, { BatchSpanProcessor }, { NodeTracerProvider }] = await Promise.all([
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/sdk-trace-node"),
  ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, "")}/v1/traces` }))],
  });
  return { tracer: provider.getTracer(serviceName), flush: () => provider.forceFlush(), shutdown: () => provider.shutdown() };
}

/** A server span per HTTP request and a child span per GraphQL execution (both transports). */
export function useTracing(tracer: Tracer): Plugin {
  // On the server context, where the GraphQL context of either transport finds it (see request-context.ts).
  type WithSpan = { requestSpan?: Span };
  return {
    onRequest({ request, url, serverContext }) {
      const span = tracer.startSpan(`${request.method} ${url.pathname.startsWith("/v1/") ? "/v1" : loggablePath(url.pathname)}`, {
        kind: SpanKind.SERVER,
        attributes: {
          "http.request.method": request.method,
          "url.path": loggablePath(url.pathname),
          "request.id": requestIdOf(serverContext),
        },
      });
      (serverContext as WithSpan).requestSpan = span;
    },
    onExecute({ args }) {
      const parent = (args.contextValue as WithSpan).requestSpan;
      const operation = args.document.definitions.find((d: { kind: string }) => d.kind === "OperationDefinition");
      const type = operation && "operation" in operation ? operation.operation : "unknown";
      const name = operation && "name" in operation ? (operation.name?.value ?? "anonymous") : "anonymous";
      const span = tracer.startSpan(
        `graphql.${type} ${name}`,
        { attributes: { "graphql.operation.type": type, "graphql.operation.name": name } },
        parent ? trace.setSpan(context.active(), parent) : undefined,
      );
      return {
        onExecuteDone({ result }) {
          if ("errors" in result && result.errors?.length)
            span.setStatus({ code: SpanStatusCode.ERROR, message: result.errors[0]?.message });
          span.end();
        },
      };
    },
    onResponse({ serverContext, response }) {
      const span = (serverContext as WithSpan).requestSpan;
      if (!span) return;
      span.setAttribute("http.response.status_code", response.status);
      if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}
