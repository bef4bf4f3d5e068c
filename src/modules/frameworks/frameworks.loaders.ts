import DataLoader from "dataloader";
import type { Control, Evidence, Framework, Requirement } from "../../generated/prisma/client.js";
import { Prisma } from "../../generated/prisma/client.js";
import { listLoader } from "../../graphql/lists.js";
import { recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { recordsByKey, scalarColumns } from "../../platform/db/graph-reader.js";
import { readRows } from "../../platform/db/row-by-id.js";
import {
  type ControlState,
  controlStatesSql,
  controlStatuses,
  type FrameworkStates,
  frameworkStates,
  type RequirementStatus,
  requirementStatuses,
  type StateRow,
  statusOf,
} from "./frameworks.readiness.js";
import { createFrameworkService, requirementList, visibleSql } from "./frameworks.service.js";

const { sql } = Prisma;

type MaybePromise<T> = T | Promise<T>;

/**
 * Frameworks, requirements and their readiness for one request of one organization: each batch one
 * statement, so a framework's page costs the same number of statements for 5 requirements as for
 * 100, whatever the controls and links behind them. Readiness is read at the request's time.
 */
export function createFrameworkLoaders(db: Db, organizationId: string) {
  const service = createFrameworkService(db);
  const now = new Date();
  const controlsByOwner = new Map<string, DataLoader<string, Control[]>>();
  /** Each framework's readiness and its requirements' states; null when not adopted. */
  const states = new DataLoader(async (ids: readonly string[]) => {
    const found = await frameworkStates(db, organizationId, ids, now);
    return ids.map((id) => found.get(id) ?? null);
  });
  /** The frameworks whose states this request asked for: their requirements' states are read from them. */
  const statesAsked = new Map<string, Promise<FrameworkStates | null>>();
  /**
   * Those of them read already: a field resolved after them takes its state at once, without a
   * promise of its own (a framework's page: its 100 requirements' and their controls' states).
   */
  const statesRead = new Map<string, FrameworkStates | null>();
  const statesOf = (frameworkId: string) => {
    let found = statesAsked.get(frameworkId);
    if (!found) {
      found = states.load(frameworkId);
      statesAsked.set(frameworkId, found);
      found.then(
        (read) => statesRead.set(frameworkId, read),
        () => {},
      );
    }
    return found;
  };
  /** A control's state in a framework's states; undefined when they did not assess it. */
  const controlStateIn = (read: FrameworkStates | null, controlId: string): ControlState | undefined => {
    const ready = read?.controls().get(controlId);
    return ready === undefined ? undefined : ready ? "ready" : "not_ready";
  };
  const controlStateWhenRead = async (controlId: string) => {
    for (const asked of statesAsked.values()) {
      const state = controlStateIn(await asked, controlId);
      if (state) return state;
    }
    return undefined;
  };
  const requirementStatus = new DataLoader(async (ids: readonly string[]) => {
    const found = await requirementStatuses(db, organizationId, ids, now);
    return ids.map((id) => found.get(id) ?? null);
  });
  /** Whether the organization adopted each framework. */
  const adopted = new DataLoader<string, boolean>(async (ids) => {
    const rows = await readRows<{ frameworkId: string }>(
      db,
      sql`SELECT "frameworkId" FROM "FrameworkAdoption" WHERE "organizationId" = ${organizationId} AND "frameworkId" = ANY(${[...ids]}::text[])`,
    );
    const found = new Set(rows.map((r) => r.frameworkId));
    return ids.map((id) => found.has(id));
  });
  const controlStatus = new DataLoader(async (ids: readonly string[]) => {
    const found = await controlStatuses(db, organizationId, ids, now);
    return ids.map((id) => found.get(id) ?? null);
  });
  return {
    byId: recordLoader<Framework>(service.frameworksByIds(organizationId)),
    requirementById: recordLoader<Requirement>(service.requirementsByIds(organizationId)),
    /** Pages of requirements of many frameworks, with their counts. */
    requirementPages: listLoader(db, organizationId, requirementList, service.requirementsByIds(organizationId)),
    adopted,
    /**
     * Frameworks the organization sees, by id, each read whole with whether the organization adopted
     * it (primed in `adopted`): a framework's page reads both in one statement.
     */
    withAdoption: new DataLoader<string, Framework | null>(async (ids) => {
      const columns = scalarColumns<Framework>("Framework", "f");
      const rows = await readRows<Record<string, unknown>>(
        db,
        sql`SELECT ${Prisma.raw(columns.select)}, EXISTS (SELECT 1 FROM "FrameworkAdoption" a
              WHERE a."organizationId" = ${organizationId} AND a."frameworkId" = f."id") AS "__adopted"
            FROM "Framework" f
            WHERE f."id" = ANY(${[...ids]}::text[]) AND ${visibleSql(organizationId, "f")}`,
      );
      const byId = new Map<string, Framework>();
      for (const row of rows) {
        const framework = columns.rowOf(row);
        adopted.prime(framework.id, row.__adopted === true);
        byId.set(framework.id, framework);
      }
      return ids.map((id) => byId.get(id) ?? null);
    }),
    /** A framework's readiness; null when not adopted. */
    readiness: async (frameworkId: string) => {
      const found = await statesOf(frameworkId);
      return found ? found.readiness : null;
    },
    /**
     * A requirement's state: from its framework's states when this request computes them (a
     * framework's page with its readiness: one statement for both), otherwise batched by id.
     */
    requirementStatus: (requirement: { id: string; frameworkId: string }): MaybePromise<RequirementStatus | null> => {
      // Not among them: a group, or a framework not adopted (no state either way).
      const stateIn = (found: FrameworkStates | null) => found?.states().get(requirement.id) ?? null;
      const read = statesRead.get(requirement.frameworkId);
      if (read !== undefined) return stateIn(read);
      const asked = statesAsked.get(requirement.frameworkId);
      return asked ? asked.then(stateIn) : requirementStatus.load(requirement.id);
    },
    /**
     * A control's state from the states of a framework this request computed (a framework's page
     * with its readiness), when they assessed it: no statement of its own. Undefined otherwise; at
     * once (no promise) when those states are read already.
     */
    knownControlState: (controlId: string): MaybePromise<ControlState | undefined> => {
      if (statesRead.size < statesAsked.size) return controlStateWhenRead(controlId);
      for (const read of statesRead.values()) {
        const state = controlStateIn(read, controlId);
        if (state) return state;
      }
      return undefined;
    },
    /** Whether this request computes the framework's states (and so its controls' states). */
    statesAskedFor: (frameworkId: string) => statesAsked.has(frameworkId),
    /** Settles when every framework's states this request asked for are read (whatever their outcome). */
    statesSettled: () => Promise.allSettled(statesAsked.values()),
    /** A requirement's applicability row; null where none was written (applicable). */
    applicability: new DataLoader(async (ids: readonly string[]) => {
      const rows = await readRows<{ requirementId: string; applicable: boolean; justification: string | null }>(
        db,
        sql`SELECT "requirementId", "applicable", "justification" FROM "RequirementApplicability"
            WHERE "organizationId" = ${organizationId} AND "requirementId" = ANY(${[...ids]}::text[])`,
      );
      const byId = new Map(rows.map((r) => [r.requirementId, r]));
      return ids.map((id) => byId.get(id) ?? null);
    }),
    controlStatus,
    /**
     * The controls mapped to each requirement, by code, that the caller reads: every one, or those
     * `ownerId` owns (an employee's scope, controls.service's controlScope). Each read whole with the
     * links that name it, and `withStatus`, with its state (primed in `controlStatus`): a framework's
     * page reads its requirements' controls and their states in one statement.
     */
    requirementControls: (ownerId: string | null, withStatus = false) => {
      const key = `${withStatus ? "s" : "-"}${ownerId ?? ""}`;
      let loader = controlsByOwner.get(key);
      if (!loader) {
        const columns = scalarColumns<Control>("Control", "c");
        loader = new DataLoader<string, Control[]>(async (ids) => {
          // IN (SELECT unnest(...)), not = ANY(...): the prepared statement's generic plan scans the links
          // and searched the array of 100 ids for each (2.4 of 4.6 ms in PostgreSQL); this hashes it.
          const mapped = sql`SELECT cr."requirementId" AS "__requirementId", ${Prisma.raw(columns.select)}
                FROM "ControlRequirement" cr JOIN "Control" c ON c."id" = cr."controlId"
                WHERE cr."organizationId" = ${organizationId} AND cr."requirementId" IN (SELECT unnest(${[...ids]}::text[]))
                  AND (${ownerId}::text IS NULL OR c."ownerId" = ${ownerId}::text)`;
          const rows = await readRows<Record<string, unknown>>(
            db,
            withStatus
              ? // The states materialized: computed once for the distinct controls. Inlined, a prepared
                // statement's generic plan (which expects one row of "rc") computed them once per link.
                sql`WITH "rc" AS (${mapped}),
                  "s" AS MATERIALIZED (${controlStatesSql(organizationId, now, sql`c."id" IN (SELECT "id" FROM "rc")`)})
                  SELECT "rc".*, s."state" AS "__state", s."reasons" AS "__reasons", s."evidenceDueAt" AS "__evidenceDueAt"
                  FROM "rc" LEFT JOIN "s" ON s."controlId" = "rc"."id"
                  ORDER BY "rc"."code", "rc"."id"`
              : sql`${mapped} ORDER BY c."code", c."id"`,
          );
          const byRequirement = new Map<string, Control[]>();
          for (const row of rows) {
            const requirementId = row.__requirementId as string;
            const control = columns.rowOf(row);
            if (withStatus) {
              controlStatus.prime(
                control.id,
                statusOf({
                  controlId: control.id,
                  state: row.__state as StateRow["state"],
                  reasons: row.__reasons as string | null,
                  evidenceDueAt: row.__evidenceDueAt as StateRow["evidenceDueAt"],
                }),
              );
            }
            const list = byRequirement.get(requirementId) ?? [];
            list.push(control);
            byRequirement.set(requirementId, list);
          }
          return ids.map((id) => byRequirement.get(id) ?? []);
        });
        controlsByOwner.set(key, loader);
      }
      return loader;
    },
    controlById: recordLoader(recordsByKey<Control>("Control", db, organizationId)),
    /** Evidence named by a control's reasons. */
    evidenceById: recordLoader(recordsByKey<Evidence>("Evidence", db, organizationId)),
  };
}

export type FrameworkLoaders = ReturnType<typeof createFrameworkLoaders>;
