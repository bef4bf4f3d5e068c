import { ForbiddenError, UnauthenticatedError } from "../platform/errors.js";
import type { AuthState, Caller } from "./caller.js";
import type { Permission } from "./permissions.js";

/** What authorization needs of a request: its id and how its caller authenticated. */
export type RequestAuth = { requestId: string; auth: AuthState };

/** The authenticated caller with the request id, as services receive it. */
export type Actor = Caller & { requestId: string };

/** The caller, whatever it may do: any credential will do (viewer, node). */
export function authenticated(ctx: RequestAuth): Actor {
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
export function authorize(ctx: RequestAuth, permission: Permission): Actor {
  const { auth } = ctx;
  if ("error" in auth) throw auth.error;
  if ("anonymous" in auth) throw new UnauthenticatedError();
  if (!auth.caller.permissions.has(permission)) {
    throw new ForbiddenError(`This operation needs the permission ${permission}`);
  }
  return { ...auth.caller, requestId: ctx.requestId };
}

/** Whether the caller holds `permission`, for fields that are left out (null) rather than refused with the whole answer. */
export function can(ctx: RequestAuth, permission: Permission): boolean {
  return "caller" in ctx.auth && ctx.auth.caller.permissions.has(permission);
}
