import { z } from "zod";
import type { Actor } from "../../context.js";
import type { Db } from "../../db/database.js";
import { NotFoundError } from "../../errors.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { newId } from "../../ids.js";
import { commonLimits, text } from "../../limits.js";
import { type PageArgs, pageQuery, toPage, withKeys } from "../../pagination.js";
import { parseInput } from "../../validation.js";
import { auditEvent } from "../audit/audit.service.js";

const MAX_CONTENT_DEPTH = 64;

/** How deeply a JSON value nests, counted level by level (no recursion on hostile input); stops past the limit. */
function jsonDepth(value: unknown): number {
  let depth = 0;
  let level: unknown[] = [value];
  while (level.length && depth <= MAX_CONTENT_DEPTH) {
    depth++;
    level = level.flatMap((v) => (v && typeof v === "object" ? Object.values(v) : []));
  }
  return depth;
}

const createVersionInput = z.object({
  sourceVersionId: text(commonLimits.id).nullish(),
  changelog: text(commonLimits.freeText).nullish(),
});

const createPolicyInput = z.object({
  name: text(commonLimits.name),
  description: text(commonLimits.freeText).nullish(),
  // A rich-text document (the editor's JSON): an array of blocks or one object. Absent means empty.
  content: z
    .custom<Prisma.InputJsonValue>(
      (value) => value === undefined || (typeof value === "object" && value !== null && jsonDepth(value) <= MAX_CONTENT_DEPTH),
      `must be a JSON array or object, nested at most ${MAX_CONTENT_DEPTH} levels`,
    )
    .optional(),
});

export type CreatePolicyArgs = { name: string; description?: string | null; content?: unknown };
type PolicyQuery = { select?: Prisma.PolicySelect; include?: Prisma.PolicyInclude };
type PolicyVersionQuery = { select?: Prisma.PolicyVersionSelect; include?: Prisma.PolicyVersionInclude };

export function createPolicyService(db: Db) {
  return {
    /** A published policy with version 1 (published, current), all in one transaction. */
    async create(actor: Actor, args: CreatePolicyArgs, query: PolicyQuery) {
      const input = parseInput(createPolicyInput, args);
      const policyId = newId("pol");
      const versionId = newId("pv");
      return db.$transaction(async (tx) => {
        await tx.policy.create({
          data: {
            id: policyId,
            organizationId: actor.organizationId,
            name: input.name,
            description: input.description ?? null,
            status: "published",
            lastVersionNumber: 1,
          },
          select: { id: true },
        });
        await tx.policyVersion.create({
          data: {
            id: versionId,
            organizationId: actor.organizationId,
            policyId,
            version: 1,
            status: "published",
            content: input.content ?? [],
            changelog: null,
            sourceVersionId: null,
            createdByUserId: actor.userId,
            createdByKeyId: actor.apiKeyId,
          },
          select: { id: true },
        });
        const policy = await tx.policy.update({ ...query, where: { id: policyId }, data: { currentVersionId: versionId } });
        await tx.auditEvent.create({
          data: auditEvent(
            actor,
            "policy.created",
            { type: "policy", id: policyId },
            {
              name: input.name,
              versionId,
              version: 1,
            },
          ),
        });
        return policy;
      });
    },

    async get(actor: Actor, id: string, query: PolicyQuery) {
      const policy = await db.policy.findUnique({ ...query, where: { id, organizationId: actor.organizationId } });
      if (!policy) throw new NotFoundError("Policy", id);
      return policy;
    },

    /** The policy's versions, highest number first (version numbers are unique per policy). */
    async versions(actor: Actor, args: { id: string } & PageArgs, query: PolicyVersionQuery) {
      const page = pageQuery(args, ["version"]);
      const policy = await db.policy.findUnique({
        where: { id: args.id, organizationId: actor.organizationId },
        select: { id: true },
      });
      if (!policy) throw new NotFoundError("Policy", args.id);
      const rows = await db.policyVersion.findMany({
        ...withKeys(query, page.keys),
        where: { policyId: policy.id, organizationId: actor.organizationId, ...page.where },
        orderBy: page.orderBy,
        take: page.take,
      });
      return toPage(rows, page);
    },

    /**
     * A new draft copying the source version (default: the current one). The per-policy counter is
     * incremented under the policy's row lock, so concurrent creators get consecutive numbers and
     * a number is never handed out twice, even after a draft is deleted.
     */
    async createVersion(actor: Actor, policyId: string, args: { sourceVersionId?: string | null; changelog?: string | null }) {
      const input = parseInput(createVersionInput, args);
      return db.$transaction(async (tx) => {
        const policy = await tx.policy.findUnique({
          where: { id: policyId, organizationId: actor.organizationId },
          select: { currentVersionId: true },
        });
        if (!policy) throw new NotFoundError("Policy", policyId);
        const sourceId = input.sourceVersionId ?? policy.currentVersionId;
        const source = sourceId
          ? await tx.policyVersion.findUnique({ where: { id: sourceId, policyId }, select: { id: true, content: true } })
          : null;
        if (input.sourceVersionId && !source) throw new NotFoundError("Policy version", input.sourceVersionId);
        const { lastVersionNumber: version } = await tx.policy.update({
          where: { id: policyId },
          data: { lastVersionNumber: { increment: 1 } },
          select: { lastVersionNumber: true },
        });
        const created = await tx.policyVersion.create({
          data: {
            id: newId("pv"),
            organizationId: actor.organizationId,
            policyId,
            version,
            status: "draft",
            content: (source?.content ?? []) as Prisma.InputJsonValue,
            changelog: input.changelog ?? null,
            sourceVersionId: source?.id ?? null,
            createdByUserId: actor.userId,
            createdByKeyId: actor.apiKeyId,
          },
          select: { id: true, version: true },
        });
        await tx.auditEvent.create({
          data: auditEvent(
            actor,
            "policy.version_created",
            { type: "policy", id: policyId },
            {
              versionId: created.id,
              version,
              sourceVersionId: source?.id ?? null,
            },
          ),
        });
        return { versionId: created.id, version: created.version };
      });
    },
  };
}
