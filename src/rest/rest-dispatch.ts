import { buildOperationNodeForField } from "@graphql-tools/utils";
import {
  type DocumentNode,
  GraphQLError,
  type GraphQLInputType,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isListType,
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

/**
 * What the REST guard hands over: a checked request whose every variable comes from its path and,
 * for a write, its JSON body (already parsed and checked against the field's arguments).
 */
type Direct = { route: CompiledRoute; params: Record<string, string>; body?: Record<string, unknown> };

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
  const [type, fieldName] = route.field.split(".") as [string, string];
  const node = buildOperationNodeForField({
    kind: type === "Mutation" ? OperationTypeNode.MUTATION : OperationTypeNode.QUERY,
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
 * A body value as Sofa passes it on as a variable (its parseVariable): a scalar through its
 * `serialize` (a Boolean is true only as true or "true"), a list item by item (a single value as
 * a list of one), anything else as it is. The guard has checked it against the argument's type.
 */
function sofaValue(value: unknown, type: GraphQLInputType): unknown {
  const inner = getNullableType(type);
  if (isListType(inner)) return (Array.isArray(value) ? value : [value]).map((item) => sofaValue(item, inner.ofType));
  if (isScalarType(inner)) return inner.serialize(inner.name === "Boolean" ? value === true || value === "true" : value);
  return value;
}

/**
 * The variables Sofa would execute with: the path's decoded text, then the body's values as Sofa
 * passes them on (sofaValue); null and absent are left out, as Sofa leaves them (the guard's own
 * hook puts back the nulls a body sent). A value Sofa cannot pass on is its 400, as in Sofa.
 */
function variablesOf({ route, params, body }: Direct): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(params)) variables[name] = decodeURIComponent(raw);
  try {
    for (const arg of body ? route.args : []) {
      const value = body?.[arg.name];
      if (value !== undefined && value !== null && !(arg.name in variables)) variables[arg.name] = sofaValue(value, arg.type);
    }
  } catch (error) {
    throw new GraphQLError((error as Error).message, { extensions: { http: { status: 400 } } });
  }
  return variables;
}

/**
 * Answers the REST reads that need nothing but their path (get a task, a member, a vendor...) and
 * the writes (create a comment, update a task...) with Sofa's own document for the route, executed
 * as Sofa executes it (Yoga's envelope: every plugin's execution hooks run), without a second
 * routing. The guard has already matched the route, authenticated the caller, checked the path
 * and parsed and checked the body; Sofa would route again over every pattern (fets, URLPattern),
 * read and parse the body again, re-read the query string for each variable, and answer with a
 * response the ETag then copies. Here the JSON is written once (for a read, the ETag set on it).
 * Every other request (a list, anything with a query string) goes on to Sofa. Same status, headers and bytes as through Sofa: the bench
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
    if (route.download) continue;
    // Path parameters of text types only (ID, String): Sofa passes those on as the decoded text of
    // the path, which is what this passes on.
    const textPath = route.pathParams.every((name) => {
      const named = getNamedType(route.args.find((arg) => arg.name === name)?.type);
      return isScalarType(named) && (named.name === "ID" || named.name === "String");
    });
    if (!textPath) continue;
    // A read whose every argument is in its path; a write (its other arguments in the body).
    const read = route.method === "GET" && route.field.startsWith("Query.");
    const write = route.method !== "GET" && route.field.startsWith("Mutation.");
    if ((read && route.pathParams.length && route.args.every((arg) => route.pathParams.includes(arg.name))) || write)
      operations.set(route, operationOf(schema, models, route, trim));
  }
  const pending = new WeakMap<Request, Direct>();
  let answered = 0;
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
      answered++;
      // As Sofa's Yoga plugin does: the server context carries the request into the GraphQL context.
      const context = Object.assign(serverContext, { request });
      const enveloped = getEnveloped(context);
      const answer = async (): Promise<Response> => {
        try {
          const variableValues = variablesOf(direct);
          const contextValue = await enveloped.contextFactory(context);
          const result = (await enveloped.execute({
            schema,
            document: operation.document,
            contextValue,
            variableValues,
            operationName: operation.operationName,
          })) as { data?: Record<string, unknown> | null; errors?: readonly unknown[] };
          if (result.errors) return restErrorsResponse(result.errors);
          const json = JSON.stringify(result.data?.[operation.fieldName]);
          if (direct.route.method === "GET") return etaggedJson(request, direct.route.responseStatus, json, fetchAPI);
          // As Sofa answers (a 204 route answers 200 here; the guard makes it 204).
          const status = direct.route.responseStatus === 204 ? 200 : direct.route.responseStatus;
          return new fetchAPI.Response(json, { status, headers: { "content-type": "application/json; charset=utf-8" } });
        } catch (error) {
          return restErrorsResponse([error]);
        }
      };
      return answer().then(endResponse);
    },
  };

  return {
    plugin,
    /** How many requests this has answered (what its test reads). */
    answered: () => answered,
    /** Whether this answers the route when its request has no query string (a read: and no body). */
    handles: (route: CompiledRoute) => operations.has(route),
    /** Marks a checked request for this dispatch; the request reaches it after the remaining plugins' checks. */
    take: (request: Request, route: CompiledRoute, params: Record<string, string>, body?: Record<string, unknown>) =>
      pending.set(request, { route, params, body }),
  };
}

export type RestDispatch = ReturnType<typeof createRestDispatch>;
