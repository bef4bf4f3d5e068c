import { type DocumentNode, type GraphQLSchema, TypeInfo, visit, visitWithTypeInfo } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { AuthState } from "../auth/caller.js";
import { announcesBody, type BodyReader } from "../http/body-admission.js";
import { connectionAbort } from "../http/connection-abort.js";
import { appErrorResponse, errorResponse } from "../http/error-response.js";
import { requestIdOf } from "../http/request-id.js";
import { AppError, UnauthenticatedError } from "../platform/errors.js";
import { docsResponse } from "./docs.js";
import { withEtag } from "./etag.js";
import { type OwnRouteHandlers, ownRouteAt, serveOwnRoute } from "./own-routes.js";
import { type CompiledRoute, matchRoute, validateRestRequest } from "./request-validation.js";
import type { RestDispatch } from "./rest-dispatch.js";
import { REST_BASE } from "./routes.js";

/** Sofa's document for a route without the fields the route's `omit` leaves out. */
export function withoutOmitted(schema: GraphQLSchema, document: DocumentNode, omitted: ReadonlySet<string>): DocumentNode {
  const typeInfo = new TypeInfo(schema);
  return visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        const parent = typeInfo.getParentType();
        return parent && omitted.has(`${parent.name}.${node.name.value}`) ? null : undefined;
      },
    }),
  );
}

/** Answers a download route (routes.ts, `download`) with the file's bytes, for a caller the guard has authenticated. */
export type DownloadHandler = (call: {
  request: Request;
  params: Record<string, string>;
  auth: AuthState;
  requestId: string;
  /** Resets the client's connection (a body cut short mid-stream); undefined in process. */
  abort?: () => void;
}) => Promise<Response>;

type RestGuardOptions = {
  /** Reads bodies within the body limit and the memory budget, only once the caller is known. */
  bodyReader: BodyReader;
  routes: CompiledRoute[];
  authenticate: (request: Request) => Promise<AuthState>;
  /** Carries the authentication over to the request the guard hands on. */
  rememberAuth: (request: Request, auth: AuthState) => void;
  openApiDocument: () => unknown;
  /** Answers the reads that need nothing but their path, and the writes, without Sofa's second routing. */
  dispatch?: RestDispatch;
  /** The handlers of the facade's own routes (routes.ts, ownRestRoutes); those routes answer 404 without. */
  ownRoutes?: OwnRouteHandlers;
  /** Streams a download route's file (attachments.routes.ts); such a route answers 404 without. */
  download?: DownloadHandler;
};

/**
 * Everything under /v1 passes here before Sofa: the OpenAPI document and its docs, JSON 404/405 for unknown
 * routes (Sofa would serve defaults for every field, and its /webhook routes), authentication,
 * and strict checking of path, query and body against the field's arguments.
 */
export function useRestGuard({
  routes,
  authenticate,
  rememberAuth,
  openApiDocument,
  bodyReader,
  dispatch,
  ownRoutes,
  download,
}: RestGuardOptions): Plugin {
  const reads = new WeakSet<Request>();
  const explicitNulls = new WeakMap<Request, string[]>();
  const queryVariables = new WeakMap<Request, Record<string, unknown>>();
  const routeOf = new WeakMap<Request, CompiledRoute>();
  const noContent = new WeakSet<Request>();
  const trimmed = new WeakMap<DocumentNode, DocumentNode>();
  return {
    onExecute({ args }) {
      // Sofa drops null body values; put them back so that null (clear) and absent (keep) differ.
      const request = (args.contextValue as { request?: Request }).request;
      const nulls = request && explicitNulls.get(request);
      if (nulls) args.variableValues = { ...args.variableValues, ...Object.fromEntries(nulls.map((name) => [name, null])) };
      // Filter fields and the sort, which Sofa does not know as arguments, become the list's filter and orderBy.
      const fromQuery = request && queryVariables.get(request);
      if (fromQuery) args.variableValues = { ...args.variableValues, ...fromQuery };
      // Sofa selects every field of the REST view; a route of the five may leave some out (`omit`).
      const route = request && routeOf.get(request);
      if (route?.omit) {
        let document = trimmed.get(args.document);
        if (!document) {
          document = withoutOmitted(args.schema, args.document, new Set(route.omit));
          trimmed.set(args.document, document);
        }
        args.document = document;
      }
    },
    async onResponse({ request, response, setResponse, fetchAPI }) {
      if (noContent.has(request) && response.status === 200) {
        const headers = new fetchAPI.Headers(response.headers);
        headers.delete("content-type");
        headers.delete("content-length");
        setResponse(new fetchAPI.Response(null, { status: 204, headers }));
        return;
      }
      if (!reads.has(request) || response.status !== 200) return;
      setResponse(await withEtag(request, response, fetchAPI));
    },
    async onRequest({ request, url, serverContext, endResponse, setRequest, fetchAPI }) {
      const { pathname } = url;
      if (pathname !== REST_BASE && !pathname.startsWith(`${REST_BASE}/`)) {
        if (pathname.startsWith(REST_BASE)) endResponse(errorResponse("NOT_FOUND", `No route ${request.method} ${pathname}`));
        return;
      }
      const path = pathname.slice(REST_BASE.length);
      if (path === "/openapi.json" && (request.method === "GET" || request.method === "HEAD")) {
        endResponse(Response.json(openApiDocument()));
        return;
      }
      const docs = docsResponse(request.method, pathname);
      if (docs) {
        endResponse(docs);
        return;
      }
      const own = ownRoutes && ownRouteAt(path);
      if (own) {
        const requestId = requestIdOf(serverContext as object);
        endResponse(await serveOwnRoute(own, ownRoutes[own[0]], { request, url, requestId, authenticate }));
        return;
      }
      const match = matchRoute(routes, request.method, path);
      if (!match) {
        endResponse(errorResponse("NOT_FOUND", `No route ${request.method} ${pathname}`));
        return;
      }
      if ("allowed" in match) {
        endResponse(
          errorResponse("METHOD_NOT_ALLOWED", `${request.method} is not allowed on ${pathname}`, undefined, {
            allow: match.allowed.join(", "),
          }),
        );
        return;
      }
      const auth = await authenticate(request);
      if ("error" in auth) {
        endResponse(appErrorResponse(auth.error));
        return;
      }
      if ("anonymous" in auth) {
        endResponse(appErrorResponse(new UnauthenticatedError()));
        return;
      }
      // What Sofa's request carries on: the caller, nulls the body set, and whether it is a read.
      const handOn = (forwarded: Request, { nulls, variables }: ReturnType<typeof validateRestRequest>) => {
        rememberAuth(forwarded, auth);
        routeOf.set(forwarded, match.route);
        if (match.route.responseStatus === 204) noContent.add(forwarded);
        if (nulls.length) explicitNulls.set(forwarded, nulls);
        if (Object.keys(variables).length) queryVariables.set(forwarded, variables);
        if (match.route.method === "GET") reads.add(forwarded);
      };
      // A file streams from where it is stored; it never becomes a GraphQL value.
      const serveDownload = () => {
        if (!download) throw new AppError("NOT_FOUND", `No route ${request.method} ${pathname}`);
        return download({
          request,
          params: match.params,
          auth,
          requestId: requestIdOf(serverContext as object),
          abort: connectionAbort(serverContext as object),
        });
      };
      try {
        if (match.route.method === "GET" && !announcesBody(request)) {
          const checkedInput = validateRestRequest(match.route, match.params, url, "", null);
          if (match.route.download) {
            endResponse(await serveDownload());
            return;
          }
          if (request.method === "GET" && !url.search && dispatch?.handles(match.route)) {
            // Every variable is in the path, checked above: answered without Sofa's second routing.
            rememberAuth(request, auth);
            dispatch.take(request, match.route, match.params);
            return;
          }
          // Nothing to read: Sofa gets the request as it came.
          handOn(request, checkedInput);
          return;
        }
        const read = await bodyReader.read(request, serverContext);
        if ("refused" in read) {
          endResponse(appErrorResponse(read.refused, read.headers));
          return;
        }
        const body = read.text;
        const checkedInput = validateRestRequest(match.route, match.params, url, body, request.headers.get("content-type"));
        if (match.route.download) {
          endResponse(await serveDownload());
          return;
        }
        // The body stream is consumed: Sofa gets a request carrying the text that was checked.
        const checked = new fetchAPI.Request(request.url, {
          method: request.method,
          headers: request.headers,
          body: body || undefined,
        });
        handOn(checked, checkedInput);
        setRequest(checked);
        // A write whose variables are all in its path and body: answered without Sofa's second routing.
        if (!url.search && dispatch?.handles(match.route))
          dispatch.take(checked, match.route, match.params, checkedInput.body ?? {});
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        endResponse(appErrorResponse(error));
      }
    },
  };
}
