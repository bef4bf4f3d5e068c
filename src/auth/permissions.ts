import type { MemberRole } from "../generated/prisma/enums.js";

/** The one vocabulary of permissions: `resource:action`, shared by roles and API key scopes. */
export const permissions = [
  "audit:read",
  "comment:create",
  "comment:read",
  "control:read",
  "control:update",
  "framework:manage",
  "framework:read",
  "member:create",
  "member:read",
  "member:update",
  "policy:create",
  "policy:read",
  "policy:update",
  "risk:create",
  "risk:read",
  "risk:update",
  "task:create",
  "task:read",
  "task:update",
  "vendor:create",
  "vendor:read",
  "vendor:update",
  "webhook:manage",
] as const;

export type Permission = (typeof permissions)[number];

export function isPermission(value: string): value is Permission {
  return (permissions as readonly string[]).includes(value);
}

const readEverything = permissions.filter((p) => p.endsWith(":read"));

export const rolePermissions: Record<MemberRole, readonly Permission[]> = {
  owner: permissions,
  admin: permissions,
  auditor: [...readEverything, "comment:create"],
  employee: ["task:read", "comment:read", "comment:create"],
  contractor: ["task:read", "comment:read", "comment:create"],
};
