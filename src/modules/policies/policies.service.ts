import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { rolePermissions } from "../../auth/permissions.js";
import { Prisma } from "../../generated/prisma/client.js";
import { PolicyStatus } from "../../generated/prisma/enums.js";
import {
  column,
  dateBoundRules,
  dateSortKeys,
  type FilterRule,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  oneOf,
  search,
  sortBy,
} from "../../graphql/lists.js";
import type { RecordQuery } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { rowsByIds } from "../../platform/db/graph-reader.js";
import { rowByIdReader } from "../../platform/db/row-by-id.js";
import { BadUserInputError, ConflictError, ForbiddenError, NotFoundError } from "../../platform/errors.js";
import type { Events } from "../../platform/events.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, limit, text } from "../../platform/limits.js";
import { parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, changesBetween, writeAuditEvent } from "../audit/audit.service.js";
import { controlsOfPolicy, recordControlStatusChanges } from "../frameworks/frameworks.readiness.js";
import type { NotificationDraft, Notifier } from "../notifications/notifications.service.js";

/** Policies with a version in review that names this member as its approver. */
const awaitingApprovalBy: FilterRule = ((memberId: string) => Prisma.sql`EXISTS (
    SELECT 1 FROM "PolicyVersion" v
    WHERE v."policyId" = ${column("id")} AND v."status" = 'in_review' AND v."approverId" = ${memberId})`) as FilterRule;

/** Policies' scalar columns by id (row-by-id.ts): what `findMany` returns without a selection. */
export const policyRows = rowByIdReader<Prisma.PolicyGetPayload<object>>("Policy", Object.values(Prisma.PolicyScalarFieldEnum));

/** The organization's policies: what `policies` filters and sorts by. */
export const policyList: ListSpec = {
  rowsInline: true,
  table: "Policy",
  parent: [],
  filters: {
    status: oneOf("status", '"PolicyStatus"'),
    awaitingApprovalBy,
    ...dateBoundRules(true),
    search: search("name"),
  },
  orders: {
    ...dateSortKeys(true),
    name: sortBy.text("name"),
    status: sortBy.enum("status", '"PolicyStatus"', Object.values(PolicyStatus)),
  },
  defaultOrder: newestFirst,
};

/** A policy's versions: what `policyVersions` and `Policy.versions` filter and sort by. */
export const policyVersionList: ListSpec = {
  table: "PolicyVersion",
  parent: [{ name: "policyId", sqlType: "text" }],
  filters: { status: oneOf("status", '"PolicyVersionStatus"'), ...dateBoundRules(false) },
  orders: { version: sortBy.int("version"), ...dateSortKeys(false) },
  defaultOrder: { field: "version", direction: "desc" },
};

const MAX_CONTENT_DEPTH = 64;
const contentShape = `must be a JSON array or object, nested at most ${MAX_CONTENT_DEPTH} levels`;

/**
 * How deeply a JSON value nests, counted level by level (no recursion on hostile input; stops past
 * the limit), and whether an object in it has its own `__proto__` key: JSON.parse makes one, and
 * Prisma cannot write it (it fails inside the client), so such a document is refused as input.
 */
function jsonShape(value: unknown): { depth: number; protoKey: boolean } {
  let depth = 0;
  let protoKey = false;
  let level: unknown[] = [value];
  while (level.length && depth <= MAX_CONTENT_DEPTH) {
    depth++;
    const next: unknown[] = [];
    for (const v of level) {
      if (!v || typeof v !== "object") continue;
      if (Object.hasOwn(v, "__proto__")) protoKey = true;
      next.push(...Object.values(v));
    }
    level = next;
  }
  return { depth, protoKey };
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
    .custom<Prisma.InputJsonValue>((value) => typeof value === "object" && value !== null, contentShape)
    // One walk of the document for both checks.
    .superRefine((value, ctx) => {
      const { depth, protoKey } = jsonShape(value);
      if (depth > MAX_CONTENT_DEPTH) ctx.addIssue({ code: "custom", message: contentShape });
      if (protoKey) ctx.addIssue({ code: "custom", message: 'must not use "__proto__" as a key' });
    })
    .optional(),
});

/** Absent leaves a field as it is; null clears the description and is refused for the name. */
const updatePolicyInput = z
  .object({
    name: text(commonLimits.name).optional(),
    description: text(commonLimits.freeText).nullish(),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), "give at least one field to change");

const submitInput = z.object({ approverId: text(commonLimits.id) });

export const policyLimits = {
  /** Why the approver sent a version back. */
  rejectionReason: limit({ minLength: 1, maxLength: 2000, notBlank: true }),
};

const rejectInput = z.object({ reason: text(policyLimits.rejectionReason) });

export type UpdatePolicyArgs = WithNulls<z.input<typeof updatePolicyInput>>;
type Tx = Parameters<Parameters<Db["$transaction"]>[0]>[0];

/** The roles whose members may approve: those that may update policies. */
const approverRoles = (Object.keys(rolePermissions) as (keyof typeof rolePermissions)[]).filter((role) =>
  rolePermissions[role].includes("policy:update"),
);
type LockedPolicy = { currentVersionId: string | null };

/** The policy's row, locked until the transaction ends: review steps of one policy run one at a time. */
async function lockPolicy(tx: Tx, actor: Actor, policyId: string): Promise<LockedPolicy> {
  const [policy] = await tx.$queryRaw<LockedPolicy[]>`
    SELECT "currentVersionId" FROM "Policy"
    WHERE "id" = ${policyId} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
  if (!policy) throw new NotFoundError("Policy", policyId);
  return policy;
}

async function versionOf(tx: Tx, policyId: string, versionId: string) {
  const version = await tx.policyVersion.findUnique({
    where: { id: versionId, policyId },
    select: {
      id: true,
      version: true,
      status: true,
      approverId: true,
      createdByUserId: true,
      submittedByUserId: true,
      approver: { select: { userId: true } },
    },
  });
  if (!version) throw new NotFoundError("Policy version", versionId);
  return version;
}

/** needs_review while a version waits for its approver, else published once a version is current, else draft. */
async function policyStatusAfter(tx: Tx, policyId: string, currentVersionId: string | null) {
  const inReview = await tx.policyVersion.count({ where: { policyId, status: "in_review" } });
  return inReview > 0 ? "needs_review" : currentVersionId ? "published" : "draft";
}

function assertStatus(version: { status: string; version: number }, expected: string, step: string) {
  if (version.status !== expected) {
    throw new ConflictError(`Version ${version.version} is ${version.status}: only a version in ${expected} can be ${step}`);
  }
}

/**
 * Only the member named as approver, acting through a user credential, and never the person who
 * created or submitted the version (four eyes). Submit already refuses such an approver; this
 * holds for versions submitted before that rule, and for any other way the two could meet.
 */
function assertApprover(
  actor: Actor,
  version: { approver: { userId: string } | null; createdByUserId: string | null; submittedByUserId: string | null },
) {
  if (!actor.userId || version.approver?.userId !== actor.userId) {
    throw new ForbiddenError("Only the approver named when the version was submitted can approve or reject it");
  }
  if (actor.userId === version.createdByUserId || actor.userId === version.submittedByUserId) {
    const role = actor.userId === version.createdByUserId ? "created" : "submitted";
    throw new ForbiddenError(
      `Four eyes: you ${role} this version, so you cannot approve or reject it; submit it again naming another approver`,
    );
  }
}

/**
 * Four eyes at submit: the approver is neither the version's creator nor its submitter. When no
 * other member could approve, the message says so, rather than leaving the caller to guess.
 */
async function assertSeparateApprover(
  tx: Tx,
  actor: Actor,
  version: { createdByUserId: string | null },
  approver: { userId: string },
) {
  const who =
    approver.userId === actor.userId
      ? "you, the submitter"
      : approver.userId === version.createdByUserId
        ? "the version's creator"
        : null;
  if (!who) return;
  const excluded = [actor.userId, version.createdByUserId].filter((id): id is string => Boolean(id));
  const others = await tx.member.count({
    where: {
      organizationId: actor.organizationId,
      isActive: true,
      userId: { notIn: excluded },
      role: { in: approverRoles },
    },
  });
  const hint = others
    ? "name another active owner or admin"
    : "this organization has no other active member who may approve policies (owner or admin): add one first";
  throw new BadUserInputError(
    `approverId names ${who}: the approver of a version must be neither its creator nor its submitter (four eyes); ${hint}`,
    [{ path: "approverId", message: "must name a member other than the version's creator and submitter" }],
  );
}

/**
 * The version as it is once every write of the step is done (the version, then its policy), read
 * in the same transaction: a client's cache then stores the policy's new status and current version.
 */
function afterWrite(tx: Tx, versionId: string, query: PolicyVersionQuery) {
  return tx.policyVersion.findUniqueOrThrow({ ...query, where: { id: versionId } });
}

/** review_completed: the member who submitted the version hears that it was approved or rejected. */
async function notifySubmitter(
  tx: Tx,
  actor: Actor,
  version: { submittedByUserId: string | null },
  policyId: string,
  outcome: "approved" | "rejected",
  notify: (draft: NotificationDraft) => Promise<void>,
) {
  if (!version.submittedByUserId) return;
  const submitter = await tx.member.findUnique({
    where: { organizationId_userId: { organizationId: actor.organizationId, userId: version.submittedByUserId } },
    select: { id: true },
  });
  await notify({ reason: "review_completed", recipientIds: [submitter?.id], entity: { type: "policy", id: policyId }, outcome });
}

export type CreatePolicyArgs = { name: string; description?: string | null; content?: unknown };
type PolicyQuery = { select?: Prisma.PolicySelect; include?: Prisma.PolicyInclude };
type PolicyVersionQuery = { select?: Prisma.PolicyVersionSelect; include?: Prisma.PolicyVersionInclude };

export function createPolicyService(db: Db, events: Events, notifier: Notifier) {
  /** Tells the subscribers of the policy, once the transaction that changed it has committed. */
  async function announced<T>(actor: Actor, policyId: string, change: Promise<T>): Promise<T> {
    const result = await change;
    events.publish("policy.changed", actor.organizationId, { id: policyId, organizationId: actor.organizationId });
    return result;
  }

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
            publishedAt: new Date(),
            content: input.content ?? [],
            changelog: null,
            sourceVersionId: null,
            createdByUserId: actor.userId,
            createdByKeyId: actor.apiKeyId,
          },
          select: { id: true },
        });
        const policy = await tx.policy.update({ ...query, where: { id: policyId }, data: { currentVersionId: versionId } });
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "policy.created",
            { type: "policy", id: policyId },
            {
              name: input.name,
              versionId,
              version: 1,
            },
          ),
        );
        return policy;
      });
    },

    async get(actor: Actor, id: string, query: PolicyQuery) {
      const policy = await db.policy.findUnique({ ...query, where: { id, organizationId: actor.organizationId } });
      if (!policy) throw new NotFoundError("Policy", id);
      return policy;
    },

    /** The organization's policies, newest first. */
    async list(actor: Actor, args: ListArgs, query: PolicyQuery) {
      const rows = rowsByIds(policyRows, db, actor.organizationId);
      return listPage(db, actor.organizationId, policyList, { ...args, query }, rows);
    },

    /** Name and description; the text lives in versions and changes through the review. */
    async update(actor: Actor, id: string, args: UpdatePolicyArgs, query: PolicyQuery) {
      const input = parseInput(updatePolicyInput, args);
      let changed = false;
      const updated = await db.$transaction(async (tx) => {
        const [current] = await tx.$queryRaw<{ name: string; description: string | null }[]>`
          SELECT "name", "description" FROM "Policy"
          WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
        if (!current) throw new NotFoundError("Policy", id);
        const { changes, data } = changesBetween(current, input);
        const where = { id, organizationId: actor.organizationId };
        if (Object.keys(changes).length === 0) return tx.policy.findUniqueOrThrow({ ...query, where });
        const updated = await tx.policy.update({ ...query, where, data });
        await writeAuditEvent(
          tx,
          auditEvent(actor, "policy.updated", { type: "policy", id }, { changes } as Prisma.InputJsonValue),
        );
        changed = true;
        return updated;
      });
      if (changed) events.publish("policy.changed", actor.organizationId, { id, organizationId: actor.organizationId });
      return updated;
    },

    /** The policy's changes as they commit: its fields, new versions and review steps. */
    async subscribe(actor: Actor, id: string) {
      const policy = await db.policy.findUnique({ where: { id, organizationId: actor.organizationId }, select: { id: true } });
      if (!policy) throw new NotFoundError("Policy", id);
      return events.subscribe("policy.changed", actor.organizationId, (event) => event.id === id);
    },

    /** A draft goes to review by an active member who may update policies; the policy then needs review. */
    async submitVersion(actor: Actor, args: { id: string; versionId: string; approverId: string }, query: PolicyVersionQuery) {
      const input = parseInput(submitInput, { approverId: args.approverId });
      return announced(
        actor,
        args.id,
        notifier.transaction(db, actor, async (tx, notify) => {
          await lockPolicy(tx, actor, args.id);
          const version = await versionOf(tx, args.id, args.versionId);
          const approver = await tx.member.findUnique({
            where: { id: input.approverId, organizationId: actor.organizationId, isActive: true },
            select: { id: true, role: true, userId: true },
          });
          if (!approver) throw new NotFoundError("Active member", input.approverId);
          if (!approverRoles.includes(approver.role)) {
            throw new BadUserInputError("approverId must name a member whose role may update policies (owner or admin)", [
              { path: "approverId", message: "must name a member who may update policies" },
            ]);
          }
          assertStatus(version, "draft", "submitted");
          await assertSeparateApprover(tx, actor, version, approver);
          await tx.policyVersion.update({
            select: { id: true },
            where: { id: version.id },
            data: {
              status: "in_review",
              approverId: approver.id,
              rejectionReason: null,
              submittedByUserId: actor.userId,
              submittedByKeyId: actor.apiKeyId,
            },
          });
          await tx.policy.update({ where: { id: args.id }, data: { status: "needs_review" }, select: { id: true } });
          await writeAuditEvent(
            tx,
            auditEvent(
              actor,
              "policy.version_submitted",
              { type: "policy", id: args.id },
              {
                versionId: version.id,
                version: version.version,
                approverId: approver.id,
                createdByUserId: version.createdByUserId,
                submittedByUserId: actor.userId,
              },
            ),
          );
          await notify({ reason: "review_requested", recipientIds: [approver.id], entity: { type: "policy", id: args.id } });
          return afterWrite(tx, version.id, query);
        }),
      );
    },

    /**
     * The approver publishes the version and makes it current, with the policy's status, in one
     * transaction under the policy's lock: of two approvals racing, each sees the other's result.
     */
    async approveVersion(actor: Actor, args: { id: string; versionId: string }, query: PolicyVersionQuery) {
      return announced(
        actor,
        args.id,
        notifier.transaction(db, actor, async (tx, notify) => {
          const policy = await lockPolicy(tx, actor, args.id);
          const version = await versionOf(tx, args.id, args.versionId);
          assertStatus(version, "in_review", "approved");
          assertApprover(actor, version);
          await tx.policyVersion.update({
            select: { id: true },
            where: { id: version.id },
            data: { status: "published", publishedAt: new Date() },
          });
          const status = await policyStatusAfter(tx, args.id, version.id);
          await tx.policy.update({
            where: { id: args.id },
            data: { currentVersionId: version.id, status },
            select: { id: true },
          });
          await writeAuditEvent(
            tx,
            auditEvent(
              actor,
              "policy.version_approved",
              { type: "policy", id: args.id },
              {
                versionId: version.id,
                version: version.version,
                approverId: version.approverId,
                createdByUserId: version.createdByUserId,
                submittedByUserId: version.submittedByUserId,
                previousCurrentVersionId: policy.currentVersionId,
              },
            ),
          );
          await notifySubmitter(tx, actor, version, args.id, "approved", notify);
          // A published current version can make the policy's controls ready.
          await recordControlStatusChanges(
            tx,
            actor,
            actor.organizationId,
            await controlsOfPolicy(tx, actor.organizationId, args.id),
            {
              notify,
            },
          );
          return afterWrite(tx, version.id, query);
        }),
      );
    },

    /** The approver sends the version back to draft with the reason. */
    async rejectVersion(actor: Actor, args: { id: string; versionId: string; reason: string }, query: PolicyVersionQuery) {
      const input = parseInput(rejectInput, { reason: args.reason });
      return announced(
        actor,
        args.id,
        notifier.transaction(db, actor, async (tx, notify) => {
          const policy = await lockPolicy(tx, actor, args.id);
          const version = await versionOf(tx, args.id, args.versionId);
          assertStatus(version, "in_review", "rejected");
          assertApprover(actor, version);
          await tx.policyVersion.update({
            select: { id: true },
            where: { id: version.id },
            data: { status: "draft", rejectionReason: input.reason },
          });
          const status = await policyStatusAfter(tx, args.id, policy.currentVersionId);
          await tx.policy.update({ where: { id: args.id }, data: { status }, select: { id: true } });
          await writeAuditEvent(
            tx,
            auditEvent(
              actor,
              "policy.version_rejected",
              { type: "policy", id: args.id },
              {
                versionId: version.id,
                version: version.version,
                approverId: version.approverId,
                createdByUserId: version.createdByUserId,
                submittedByUserId: version.submittedByUserId,
                reason: input.reason,
              },
            ),
          );
          await notifySubmitter(tx, actor, version, args.id, "rejected", notify);
          return afterWrite(tx, version.id, query);
        }),
      );
    },

    /** The policy's versions, highest number first (version numbers are unique per policy). */
    async versions(actor: Actor, { id, ...args }: { id: string } & ListArgs, query: PolicyVersionQuery) {
      const policy = await db.policy.findUnique({
        where: { id, organizationId: actor.organizationId },
        select: { id: true },
      });
      if (!policy) throw new NotFoundError("Policy", id);
      return listPage(
        db,
        actor.organizationId,
        policyVersionList,
        { ...args, parent: [policy.id], query },
        (ids, q: RecordQuery) =>
          db.policyVersion.findMany({
            ...(q as PolicyVersionQuery),
            where: { id: { in: ids }, organizationId: actor.organizationId },
          }),
      );
    },

    /**
     * A new draft copying the source version (default: the current one). The per-policy counter is
     * incremented under the policy's row lock, so concurrent creators get consecutive numbers and
     * a number is never handed out twice, even after a draft is deleted.
     */
    async createVersion(actor: Actor, policyId: string, args: { sourceVersionId?: string | null; changelog?: string | null }) {
      const input = parseInput(createVersionInput, args);
      return announced(
        actor,
        policyId,
        db.$transaction(async (tx) => {
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
          await writeAuditEvent(
            tx,
            auditEvent(
              actor,
              "policy.version_created",
              { type: "policy", id: policyId },
              {
                versionId: created.id,
                version,
                sourceVersionId: source?.id ?? null,
              },
            ),
          );
          return { versionId: created.id, version: created.version };
        }),
      );
    },
  };
}
