import type { AppError } from "../platform/errors.js";
import type { Permission } from "./permissions.js";

/** Who is calling, established once per request. */
export type Caller = {
  kind: "apiKey" | "jwt" | "session";
  organizationId: string;
  /** The acting user (JWT, session); null for an API key. */
  userId: string | null;
  apiKeyId: string | null;
  permissions: ReadonlySet<Permission>;
};

/**
 * The outside party an evidence request's link was sent to (X-Evidence-Request-Token, or the
 * page's own path): no member, no key, no permission. It is no `Caller`, so `authorize` and
 * `authenticated` refuse it (401) and only the three operations of the page accept it
 * (`asRecipient` in actor.ts).
 */
export type Recipient = {
  organizationId: string;
  evidenceRequestId: string;
  recipientEmail: string;
};

export type AuthState = { caller: Caller } | { recipient: Recipient } | { error: AppError } | { anonymous: true };
