import { authenticated, authorize } from "../../auth/actor.js";
import { builder } from "../../graphql/builder.js";
import type { Context } from "../../graphql/context.js";
import type { RecordQuery } from "../../graphql/loaders.js";
import { fieldQuery, selectedBelow, selectsField } from "../../graphql/page.schema.js";
import { selectsScalarsOnly } from "../../platform/db/graph-reader.js";
import { nodeTypeOf } from "../../platform/ids.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { Control } from "../controls/controls.schema.js";
import type { ControlScope } from "../controls/controls.service.js";
import { Evidence } from "../evidence/evidence.schema.js";
import { referencedRecord } from "../request-loaders.js";
import type {
  ControlReason,
  ControlStatus,
  FrameworkReadiness,
  RequirementStatus,
  ControlState as State,
} from "./frameworks.readiness.js";
import { ControlState, Framework, REQUIREMENT_CONTROLS_COST, Requirement, RequirementState } from "./frameworks.schema.js";

const ControlReasonCode = builder.enumType("ControlReasonCode", {
  description: "Why a control is not ready",
  values: {
    no_links: { description: "No linked policy, task or accepted evidence" },
    policy_not_published: { description: "A linked policy has no published current version (entity: the policy)" },
    task_not_done: { description: "A linked task is not done (entity: the task)" },
    evidence_missing: { description: "Evidence is required (evidenceEveryDays) and none is accepted" },
    evidence_expired: {
      description: "Evidence is required and every accepted item's validUntil has passed (entity: the latest one)",
    },
  },
});

const ReasonEntityType = builder.enumType("ControlReasonEntityType", {
  description: "The kind of record a reason names",
  values: { policy: { description: "A policy" }, task: { description: "A task" }, evidence: { description: "An evidence item" } },
});

const ReasonEntity = builder.unionType("ControlReasonEntity", {
  description: "The record a reason names",
  types: ["Policy", "Task", Evidence] as never,
  // Evidence ids name no Node type.
  resolveType: (entity) => nodeTypeOf((entity as { id: string }).id) ?? "Evidence",
});

const Reason = builder.objectRef<ControlReason>("ControlReason").implement({
  description: "One thing that keeps a control from being ready",
  fields: (t) => ({
    code: t.expose("code", { type: ControlReasonCode, description: "What is missing" }),
    entityType: t.expose("entityType", {
      type: ReasonEntityType,
      nullable: true,
      description: "The kind of record it names; null for no_links and evidence_missing",
    }),
    entityId: t.exposeID("entityId", { nullable: true, description: "The id of the record it names" }),
    entity: t.field({
      type: ReasonEntity,
      nullable: true,
      ...graphOnly,
      description:
        "The policy, task or evidence it names, as it is now. Needs `policy:read`, `task:read` or `control:read`: without it, null with FORBIDDEN here",
      resolve: (reason, _args, ctx) => {
        if (!reason.entityId || !reason.entityType) return null;
        if (reason.entityType === "evidence") {
          authorize(ctx, "control:read");
          return ctx.loaders.frameworks.evidenceById.load({ id: reason.entityId }) as never;
        }
        return referencedRecord(ctx, reason.entityType, reason.entityId);
      },
    }),
  }),
});

const ControlStatusRef = builder.objectRef<ControlStatus>("ControlStatus").implement({
  description: "A control's readiness, computed from its links and evidence at the time of the request",
  fields: (t) => ({
    state: t.expose("state", { type: ControlState, description: "ready or not_ready" }),
    reasons: t.field({
      type: [Reason],
      // The cost estimate's count: one per code is the usual case (docs/frameworks.md).
      extensions: { listMax: 5 },
      description: "Why it is not ready, by code; empty when ready",
      resolve: (status) => status.reasons,
    }),
    evidenceDueAt: t.expose("evidenceDueAt", {
      type: "DateTime",
      nullable: true,
      description:
        "When its newest accepted evidence stops counting (the latest validUntil); null without accepted evidence or when it never expires",
    }),
  }),
});

/** A selection of a control's status that names its state and nothing else it would have to read. */
const asksStateOnly = (names: ReadonlySet<string>) => [...names].every((name) => name === "state" || name === "__typename");

builder.prismaObjectField(Control, "status", (t) =>
  t.field({
    type: ControlStatusRef,
    description: "Its readiness now: state, reasons, evidenceDueAt",
    resolve: (control, _args, ctx, info) => {
      const { frameworks } = ctx.loaders;
      const read = () => frameworks.controlStatus.load(control.id) as Promise<ControlStatus>;
      // Its state alone, from a framework's states this request read (a framework's page): no
      // statement, and no promise once those states are in (the executor's cheaper path).
      if (!asksStateOnly(selectedBelow(info))) return read();
      // The reasons and the due date are not selected: never read.
      const status = (state: State | undefined) =>
        state ? { controlId: control.id, state, reasons: [], evidenceDueAt: null } : read();
      const known = frameworks.knownControlState(control.id);
      return known instanceof Promise ? known.then(status) : status(known);
    },
  }),
);

type AssessedStatus = RequirementStatus & { state: NonNullable<RequirementStatus["state"]> };

const RequirementStatusRef = builder.objectRef<AssessedStatus>("RequirementStatus").implement({
  description: "A requirement's readiness, computed from the controls mapped to it (or to a mapped requirement)",
  fields: (t) => ({
    state: t.expose("state", { type: RequirementState, description: "Where it stands" }),
    inheritedFromId: t.exposeID("inheritedFromId", {
      nullable: true,
      description:
        "The requirement (of another framework) whose controls gave this state through a mapping; null when the state is its own",
    }),
    inheritedFrom: t.field({
      type: Requirement,
      nullable: true,
      ...graphOnly,
      description: "The requirement whose controls gave this state through a mapping; null when the state is its own",
      resolve: (status, _args, ctx) =>
        status.inheritedFromId ? (ctx.loaders.frameworks.requirementById.load({ id: status.inheritedFromId }) as never) : null,
    }),
  }),
});

builder.prismaObjectField(Requirement, "status", (t) =>
  t.field({
    type: RequirementStatusRef,
    nullable: true,
    // Its framework's states, when the request computes them, hold its state (loaders.requirementStatus).
    select: { frameworkId: true },
    description: "Its readiness now; null for a group (not assessed) and in a framework the organization has not adopted",
    resolve: (requirement, _args, ctx) => {
      const assessed = (status: RequirementStatus | null) => (status?.state ? (status as AssessedStatus) : null);
      // At once when the framework's states are in (a framework's page), else when they are.
      const status = ctx.loaders.frameworks.requirementStatus(requirement);
      return status instanceof Promise ? status.then(assessed) : assessed(status);
    },
  }),
);

const FrameworkReadinessRef = builder.objectRef<FrameworkReadiness>("FrameworkReadiness").implement({
  description: "How ready the organization is for a framework: its assessable requirements counted by state",
  fields: (t) => ({
    assessable: t.exposeInt("assessable", { description: "Requirements assessed (groups left out)" }),
    notApplicable: t.exposeInt("notApplicable", { description: "Of those, marked not applicable" }),
    unmapped: t.exposeInt("unmapped", { description: "Applicable, with no control and no mapping giving them a state" }),
    ready: t.exposeInt("ready", { description: "Ready" }),
    partial: t.exposeInt("partial", { description: "Partly ready" }),
    notReady: t.exposeInt("notReady", { description: "Not ready" }),
    readyPercent: t.exposeFloat("readyPercent", {
      description: "ready / (assessable - notApplicable) x 100, one decimal, rounded down; 0 when nothing is applicable",
    }),
  }),
});

builder.prismaObjectField(Framework, "readiness", (t) =>
  t.field({
    type: FrameworkReadinessRef,
    nullable: true,
    description: "The organization's readiness for it, computed now; null when it has not adopted it",
    resolve: (framework, _args, ctx) => ctx.loaders.frameworks.readiness(framework.id),
  }),
);

/** The caller's control scope, once per request (controls.service's controlScope: every control, or the ones they own). */
const scopes = new WeakMap<object, Promise<ControlScope>>();
const scopeOf = (ctx: Context) => {
  let scope = scopes.get(ctx);
  if (!scope) {
    scope = ctx.services.controls.scope(authenticated(ctx));
    scopes.set(ctx, scope);
  }
  return scope;
};

builder.prismaObjectField(Requirement, "controls", (t) =>
  t.field({
    type: [Control],
    nullable: true,
    // The cost estimate's count: a requirement is met by a few controls, and a framework's page of
    // 100 requirements with their controls' states must stay within the limit (docs/frameworks.md).
    extensions: { ...graphOnly.extensions, listMax: REQUIREMENT_CONTROLS_COST },
    description:
      "The organization's controls mapped to it, by code: with `control:read` every one, for a person without it the ones they own; otherwise null with FORBIDDEN here. Not in REST answers.",
    resolve: async (requirement, _args, ctx, info) => {
      const scope = await scopeOf(ctx);
      const { frameworks } = ctx.loaders;
      const ownerId = scope.all ? null : scope.ownerId;
      const query = fieldQuery(ctx, info, "Control") as RecordQuery;
      // Their states in the same statement when the selection asks for them, unless it asks for their
      // state alone and this request reads the framework's states, which hold it (a framework's page).
      const withStatus =
        selectsField(info, "status") &&
        !(asksStateOnly(selectedBelow(info, ["status"])) && frameworks.statesAskedFor(requirement.frameworkId));
      const controls = await frameworks.requirementControls(ownerId, withStatus).load(requirement.id);
      // A framework's page: their states come from the framework's states, which its answer waits
      // for anyway. Waiting for them here, once per requirement, lets each control's state resolve
      // at once (Control.status) instead of through a promise of its own.
      if (!withStatus && frameworks.statesAskedFor(requirement.frameworkId)) await frameworks.statesSettled();
      // A selection of scalars alone (a framework's page) is what that statement read; relations are read by id.
      if (selectsScalarsOnly(query)) return controls as never;
      const rows = await Promise.all(controls.map(({ id }) => frameworks.controlById.load({ id, query })));
      return rows.filter((row) => row !== null) as never;
    },
  }),
);
