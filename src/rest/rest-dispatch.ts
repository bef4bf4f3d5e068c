import { buildOperationNodeForField } from "@graphql-tools/utils";
import {
  type DocumentNode,
  type GraphQLSchema,
  getNamedType,
  isScalarType,
  Kind,
  type OperationDefinitionNode,
  OperationTypeNode,
} from "graphql";
import type { Plugin } from "graphql-yoga";
import { createSofa } from "sofa-api";
import { restErrorsResponse } from "../http/error-masking.js";
import { etaggedJson } from "./etag.js";
import type { CompiledRoute } from "./request-validation.js";
import { REST_BASE } from "./routes.js";

/** What the REST guard hands over: a checked read whose every variable comes from its path. */
type Direct = { route: CompiledRoute; params: Record<string, string> };

type Operation = { document: DocumentNode; operationName: string; fieldName: string };

/**
 * Sofa's operation for a route, as Sofa builds it (same models, same depth, the same names, so
 * metrics and logs see the same operation), less the fields the route leaves out.
 */
function operationOf(
  schema: GraphQLSchema,
  models: string[],
  route: CompiledRoute,
  trim: (document: DocumentNode, omit: string[]) => DocumentNode,
): Operation {
  const [, fieldName] = route.field.split(".") as [string, string];
  const node = buildOperationNodeForField({
    kind: OperationTypeNode.QUERY,
    schema,
    field: fieldName,
    models,
    ignore: [],
    circularReferenceDepth: 1,
  });
  const full: DocumentNode = { kind: Kind.DOCUMENT, definitions: [node] };
  return {
    document: route.omit ? trim(full, route.omit) : full,
    operationName: (node as OperationDefinitionNode).name?.value as string,
    fieldName,
  };
}

/**
 * Answers the REST reads that need nothing but their path (get a task, a member, a vendor...)
 * with Sofa's own document for the route, executed as Sofa executes it (Yoga's envelope: every
 * plugin's execution hooks run), without a second routing. The guard has already matched the
 * route, authenticated the caller and checked the path; Sofa would route again over every pattern
 * (fets, URLPattern), re-read the query string for each variable, and answer with a response the
 * ETag then copies. Here the JSON is written once and the ETag set on it.
 * Every other request goes on to Sofa. Same status, headers and bytes as through Sofa: the bench
 * checks the bytes (bench/ab-inprocess.mjs also the headers), the REST tests the shapes.
 */
export function createRestDispatch(
  schema: GraphQLSchema,
  routes: CompiledRoute[],
  trim: (document: DocumentNode, omit: string[]) => DocumentNode,
) {
  const { models } = createSofa({ schema, basePath: REST_BASE });
  const operations = new Map<CompiledRoute, Operation>();
  for (const route of routes) {
    if (route.method !== "GET" || route.download || !route.field.startsWith("Query.")) continue;
    // Only routes whose arguments are all path parameters of text types (ID, String): Sofa
    // passes those on as the decoded text of the path, which is what this passes on.
    const textOnly = route.args.every((arg) => {
      const named = getNamedType(arg.type);
      return route.pathParams.includes(arg.name) && isScalarType(named) && (named.name === "ID" || named.name === "String");
    });
    if (textOnly && route.pathParams.length) operations.set(route, operationOf(schema, models, route, trim));
  }
  const pending = new WeakMap<Request, Direct>();
  let getEnveloped:
    | ((context: object) => ReturnType<Parameters<NonNullable<Plugin["onYogaInit"]>>[0]["yoga"]["getEnveloped"]>)
    | undefined;

  const plugin: Plugin = {
    onYogaInit({ yoga }) {
      getEnveloped = yoga.getEnveloped as typeof getEnveloped;
    },
    onRequest({ request, serverContext, endResponse, fetchAPI }) {
      const direct = pending.get(request);
      const operation = direct && operations.get(direct.route);
      if (!direct || !operation || !getEnveloped) return;
      // As Sofa's Yoga plugin does: the server context carries the request into the GraphQL context.
      const context = Object.assign(serverContext, { request });
      const enveloped = getEnveloped(context);
      const variableValues: Record<string, unknown> = {};
      for (const [name, raw] of Object.entries(direct.params)) variableValues[name] = decodeURIComponent(raw);
      const answer = async (): Promise<Response> => {
        try {
          const contextValue = await enveloped.contextFactory(context);
          const result = (await enveloped.execute({
            schema,
            document: operation.document,
            contextValue,
            variableValues,
            operationName: operation.operationName,
          })) as { data?: Record<string, unknown> | null; errors?: readonly unknown[] };
          if (result.errors) return restErrorsResponse(result.errors);
          return etaggedJson(request, direct.route.responseStatus, JSON.stringify(result.data?.[operation.fieldName]), fetchAPI);
        } catch (error) {
          return restErrorsResponse([error]);
        }
      };
      return answer().then(endResponse);
    },
  };

  return {
    plugin,
    /** Whether this answers the route when its request has no query string and no body. */
    handles: (route: CompiledRoute) => operations.has(route),
    /** Marks a checked request for this dispatch; the request reaches it after the remaining plugins' checks. */
    take: (request: Request, route: CompiledRoute, params: Record<string, string>) => pending.set(request, { route, params }),
  };
}

export type RestDispatch = ReturnType<typeof createRestDispatch>;
