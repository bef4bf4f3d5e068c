import type { Actor } from "../../auth/actor.js";
import type { Prisma } from "../../generated/prisma/client.js";
import {
  dateBoundRules,
  dateSortKeys,
  equals,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  oneOf,
  sortBy,
} from "../../graphql/lists.js";
import type { RecordQuery } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { lastBeforeCommit } from "../../platform/db/request-transaction.js";
import { newId } from "../../platform/ids.js";
import { limit } from "../../platform/limits.js";
import { type AuditEventInput, auditEventStatement } from "./audit.chain.js";

export type { AuditEventInput };

import { type AuditSigner, createAuditSigner, generateAuditSigningKey } from "./audit.keys.js";
import { createAuditTrail, type SequenceRange, sequenceLimit } from "./audit.trail.js";

export const auditLimits = { entityType: limit({ minLength: 1, maxLength: 64 }), sequence: sequenceLimit };

/** The organization's audit trail: what `auditEvents` filters by (one record's history, one actor, some actions). */
export const auditEventList: ListSpec = {
  table: "AuditEvent",
  parent: [],
  filters: {
    entityType: equals("entityType", "text"),
    entityId: oneOf("entityId", "text"),
    actorUserId: oneOf("actorUserId", "text"),
    action: oneOf("action", "text"),
    ...dateBoundRules(false),
  },
  orders: dateSortKeys(false),
  defaultOrder: newestFirst,
};

/** The audit row for a change; callers write it in the same transaction as the change. */
export function auditEvent(
  actor: Pick<Actor, "organizationId" | "userId" | "apiKeyId" | "requestId">,
  action: string,
  entity: { type: string; id: string },
  data?: Prisma.InputJsonValue,
): AuditEventInput {
  return {
    id: newId("aud"),
    organizationId: actor.organizationId,
    actorUserId: actor.userId,
    actorApiKeyId: actor.apiKeyId,
    action,
    entityType: entity.type,
    entityId: entity.id,
    data,
    requestId: actor.requestId,
  };
}

/**
 * Writes a change's audit event in the change's own transaction: every audit event is written here,
 * so what an event entails (its place in the organization's chain, its webhook deliveries) has one
 * home. One statement (audit.chain.ts) writes the event with its sequence and hash and its webhook
 * deliveries (one row per listening endpoint, webhooks.enqueue.ts). It runs last in the
 * transaction, just before the COMMIT, whenever the service calls this: it locks the organization's
 * chain head until the commit, every write of the organization waits for that lock, so it is held
 * for that statement and the COMMIT only.
 */
export async function writeAuditEvent(tx: Prisma.TransactionClient, data: AuditEventInput): Promise<void> {
  const { sql, values } = auditEventStatement(data);
  await lastBeforeCommit(tx, () => tx.$executeRawUnsafe(sql, ...values));
}

/** The organization's signed checkpoints: what `auditCheckpoints` filters by (default latest sequence first). */
export const auditCheckpointList: ListSpec = {
  table: "AuditCheckpoint",
  parent: [],
  filters: { ...dateBoundRules(false) },
  orders: { sequence: sortBy.int("sequence"), ...dateSortKeys(false) },
  defaultOrder: { field: "sequence", direction: "desc" },
};

export function createAuditService(db: Db, signer: AuditSigner = createAuditSigner(generateAuditSigningKey())) {
  const trail = createAuditTrail(db, signer);
  return {
    /** Verification, checkpoints, export and purge, by organization (audit.trail.ts): for the REST routes, the CLI and the timers. */
    trail,
    signer,
    /** Recomputes the caller's organization's chain over a range of sequences. */
    verify: (actor: Actor, range: SequenceRange) => trail.verify(actor.organizationId, range),
    /** Signs the caller's organization's chain head now. */
    checkpoint: (actor: Actor) => trail.checkpoint(actor.organizationId),
    /** The organization's checkpoints, filtered (default latest sequence first). */
    async checkpoints(actor: Actor, args: ListArgs) {
      return listPage(db, actor.organizationId, auditCheckpointList, args, async (ids) => {
        const rows = await db.auditCheckpoint.findMany({ where: { id: { in: ids }, organizationId: actor.organizationId } });
        return rows.map((row) => ({ ...row, signedAt: row.signedAt.toISOString() }));
      });
    },
    /** The organization's audit trail, filtered (default newest first). */
    async list(actor: Actor, args: ListArgs, query: { select?: Prisma.AuditEventSelect }) {
      return listPage(db, actor.organizationId, auditEventList, { ...args, query }, (ids, q: RecordQuery) =>
        db.auditEvent.findMany({
          ...(q as { select?: Prisma.AuditEventSelect }),
          where: { id: { in: ids }, organizationId: actor.organizationId },
        }),
      );
    },
  };
}

export type Changes = Record<string, { from: unknown; to: unknown }>;

/** The fields `input` sets to a new value: `changes` for the audit event, `data` for the update. */
export function changesBetween<T extends object>(current: T, input: Partial<T>): { changes: Changes; data: Partial<T> } {
  const changes: Changes = {};
  const data: Partial<T> = {};
  for (const key of Object.keys(input) as (keyof T & string)[]) {
    const to = input[key];
    if (to === undefined || to === current[key]) continue;
    changes[key] = { from: current[key], to };
    data[key] = to;
  }
  return { changes, data };
}

export type AuditService = ReturnType<typeof createAuditService>;
