import { generateApiKey } from "../auth/api-keys.js";
import { isPermission, type Permission, permissions } from "../auth/permissions.js";
import type { MemberRole } from "../generated/prisma/enums.js";
import { writeAuditEvent } from "../modules/audit/audit.service.js";
import type { Db } from "../platform/db/database.js";
import { BadUserInputError, ConflictError, NotFoundError } from "../platform/errors.js";
import { newId } from "../platform/ids.js";

/** Operator actions (CLI, first start, tests): they act outside any request and any tenant. */

/** Audit row of an operator action: no user or key acted, the operator's tool did. */
export function operatorAudit(organizationId: string, action: string, entity: { type: string; id: string }, data: object) {
  return {
    id: newId("aud"),
    organizationId,
    action,
    entityType: entity.type,
    entityId: entity.id,
    data: { ...data, via: "operator" },
  };
}

export async function createOrganization(db: Db, name: string) {
  if (!name.trim()) throw new BadUserInputError("The organization name must not be empty");
  return db.organization.create({ data: { id: newId("org"), name: name.trim() }, select: { id: true, name: true } });
}

export async function createUser(
  db: Db,
  input: { email: string; name: string; organizationId?: string; role?: MemberRole; deviceLabelId?: number | null },
): Promise<{ userId: string; memberId: string | null }> {
  const email = input.email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new BadUserInputError(`Not an e-mail address: ${input.email}`);
  return db.$transaction(async (tx) => {
    const user =
      (await tx.user.findUnique({ where: { email }, select: { id: true } })) ??
      (await tx.user.create({ data: { id: newId("usr"), email, name: input.name.trim() }, select: { id: true } }));
    if (!input.organizationId) return { userId: user.id, memberId: null };
    const org = await tx.organization.findUnique({ where: { id: input.organizationId }, select: { id: true } });
    if (!org) throw new NotFoundError("Organization", input.organizationId);
    const existing = await tx.member.findUnique({
      where: { organizationId_userId: { organizationId: org.id, userId: user.id } },
      select: { id: true },
    });
    if (existing) throw new ConflictError(`${email} is already a member of ${org.id}`);
    const member = await tx.member.create({
      data: {
        id: newId("mem"),
        organizationId: org.id,
        userId: user.id,
        role: input.role ?? "employee",
        deviceLabelId: input.deviceLabelId ?? null,
      },
      select: { id: true, role: true },
    });
    await writeAuditEvent(
      tx,
      operatorAudit(org.id, "member.created", { type: "member", id: member.id }, { userId: user.id, role: member.role }),
    );
    return { userId: user.id, memberId: member.id };
  });
}

export function parseScopes(value: string): Permission[] {
  if (value === "all") return [...permissions];
  const scopes = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = scopes.filter((s) => !isPermission(s));
  if (unknown.length || !scopes.length) {
    throw new BadUserInputError(`Unknown scopes: ${unknown.join(", ") || "(none given)"}. Known: all, ${permissions.join(", ")}`);
  }
  return scopes as Permission[];
}

export function parseDuration(value: string): number {
  const m = /^(\d+)\s*(s|m|h|d)$/.exec(value.trim());
  if (!m) throw new BadUserInputError(`Not a duration: ${value} (use e.g. 30s, 15m, 12h, 30d)`);
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "s" | "m" | "h" | "d"];
  return Number(m[1]) * unit;
}

export async function createApiKey(
  db: Db,
  input: { organizationId: string; name: string; scopes: Permission[]; expiresInMs?: number; createdBy?: string },
) {
  const org = await db.organization.findUnique({ where: { id: input.organizationId }, select: { id: true } });
  if (!org) throw new NotFoundError("Organization", input.organizationId);
  if (!input.name.trim()) throw new BadUserInputError("The API key name must not be empty");
  const { key, lookupId, secretHash } = generateApiKey();
  const expiresAt = input.expiresInMs ? new Date(Date.now() + input.expiresInMs) : null;
  const id = newId("apk");
  const row = await db.$transaction(async (tx) => {
    const created = await tx.apiKey.create({
      data: {
        id,
        organizationId: org.id,
        name: input.name.trim(),
        lookupId,
        secretHash,
        scopes: input.scopes,
        expiresAt,
        createdBy: input.createdBy ?? "cli",
      },
      select: { id: true, scopes: true, expiresAt: true },
    });
    await writeAuditEvent(
      tx,
      operatorAudit(
        org.id,
        "api_key.created",
        { type: "api_key", id },
        { name: input.name.trim(), scopes: input.scopes, expiresAt },
      ),
    );
    return created;
  });
  return { id: row.id, key, scopes: row.scopes, expiresAt: row.expiresAt?.toISOString() ?? null };
}

export async function revokeApiKey(db: Db, id: string) {
  const key = await db.apiKey.findUnique({ where: { id }, select: { revokedAt: true, organizationId: true } });
  if (!key) throw new NotFoundError("API key", id);
  const revokedAt = key.revokedAt ?? new Date();
  if (!key.revokedAt) {
    await db.$transaction(async (tx) => {
      await tx.apiKey.update({ where: { id }, data: { revokedAt } });
      await writeAuditEvent(tx, operatorAudit(key.organizationId, "api_key.revoked", { type: "api_key", id }, {}));
    });
  }
  return { id, revokedAt: revokedAt.toISOString() };
}
