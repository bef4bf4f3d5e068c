import { ForbiddenError, UnauthenticatedError } from "../platform/errors.js";
import type { AuthState, Caller, Recipient } from "./caller.js";
import type { Permission } from "./permissions.js";

/** What authorization needs of a request: its id and how its caller authenticated. */
export type RequestAuth = { requestId: string; auth: AuthState };

/** The authenticated caller with the request id, as services receive it. */
export type Actor = Caller & { requestId: string };

/** The recipient of an evidence request's link with the request id, as the page's three operations receive it. */
export type RecipientActor = Recipient & { requestId: string };

/** A link token is a credential for the page's three operations only: anywhere else it is no credential. */
const linkTokenRefused = () =>
  new UnauthenticatedError("An evidence request's link token is accepted only by the page's own operations");

function callerOf(auth: AuthState): Caller {
  if ("error" in auth) throw auth.error;
  if ("anonymous" in auth) throw new UnauthenticatedError();
  if ("recipient" in auth) throw linkTokenRefused();
  return auth.caller;
}

/** The caller, whatever it may do: any credential will do (viewer, node). */
export function authenticated(ctx: RequestAuth): Actor {
  return { ...callerOf(ctx.auth), requestId: ctx.requestId };
}

/**
 * Every resolver starts here: the caller must be authenticated and hold `permission`. A field
 * guarded by another permission than its parent's is nullable and calls this first: refused, it
 * alone is null, with FORBIDDEN at its path.
 */
export function authorize(ctx: RequestAuth, permission: Permission): Actor {
  const caller = callerOf(ctx.auth);
  if (!caller.permissions.has(permission)) {
    throw new ForbiddenError(`This operation needs the permission ${permission}`);
  }
  return { ...caller, requestId: ctx.requestId };
}

/** As `authorize`, for an operation that serves several purposes: any one of `permissions` will do. */
export function authorizeAny(ctx: RequestAuth, permissions: readonly Permission[]): Actor {
  const caller = callerOf(ctx.auth);
  if (!permissions.some((permission) => caller.permissions.has(permission))) {
    throw new ForbiddenError(`This operation needs one of the permissions ${permissions.join(", ")}`);
  }
  return { ...caller, requestId: ctx.requestId };
}

/** Whether the caller holds `permission`, for fields that are left out (null) rather than refused with the whole answer. */
export function can(ctx: RequestAuth, permission: Permission): boolean {
  return "caller" in ctx.auth && ctx.auth.caller.permissions.has(permission);
}

/** Whether the request came with an evidence request's link token (which only the page's operations take). */
export function isRecipient(ctx: RequestAuth): boolean {
  return "recipient" in ctx.auth;
}

/** The page's three operations start here: the credential must be a live link's token; anything else is 401. */
export function asRecipient(ctx: RequestAuth): RecipientActor {
  const { auth } = ctx;
  if ("error" in auth) throw auth.error;
  if (!("recipient" in auth)) {
    throw new UnauthenticatedError("This operation takes an evidence request's link token (X-Evidence-Request-Token)");
  }
  return { ...auth.recipient, requestId: ctx.requestId };
}
