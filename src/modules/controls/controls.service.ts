import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import {
  dateBoundRules,
  dateSortKeys,
  equals,
  type FilterRule,
  idOrNone,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  search,
  sortBy,
} from "../../graphql/lists.js";
import type { Db } from "../../platform/db/database.js";
import { rowsByIds, selectsScalarsOnly } from "../../platform/db/graph-reader.js";
import { rowByIdReader } from "../../platform/db/row-by-id.js";
import { AppError, ConflictError, ForbiddenError, NotFoundError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, integer, limit, list, text } from "../../platform/limits.js";
import { parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, changesBetween, writeAuditEvent } from "../audit/audit.service.js";
import { scheduleObjectDeletions } from "../comments/attachments.jobs.js";
import { assertActiveMember } from "../entities.js";
import { controlFilters, type Notify, recordControlStatusChanges } from "../frameworks/frameworks.readiness.js";
import { requirementList } from "../frameworks/frameworks.service.js";
import type { Notifier } from "../notifications/notifications.service.js";
import { policyList } from "../policies/policies.service.js";
import { taskList } from "../tasks/tasks.service.js";

type ControlQuery = { select?: Prisma.ControlSelect; include?: Prisma.ControlInclude };
type Tx = Prisma.TransactionClient;
/** Who a change is recorded for (an Actor, or the outside party of an evidence request). */
export type Recorder = Pick<Actor, "organizationId" | "userId" | "apiKeyId" | "requestId">;

export const controlLimits = {
  code: limit({
    minLength: 1,
    maxLength: 64,
    pattern: "^[A-Za-z0-9][A-Za-z0-9._()/:-]*$",
    patternHint: "letters, digits and . _ ( ) / : -, starting with a letter or digit",
  }),
  evidenceEveryDays: limit({ minimum: 1, maximum: 3650 }),
  requirementIds: limit({ maxItems: 50 }),
  policyIds: limit({ maxItems: 25 }),
  taskIds: limit({ maxItems: 25 }),
};

// Who sees which controls -------------------------------------------------------------------------

/**
 * The controls a caller reads: all of the organization's with `control:read`; else, for a person
 * (a user credential of an active member), the controls they own; else none (403). One rule for
 * every read of controls and of what hangs on them (their evidence, its files, requirements'
 * controls): a control outside the scope is a 404, as if it did not exist.
 */
export type ControlScope = { all: true } | { all: false; ownerId: string };

export async function controlScope(db: Pick<Db, "member">, actor: Actor): Promise<ControlScope> {
  if (actor.permissions.has("control:read")) return { all: true };
  if (actor.userId) {
    const member = await db.member.findUnique({
      where: { organizationId_userId: { organizationId: actor.organizationId, userId: actor.userId }, isActive: true },
      select: { id: true },
    });
    if (member) return { all: false, ownerId: member.id };
  }
  throw new ForbiddenError("This operation needs the permission control:read");
}

/** The scope as an SQL condition on a control table's alias (`t` in list specs). */
export function scopeCondition(scope: ControlScope, alias = "t"): Prisma.Sql {
  return scope.all ? Prisma.sql`TRUE` : Prisma.sql`${Prisma.raw(`${alias}."ownerId"`)} = ${scope.ownerId}`;
}

/** Whether a control with this owner is in the scope. */
export const inScope = (scope: ControlScope, control: { ownerId: string | null }) =>
  scope.all || control.ownerId === scope.ownerId;

/** The active member behind a user credential, or null for an API key (or a person no longer active). */
export async function callerMemberId(db: Pick<Db, "member">, actor: Actor): Promise<string | null> {
  if (!actor.userId) return null;
  const member = await db.member.findUnique({
    where: { organizationId_userId: { organizationId: actor.organizationId, userId: actor.userId }, isActive: true },
    select: { id: true },
  });
  return member?.id ?? null;
}

// Readiness ----------------------------------------------------------------------------------------

/**
 * Records `control.status_changed` for each control whose state a change in `tx` may have moved
 * (section 16: every write that changes a control's state records it in its own transaction), with
 * the frameworks module's readiness (frameworks.readiness.ts). The one place every write of
 * controls and evidence calls; a write that can make a control not ready passes `notify`, so that
 * its owner hears of it (control_not_ready).
 */
export async function recordControlStates(
  tx: Tx,
  recorder: Recorder,
  controlIds: readonly string[],
  notify?: Notify,
): Promise<void> {
  if (controlIds.length === 0) return;
  await recordControlStatusChanges(tx, recorder, recorder.organizationId, controlIds, { notify });
}

// Lists ------------------------------------------------------------------------------------------

/** Controls mapped to a requirement of one of these frameworks. */
const inFrameworks: FilterRule = ((ids: readonly string[]) =>
  ids.length
    ? Prisma.sql`EXISTS (SELECT 1 FROM "ControlRequirement" cr JOIN "Requirement" r ON r."id" = cr."requirementId"
        WHERE cr."controlId" = t."id" AND r."frameworkId" IN (${Prisma.join(ids.map((id) => Prisma.sql`${id}::text`))}))`
    : Prisma.sql`FALSE`) as FilterRule;

/** The organization's controls: what `controls` filters and sorts by. */
export const controlList: ListSpec = {
  rowsInline: true,
  table: "Control",
  parent: [],
  filters: {
    ownerId: idOrNone("ownerId"),
    frameworkId: inFrameworks,
    ...dateBoundRules(true),
    search: search("code", "name"),
    // Not a filter field: the caller's scope (controlScope) when it is not every control.
    ownedBy: equals("ownerId", "text"),
    // Readiness now, from the frameworks module's SQL (frameworks.readiness.ts).
    state: ((states: readonly string[], { organizationId }: { organizationId: string }) =>
      controlFilters.stateIn(organizationId, states)) as FilterRule,
    evidenceDueBefore: ((before: string, { organizationId }: { organizationId: string }) =>
      controlFilters.evidenceDueBefore(organizationId, new Date(before))) as FilterRule,
  },
  orders: {
    ...dateSortKeys(true),
    code: sortBy.text("code"),
    name: sortBy.text("name"),
  },
  defaultOrder: newestFirst,
};

/** The controls a task backs (Task.controls), through their links. */
export const controlsOfTask: ListSpec = {
  ...controlList,
  parent: [{ name: "taskId", sqlType: "text" }],
  through: { table: "ControlTask", column: "controlId" },
};
/** The controls a policy backs (Policy.controls), through their links. */
export const controlsOfPolicy: ListSpec = {
  ...controlsOfTask,
  parent: [{ name: "policyId", sqlType: "text" }],
  through: { table: "ControlPolicy", column: "controlId" },
};
/** A control's linked policies (Control.policies), as `policies` filters and sorts them. */
export const policiesOfControl: ListSpec = {
  ...policyList,
  parent: [{ name: "controlId", sqlType: "text" }],
  through: { table: "ControlPolicy", column: "policyId" },
};
/** A control's linked tasks (Control.tasks), as `tasks` filters and sorts them. */
export const tasksOfControl: ListSpec = {
  ...taskList,
  parent: [{ name: "controlId", sqlType: "text" }],
  through: { table: "ControlTask", column: "taskId" },
};

/**
 * The requirements a control maps to (Control.requirements), filtered as a framework's, in the
 * order they were mapped; the organization's own maps scope them (a shipped requirement has no
 * organization).
 */
export const requirementsOfControl: ListSpec = {
  ...requirementList,
  parent: [{ name: "controlId", sqlType: "text" }],
  through: { table: "ControlRequirement", column: "requirementId" },
  scope: (organizationId) => Prisma.sql`j."organizationId" = ${organizationId}`,
  orders: {
    ...requirementList.orders,
    mappedAt: { sql: Prisma.raw('j."createdAt"'), sqlType: "timestamp(3)", kind: "timestamp" },
  },
  defaultOrder: { field: "mappedAt", direction: "asc" },
};

/** Controls' scalar columns by id (row-by-id.ts). */
export const controlRows = rowByIdReader<Prisma.ControlGetPayload<object>>(
  "Control",
  Object.values(Prisma.ControlScalarFieldEnum),
);

// Inputs -----------------------------------------------------------------------------------------

const code = text(controlLimits.code);
const name = text(commonLimits.name);
const description = text(commonLimits.freeText);
const ownerId = text(commonLimits.id);
const evidenceEveryDays = integer(controlLimits.evidenceEveryDays);
const id = text(commonLimits.id);

const createInput = z.object({
  code,
  name,
  description: description.nullish(),
  ownerId: ownerId.nullish(),
  evidenceEveryDays: evidenceEveryDays.nullish(),
});

/** Absent leaves a field as it is; null clears description, ownerId and evidenceEveryDays and is refused for code and name. */
const updateInput = z
  .object({
    code: code.optional(),
    name: name.optional(),
    description: description.nullish(),
    ownerId: ownerId.nullish(),
    evidenceEveryDays: evidenceEveryDays.nullish(),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), "give at least one field to change");

const mapInput = z.object({
  requirementIds: list(id, controlLimits.requirementIds).refine((ids) => ids.length > 0, "name at least one requirement"),
});
const linkInput = z
  .object({
    policyIds: list(id, controlLimits.policyIds).nullish(),
    taskIds: list(id, controlLimits.taskIds).nullish(),
  })
  .refine((input) => (input.policyIds?.length ?? 0) + (input.taskIds?.length ?? 0) > 0, "name at least one policy or task");

export type CreateControlArgs = WithNulls<z.input<typeof createInput>>;
export type UpdateControlArgs = WithNulls<z.input<typeof updateInput>>;
export type LinkControlArgs = WithNulls<z.input<typeof linkInput>>;

type Editable = {
  code: string;
  name: string;
  description: string | null;
  ownerId: string | null;
  evidenceEveryDays: number | null;
};

/** What a control's deletion answers: its id (over REST, 204). */
export type DeletedControl = { deletedId: string };

const unique = (ids: readonly string[]) => [...new Set(ids)];

/** A clear 409 for a code the organization already uses (the unique index decides under a race). */
async function assertCodeFree(tx: Tx, organizationId: string, code: string, except?: string) {
  const taken = await tx.control.findUnique({ where: { organizationId_code: { organizationId, code } }, select: { id: true } });
  if (taken && taken.id !== except)
    throw new ConflictError(`The code ${JSON.stringify(code)} is already used by control ${taken.id}`);
}

/** 404 naming the first id that is not one of the organization's records of this kind. */
function assertAllFound(kind: string, given: readonly string[], found: readonly { id: string }[]) {
  const known = new Set(found.map((r) => r.id));
  const missing = given.find((g) => !known.has(g));
  if (missing) throw new NotFoundError(kind, missing);
}

/** 404 naming the first policy or task id that is not the organization's. */
async function assertLinkable(tx: Tx, organizationId: string, policyIds: string[], taskIds: string[]) {
  const [policies, tasks] = await Promise.all([
    policyIds.length ? tx.policy.findMany({ where: { organizationId, id: { in: policyIds } }, select: { id: true } }) : [],
    taskIds.length ? tx.task.findMany({ where: { organizationId, id: { in: taskIds } }, select: { id: true } }) : [],
  ]);
  assertAllFound("Policy", policyIds, policies);
  assertAllFound("Task", taskIds, tasks);
}

export function createControlService(db: Db, notifier: Notifier) {
  /** The control under the row's lock, if the caller's organization has it. */
  async function locked(tx: Tx, actor: Actor, controlId: string): Promise<Editable & { id: string }> {
    const [control] = await tx.$queryRaw<(Editable & { id: string })[]>`
      SELECT "id", "code", "name", "description", "ownerId", "evidenceEveryDays"
      FROM "Control" WHERE "id" = ${controlId} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
    if (!control) throw new NotFoundError("Control", controlId);
    return control;
  }

  const readBack = (tx: Tx, actor: Actor, controlId: string, query: ControlQuery) =>
    tx.control.findUniqueOrThrow({ ...query, where: { id: controlId, organizationId: actor.organizationId } });

  /**
   * Link and unlink: the control under its lock, every id the organization's, `write` changing the
   * join rows; what it changed is audited and may change the control's state.
   */
  async function changeLinks(
    actor: Actor,
    controlId: string,
    args: LinkControlArgs,
    query: ControlQuery,
    action: "control.linked" | "control.unlinked",
    write: (tx: Tx, policyIds: string[], taskIds: string[]) => Promise<{ policyIds: string[]; taskIds: string[] }>,
  ) {
    const input = parseInput(linkInput, args);
    const policyIds = unique(input.policyIds ?? []);
    const taskIds = unique(input.taskIds ?? []);
    return notifier.transaction(db, actor, async (tx, notify) => {
      await locked(tx, actor, controlId);
      await assertLinkable(tx, actor.organizationId, policyIds, taskIds);
      const changed = await write(tx, policyIds, taskIds);
      if (changed.policyIds.length || changed.taskIds.length) {
        await writeAuditEvent(tx, auditEvent(actor, action, { type: "control", id: controlId }, changed));
        await recordControlStates(tx, actor, [controlId], notify);
      }
      return readBack(tx, actor, controlId, query);
    });
  }

  return {
    scope: (actor: Actor) => controlScope(db, actor),

    async get(actor: Actor, controlId: string, query: ControlQuery) {
      const scope = await controlScope(db, actor);
      const where = { id: controlId, organizationId: actor.organizationId, ...(scope.all ? {} : { ownerId: scope.ownerId }) };
      const control =
        scope.all && selectsScalarsOnly(query)
          ? await controlRows(db, controlId, actor.organizationId)
          : await db.control.findFirst({ ...query, where });
      if (!control) throw new NotFoundError("Control", controlId);
      return control;
    },

    /** The controls the caller reads (controlScope), filtered and sorted (default newest first). */
    async list(actor: Actor, args: ListArgs, query: ControlQuery) {
      const scope = await controlScope(db, actor);
      const filter = scope.all ? args.filter : { ...args.filter, ownedBy: scope.ownerId };
      const rows = rowsByIds(controlRows, db, actor.organizationId);
      return listPage(db, actor.organizationId, controlList, { ...args, filter, query }, rows);
    },

    async create(actor: Actor, args: CreateControlArgs, query: ControlQuery) {
      const input = parseInput(createInput, args);
      const controlId = newId("ctl");
      return notifier.transaction(db, actor, async (tx) => {
        await assertCodeFree(tx, actor.organizationId, input.code);
        if (input.ownerId) await assertActiveMember(tx, actor.organizationId, input.ownerId);
        const data = {
          code: input.code,
          name: input.name,
          description: input.description ?? null,
          ownerId: input.ownerId ?? null,
          evidenceEveryDays: input.evidenceEveryDays ?? null,
        };
        const control = await tx.control.create({
          ...query,
          data: { id: controlId, organizationId: actor.organizationId, ...data },
        });
        const { description: _description, ...recorded } = data;
        await writeAuditEvent(tx, auditEvent(actor, "control.created", { type: "control", id: controlId }, recorded));
        // A new control has no links: it starts not ready, which is what the frameworks module records first.
        await recordControlStates(tx, actor, [controlId]);
        return control;
      });
    },

    /** Changes the given fields under the row's lock, so that the audit event's `from` values are exact. */
    async update(actor: Actor, controlId: string, args: UpdateControlArgs, query: ControlQuery) {
      const input = parseInput(updateInput, args);
      return notifier.transaction(db, actor, async (tx, notify) => {
        const { id: _id, ...current } = await locked(tx, actor, controlId);
        if (input.code !== undefined && input.code !== current.code) {
          await assertCodeFree(tx, actor.organizationId, input.code, controlId);
        }
        if (input.ownerId) await assertActiveMember(tx, actor.organizationId, input.ownerId);
        const { changes, data } = changesBetween(current, input as Partial<Editable>);
        if (Object.keys(changes).length === 0) return readBack(tx, actor, controlId, query);
        const updated = await tx.control.update({
          ...query,
          where: { id: controlId, organizationId: actor.organizationId },
          data,
        });
        await writeAuditEvent(
          tx,
          auditEvent(actor, "control.updated", { type: "control", id: controlId }, { changes } as Prisma.InputJsonValue),
        );
        if (changes.evidenceEveryDays) await recordControlStates(tx, actor, [controlId], notify);
        return updated;
      });
    },

    /**
     * Removes the control with its maps, links and evidence; the evidence files' rows go in the
     * same transaction, and their objects once it has committed (attachments.jobs.ts).
     */
    async delete(actor: Actor, controlId: string): Promise<DeletedControl> {
      return notifier.transaction(db, actor, async (tx) => {
        const control = await locked(tx, actor, controlId);
        const evidence = await tx.evidence.findMany({
          where: { controlId, organizationId: actor.organizationId },
          select: { id: true, attachment: { select: { id: true, sha256: true, store: true, objectKey: true } } },
          orderBy: { id: "asc" },
        });
        const files = evidence.map((e) => e.attachment);
        await scheduleObjectDeletions(tx, files);
        if (files.length) await tx.attachment.deleteMany({ where: { id: { in: files.map((f) => f.id) } } });
        await recordControlStates(tx, actor, [controlId]);
        await tx.control.delete({ where: { id: controlId, organizationId: actor.organizationId }, select: { id: true } });
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "control.deleted",
            { type: "control", id: controlId },
            {
              code: control.code,
              name: control.name,
              ownerId: control.ownerId,
              evidenceEveryDays: control.evidenceEveryDays,
              evidence: evidence.map((e) => ({ id: e.id, attachmentId: e.attachment.id, sha256: e.attachment.sha256 })),
            },
          ),
        );
        return { deletedId: controlId };
      });
    },

    /**
     * Maps the control to requirements of frameworks the organization sees (shipped, or its own
     * custom ones); a requirement already mapped stays as it is. The event names the ones added.
     */
    async map(actor: Actor, controlId: string, requirementIds: readonly string[], query: ControlQuery) {
      const input = parseInput(mapInput, { requirementIds });
      const ids = unique(input.requirementIds);
      return notifier.transaction(db, actor, async (tx) => {
        await locked(tx, actor, controlId);
        const found = await tx.requirement.findMany({
          where: {
            id: { in: ids },
            framework: { OR: [{ organizationId: null }, { organizationId: actor.organizationId }] },
          },
          select: { id: true },
        });
        assertAllFound("Requirement", ids, found);
        const added = await tx.controlRequirement.createManyAndReturn({
          data: ids.map((requirementId) => ({ organizationId: actor.organizationId, controlId, requirementId })),
          skipDuplicates: true,
          select: { requirementId: true },
        });
        if (added.length) {
          await writeAuditEvent(
            tx,
            auditEvent(
              actor,
              "control.mapped",
              { type: "control", id: controlId },
              {
                requirementIds: added.map((a) => a.requirementId),
              },
            ),
          );
          await recordControlStates(tx, actor, [controlId]);
        }
        return readBack(tx, actor, controlId, query);
      });
    },

    /** Removes one map; a requirement not mapped is a 404 (the map is what the path names). */
    async unmap(actor: Actor, controlId: string, requirementId: string, query: ControlQuery) {
      parseInput(z.object({ requirementId: id }), { requirementId });
      return notifier.transaction(db, actor, async (tx) => {
        await locked(tx, actor, controlId);
        const removed = await tx.controlRequirement.deleteMany({
          where: { controlId, requirementId, organizationId: actor.organizationId },
        });
        if (removed.count === 0)
          throw new AppError("NOT_FOUND", `Requirement ${JSON.stringify(requirementId)} is not mapped to control ${controlId}`);
        await writeAuditEvent(
          tx,
          auditEvent(actor, "control.unmapped", { type: "control", id: controlId }, { requirementIds: [requirementId] }),
        );
        await recordControlStates(tx, actor, [controlId]);
        return readBack(tx, actor, controlId, query);
      });
    },

    /** Links policies and tasks of the organization; a link already there stays as it is. */
    link: (actor: Actor, controlId: string, args: LinkControlArgs, query: ControlQuery) =>
      changeLinks(actor, controlId, args, query, "control.linked", async (tx, policyIds, taskIds) => {
        const where = { organizationId: actor.organizationId, controlId };
        const policies = policyIds.length
          ? await tx.controlPolicy.createManyAndReturn({
              data: policyIds.map((policyId) => ({ ...where, policyId })),
              skipDuplicates: true,
              select: { policyId: true },
            })
          : [];
        const tasks = taskIds.length
          ? await tx.controlTask.createManyAndReturn({
              data: taskIds.map((taskId) => ({ ...where, taskId })),
              skipDuplicates: true,
              select: { taskId: true },
            })
          : [];
        return { policyIds: policies.map((p) => p.policyId), taskIds: tasks.map((t) => t.taskId) };
      }),

    /** Removes links; ids of the organization not linked are left alone, as a re-link is; another organization's are 404. */
    unlink: (actor: Actor, controlId: string, args: LinkControlArgs, query: ControlQuery) =>
      changeLinks(actor, controlId, args, query, "control.unlinked", async (tx, policyIds, taskIds) => {
        const policies = policyIds.length
          ? await tx.$queryRaw<{ policyId: string }[]>`
              DELETE FROM "ControlPolicy" WHERE "controlId" = ${controlId} AND "policyId" = ANY(${policyIds}::text[])
              RETURNING "policyId"`
          : [];
        const tasks = taskIds.length
          ? await tx.$queryRaw<{ taskId: string }[]>`
              DELETE FROM "ControlTask" WHERE "controlId" = ${controlId} AND "taskId" = ANY(${taskIds}::text[])
              RETURNING "taskId"`
          : [];
        return { policyIds: policies.map((p) => p.policyId), taskIds: tasks.map((t) => t.taskId) };
      }),
  };
}

export type ControlService = ReturnType<typeof createControlService>;
