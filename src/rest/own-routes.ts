import type { AuthState } from "../auth/caller.js";
import { appErrorResponse, errorResponse } from "../http/error-response.js";
import { AppError, BadUserInputError, UnauthenticatedError } from "../platform/errors.js";
import { commonLimits } from "../platform/limits.js";
import { type OwnRestRoute, type OwnRestRouteName, ownRestRoutes } from "./routes.js";

/** Answers one of the facade's own routes for a caller the guard has authenticated (when the route needs one). */
export type OwnRouteHandler = (call: {
  request: Request;
  url: URL;
  auth: AuthState;
  requestId: string;
  /** The path's `:name` segments. */
  params: Record<string, string>;
}) => Promise<Response>;
export type OwnRouteHandlers = Record<OwnRestRouteName, OwnRouteHandler>;

const compiled = (Object.entries(ownRestRoutes) as [OwnRestRouteName, OwnRestRoute][]).map(([name, route]) => ({
  name,
  route,
  segments: route.path.split("/"),
}));

export type OwnRouteMatch = [OwnRestRouteName, OwnRestRoute, Record<string, string>];

/** The own route at a path under /v1, if any, with its `:name` segments. */
export function ownRouteAt(path: string): OwnRouteMatch | undefined {
  const parts = path.split("/");
  for (const { name, route, segments } of compiled) {
    if (segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    const matches = segments.every((segment, i) => {
      const part = parts[i] as string;
      if (!segment.startsWith(":")) return segment === part;
      if (part === "") return false;
      try {
        params[segment.slice(1)] = decodeURIComponent(part);
      } catch {
        return false;
      }
      return true;
    });
    if (matches) return [name, route, params];
  }
  return undefined;
}

/** Serves an own route as the guard serves Sofa's: 405, 401, and every refusal in our error envelope. */
export async function serveOwnRoute(
  [, route, params]: OwnRouteMatch,
  handler: OwnRouteHandler,
  call: { request: Request; url: URL; requestId: string; authenticate: (request: Request) => Promise<AuthState> },
): Promise<Response> {
  const { request } = call;
  if (request.method !== route.method && !(route.method === "GET" && request.method === "HEAD")) {
    return errorResponse("METHOD_NOT_ALLOWED", `${request.method} is not allowed on ${call.url.pathname}`, undefined, {
      allow: route.method === "GET" ? "GET, HEAD" : route.method,
    });
  }
  const auth: AuthState = route.credential ? await call.authenticate(request) : { anonymous: true };
  if ("error" in auth) return appErrorResponse(auth.error);
  if (route.credential && "anonymous" in auth) return appErrorResponse(new UnauthenticatedError());
  try {
    // Path parameters are ids: held to the ids' length, and never NUL, which PostgreSQL text cannot hold.
    for (const [name, value] of Object.entries(params)) {
      if (value.includes("\u0000") || value.length > (commonLimits.id.maxLength as number)) {
        throw new BadUserInputError(`${name} is not an id`, [{ path: name, message: "is not an id" }]);
      }
    }
    return await handler({ request, url: call.url, auth, requestId: call.requestId, params });
  } catch (error) {
    if (error instanceof AppError) return appErrorResponse(error);
    throw error;
  }
}
