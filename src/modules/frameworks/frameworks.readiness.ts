import { Prisma } from "../../generated/prisma/client.js";
import type { Db } from "../../platform/db/database.js";
import { readRows } from "../../platform/db/row-by-id.js";
import { newId } from "../../platform/ids.js";
import { type AuditEventInput, writeAuditEvent } from "../audit/audit.service.js";
import type { NotificationDraft } from "../notifications/notifications.service.js";

/**
 * Readiness (contract section 16), computed in SQL from the records at the time of the request and
 * never stored where it can go stale. Every screen that shows a state reads it from here: a
 * control's state with its reasons, a requirement's state (own or inherited through a mapping), a
 * framework's counts; the list filters on state use the same SQL. `Control.recordedState` is not
 * readiness: it is what the last `control.status_changed` event said, so that only changes are
 * recorded (recordControlStatusChanges).
 */

const { sql, raw, join, empty } = Prisma;

export type ControlState = "ready" | "not_ready";
export type ReasonCode = "no_links" | "policy_not_published" | "task_not_done" | "evidence_missing" | "evidence_expired";
export type ReasonEntityType = "policy" | "task" | "evidence";
export type ControlReason = { code: ReasonCode; entityType: ReasonEntityType | null; entityId: string | null };
export type ControlStatus = {
  controlId: string;
  state: ControlState;
  reasons: ControlReason[];
  /** The latest validUntil of the control's accepted evidence; null without one, or when one never expires. */
  evidenceDueAt: Date | null;
};

export type RequirementState = "not_applicable" | "unmapped" | "ready" | "partial" | "not_ready";
export type RequirementStatus = {
  requirementId: string;
  /** null for a group (not assessed) or a requirement of a framework the organization has not adopted. */
  state: RequirementState | null;
  /** The requirement whose controls gave the state through a mapping; null for a state of its own. */
  inheritedFromId: string | null;
};

export type FrameworkReadiness = {
  assessable: number;
  notApplicable: number;
  unmapped: number;
  ready: number;
  partial: number;
  notReady: number;
  readyPercent: number;
};

/** An instant as the timestamp(3) columns hold it (UTC, no zone). */
const at = (now: Date) => sql`${now.toISOString()}::timestamp(3)`;

/**
 * The state of each control of the organization that `which` (an SQL condition on `c`, the
 * "Control" row) selects: columns "controlId", "state", "reasons" (JSON text, in the order of the
 * codes, then by entity id) and "evidenceDueAt". A control is ready when it has a linked policy,
 * task or accepted evidence, every linked policy's current version is published, every linked task
 * is done and, with evidenceEveryDays, some accepted evidence is valid at `now` (a null validUntil
 * never expires).
 */
export function controlStatesSql(organizationId: string, now: Date, which: Prisma.Sql): Prisma.Sql {
  // Set-based: evidence, policies and tasks are each read once for all the selected controls (hash
  // joins for many, index lookups for a few); only the reasons are put together per control.
  return sql`
    WITH "sel" AS (
      SELECT c."id", c."evidenceEveryDays" FROM "Control" c WHERE c."organizationId" = ${organizationId} AND (${which})
    ), "ev" AS (
      SELECT v."controlId", count(*)::int AS "n",
        CASE WHEN bool_or(v."validUntil" IS NULL) THEN NULL ELSE max(v."validUntil") END AS "dueAt",
        bool_or(v."validUntil" IS NULL OR v."validUntil" > ${at(now)}) AS "fresh",
        (array_agg(v."id" ORDER BY v."validUntil" DESC NULLS FIRST, v."id" DESC))[1] AS "latestId"
      FROM "Evidence" v JOIN "sel" ON "sel"."id" = v."controlId"
      WHERE v."status" = 'accepted'::"EvidenceStatus"
      GROUP BY v."controlId"
    ), "pol" AS (
      SELECT lp."controlId",
        array_agg(p."id") FILTER (WHERE pv."status" IS DISTINCT FROM 'published'::"PolicyVersionStatus") AS "open"
      FROM "ControlPolicy" lp JOIN "sel" ON "sel"."id" = lp."controlId"
      JOIN "Policy" p ON p."id" = lp."policyId"
      LEFT JOIN "PolicyVersion" pv ON pv."id" = p."currentVersionId"
      GROUP BY lp."controlId"
    ), "tsk" AS (
      SELECT lt."controlId", array_agg(t."id") FILTER (WHERE t."status" <> 'done'::"TaskStatus") AS "open"
      FROM "ControlTask" lt JOIN "sel" ON "sel"."id" = lt."controlId"
      JOIN "Task" t ON t."id" = lt."taskId"
      GROUP BY lt."controlId"
    )
    SELECT c."id" AS "controlId",
      CASE WHEN r."reasons" IS NULL THEN 'ready' ELSE 'not_ready' END AS "state",
      r."reasons"::text AS "reasons",
      e."dueAt" AS "evidenceDueAt"
    FROM "sel" c
    LEFT JOIN "ev" e ON e."controlId" = c."id"
    LEFT JOIN "pol" lp ON lp."controlId" = c."id"
    LEFT JOIN "tsk" lt ON lt."controlId" = c."id"
    LEFT JOIN LATERAL (
      SELECT json_agg(json_build_object('code', x."code", 'entityType', x."entityType", 'entityId', x."entityId")
        ORDER BY x."ord", x."entityId") AS "reasons"
      FROM (
        SELECT 1 AS "ord", 'no_links' AS "code", NULL::text AS "entityType", NULL::text AS "entityId"
        WHERE e."n" IS NULL AND lp."controlId" IS NULL AND lt."controlId" IS NULL
        UNION ALL
        SELECT 2, 'policy_not_published', 'policy', u."id" FROM unnest(lp."open") AS u("id")
        UNION ALL
        SELECT 3, 'task_not_done', 'task', u."id" FROM unnest(lt."open") AS u("id")
        UNION ALL
        SELECT 4, 'evidence_missing', NULL, NULL
        WHERE c."evidenceEveryDays" IS NOT NULL AND e."n" IS NULL
        UNION ALL
        SELECT 5, 'evidence_expired', 'evidence', e."latestId"
        WHERE c."evidenceEveryDays" IS NOT NULL AND e."n" IS NOT NULL AND NOT e."fresh"
      ) x
    ) r ON TRUE`;
}

/**
 * Whether each control of the organization that `which` (an SQL condition on `c`) selects is ready:
 * columns "controlId" and "ready" (boolean). The same definition as controlStatesSql, without the
 * reasons: ready exactly when controlStatesSql gives no reason (it has a linked policy, task or
 * accepted evidence; no linked policy without a published current version; no linked task not
 * done; with evidenceEveryDays, accepted evidence valid at `now`). Requirement states and framework
 * readiness need only this, and building every control's reasons cost them most of their time.
 */
export function controlReadySql(organizationId: string, now: Date, which: Prisma.Sql): Prisma.Sql {
  // Set-based: each table read once for all the selected controls (hash joins over a framework's
  // hundreds of controls, index lookups for a few), where a LATERAL per control ran three
  // subqueries per control.
  return sql`
    WITH "sel" AS (
      SELECT c."id", c."evidenceEveryDays" FROM "Control" c WHERE c."organizationId" = ${organizationId} AND (${which})
    ), "ev" AS (
      SELECT v."controlId", count(*) AS "n",
        bool_or(v."validUntil" IS NULL OR v."validUntil" > ${at(now)}) AS "fresh"
      FROM "Evidence" v JOIN "sel" ON "sel"."id" = v."controlId"
      WHERE v."status" = 'accepted'::"EvidenceStatus"
      GROUP BY v."controlId"
    ), "pol" AS (
      SELECT lp."controlId", count(*) AS "n",
        count(*) FILTER (WHERE pv."status" IS DISTINCT FROM 'published'::"PolicyVersionStatus") AS "open"
      FROM "ControlPolicy" lp JOIN "sel" ON "sel"."id" = lp."controlId"
      JOIN "Policy" p ON p."id" = lp."policyId"
      LEFT JOIN "PolicyVersion" pv ON pv."id" = p."currentVersionId"
      GROUP BY lp."controlId"
    ), "tsk" AS (
      SELECT lt."controlId", count(*) AS "n", count(*) FILTER (WHERE t."status" <> 'done'::"TaskStatus") AS "open"
      FROM "ControlTask" lt JOIN "sel" ON "sel"."id" = lt."controlId"
      JOIN "Task" t ON t."id" = lt."taskId"
      GROUP BY lt."controlId"
    )
    SELECT c."id" AS "controlId",
      (e."n" IS NOT NULL OR lp."n" IS NOT NULL OR lt."n" IS NOT NULL)
        AND COALESCE(lp."open", 0) = 0 AND COALESCE(lt."open", 0) = 0
        AND (c."evidenceEveryDays" IS NULL OR COALESCE(e."fresh", FALSE)) AS "ready"
    FROM "sel" c
    LEFT JOIN "ev" e ON e."controlId" = c."id"
    LEFT JOIN "pol" lp ON lp."controlId" = c."id"
    LEFT JOIN "tsk" lt ON lt."controlId" = c."id"`;
}

const stateOfRank = `CASE {r} WHEN 3 THEN 'ready' WHEN 2 THEN 'partial' WHEN 1 THEN 'not_ready' END`;
const rankName = (expression: string) => raw(stateOfRank.replace("{r}", expression));

/**
 * The state of each requirement that `which` (an SQL condition on `r`, the "Requirement" row)
 * selects, for the organization: columns "requirementId", "frameworkId", "assessable", "state",
 * "inheritedFromId". A requirement with controls of its own is ready when all of them are, partial
 * when some are, not_ready when none is. One without takes the best state a mapping gives it from a
 * requirement that has controls (the organization's mappings and the shipped ones, read in either
 * direction: A subset of B is B superset of A): through equal or superset that requirement's state,
 * through subset or intersect at most partial; ties go to the lowest requirement id.
 * `withControlStates`: also "controlStates", on one row (the lowest requirement id's; null on the
 * others): each control it assessed (those mapped to the requirements or to requirements mapped to
 * them), "id 1" ready or "id 0", comma-separated. Carried on every row, the text made the sort of
 * the rows 40 ms (frameworkStates, 800-53).
 */
export function requirementStatesSql(
  organizationId: string,
  now: Date,
  which: Prisma.Sql,
  withControlStates = false,
): Prisma.Sql {
  const mappingScope = sql`(m."organizationId" IS NULL OR m."organizationId" = ${organizationId})`;
  // "mapped" reads the links of the requirements and of those mapped to them in one pass over
  // ControlRequirement, each link once (the ids are distinct and a link's key is (controlId,
  // requirementId)). Two reads, one per kind, needed a UNION of the pairs to drop those both found:
  // the statement took 15 % longer (800-53, 1,027 requirements).
  return sql`
    WITH "req" AS (
      SELECT r."id", r."frameworkId", r."assessable" FROM "Requirement" r WHERE ${which}
    ), "link" AS (
      SELECT m."targetId" AS "requirementId", m."sourceId" AS "otherId", m."relationship"::text AS "rel"
      FROM "RequirementMapping" m
      WHERE ${mappingScope} AND m."targetId" IN (SELECT "id" FROM "req") AND m."sourceId" <> m."targetId"
      UNION ALL
      SELECT m."sourceId", m."targetId",
        CASE m."relationship" WHEN 'subset' THEN 'superset' WHEN 'superset' THEN 'subset' ELSE m."relationship"::text END
      FROM "RequirementMapping" m
      WHERE ${mappingScope} AND m."sourceId" IN (SELECT "id" FROM "req") AND m."sourceId" <> m."targetId"
    ), "mapped" AS (
      SELECT cr."requirementId", cr."controlId" FROM "ControlRequirement" cr
      JOIN (SELECT "id" FROM "req" UNION SELECT "otherId" FROM "link") x ON x."id" = cr."requirementId"
      WHERE cr."organizationId" = ${organizationId}
    ), "cs" AS (
      ${controlReadySql(organizationId, now, sql`c."id" IN (SELECT "controlId" FROM "mapped")`)}
    ), "rank" AS (
      SELECT mp."requirementId",
        CASE WHEN bool_and(cs."ready") THEN 3 WHEN bool_or(cs."ready") THEN 2 ELSE 1 END AS "rank"
      FROM "mapped" mp JOIN "cs" ON cs."controlId" = mp."controlId"
      GROUP BY mp."requirementId"
    ), "inherited" AS (
      SELECT DISTINCT ON (l."requirementId") l."requirementId", l."otherId",
        CASE WHEN l."rel" IN ('equal', 'superset') THEN k."rank" ELSE LEAST(k."rank", 2) END AS "rank"
      FROM "link" l JOIN "rank" k ON k."requirementId" = l."otherId"
      ORDER BY l."requirementId", CASE WHEN l."rel" IN ('equal', 'superset') THEN k."rank" ELSE LEAST(k."rank", 2) END DESC, l."otherId"
    )
    SELECT r."id" AS "requirementId", r."frameworkId", r."assessable",
      CASE WHEN NOT r."assessable" OR ad."frameworkId" IS NULL THEN NULL
           WHEN a."applicable" = FALSE THEN 'not_applicable'
           WHEN o."rank" IS NOT NULL THEN ${rankName('o."rank"')}
           WHEN i."rank" IS NOT NULL THEN ${rankName('i."rank"')}
           ELSE 'unmapped' END AS "state",
      CASE WHEN r."assessable" AND ad."frameworkId" IS NOT NULL AND a."applicable" IS DISTINCT FROM FALSE AND o."rank" IS NULL
           THEN i."otherId" END AS "inheritedFromId"${
             withControlStates
               ? sql`,
      CASE WHEN r."id" = (SELECT min("id") FROM "req")
        THEN (SELECT string_agg(cs."controlId" || CASE WHEN cs."ready" THEN ' 1' ELSE ' 0' END, ',') FROM "cs")
      END AS "controlStates"`
               : empty
           }
    FROM "req" r
    LEFT JOIN "FrameworkAdoption" ad ON ad."organizationId" = ${organizationId} AND ad."frameworkId" = r."frameworkId"
    LEFT JOIN "RequirementApplicability" a ON a."organizationId" = ${organizationId} AND a."requirementId" = r."id"
    LEFT JOIN "rank" o ON o."requirementId" = r."id"
    LEFT JOIN "inherited" i ON i."requirementId" = r."id"`;
}

/** The frameworks the organization has adopted, as an SQL condition on a "frameworkId" column. */
const adoptedBy = (organizationId: string, column: Prisma.Sql) =>
  sql`${column} IN (SELECT "frameworkId" FROM "FrameworkAdoption" WHERE "organizationId" = ${organizationId})`;

/**
 * The list filter on requirement state (`Framework.requirements(filter: { status })`): the
 * requirement (`t`) has one of the states. States exist only in adopted frameworks.
 */
export function requirementStateIn(organizationId: string, states: readonly string[], now = new Date()): Prisma.Sql {
  if (states.length === 0) return sql`FALSE`;
  return sql`t."id" IN (
    SELECT s."requirementId" FROM (${requirementStatesSql(organizationId, now, adoptedBy(organizationId, sql`r."frameworkId"`))}) s
    WHERE s."state" IN (${join(states.map((s) => sql`${s}::text`))}))`;
}

/**
 * The list filters on control state (`controls(filter: { state, evidenceDueBefore })`), for the
 * controls' list spec: the control (`t`) is in one of the states, or its evidenceDueAt is before
 * the instant (a control without one never matches).
 */
export const controlFilters = {
  stateIn(organizationId: string, states: readonly string[], now = new Date()): Prisma.Sql {
    if (states.length === 0) return sql`FALSE`;
    return sql`t."id" IN (
      SELECT s."controlId" FROM (${controlStatesSql(organizationId, now, sql`TRUE`)}) s
      WHERE s."state" IN (${join(states.map((s) => sql`${s}::text`))}))`;
  },
  evidenceDueBefore(organizationId: string, before: Date): Prisma.Sql {
    return sql`t."id" IN (
      SELECT v."controlId" FROM "Evidence" v
      WHERE v."organizationId" = ${organizationId} AND v."controlId" IS NOT NULL AND v."status" = 'accepted'::"EvidenceStatus"
      GROUP BY v."controlId"
      HAVING NOT bool_or(v."validUntil" IS NULL) AND max(v."validUntil") < ${at(before)})`;
  },
};

export type StateRow = { controlId: string; state: ControlState; reasons: string | null; evidenceDueAt: Date | string | null };

const asDate = (value: Date | string | null) =>
  value === null ? null : value instanceof Date ? value : new Date(`${value.replace(" ", "T")}Z`);

export function statusOf(row: StateRow): ControlStatus {
  return {
    controlId: row.controlId,
    state: row.state,
    reasons: row.reasons ? (JSON.parse(row.reasons) as ControlReason[]) : [],
    evidenceDueAt: asDate(row.evidenceDueAt),
  };
}

type Reader = Db | Prisma.TransactionClient;
const rowsOf = <Row>(db: Reader, statement: Prisma.Sql) =>
  "$transaction" in db ? readRows<Row>(db as Db, statement) : (db as Prisma.TransactionClient).$queryRaw<Row[]>(statement);

/** The state of these controls of the organization (unknown ids are left out), in one statement. */
export async function controlStatuses(
  db: Reader,
  organizationId: string,
  controlIds: readonly string[],
  now = new Date(),
): Promise<Map<string, ControlStatus>> {
  if (controlIds.length === 0) return new Map();
  const rows = await rowsOf<StateRow>(db, controlStatesSql(organizationId, now, sql`c."id" = ANY(${[...controlIds]}::text[])`));
  return new Map(rows.map((row) => [row.controlId, statusOf(row)]));
}

/** The state of these requirements for the organization (unknown ids are left out), in one statement. */
export async function requirementStatuses(
  db: Db,
  organizationId: string,
  requirementIds: readonly string[],
  now = new Date(),
): Promise<Map<string, RequirementStatus>> {
  if (requirementIds.length === 0) return new Map();
  const rows = await readRows<RequirementStatus>(
    db,
    sql`SELECT s."requirementId", s."state", s."inheritedFromId" FROM (${requirementStatesSql(
      organizationId,
      now,
      sql`r."id" = ANY(${[...requirementIds]}::text[])`,
    )}) s`,
  );
  return new Map(rows.map((row) => [row.requirementId, row]));
}

/** readyPercent: ready / applicable, one decimal, rounded down; 0 when nothing is applicable. */
export function readyPercent(ready: number, applicable: number): number {
  return applicable > 0 ? Math.floor((ready * 1000) / applicable) / 10 : 0;
}

/** A framework's readiness and, read when asked, the state of each of its requirements that has one. */
export type FrameworkStates = {
  readiness: FrameworkReadiness;
  states: () => Map<string, RequirementStatus>;
  /** Whether each control behind the framework's states is ready (the same definition as controlStatesSql's). */
  controls: () => Map<string, boolean>;
};

/**
 * The readiness of each of these frameworks for the organization and the states of their
 * requirements, in one statement (each control state evaluated once); a framework it has not
 * adopted (or cannot see) is left out. A framework's page reads its readiness and its
 * requirements' states from this one result. The states come as one text per framework
 * ("id state[ inheritedFromId]", comma-separated; ids hold neither), read only by a caller that
 * asks for them: a readiness alone does not pay for a thousand rows. So do whether the controls behind
 * them are ready (one text for the batch): a framework's page asking its controls' state alone needs
 * no statement for them.
 */
export async function frameworkStates(
  db: Db,
  organizationId: string,
  frameworkIds: readonly string[],
  now = new Date(),
): Promise<Map<string, FrameworkStates>> {
  if (frameworkIds.length === 0) return new Map();
  const rows = await readRows<{
    frameworkId: string;
    assessable: number;
    notApplicable: number;
    unmapped: number;
    ready: number;
    partial: number;
    notReady: number;
    states: string | null;
    controlStates: string | null;
  }>(
    db,
    sql`SELECT s."frameworkId",
        count(*) FILTER (WHERE s."state" IS NOT NULL)::int AS "assessable",
        count(*) FILTER (WHERE s."state" = 'not_applicable')::int AS "notApplicable",
        count(*) FILTER (WHERE s."state" = 'unmapped')::int AS "unmapped",
        count(*) FILTER (WHERE s."state" = 'ready')::int AS "ready",
        count(*) FILTER (WHERE s."state" = 'partial')::int AS "partial",
        count(*) FILTER (WHERE s."state" = 'not_ready')::int AS "notReady",
        string_agg(s."requirementId" || ' ' || s."state" || COALESCE(' ' || s."inheritedFromId", ''), ',')
          FILTER (WHERE s."state" IS NOT NULL) AS "states",
        max(s."controlStates") AS "controlStates"
      FROM (${requirementStatesSql(
        organizationId,
        now,
        sql`r."frameworkId" = ANY(${[...frameworkIds]}::text[]) AND ${adoptedBy(organizationId, sql`r."frameworkId"`)}`,
        true,
      )}) s
      GROUP BY s."frameworkId"`,
  );
  // The controls' states come on one row of the batch and hold for every framework in it (a control's
  // state does not depend on the framework).
  const controlStates = rows.find((row) => row.controlStates !== null)?.controlStates ?? null;
  let ready: Map<string, boolean> | undefined;
  const controls = () => {
    ready ??= new Map(
      (controlStates ? controlStates.split(",") : []).map((entry) => {
        const [controlId, flag] = entry.split(" ") as [string, string];
        return [controlId, flag === "1"] as const;
      }),
    );
    return ready;
  };
  return new Map(
    rows.map(({ frameworkId, states, controlStates: _, ...counts }) => {
      const c = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Number(v)])) as Omit<
        FrameworkReadiness,
        "readyPercent"
      >;
      let parsed: Map<string, RequirementStatus> | undefined;
      const read = () => {
        parsed ??= new Map(
          (states ? states.split(",") : []).map((entry) => {
            const [requirementId, state, inheritedFromId] = entry.split(" ") as [string, RequirementState, string?];
            return [requirementId, { requirementId, state, inheritedFromId: inheritedFromId ?? null }];
          }),
        );
        return parsed;
      };
      return [
        frameworkId,
        {
          readiness: { ...c, readyPercent: readyPercent(c.ready, c.assessable - c.notApplicable) },
          states: read,
          controls,
        },
      ];
    }),
  );
}

// Recording changes --------------------------------------------------------------------------------

/** Who changed a control's state: the caller of a write, or the status job (no actor). */
export type StatusChangeActor =
  | { organizationId: string; userId: string | null; apiKeyId: string | null; requestId: string }
  | "system";

/** How a write hands the notifications of recorded changes to its notifier (`notify` of notifier.transaction). */
export type Notify = (...drafts: NotificationDraft[]) => Promise<void>;

export type RecordedChange = { controlId: string; from: ControlState; to: ControlState; reasons: ControlReason[] };

/**
 * Records, in the caller's transaction, each of these controls whose state is no longer the one
 * last recorded: a `control.status_changed` audit event (`from`, `to`, `reasons`; also a webhook
 * event) and the new `recordedState`; a control that went not_ready notifies its owner
 * (`control_not_ready`) through `notify`. The rows are locked first (in id order, so writes and the
 * job never deadlock), so two transactions never record one change twice. A control never recorded
 * counts as not_ready: a new control has no links.
 */
export async function recordControlStatusChanges(
  tx: Prisma.TransactionClient,
  actor: StatusChangeActor,
  organizationId: string,
  controlIds: readonly string[],
  options: { notify?: Notify; now?: Date } = {},
): Promise<RecordedChange[]> {
  const ids = [...new Set(controlIds)];
  if (ids.length === 0) return [];
  const now = options.now ?? new Date();
  const locked = await tx.$queryRaw<{ id: string; recordedState: string | null; ownerId: string | null }[]>`
    SELECT "id", "recordedState", "ownerId" FROM "Control"
    WHERE "organizationId" = ${organizationId} AND "id" = ANY(${ids}::text[])
    ORDER BY "id" FOR UPDATE`;
  if (locked.length === 0) return [];
  const statuses = await controlStatuses(
    tx,
    organizationId,
    locked.map((c) => c.id),
    now,
  );
  const changes: (RecordedChange & { ownerId: string | null })[] = [];
  for (const control of locked) {
    const status = statuses.get(control.id);
    if (!status) continue;
    const from = (control.recordedState ?? "not_ready") as ControlState;
    if (status.state === from) continue;
    changes.push({ controlId: control.id, from, to: status.state, reasons: status.reasons, ownerId: control.ownerId });
  }
  if (changes.length === 0) return [];
  await tx.$executeRaw`
    UPDATE "Control" c SET "recordedState" = v."state"
    FROM unnest(${changes.map((c) => c.controlId)}::text[], ${changes.map((c) => c.to)}::text[]) AS v("id", "state")
    WHERE c."id" = v."id" AND c."organizationId" = ${organizationId}`;
  for (const change of changes) {
    const event: AuditEventInput = {
      id: newId("aud"),
      organizationId,
      actorUserId: actor === "system" ? null : actor.userId,
      actorApiKeyId: actor === "system" ? null : actor.apiKeyId,
      action: "control.status_changed",
      entityType: "control",
      entityId: change.controlId,
      data: { from: change.from, to: change.to, reasons: change.reasons } as Prisma.InputJsonValue,
      requestId: actor === "system" ? null : actor.requestId,
    };
    await writeAuditEvent(tx, event);
  }
  const notReady = changes.filter((c) => c.to === "not_ready" && c.ownerId);
  if (options.notify && notReady.length > 0) {
    await options.notify(
      ...notReady.map(
        (c): NotificationDraft => ({
          reason: "control_not_ready",
          recipientIds: [c.ownerId],
          entity: { type: "control", id: c.controlId },
        }),
      ),
    );
  }
  return changes.map(({ ownerId: _ownerId, ...change }) => change);
}

/** The controls a task's state feeds (tasks.service records their changes when the task's status moves). */
export async function controlsOfTask(tx: Prisma.TransactionClient, organizationId: string, taskId: string): Promise<string[]> {
  const rows = await tx.$queryRaw<{ controlId: string }[]>`
    SELECT "controlId" FROM "ControlTask" WHERE "organizationId" = ${organizationId} AND "taskId" = ${taskId}`;
  return rows.map((r) => r.controlId);
}

/** The controls a policy's state feeds (policies.service records their changes when its current version moves). */
export async function controlsOfPolicy(
  tx: Prisma.TransactionClient,
  organizationId: string,
  policyId: string,
): Promise<string[]> {
  const rows = await tx.$queryRaw<{ controlId: string }[]>`
    SELECT "controlId" FROM "ControlPolicy" WHERE "organizationId" = ${organizationId} AND "policyId" = ${policyId}`;
  return rows.map((r) => r.controlId);
}
