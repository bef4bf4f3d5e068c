import { describe, expect, it } from "vitest";
import { readyPercent } from "../../src/modules/frameworks/frameworks.readiness.js";
import { newId } from "../../src/platform/ids.js";
import { openFixture } from "../helpers/fixtures.js";
import { adopt, makeControl, makeEvidence, makeFramework, makeTask, mapRequirements } from "../helpers/frameworks.js";

/**
 * Readiness exactly as contract section 16 defines it, read on both transports: a control's state
 * and reasons, a requirement's state (own and inherited through mappings), a framework's counts.
 */
const { t, org } = await openFixture({ organizations: 1 });
const orgId = org.organizationId;
const day = 86_400_000;

const controlQuery = `query($id: ID!) { framework(id: $id) { requirements(first: 100) { items { ref status { state inheritedFromId } controls { id status { state evidenceDueAt reasons { code entityType entityId } } } } } } }`;

async function unpublishedPolicy(): Promise<string> {
  const id = newId("pol");
  await t.db.policy.create({ data: { id, organizationId: orgId, name: "Draft policy", status: "draft", lastVersionNumber: 0 } });
  return id;
}

async function statesOf(frameworkId: string) {
  const res = await t.gql(controlQuery, { id: frameworkId }, { key: org.apiKey });
  expect(res.body.errors).toBeUndefined();
  return new Map(
    (res.body.data.framework.requirements.items as { ref: string; status: unknown; controls: unknown }[]).map((r) => [r.ref, r]),
  );
}

describe("control state", () => {
  it("is not_ready with no_links when nothing is linked, and ready with a done task", async () => {
    const fw = await makeFramework(t.db, { groups: 1, perGroup: 2 });
    await adopt(t.db, orgId, fw.id);
    const done = await makeTask(t.db, orgId, "done");
    const bare = await makeControl(t.db, orgId, { requirementIds: [fw.byRef.get("G1.1") as string] });
    const ready = await makeControl(t.db, orgId, { requirementIds: [fw.byRef.get("G1.2") as string], taskIds: [done] });
    const states = await statesOf(fw.id);
    expect(states.get("G1.1")).toMatchObject({
      status: { state: "not_ready", inheritedFromId: null },
      controls: [
        {
          id: bare,
          status: { state: "not_ready", evidenceDueAt: null, reasons: [{ code: "no_links", entityType: null, entityId: null }] },
        },
      ],
    });
    expect(states.get("G1.2")).toMatchObject({
      status: { state: "ready" },
      controls: [{ id: ready, status: { state: "ready", reasons: [] } }],
    });
  });

  it("names each policy without a published current version and each task not done", async () => {
    const fw = await makeFramework(t.db, { groups: 1, perGroup: 1 });
    await adopt(t.db, orgId, fw.id);
    const draft = await unpublishedPolicy();
    const todo = await makeTask(t.db, orgId, "todo");
    const published = org.policyIds[0] as string;
    await makeControl(t.db, orgId, {
      requirementIds: [fw.byRef.get("G1.1") as string],
      policyIds: [draft, published],
      taskIds: [todo],
    });
    const states = await statesOf(fw.id);
    const control = (states.get("G1.1") as { controls: { status: { reasons: unknown[] } }[] }).controls[0];
    expect(control?.status.reasons).toEqual([
      { code: "policy_not_published", entityType: "policy", entityId: draft },
      { code: "task_not_done", entityType: "task", entityId: todo },
    ]);
  });

  it("with evidenceEveryDays, needs accepted evidence valid now: missing, expired, then ready; evidenceDueAt is the latest validUntil", async () => {
    const fw = await makeFramework(t.db, { groups: 1, perGroup: 1 });
    await adopt(t.db, orgId, fw.id);
    const done = await makeTask(t.db, orgId, "done");
    const controlId = await makeControl(t.db, orgId, {
      requirementIds: [fw.byRef.get("G1.1") as string],
      taskIds: [done],
      evidenceEveryDays: 90,
    });
    const reasons = async () => {
      const states = await statesOf(fw.id);
      return (
        states.get("G1.1") as { controls: { status: { state: string; evidenceDueAt: string | null; reasons: unknown[] } }[] }
      ).controls[0]?.status;
    };
    expect(await reasons()).toMatchObject({ state: "not_ready", reasons: [{ code: "evidence_missing", entityId: null }] });
    // Submitted or rejected evidence does not count.
    await makeEvidence(t.db, orgId, controlId, { status: "submitted", validUntil: new Date(Date.now() + 10 * day) });
    expect((await reasons())?.reasons).toEqual([{ code: "evidence_missing", entityType: null, entityId: null }]);
    const older = await makeEvidence(t.db, orgId, controlId, { validUntil: new Date(Date.now() - 2 * day) });
    const expired = await makeEvidence(t.db, orgId, controlId, { validUntil: new Date(Date.now() - day) });
    expect(await reasons()).toMatchObject({
      state: "not_ready",
      reasons: [{ code: "evidence_expired", entityType: "evidence", entityId: expired }],
    });
    expect(older).not.toBe(expired);
    const until = new Date(Date.now() + 30 * day);
    await makeEvidence(t.db, orgId, controlId, { validUntil: until });
    expect(await reasons()).toEqual({ state: "ready", reasons: [], evidenceDueAt: until.toISOString() });
  });
});

describe("requirement state", () => {
  it("is ready, partial or not_ready by its controls, unmapped without, not_applicable when so marked; groups have none", async () => {
    const fw = await makeFramework(t.db, { groups: 1, perGroup: 4 });
    await adopt(t.db, orgId, fw.id);
    const done = await makeTask(t.db, orgId, "done");
    const [r1, r2, r3, r4] = [1, 2, 3, 4].map((i) => fw.byRef.get(`G1.${i}`) as string);
    await makeControl(t.db, orgId, { requirementIds: [r1 as string, r2 as string], taskIds: [done] });
    await makeControl(t.db, orgId, { requirementIds: [r2 as string, r3 as string] });
    await t.db.requirementApplicability.create({
      data: { organizationId: orgId, requirementId: r4 as string, applicable: false, justification: "No such systems" },
    });
    const states = await statesOf(fw.id);
    expect([...states].map(([ref, r]) => [ref, (r as { status: { state: string } | null }).status?.state ?? null])).toEqual([
      ["G1", null],
      ["G1.1", "ready"],
      ["G1.2", "partial"],
      ["G1.3", "not_ready"],
      ["G1.4", "not_applicable"],
    ]);
  });

  it("inherits through equal and superset the state, through subset and intersect at most partial, read in either direction", async () => {
    const source = await makeFramework(t.db, { groups: 1, perGroup: 4 });
    const target = await makeFramework(t.db, { groups: 1, perGroup: 5 });
    await adopt(t.db, orgId, target.id);
    const done = await makeTask(t.db, orgId, "done");
    const s = (i: number) => source.byRef.get(`G1.${i}`) as string;
    const g = (i: number) => target.byRef.get(`G1.${i}`) as string;
    for (let i = 1; i <= 4; i++) await makeControl(t.db, orgId, { requirementIds: [s(i)], taskIds: [done] });
    // source G1.1 equal target G1.1; source G1.2 superset target G1.2: ready carried.
    await mapRequirements(t.db, s(1), g(1), "equal");
    await mapRequirements(t.db, s(2), g(2), "superset");
    // source G1.3 subset target G1.3: at most partial.
    await mapRequirements(t.db, s(3), g(3), "subset");
    // written the other way: target G1.4 subset source G1.4 is source superset target: ready carried.
    await mapRequirements(t.db, g(4), s(4), "subset", orgId);
    // target G1.5 intersect source G1.1 (the organization's own mapping): partial.
    await mapRequirements(t.db, g(5), s(1), "intersect", orgId);
    const states = await statesOf(target.id);
    const state = (ref: string) => (states.get(ref) as { status: { state: string; inheritedFromId: string | null } }).status;
    expect(state("G1.1")).toEqual({ state: "ready", inheritedFromId: s(1) });
    expect(state("G1.2")).toEqual({ state: "ready", inheritedFromId: s(2) });
    expect(state("G1.3")).toEqual({ state: "partial", inheritedFromId: s(3) });
    expect(state("G1.4")).toEqual({ state: "ready", inheritedFromId: s(4) });
    expect(state("G1.5")).toEqual({ state: "partial", inheritedFromId: s(1) });
  });

  it("keeps its own controls' state over any mapping, and ignores another organization's mappings", async () => {
    const other = await t.seedOrg();
    const source = await makeFramework(t.db, { groups: 1, perGroup: 2 });
    const target = await makeFramework(t.db, { groups: 1, perGroup: 2 });
    await adopt(t.db, orgId, target.id);
    const done = await makeTask(t.db, orgId, "done");
    await makeControl(t.db, orgId, { requirementIds: [source.byRef.get("G1.1") as string], taskIds: [done] });
    await makeControl(t.db, orgId, { requirementIds: [source.byRef.get("G1.2") as string], taskIds: [done] });
    await makeControl(t.db, orgId, { requirementIds: [target.byRef.get("G1.1") as string] });
    await mapRequirements(t.db, source.byRef.get("G1.1") as string, target.byRef.get("G1.1") as string, "equal");
    await mapRequirements(
      t.db,
      source.byRef.get("G1.2") as string,
      target.byRef.get("G1.2") as string,
      "equal",
      other.organizationId,
    );
    const states = await statesOf(target.id);
    expect((states.get("G1.1") as { status: unknown }).status).toEqual({ state: "not_ready", inheritedFromId: null });
    expect((states.get("G1.2") as { status: unknown }).status).toEqual({ state: "unmapped", inheritedFromId: null });
  });
});

describe("framework readiness", () => {
  it("counts assessable requirements by state; readyPercent is ready over applicable, one decimal, rounded down", async () => {
    const fw = await makeFramework(t.db, { groups: 2, perGroup: 4 });
    const done = await makeTask(t.db, orgId, "done");
    const ids = fw.requirements;
    // 8 assessable: 1 not applicable, 2 ready, 1 partial, 1 not_ready, 3 unmapped -> 2 / 7 = 28.571 -> 28.5
    await makeControl(t.db, orgId, { requirementIds: [ids[0], ids[1], ids[2]] as string[], taskIds: [done] });
    await makeControl(t.db, orgId, { requirementIds: [ids[2], ids[3]] as string[] });
    await t.db.requirementApplicability.create({
      data: { organizationId: orgId, requirementId: ids[4] as string, applicable: false, justification: "n/a" },
    });
    const query = `query($id: ID!) { framework(id: $id) { adopted readiness { assessable notApplicable unmapped ready partial notReady readyPercent } } }`;
    const before = await t.gql(query, { id: fw.id }, { key: org.apiKey });
    expect(before.body.data.framework).toEqual({ adopted: false, readiness: null });
    await adopt(t.db, orgId, fw.id);
    const expected = { assessable: 8, notApplicable: 1, unmapped: 3, ready: 2, partial: 1, notReady: 1, readyPercent: 28.5 };
    const gql = await t.gql(query, { id: fw.id }, { key: org.apiKey });
    expect(gql.body.data.framework).toEqual({ adopted: true, readiness: expected });
    const rest = await t.rest("GET", `/v1/frameworks/${fw.id}`, { key: org.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body.readiness).toEqual(expected);
    expect(rest.body.adopted).toBe(true);
  });

  it("a mapping between two requirements of one framework leaves each its own controls' state, counted once", async () => {
    const fw = await makeFramework(t.db, { groups: 1, perGroup: 3 });
    const done = await makeTask(t.db, orgId, "done");
    const open = await makeTask(t.db, orgId, "todo");
    const [a, b] = fw.requirements as [string, string];
    await makeControl(t.db, orgId, { requirementIds: [a], taskIds: [done] });
    await makeControl(t.db, orgId, { requirementIds: [b], taskIds: [open] });
    // Each is the other's mapped requirement (frameworks.readiness.ts reads their controls through both).
    await mapRequirements(t.db, a, b, "equal", orgId);
    await adopt(t.db, orgId, fw.id);
    const states = await statesOf(fw.id);
    expect((states.get("G1.1") as { status: unknown }).status).toEqual({ state: "ready", inheritedFromId: null });
    expect((states.get("G1.2") as { status: unknown }).status).toEqual({ state: "not_ready", inheritedFromId: null });
    const query = `query($id: ID!) { framework(id: $id) { readiness { assessable unmapped ready partial notReady } } }`;
    const res = await t.gql(query, { id: fw.id }, { key: org.apiKey });
    expect(res.body.data.framework.readiness).toEqual({ assessable: 3, unmapped: 1, ready: 1, partial: 0, notReady: 1 });
  });

  it("readyPercent rounds down and is 0 when nothing is applicable", () => {
    expect(readyPercent(2, 3)).toBe(66.6);
    expect(readyPercent(1, 3)).toBe(33.3);
    expect(readyPercent(3, 3)).toBe(100);
    expect(readyPercent(0, 0)).toBe(0);
    expect(readyPercent(1, 7)).toBe(14.2);
  });
});

describe("the controls list's readiness filters", () => {
  it("filters by state and by evidenceDueBefore on both transports", async () => {
    const fresh = await t.seedOrg();
    const id = fresh.organizationId;
    const done = await makeTask(t.db, id, "done");
    const soon = await makeControl(t.db, id, { taskIds: [done], evidenceEveryDays: 30, code: "DUE-SOON" });
    const later = await makeControl(t.db, id, { taskIds: [done], evidenceEveryDays: 30, code: "DUE-LATER" });
    const bare = await makeControl(t.db, id, { code: "BARE" });
    await makeEvidence(t.db, id, soon, { validUntil: new Date(Date.now() + 5 * day) });
    await makeEvidence(t.db, id, later, { validUntil: new Date(Date.now() + 50 * day) });
    const before = new Date(Date.now() + 10 * day).toISOString();
    const gql = await t.gql(
      `query($before: DateTime!) {
        ready: controls(filter: { state: [ready] }, orderBy: { field: code, direction: asc }) { totalCount items { code } }
        notReady: controls(filter: { state: [not_ready] }) { items { id } }
        due: controls(filter: { evidenceDueBefore: $before }) { items { code status { evidenceDueAt } } }
      }`,
      { before },
      { key: fresh.apiKey },
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.ready).toEqual({ totalCount: 2, items: [{ code: "DUE-LATER" }, { code: "DUE-SOON" }] });
    expect(gql.body.data.notReady.items).toEqual([{ id: bare }]);
    expect(gql.body.data.due.items.map((c: { code: string }) => c.code)).toEqual(["DUE-SOON"]);
    const rest = await t.rest("GET", `/v1/controls?evidenceDueBefore=${encodeURIComponent(before)}&state=ready`, {
      key: fresh.apiKey,
    });
    expect(rest.status).toBe(200);
    expect(rest.body.items.map((c: { id: string }) => c.id)).toEqual([soon]);
  });
});
