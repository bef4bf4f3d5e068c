import type { Logger } from "pino";
import type { AuthState, Caller } from "./auth/caller.js";
import type { Permission } from "./auth/permissions.js";
import { ForbiddenError, UnauthenticatedError } from "./errors.js";
import type { Loaders } from "./request-loaders.js";
import type { Services } from "./services.js";

export type Context = {
  requestId: string;
  auth: AuthState;
  services: Services;
  logger: Logger;
  /** This request's DataLoaders, restricted to the caller's organization. */
  loaders: Loaders;
};

/** The authenticated caller with the request id, as services receive it. */
export type Actor = Caller & { requestId: string };

/** The caller, whatever it may do: any credential will do (viewer, node). */
export function authenticated(ctx: Context): Actor {
  const { auth } = ctx;
  if ("error" in auth) throw auth.error;
  if ("anonymous" in auth) throw new UnauthenticatedError();
  return { ...auth.caller, requestId: ctx.requestId };
}

/**
 * Every resolver starts here: the caller must be authenticated and hold `permission`. A field
 * guarded by another permission than its parent's is nullable and calls this first: refused, it
 * alone is null, with FORBIDDEN at its path.
 */
export function authorize(ctx: Context, permission: Permission): Actor {
  const { auth } = ctx;
  if ("error" in auth) throw auth.error;
  if ("anonymous" in auth) throw new UnauthenticatedError();
  if (!auth.caller.permissions.has(permission)) {
    throw new ForbiddenError(`This operation needs the permission ${permission}`);
  }
  return { ...auth.caller, requestId: ctx.requestId };
}

/** Whether the caller holds `permission`, for fields that are left out (null) rather than refused with the whole answer. */
export function can(ctx: Context, permission: Permission): boolean {
  return "caller" in ctx.auth && ctx.auth.caller.permissions.has(permission);
}
