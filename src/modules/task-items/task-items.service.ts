import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import {
  type TaskItemEntityType,
  type TaskItemPriority,
  TaskItemPriority as TaskItemPriorityValues,
  type TaskItemStatus,
  TaskItemStatus as TaskItemStatusValues,
} from "../../generated/prisma/enums.js";
import {
  dateBoundRules,
  dateSortKeys,
  idOrNone,
  type ListArgs,
  type ListSpec,
  listPage,
  newestFirst,
  oneOf,
  search,
  sortBy,
} from "../../graphql/lists.js";
import type { Db } from "../../platform/db/database.js";
import { rowsByIds } from "../../platform/db/graph-reader.js";
import { rowByIdReader } from "../../platform/db/row-by-id.js";
import { BadUserInputError, NotFoundError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, text } from "../../platform/limits.js";
import { notNull, parseInput } from "../../platform/validation.js";
import { auditEvent, changesBetween, writeAuditEvent } from "../audit/audit.service.js";
import { assertActiveMember, assertEntityExists } from "../entities.js";
import type { Notifier } from "../notifications/notifications.service.js";

export type TaskItemStats = { total: number; byStatus: Record<TaskItemStatus, number> };

/** Task items' scalar columns by id (row-by-id.ts): what `findMany` returns without a selection. */
export const taskItemRows = rowByIdReader<Prisma.TaskItemGetPayload<object>>(
  "TaskItem",
  Object.values(Prisma.TaskItemScalarFieldEnum),
);

/** The task items of one vendor or risk: what `taskItems` and `<Type>.taskItems` filter and sort by. */
export const taskItemList: ListSpec = {
  table: "TaskItem",
  parent: [
    { name: "entityType", sqlType: '"TaskItemEntityType"' },
    { name: "entityId", sqlType: "text" },
  ],
  filters: {
    status: oneOf("status", '"TaskItemStatus"'),
    priority: oneOf("priority", '"TaskItemPriority"'),
    assigneeId: idOrNone("assigneeId"),
    ...dateBoundRules(true),
    search: search("title"),
  },
  orders: {
    ...dateSortKeys(true),
    title: sortBy.text("title"),
    status: sortBy.enum("status", '"TaskItemStatus"', Object.values(TaskItemStatusValues)),
    priority: sortBy.enum("priority", '"TaskItemPriority"', Object.values(TaskItemPriorityValues)),
  },
  defaultOrder: newestFirst,
};

type TaskItemQuery = { select?: Prisma.TaskItemSelect; include?: Prisma.TaskItemInclude };

const title = text(commonLimits.name);
const description = text(commonLimits.freeText);
const status = z.enum(Object.values(TaskItemStatusValues) as [TaskItemStatus, ...TaskItemStatus[]], notNull);
const priority = z.enum(Object.values(TaskItemPriorityValues) as [TaskItemPriority, ...TaskItemPriority[]], notNull);
const entity = {
  entityId: text(commonLimits.id),
  entityType: z.enum(["vendor", "risk"]),
};
const entityInput = z.object(entity);

/** A member id; null (on update) unassigns. */
const assigneeId = text(commonLimits.id);

const createInput = z.object({
  title,
  ...entity,
  assigneeId: assigneeId.nullish(),
  // On create an explicit null means "not given": the default applies.
  status: status.nullish(),
  priority: priority.nullish(),
  description: description.nullish(),
});

/** Absent (undefined) leaves a field as it is; null clears `description` and is refused for the others. */
const updateInput = z.object({
  title: title.optional(),
  status: status.optional(),
  priority: priority.optional(),
  description: description.nullable().optional(),
  assigneeId: assigneeId.nullable().optional(),
});

export type CreateTaskItemArgs = z.input<typeof createInput>;
/** As the GraphQL field passes them: a left-out argument is undefined, an explicit null is null. */
export type UpdateTaskItemArgs = { [K in keyof z.input<typeof updateInput>]?: z.input<typeof updateInput>[K] | null };
type Editable = {
  title: string;
  status: TaskItemStatus;
  priority: TaskItemPriority;
  description: string | null;
  assigneeId: string | null;
};

/** What remains of a deleted task item: its id and the vendor or risk it belonged to. */
export type DeletedTaskItem = { deletedId: string; entityType: TaskItemEntityType; entityId: string };

export function createTaskItemService(db: Db, notifier: Notifier) {
  return {
    async stats(actor: Actor, entityId: string, entityType: TaskItemEntityType): Promise<TaskItemStats> {
      await assertEntityExists(db, actor.organizationId, entityType, entityId);
      // One grouped query: the total is the sum of the groups, so the two can never disagree.
      const groups = await db.taskItem.groupBy({
        by: ["status"],
        where: { organizationId: actor.organizationId, entityType, entityId },
        _count: { _all: true },
      });
      const byStatus: Record<TaskItemStatus, number> = { todo: 0, in_progress: 0, in_review: 0, done: 0, canceled: 0 };
      for (const group of groups) byStatus[group.status] = group._count._all;
      const total = Object.values(byStatus).reduce((sum, n) => sum + n, 0);
      return { total, byStatus };
    },

    /** A task item on a vendor or risk of the organization (404 when the entity is missing). */
    async create(actor: Actor, args: CreateTaskItemArgs, query: TaskItemQuery) {
      const input = parseInput(createInput, args);
      await assertEntityExists(db, actor.organizationId, input.entityType, input.entityId);
      const id = newId("tski");
      const data = {
        title: input.title,
        entityId: input.entityId,
        entityType: input.entityType,
        status: input.status ?? "todo",
        priority: input.priority ?? "medium",
        description: input.description ?? null,
        assigneeId: input.assigneeId ?? null,
      };
      return notifier.transaction(db, actor, async (tx, notify) => {
        if (data.assigneeId) await assertActiveMember(tx, actor.organizationId, data.assigneeId);
        const created = await tx.taskItem.create({ ...query, data: { id, organizationId: actor.organizationId, ...data } });
        await writeAuditEvent(tx, auditEvent(actor, "task_item.created", { type: "task_item", id }, data));
        await notify({
          reason: "assigned",
          recipientIds: [data.assigneeId],
          entity: { type: "task_item", id, parentType: data.entityType, parentId: data.entityId },
        });
        return created;
      });
    },

    /** The entity's task items, filtered and sorted (default newest first). */
    async list(
      actor: Actor,
      { entityId, entityType, ...args }: { entityId: string; entityType: TaskItemEntityType } & ListArgs,
      query: TaskItemQuery,
    ) {
      const input = parseInput(entityInput, { entityId, entityType });
      await assertEntityExists(db, actor.organizationId, input.entityType, input.entityId);
      return listPage(
        db,
        actor.organizationId,
        taskItemList,
        { ...args, parent: [input.entityType, input.entityId], query },
        rowsByIds(taskItemRows, db, actor.organizationId),
      );
    },

    /**
     * Changes the given fields. The row is locked first, so the audit event's `from` values are
     * the ones this change replaced even when two updates race. Giving only the current values
     * changes nothing: no write, no audit event, `updatedAt` stays.
     */
    async update(actor: Actor, { id, ...args }: { id: string } & UpdateTaskItemArgs, query: TaskItemQuery) {
      const input = parseInput(updateInput, args);
      const given = (Object.keys(input) as (keyof Editable)[]).filter((k) => input[k] !== undefined);
      if (given.length === 0) {
        throw new BadUserInputError("Give at least one field to change: title, status, priority, description or assigneeId", [
          { path: "", message: "must change at least one of title, status, priority, description, assigneeId" },
        ]);
      }
      const where = { id, organizationId: actor.organizationId };
      return notifier.transaction(db, actor, async (tx, notify) => {
        const [row] = await tx.$queryRaw<(Editable & { entityId: string; entityType: TaskItemEntityType })[]>`
          SELECT "title", "status"::text AS "status", "priority"::text AS "priority", "description", "assigneeId",
                 "entityId", "entityType"::text AS "entityType"
          FROM "TaskItem" WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
        if (!row) throw new NotFoundError("Task item", id);
        if (input.assigneeId) await assertActiveMember(tx, actor.organizationId, input.assigneeId);
        const { entityId: parentId, entityType: parentType, ...before } = row;
        const { changes, data } = changesBetween(before, input as Partial<Editable>);
        if (Object.keys(changes).length === 0) return tx.taskItem.findUniqueOrThrow({ ...query, where });
        const updated = await tx.taskItem.update({ ...query, where, data });
        await writeAuditEvent(
          tx,
          auditEvent(actor, "task_item.updated", { type: "task_item", id }, { changes } as Prisma.InputJsonValue),
        );
        if (changes.assigneeId) {
          await notify({
            reason: "assigned",
            recipientIds: [data.assigneeId],
            entity: { type: "task_item", id, parentType, parentId },
          });
        }
        return updated;
      });
    },

    /** Removes the item; the audit event keeps what it was, and the entity's statistics no longer count it. */
    async delete(actor: Actor, id: string): Promise<DeletedTaskItem> {
      return db.$transaction(async (tx) => {
        const [item] = await tx.$queryRaw<(Editable & { entityId: string; entityType: string })[]>`
          SELECT "title", "status"::text AS "status", "priority"::text AS "priority", "description", "assigneeId",
                 "entityId", "entityType"::text AS "entityType"
          FROM "TaskItem" WHERE "id" = ${id} AND "organizationId" = ${actor.organizationId} FOR UPDATE`;
        if (!item) throw new NotFoundError("Task item", id);
        await tx.taskItem.delete({ where: { id, organizationId: actor.organizationId }, select: { id: true } });
        await writeAuditEvent(tx, auditEvent(actor, "task_item.deleted", { type: "task_item", id }, item));
        return { deletedId: id, entityType: item.entityType as TaskItemEntityType, entityId: item.entityId };
      });
    },
  };
}
