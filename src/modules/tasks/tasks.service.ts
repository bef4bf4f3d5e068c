import { z } from "zod";
import type { Actor } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import { TaskStatus } from "../../generated/prisma/enums.js";
import {
  bound,
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
import { rowsByIds, selectsScalarsOnly } from "../../platform/db/graph-reader.js";
import { rowByIdReader } from "../../platform/db/row-by-id.js";
import { NotFoundError } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import { commonLimits, limit, text } from "../../platform/limits.js";
import { notNull, parseInput, type WithNulls } from "../../platform/validation.js";
import { auditEvent, changesBetween, writeAuditEvent } from "../audit/audit.service.js";
import { assertActiveMember } from "../entities.js";
import { controlsOfTask, recordControlStatusChanges } from "../frameworks/frameworks.readiness.js";
import type { Notifier } from "../notifications/notifications.service.js";

type TaskQuery = { select?: Prisma.TaskSelect; include?: Prisma.TaskInclude };

export const taskLimits = { taskTemplateId: limit({ minLength: 1, maxLength: 255 }) };

const title = text(commonLimits.name);
const description = text(commonLimits.freeText);
const taskTemplateId = text(taskLimits.taskTemplateId);

/** A member id; null (on update) unassigns. */
const assigneeId = text(commonLimits.id);

/** A calendar date (the Date scalar has checked it); null (on update) clears it. */
const dueDate = z.string(notNull);
const asDate = (d: string | null | undefined) => (d ? new Date(`${d}T00:00:00.000Z`) : null);

/** The organization's tasks: what `tasks` filters and sorts by, and how. */
export const taskList: ListSpec = {
  rowsInline: true,
  table: "Task",
  parent: [],
  filters: {
    status: oneOf("status", '"TaskStatus"'),
    assigneeId: idOrNone("assigneeId"),
    dueAfter: bound("dueDate", "date", "after"),
    dueBefore: bound("dueDate", "date", "before"),
    ...dateBoundRules(true),
    search: search("title", "description"),
  },
  orders: {
    ...dateSortKeys(true),
    title: sortBy.text("title"),
    status: sortBy.enum("status", '"TaskStatus"', Object.values(TaskStatus)),
    dueDate: sortBy.date("dueDate"),
  },
  defaultOrder: newestFirst,
};

const createInput = z.object({
  title,
  dueDate: dueDate.nullish(),
  assigneeId: assigneeId.nullish(),
  description: description.nullish(),
  // On create a null means "not given": the default applies.
  status: z.enum(TaskStatus).nullish(),
  taskTemplateId: taskTemplateId.nullish(),
});

const updateInput = z
  .object({
    title: title.optional(),
    description: description.nullish(),
    status: z.enum(TaskStatus, notNull).optional(),
    taskTemplateId: taskTemplateId.nullish(),
    assigneeId: assigneeId.nullish(),
    dueDate: dueDate.nullish(),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), "give at least one field to change");

export type CreateTaskArgs = WithNulls<z.input<typeof createInput>>;
export type UpdateTaskArgs = WithNulls<z.input<typeof updateInput>>;

type LockedTask = {
  title: string;
  description: string | null;
  status: TaskStatus;
  taskTemplateId: string | null;
  assigneeId: string | null;
  dueDate: string | null;
};

/** Tasks' scalar columns by id (row-by-id.ts): what `findUnique`/`findMany` return without a selection. */
export const taskById = rowByIdReader<Prisma.TaskGetPayload<object>>("Task", Object.values(Prisma.TaskScalarFieldEnum));

export function createTaskService(db: Db, notifier: Notifier) {
  return {
    async get(actor: Actor, taskId: string, query: TaskQuery) {
      const task = selectsScalarsOnly(query)
        ? await taskById(db, taskId, actor.organizationId)
        : await db.task.findUnique({ ...query, where: { id: taskId, organizationId: actor.organizationId } });
      if (!task) throw new NotFoundError("Task", taskId);
      return task;
    },

    async list(actor: Actor, args: ListArgs, query: TaskQuery) {
      const rows = rowsByIds(taskById, db, actor.organizationId);
      return listPage(db, actor.organizationId, taskList, { ...args, query }, rows);
    },

    async create(actor: Actor, args: CreateTaskArgs, query: TaskQuery) {
      const input = parseInput(createInput, args);
      const id = newId("tsk");
      return notifier.transaction(db, actor, async (tx, notify) => {
        if (input.assigneeId) await assertActiveMember(tx, actor.organizationId, input.assigneeId);
        const task = await tx.task.create({
          ...query,
          data: {
            id,
            organizationId: actor.organizationId,
            title: input.title,
            description: input.description ?? null,
            status: input.status ?? "todo",
            taskTemplateId: input.taskTemplateId ?? null,
            assigneeId: input.assigneeId ?? null,
            dueDate: asDate(input.dueDate),
          },
        });
        await writeAuditEvent(
          tx,
          auditEvent(
            actor,
            "task.created",
            { type: "task", id },
            {
              title: input.title,
              status: input.status ?? "todo",
              taskTemplateId: input.taskTemplateId ?? null,
              assigneeId: input.assigneeId ?? null,
              dueDate: input.dueDate ?? null,
            },
          ),
        );
        await notify({ reason: "assigned", recipientIds: [input.assigneeId], entity: { type: "task", id } });
        return task;
      });
    },

    /** Changes the given fields; the row is locked first so that the recorded `from` values are exact. */
    async update(actor: Actor, taskId: string, args: UpdateTaskArgs, query: TaskQuery) {
      const input = parseInput(updateInput, args);
      return notifier.transaction(db, actor, async (tx, notify) => {
        const [current] = await tx.$queryRaw<LockedTask[]>`
          SELECT "title", "description", "status"::text AS "status", "taskTemplateId", "assigneeId",
                 "dueDate"::text AS "dueDate"
          FROM "Task"
          WHERE "id" = ${taskId} AND "organizationId" = ${actor.organizationId}
          FOR UPDATE`;
        if (!current) throw new NotFoundError("Task", taskId);
        if (input.assigneeId) await assertActiveMember(tx, actor.organizationId, input.assigneeId);
        const { changes, data } = changesBetween(current, input);
        const where = { id: taskId, organizationId: actor.organizationId };
        if (Object.keys(changes).length === 0) return tx.task.findUniqueOrThrow({ ...query, where });
        const { dueDate: newDueDate, ...rest } = data;
        const updated = await tx.task.update({
          ...query,
          where,
          data: newDueDate === undefined ? rest : { ...rest, dueDate: asDate(newDueDate) },
        });
        await writeAuditEvent(
          tx,
          auditEvent(actor, "task.updated", { type: "task", id: taskId }, { changes } as Prisma.InputJsonValue),
        );
        if (changes.assigneeId) {
          await notify({ reason: "assigned", recipientIds: [data.assigneeId], entity: { type: "task", id: taskId } });
        }
        // Done or no longer done: the task's controls may change state.
        if (changes.status) {
          const controlIds = await controlsOfTask(tx, actor.organizationId, taskId);
          await recordControlStatusChanges(tx, actor, actor.organizationId, controlIds, { notify });
        }
        return updated;
      });
    },
  };
}
