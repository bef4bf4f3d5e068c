import { authorize } from "../../auth/actor.js";
import {
  TaskItemEntityType as TaskItemEntityTypeValues,
  TaskItemPriority as TaskItemPriorityValues,
  TaskItemStatus as TaskItemStatusValues,
} from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { Node, objectRefOf } from "../../graphql/node.schema.js";
import {
  anyOf,
  assigneeField,
  dateBounds,
  defineConnection,
  itemsQuery,
  listArgs,
  searchField,
} from "../../graphql/page.schema.js";
import { nodeTypeOf } from "../../platform/ids.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { Member } from "../members/members.schema.js";
import { referencedRecord } from "../request-loaders.js";
import { type DeletedTaskItem, type TaskItemStats, taskItemList } from "./task-items.service.js";

export const TaskItemEntityType = builder.enumType(TaskItemEntityTypeValues, {
  name: "TaskItemEntityType",
  description: "The kind of record a task item belongs to.",
  values: { vendor: { description: "A vendor (vnd_...)" }, risk: { description: "A risk (rsk_...)" } },
});
export const TaskItemStatus = builder.enumType(TaskItemStatusValues, {
  name: "TaskItemStatus",
  description: "Where a task item stands.",
  values: {
    todo: { description: "Not started (the default)" },
    in_progress: { description: "Being worked on" },
    in_review: { description: "Done by its assignee and waiting for someone to check it" },
    done: { description: "Finished" },
    canceled: { description: "Dropped: no longer needed; kept for the record" },
  },
});
export const TaskItemPriority = builder.enumType(TaskItemPriorityValues, {
  name: "TaskItemPriority",
  description: "How urgent a task item is.",
  values: {
    urgent: { description: "Needs attention now" },
    high: { description: "Before the other open items" },
    medium: { description: "Normal priority (the default)" },
    low: { description: "When time allows" },
  },
});

const TaskItemEntity = builder.unionType("TaskItemEntity", {
  description: "What a task item can belong to.",
  types: [objectRefOf("Vendor"), objectRefOf("Risk")],
  resolveType: (entity) => nodeTypeOf(entity.id),
});

const TaskItem = builder.prismaObject("TaskItem", {
  description: "A follow-up item on a vendor or a risk.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "Unique task item identifier" }),
    title: t.exposeString("title", { description: "Short title, 1 to 255 characters" }),
    description: t.exposeString("description", { nullable: true, description: "Longer text, at most 10000 characters" }),
    status: t.expose("status", { type: TaskItemStatus, description: "Where the item stands" }),
    priority: t.expose("priority", { type: TaskItemPriority, description: "How urgent the item is" }),
    entityId: t.exposeID("entityId", { description: "Id of the vendor or risk the item belongs to" }),
    entityType: t.expose("entityType", { type: TaskItemEntityType, description: "Whether entityId names a vendor or a risk" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the item was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the item last changed" }),
    entity: t.field({
      type: TaskItemEntity,
      nullable: true,
      ...graphOnly,
      description:
        "The vendor or risk the item belongs to. Needs that type's `:read` permission: without it, null with FORBIDDEN here",
      resolve: (item, _args, ctx) => referencedRecord(ctx, item.entityType, item.entityId),
    }),
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

const TaskItemConnection = defineConnection("TaskItem", TaskItem);

const taskItemListArgs = listArgs("TaskItem", taskItemList, {
  description: "Which task items of a vendor or risk a list shows.",
  fields: (t) => ({
    status: t.field({
      type: [TaskItemStatus],
      required: { list: false, items: true },
      ...anyOf("Only items in these statuses"),
    }),
    priority: t.field({
      type: [TaskItemPriority],
      required: { list: false, items: true },
      ...anyOf("Only items of these priorities"),
    }),
    assigneeId: assigneeField(t),
    ...dateBounds(t, "items", true),
    search: searchField(t, "title"),
  }),
});

const TaskItemStatusCounts = builder.objectRef<TaskItemStats["byStatus"]>("TaskItemStatusCounts").implement({
  description: "Number of task items in each status.",
  fields: (t) => ({
    todo: t.exposeInt("todo", { description: "Items not started" }),
    in_progress: t.exposeInt("in_progress", { description: "Items being worked on" }),
    in_review: t.exposeInt("in_review", { description: "Items waiting for review" }),
    done: t.exposeInt("done", { description: "Items finished" }),
    canceled: t.exposeInt("canceled", { description: "Items dropped" }),
  }),
});

const TaskItemStatsRef = builder.objectRef<TaskItemStats>("TaskItemStats").implement({
  description: "Task item statistics of one vendor or risk.",
  fields: (t) => ({
    total: t.exposeInt("total", { description: "Total task items of the entity; the sum of byStatus" }),
    byStatus: t.field({
      type: TaskItemStatusCounts,
      description: "Count per status; every status is present, 0 when none",
      resolve: (stats) => stats.byStatus,
    }),
  }),
});

for (const [model, entityType] of [
  ["Vendor", "vendor"],
  ["Risk", "risk"],
] as const) {
  builder.prismaObjectFields(model, (t) => ({
    taskItems: t.field({
      type: TaskItemConnection,
      nullable: true,
      ...graphOnly,
      description:
        "This record's task items, filtered and sorted (default newest first), as the `taskItems` query. Needs `task:read`: without it, null with FORBIDDEN here",
      args: {
        ...taskItemListArgs,
        status: t.arg({
          type: TaskItemStatus,
          description: "Only the items in this status; default all. Combines with filter.status (both must hold)",
          deprecationReason: "Use filter: { status: [...] }",
        }),
      },
      resolve: (parent, { status, ...args }, ctx, info) => {
        authorize(ctx, "task:read");
        const filter = { ...(args.filter as Record<string, unknown> | null | undefined) };
        if (status) {
          const listed = filter.status as string[] | null | undefined;
          filter.status = listed ? listed.filter((s) => s === status) : [status];
        }
        return ctx.loaders.taskItems.pages.load({
          ...args,
          filter,
          parent: [entityType, parent.id],
          query: itemsQuery(ctx, info, "TaskItem"),
        });
      },
    }),
    taskItemStats: t.field({
      type: TaskItemStatsRef,
      nullable: true,
      ...graphOnly,
      description:
        "Task item statistics of this record, as the `taskItemStats` query. Needs `task:read`: without it, null with FORBIDDEN here",
      resolve: (parent, _args, ctx) => {
        authorize(ctx, "task:read");
        return ctx.loaders.taskItems.stats.load({ entityType, entityId: parent.id });
      },
    }),
  }));
}

builder.queryField("taskItemStats", (t) =>
  t.field({
    type: TaskItemStatsRef,
    description: "Task item statistics for a vendor or risk. Needs `task:read`.",
    args: {
      entityId: t.arg.id({ required: true, ...limited("Id of the vendor or risk", commonLimits.id) }),
      entityType: t.arg({ type: TaskItemEntityType, required: true, description: "Whether entityId names a vendor or a risk" }),
    },
    resolve: (_root, args, ctx) => ctx.services.taskItems.stats(authorize(ctx, "task:read"), args.entityId, args.entityType),
  }),
);

builder.mutationField("createTaskItem", (t) =>
  t.prismaField({
    type: "TaskItem",
    description: "Create a task item on a vendor or risk of the organization. Needs `task:create`.",
    args: {
      title: t.arg.string({ required: true, ...limited("Short title", commonLimits.name) }),
      entityId: t.arg.id({
        required: true,
        ...limited("Id of the vendor or risk; it must exist in the organization", commonLimits.id),
      }),
      entityType: t.arg({ type: TaskItemEntityType, required: true, description: "Whether entityId names a vendor or a risk" }),
      status: t.arg({ type: TaskItemStatus, description: "Initial status; default todo" }),
      priority: t.arg({ type: TaskItemPriority, description: "Priority; default medium" }),
      description: t.arg.string(limited("Longer text", commonLimits.freeText)),
      assigneeId: t.arg.id({ description: "Member id of the person responsible: an active member of the organization" }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.taskItems.create(authorize(ctx, "task:create"), args, query),
  }),
);

builder.queryField("taskItems", (t) =>
  t.field({
    type: TaskItemConnection,
    nullable: true,
    description:
      "The task items of a vendor or risk, filtered and sorted (default newest first), with their totalCount. Needs `task:read`. Over GraphQL a refused list is null with its error, and the other fields of the request still answer; REST answers 403.",
    args: {
      entityId: t.arg.id({ required: true, ...limited("Id of the vendor or risk", commonLimits.id) }),
      entityType: t.arg({ type: TaskItemEntityType, required: true, description: "Whether entityId names a vendor or a risk" }),
      ...taskItemListArgs,
    },
    resolve: (_root, args, ctx, info) =>
      ctx.services.taskItems.list(authorize(ctx, "task:read"), args, itemsQuery(ctx, info, "TaskItem")),
  }),
);

builder.mutationField("updateTaskItem", (t) =>
  t.prismaField({
    type: "TaskItem",
    description:
      "Change a task item. An argument left out keeps its value; description null clears it, assigneeId null unassigns. At least one argument besides id is needed. Needs `task:update`.",
    args: {
      id: t.arg.id({ required: true, description: "The task item id" }),
      title: t.arg.string(limited("New title; null is refused", commonLimits.name)),
      status: t.arg({ type: TaskItemStatus, description: "New status; null is refused" }),
      priority: t.arg({ type: TaskItemPriority, description: "New priority; null is refused" }),
      description: t.arg.string(limited("New description; null clears it", commonLimits.freeText)),
      assigneeId: t.arg.id({
        description: "Member id of the new person responsible (an active member of the organization); null unassigns",
      }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.taskItems.update(authorize(ctx, "task:update"), args, query),
  }),
);

const DeleteTaskItemPayload = builder.objectRef<DeletedTaskItem>("DeleteTaskItemPayload").implement({
  description: "A deleted task item: its id, to evict it from a cache, and the vendor or risk it belonged to, to refresh.",
  fields: (t) => ({
    deletedId: t.exposeID("deletedId", { description: "Id of the deleted task item" }),
    entity: t.field({
      type: TaskItemEntity,
      nullable: true,
      ...graphOnly,
      description:
        "The vendor or risk the item belonged to, as it is after the delete. Needs that type's `:read` permission: without it, null with FORBIDDEN here",
      resolve: (deleted, _args, ctx) => referencedRecord(ctx, deleted.entityType, deleted.entityId),
    }),
  }),
});

builder.mutationField("deleteTaskItem", (t) =>
  t.field({
    type: DeleteTaskItemPayload,
    description:
      "Delete a task item; answers its id and the vendor or risk it belonged to (over REST: 204 with no body). Needs `task:update`.",
    args: { id: t.arg.id({ required: true, description: "The task item id" }) },
    resolve: (_root, args, ctx) => ctx.services.taskItems.delete(authorize(ctx, "task:update"), args.id),
  }),
);
