import { authorize } from "../../auth/actor.js";
import { TaskStatus as TaskStatusValues } from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { Node } from "../../graphql/node.schema.js";
import {
  anyOf,
  assigneeField,
  dateBounds,
  defineConnection,
  itemsQuery,
  listArgs,
  searchField,
} from "../../graphql/page.schema.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { Member } from "../members/members.schema.js";
import { taskLimits, taskList } from "./tasks.service.js";

export const TaskStatus = builder.enumType(TaskStatusValues, {
  name: "TaskStatus",
  description: "Where a task stands",
  values: {
    todo: { description: "Not started (the default)" },
    in_progress: { description: "Being worked on" },
    done: { description: "Finished" },
    blocked: { description: "Cannot go on until something outside the task changes" },
  },
});

export const Task = builder.prismaObject("Task", {
  description: "A compliance task of the organization.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Unique task identifier" }),
    title: t.exposeString("title", { description: "The task's title" }),
    status: t.expose("status", { type: TaskStatus, description: "The task's status" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the task was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the task last changed" }),
    description: t.exposeString("description", { nullable: true, description: "Longer text; null when not set" }),
    dueDate: t.expose("dueDate", {
      type: "Date",
      nullable: true,
      description: "When the task is due (a calendar date); null when it has no due date",
    }),
    taskTemplateId: t.exposeID("taskTemplateId", { nullable: true, description: "Task template the task was made from" }),
    assigneeId: t.exposeID("assigneeId", {
      nullable: true,
      description: "Member id of the person responsible; null when unassigned",
    }),
    // The member is joined into the parent's query (no query of its own).
    assignee: t.field({
      type: Member,
      nullable: true,
      ...graphOnly,
      description:
        "The member responsible; null when unassigned. Any credential reads its id and name; its other fields need `member:read`. Not in REST answers.",
      select: (_args, _ctx, nestedSelection) => ({ assignee: nestedSelection(true) }),
      resolve: (parent) => (parent as { assignee?: unknown }).assignee as never,
    }),
  }),
});

export const TaskConnection = defineConnection("Task", Task);

export const taskListArgs = listArgs("Task", taskList, {
  description: "Which tasks a list shows.",
  fields: (t) => ({
    status: t.field({ type: [TaskStatus], required: { list: false, items: true }, ...anyOf("Only tasks in these statuses") }),
    assigneeId: assigneeField(t),
    dueAfter: t.field({
      type: "Date",
      description: "Only tasks due strictly after this date (tasks without a due date never match)",
    }),
    dueBefore: t.field({
      type: "Date",
      description: "Only tasks due strictly before this date (tasks without a due date never match)",
    }),
    ...dateBounds(t, "tasks", true),
    search: searchField(t, "title or description"),
  }),
});

builder.queryField("task", (t) =>
  t.prismaField({
    type: "Task",
    nullable: true,
    description:
      "Get a task by id. Needs `task:read`. Over GraphQL a missing or refused task is null with its error, so the other fields of the request still answer; REST answers 404 or 403.",
    args: { taskId: t.arg.id({ required: true, description: "The unique task identifier" }) },
    resolve: (query, _root, args, ctx) => ctx.services.tasks.get(authorize(ctx, "task:read"), args.taskId, query),
  }),
);

builder.queryField("tasks", (t) =>
  t.field({
    type: TaskConnection,
    nullable: true,
    description:
      "The organization's tasks, filtered and sorted (default newest first), with their totalCount. Needs `task:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: taskListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.tasks.list(authorize(ctx, "task:read"), args, itemsQuery(ctx, info, "Task")),
  }),
);

builder.mutationField("createTask", (t) =>
  t.prismaField({
    type: "Task",
    description: "Create a task. Needs `task:create`.",
    args: {
      title: t.arg.string({ required: true, ...limited("Title", commonLimits.name) }),
      description: t.arg.string(limited("Longer text", commonLimits.freeText)),
      status: t.arg({ type: TaskStatus, description: "Initial status; default todo" }),
      taskTemplateId: t.arg.string(limited("Task template the task is made from", taskLimits.taskTemplateId)),
      assigneeId: t.arg.id({ description: "Member id of the person responsible: an active member of the organization" }),
      dueDate: t.arg({ type: "Date", description: "When the task is due, YYYY-MM-DD; default none" }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.tasks.create(authorize(ctx, "task:create"), args, query),
  }),
);

builder.mutationField("updateTask", (t) =>
  t.prismaField({
    type: "Task",
    description:
      "Change a task. An omitted field stays as it is; null clears description or taskTemplateId. Needs `task:update`.",
    args: {
      taskId: t.arg.id({ required: true, description: "The unique task identifier" }),
      title: t.arg.string(limited("New title", commonLimits.name)),
      description: t.arg.string(limited("New description; null clears it", commonLimits.freeText)),
      status: t.arg({ type: TaskStatus, description: "New status" }),
      taskTemplateId: t.arg.string(limited("New task template id; null clears it", taskLimits.taskTemplateId)),
      assigneeId: t.arg.id({
        description: "Member id of the new person responsible (an active member of the organization); null unassigns",
      }),
      dueDate: t.arg({ type: "Date", description: "New due date, YYYY-MM-DD; null clears it" }),
    },
    resolve: (query, _root, { taskId, ...args }, ctx) =>
      ctx.services.tasks.update(authorize(ctx, "task:update"), taskId, args, query),
  }),
);
