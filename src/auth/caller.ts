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

export type AuthState = { caller: Caller } | { error: AppError } | { anonymous: true };
