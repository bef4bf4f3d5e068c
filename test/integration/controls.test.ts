import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../src/admin/admin.service.js";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { newId } from "../../src/platform/ids.js";
import { openFixture } from "../helpers/fixtures.js";

// Contract section 16's controls, their maps and links, on both transports: who sees which
// control, another organization's ids, idempotent re-maps and re-links, their audit events, and
// a page of 50 controls with their relations costing the statements of 5.

const { t, org, other, keyWith } = await openFixture(
  process.env.DEBUG_LOG ? { logger: (await import("pino")).default({ level: "error" }) } : {},
);

let n = 0;
const code = (prefix = "CT") => `${prefix}-${Date.now().toString(36)}${n++}`;

/** A framework with requirements: shipped (no organization) or custom to `organizationId`. */
async function framework(organizationId: string | null, refs: string[]) {
  const id = newId("fw");
  await t.db.framework.create({
    data: { id, organizationId, key: `fw-${id}`, name: `Framework ${id}`, version: "1", requirementCount: refs.length },
  });
  const requirementIds = refs.map(() => newId("req"));
  await t.db.requirement.createMany({
    data: refs.map((ref, i) => ({ id: requirementIds[i] as string, frameworkId: id, ref, title: `Title ${ref}`, position: i })),
  });
  return { id, requirementIds };
}

/** A session of a new member of `seed` with `role`. */
async function person(seed: SeedResult, role: "employee" | "contractor" | "auditor" | "admin") {
  const { userId, memberId } = await createUser(t.db, {
    email: `${role}.${Date.now()}${n++}@example.com`,
    name: `A ${role}`,
    organizationId: seed.organizationId,
    role,
  });
  const { token } = await createSession(t.db, userId, 3_600_000);
  return {
    memberId: memberId as string,
    headers: { authorization: `Bearer ${token}`, "x-organization-id": seed.organizationId },
  };
}

async function createControl(body: Record<string, unknown> = {}, key = org.apiKey) {
  const created = await t.rest("POST", "/v1/controls", { key, body: { code: code(), name: "Access review", ...body } });
  expect(created.status, created.text).toBe(201);
  return created.body as { id: string; code: string };
}

const auditOf = (entityId: string) =>
  t.db.auditEvent.findMany({ where: { entityId }, orderBy: { sequence: "asc" }, select: { action: true, data: true } });

let shipped: { id: string; requirementIds: string[] };
let custom: { id: string; requirementIds: string[] };
let foreign: { id: string; requirementIds: string[] };

beforeAll(async () => {
  shipped = await framework(null, ["AC-1", "AC-2", "AC-3"]);
  custom = await framework(org.organizationId, ["OWN-1", "OWN-2"]);
  foreign = await framework(other.organizationId, ["THEIRS-1"]);
});
afterAll(async () => {
  await t.db.framework.deleteMany({ where: { id: { in: [shipped.id, custom.id, foreign.id] } } });
});

describe("controls", () => {
  it("creates, reads, changes and deletes a control over REST, with its audit events", async () => {
    const created = await createControl({ description: "Quarterly", ownerId: org.memberIds[1], evidenceEveryDays: 90 });
    expect(Object.keys(created).sort()).toEqual(
      ["code", "createdAt", "description", "evidenceEveryDays", "id", "name", "ownerId", "status", "updatedAt"].sort(),
    );
    expect(created).toMatchObject({ ownerId: org.memberIds[1], evidenceEveryDays: 90 });
    expect(created.id).toMatch(/^ctl_/);
    const read = await t.rest("GET", `/v1/controls/${created.id}`, { key: org.apiKey });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created);
    const changed = await t.rest("PATCH", `/v1/controls/${created.id}`, {
      key: org.apiKey,
      body: { name: "Access review (quarterly)", evidenceEveryDays: null },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ name: "Access review (quarterly)", evidenceEveryDays: null });
    const deleted = await t.rest("DELETE", `/v1/controls/${created.id}`, { key: org.apiKey });
    expect(deleted.status).toBe(204);
    expect((await t.rest("GET", `/v1/controls/${created.id}`, { key: org.apiKey })).status).toBe(404);
    expect((await auditOf(created.id)).map((e) => e.action)).toEqual(["control.created", "control.updated", "control.deleted"]);
    const updated = (await auditOf(created.id))[1]?.data as { changes: Record<string, unknown> };
    expect(updated.changes).toEqual({
      name: { from: "Access review", to: "Access review (quarterly)" },
      evidenceEveryDays: { from: 90, to: null },
    });
  });

  it("does the same over GraphQL, answering the state after each write", async () => {
    const created = await t.gql(
      `mutation($code: String!) { createControl(code: $code, name: "Backups", evidenceEveryDays: 30) { id code owner { id } } }`,
      { code: code() },
      { key: org.apiKey },
    );
    expect(created.body.errors).toBeUndefined();
    const id = created.body.data.createControl.id;
    const updated = await t.gql(
      `mutation($id: ID!, $owner: ID) { updateControl(id: $id, ownerId: $owner) { id owner { id name } } }`,
      { id, owner: org.memberIds[3] },
      { key: org.apiKey },
    );
    expect(updated.body.data.updateControl.owner).toEqual({ id: org.memberIds[3], name: "Edsger Employee" });
    const deleted = await t.gql(`mutation($id: ID!) { deleteControl(id: $id) { deletedId } }`, { id }, { key: org.apiKey });
    expect(deleted.body.data.deleteControl).toEqual({ deletedId: id });
    const gone = await t.gql(`query($id: ID!) { control(id: $id) { id } }`, { id }, { key: org.apiKey });
    expect(gone.body.errors[0].extensions.code).toBe("NOT_FOUND");
  });

  it("refuses a code the organization uses (409), bad input (400) and an owner who is not an active member (404)", async () => {
    const first = await createControl();
    const clash = await t.rest("POST", "/v1/controls", { key: org.apiKey, body: { code: first.code, name: "Again" } });
    expect(clash.status).toBe(409);
    expect(clash.body.code).toBe("CONFLICT");
    // Another organization may use the same code.
    await createControl({ code: first.code }, other.apiKey);
    const second = await createControl();
    const renamed = await t.rest("PATCH", `/v1/controls/${second.id}`, { key: org.apiKey, body: { code: first.code } });
    expect(renamed.status).toBe(409);
    for (const body of [
      { code: "", name: "x" },
      { code: "has space", name: "x" },
      { code: code(), name: "x", evidenceEveryDays: 0 },
      { code: code(), name: "x", evidenceEveryDays: 3651 },
    ]) {
      const refused = await t.rest("POST", "/v1/controls", { key: org.apiKey, body });
      expect(refused.status, JSON.stringify(body)).toBe(400);
    }
    expect(
      (await t.rest("POST", "/v1/controls", { key: org.apiKey, body: { code: code(), name: "x", evidenceEveryDays: 3650 } }))
        .status,
    ).toBe(201);
    const foreignOwner = await t.rest("POST", "/v1/controls", {
      key: org.apiKey,
      body: { code: code(), name: "x", ownerId: other.memberIds[0] },
    });
    expect(foreignOwner.status).toBe(404);
    const empty = await t.rest("PATCH", `/v1/controls/${second.id}`, { key: org.apiKey, body: {} });
    expect(empty.status).toBe(400);
  });

  it("lists with filters, search, sort, cursors and totalCount on both transports", async () => {
    const seed = await t.seedOrg();
    const fw = await framework(seed.organizationId, ["L-1"]);
    const a = await createControl({ code: "LST-A", name: "Alpha encryption", ownerId: seed.memberIds[1] }, seed.apiKey);
    const b = await createControl({ code: "LST-B", name: "Beta logging" }, seed.apiKey);
    const c = await createControl({ code: "ENC-C", name: "Gamma", ownerId: seed.memberIds[2] }, seed.apiKey);
    await t.rest("POST", `/v1/controls/${c.id}/requirements`, { key: seed.apiKey, body: { requirementIds: fw.requirementIds } });
    const ids = async (query: string) => {
      const answer = await t.rest("GET", `/v1/controls?${query}`, { key: seed.apiKey });
      expect(answer.status, answer.text).toBe(200);
      return (answer.body.items as { id: string }[]).map((i) => i.id);
    };
    expect(await ids("")).toEqual([c.id, b.id, a.id]);
    expect(await ids("sort=code")).toEqual([c.id, a.id, b.id]);
    expect(await ids(`ownerId=${seed.memberIds[1]}`)).toEqual([a.id]);
    expect(await ids("ownerId=none")).toEqual([b.id]);
    expect(await ids(`frameworkId=${fw.id}`)).toEqual([c.id]);
    expect(await ids("q=enc")).toEqual([c.id, a.id]);
    expect(await ids("sort=name&limit=1")).toEqual([a.id]);
    const page = await t.rest("GET", "/v1/controls?sort=name&limit=2", { key: seed.apiKey });
    expect(await ids(`sort=name&limit=2&cursor=${page.body.nextCursor}`)).toEqual([c.id]);
    const graph = await t.gql(
      `{ controls(filter: { search: "LST" }, orderBy: { field: code, direction: desc }) { totalCount items { code } pageInfo { hasNextPage } } }`,
      {},
      { key: seed.apiKey },
    );
    expect(graph.body.data.controls).toEqual({
      totalCount: 2,
      items: [{ code: "LST-B" }, { code: "LST-A" }],
      pageInfo: { hasNextPage: false },
    });
    // Readiness (frameworks.readiness.ts): no control of the organization has a link, so none is ready.
    const notReady = await t.rest("GET", "/v1/controls?state=not_ready", { key: seed.apiKey });
    expect(notReady.status).toBe(200);
    expect(notReady.body.items.map((c: { code: string }) => c.code)).toEqual(expect.arrayContaining(["LST-A", "LST-B"]));
    expect((await t.rest("GET", "/v1/controls?state=ready", { key: seed.apiKey })).body.items).toEqual([]);
  });

  it("maps to requirements of shipped and own frameworks, idempotently; another organization's requirement is 404", async () => {
    const control = await createControl();
    const map = (requirementIds: string[]) =>
      t.rest("POST", `/v1/controls/${control.id}/requirements`, { key: org.apiKey, body: { requirementIds } });
    const mapped = await map([shipped.requirementIds[0] as string, custom.requirementIds[0] as string]);
    expect(mapped.status, mapped.text).toBe(200);
    expect(mapped.body.id).toBe(control.id);
    expect((await map([shipped.requirementIds[0] as string])).status).toBe(200);
    expect((await map([foreign.requirementIds[0] as string])).status).toBe(404);
    expect((await map(["req_missing"])).status).toBe(404);
    expect((await map([])).status).toBe(400);
    const graph = await t.gql(
      `query($id: ID!) { control(id: $id) { requirements { totalCount items { id ref framework { id } } } } }`,
      { id: control.id },
      { key: org.apiKey },
    );
    expect(graph.body.data.control.requirements.items).toEqual([
      { id: shipped.requirementIds[0], ref: "AC-1", framework: { id: shipped.id } },
      { id: custom.requirementIds[0], ref: "OWN-1", framework: { id: custom.id } },
    ]);
    const unmapped = await t.rest("DELETE", `/v1/controls/${control.id}/requirements/${shipped.requirementIds[0]}`, {
      key: org.apiKey,
    });
    expect(unmapped.status).toBe(200);
    const again = await t.rest("DELETE", `/v1/controls/${control.id}/requirements/${shipped.requirementIds[0]}`, {
      key: org.apiKey,
    });
    expect(again.status).toBe(404);
    expect(again.body.message).toBe(`Requirement "${shipped.requirementIds[0]}" is not mapped to control ${control.id}`);
    const events = (await auditOf(control.id)).map((e) => [e.action, e.data]);
    expect(events.slice(1)).toEqual([
      ["control.mapped", { requirementIds: [shipped.requirementIds[0], custom.requirementIds[0]] }],
      ["control.unmapped", { requirementIds: [shipped.requirementIds[0]] }],
    ]);
    // Another organization cannot map its control to our custom requirement, nor touch our control.
    const theirs = await createControl({}, other.apiKey);
    const across = await t.rest("POST", `/v1/controls/${theirs.id}/requirements`, {
      key: other.apiKey,
      body: { requirementIds: [custom.requirementIds[1]] },
    });
    expect(across.status).toBe(404);
    const ours = await t.rest("POST", `/v1/controls/${control.id}/requirements`, {
      key: other.apiKey,
      body: { requirementIds: [shipped.requirementIds[1]] },
    });
    expect(ours.status).toBe(404);
  });

  it("links and unlinks policies and tasks idempotently, with Task.controls and Policy.controls back", async () => {
    const control = await createControl();
    const body = { policyIds: [org.policyIds[0]], taskIds: [org.taskIds[0], org.taskIds[1]] };
    const linked = await t.rest("POST", `/v1/controls/${control.id}/links`, { key: org.apiKey, body });
    expect(linked.status, linked.text).toBe(200);
    expect((await t.rest("POST", `/v1/controls/${control.id}/links`, { key: org.apiKey, body })).status).toBe(200);
    const foreignTask = await t.rest("POST", `/v1/controls/${control.id}/links`, {
      key: org.apiKey,
      body: { taskIds: [other.taskIds[0]] },
    });
    expect(foreignTask.status).toBe(404);
    expect((await t.rest("POST", `/v1/controls/${control.id}/links`, { key: org.apiKey, body: {} })).status).toBe(400);
    const graph = await t.gql(
      `query($id: ID!, $task: ID!, $policy: ID!) {
        control(id: $id) { policies { totalCount items { id } } tasks(orderBy: { field: title, direction: asc }) { items { id title } } }
        task(taskId: $task) { controls { items { id } } }
        policy(id: $policy) { controls { items { id } } }
      }`,
      { id: control.id, task: org.taskIds[1], policy: org.policyIds[0] },
      { key: org.apiKey },
    );
    expect(graph.body.errors).toBeUndefined();
    expect(graph.body.data.control.policies).toEqual({ totalCount: 1, items: [{ id: org.policyIds[0] }] });
    expect(graph.body.data.control.tasks.items.map((i: { id: string }) => i.id)).toEqual([org.taskIds[0], org.taskIds[1]]);
    expect(graph.body.data.task.controls.items).toContainEqual({ id: control.id });
    expect(graph.body.data.policy.controls.items).toContainEqual({ id: control.id });
    const unlinked = await t.rest("DELETE", `/v1/controls/${control.id}/links?taskIds=${org.taskIds[0]}`, { key: org.apiKey });
    expect(unlinked.status, unlinked.text).toBe(200);
    const again = await t.gql(
      `mutation($id: ID!, $tasks: [ID!]) { unlinkControl(controlId: $id, taskIds: $tasks) { tasks { items { id } } } }`,
      { id: control.id, tasks: [org.taskIds[0]] },
      { key: org.apiKey },
    );
    expect(again.body.data.unlinkControl.tasks.items).toEqual([{ id: org.taskIds[1] }]);
    // The contract's form: the same body as linkControl's, on the DELETE.
    const byBody = await t.rest("DELETE", `/v1/controls/${control.id}/links`, {
      key: org.apiKey,
      body: { policyIds: [org.policyIds[0]] },
    });
    expect(byBody.status, byBody.text).toBe(200);
    const twice = await t.rest("DELETE", `/v1/controls/${control.id}/links?taskIds=${org.taskIds[1]}`, {
      key: org.apiKey,
      body: { taskIds: [org.taskIds[1]] },
    });
    expect(twice.status).toBe(400);
    expect(twice.body.details).toContainEqual({ path: "taskIds", message: "is given twice" });
    const unknown = await t.rest("DELETE", `/v1/controls/${control.id}/links`, { key: org.apiKey, body: { controlId: "x" } });
    expect(unknown.status).toBe(400);
    // Another DELETE still takes no body.
    const deleteWithBody = await t.rest("DELETE", `/v1/controls/${control.id}`, { key: org.apiKey, body: { force: true } });
    expect(deleteWithBody.status).toBe(400);
    const events = (await auditOf(control.id)).map((e) => [e.action, e.data]);
    expect(events.slice(1)).toEqual([
      ["control.linked", { policyIds: [org.policyIds[0]], taskIds: [org.taskIds[0], org.taskIds[1]] }],
      ["control.unlinked", { policyIds: [], taskIds: [org.taskIds[0]] }],
      ["control.unlinked", { policyIds: [org.policyIds[0]], taskIds: [] }],
    ]);
  });

  it("shows an employee or contractor only the controls they own; another control is 404 to them", async () => {
    const seed = await t.seedOrg();
    const employee = await person(seed, "employee");
    const contractor = await person(seed, "contractor");
    const auditor = await person(seed, "auditor");
    const mine = await createControl({ ownerId: employee.memberId }, seed.apiKey);
    const theirs = await createControl({ ownerId: contractor.memberId }, seed.apiKey);
    const nobody = await createControl({}, seed.apiKey);
    const listed = async (headers: Record<string, string>) => {
      const answer = await t.rest("GET", "/v1/controls", { headers });
      expect(answer.status, answer.text).toBe(200);
      return (answer.body.items as { id: string }[]).map((i) => i.id).sort();
    };
    expect(await listed(employee.headers)).toEqual([mine.id]);
    expect(await listed(contractor.headers)).toEqual([theirs.id]);
    expect(await listed(auditor.headers)).toEqual([mine.id, theirs.id, nobody.id].sort());
    expect((await t.rest("GET", `/v1/controls/${mine.id}`, { headers: employee.headers })).status).toBe(200);
    for (const id of [theirs.id, nobody.id]) {
      expect((await t.rest("GET", `/v1/controls/${id}`, { headers: employee.headers })).status).toBe(404);
      expect((await t.rest("GET", `/v1/controls/${id}/evidence`, { headers: employee.headers })).status).toBe(404);
    }
    const total = await t.gql(`{ controls { totalCount } }`, {}, { headers: employee.headers });
    expect(total.body.data.controls.totalCount).toBe(1);
    // Reading is not changing: neither the owner nor the auditor may change it.
    for (const headers of [employee.headers, auditor.headers]) {
      const refused = await t.rest("PATCH", `/v1/controls/${mine.id}`, { headers, body: { name: "Mine now" } });
      expect(refused.status).toBe(403);
    }
    // A key reads as its scopes say: control:read all, without it nothing.
    const reader = await keyWith(["control:read"], seed);
    expect((await t.rest("GET", `/v1/controls/${nobody.id}`, { key: reader })).status).toBe(200);
    expect((await t.rest("POST", "/v1/controls", { key: reader, body: { code: code(), name: "x" } })).status).toBe(403);
    const taskReader = await keyWith(["task:read"], seed);
    expect((await t.rest("GET", "/v1/controls", { key: taskReader })).status).toBe(403);
    const refused = await t.gql(`{ controls { totalCount } }`, {}, { key: taskReader });
    expect(refused.body.data.controls).toBeNull();
    expect(refused.body.errors[0].extensions.code).toBe("FORBIDDEN");
  });

  it("never shows another organization's controls", async () => {
    const theirs = await createControl({}, other.apiKey);
    for (const [method, path] of [
      ["GET", `/v1/controls/${theirs.id}`],
      ["PATCH", `/v1/controls/${theirs.id}`],
      ["DELETE", `/v1/controls/${theirs.id}`],
      ["GET", `/v1/controls/${theirs.id}/evidence`],
      ["POST", `/v1/controls/${theirs.id}/links`],
    ] as const) {
      const body = method === "PATCH" ? { name: "x" } : method === "POST" ? { taskIds: [org.taskIds[0]] } : undefined;
      expect((await t.rest(method, path, { key: org.apiKey, body })).status, `${method} ${path}`).toBe(404);
    }
    const listed = await t.rest("GET", "/v1/controls?limit=100", { key: org.apiKey });
    expect((listed.body.items as { id: string }[]).map((i) => i.id)).not.toContain(theirs.id);
  });

  it("answers a page of 50 controls with owner, requirements, policies, tasks and evidence in the statements of 5", async () => {
    const seed = await t.seedOrg();
    const fw = await framework(seed.organizationId, ["P-1", "P-2"]);
    for (let i = 0; i < 50; i++) {
      const control = await createControl({ ownerId: seed.memberIds[i % 4] }, seed.apiKey);
      await t.rest("POST", `/v1/controls/${control.id}/requirements`, {
        key: seed.apiKey,
        body: { requirementIds: fw.requirementIds },
      });
      await t.rest("POST", `/v1/controls/${control.id}/links`, {
        key: seed.apiKey,
        body: { policyIds: [seed.policyIds[0]], taskIds: [seed.taskIds[i % 3]] },
      });
    }
    const query = `query($limit: Int!) { controls(limit: $limit) { totalCount items {
      id code owner { id name } requirements { totalCount items { id ref framework { key } } }
      policies { totalCount items { id name } } tasks { totalCount items { id title } }
      evidence(limit: 5) { totalCount items { id status attachment { sha256 } } }
    } } }`;
    const run = async (limit: number) => {
      let answer: Awaited<ReturnType<typeof t.gql>> | undefined;
      const counted = await t.countQueries(async () => {
        answer = await t.gql(query, { limit }, { key: seed.apiKey });
      });
      expect(answer?.body.errors, JSON.stringify(answer?.body.errors)).toBeUndefined();
      expect(answer?.body.data.controls.items).toHaveLength(limit);
      expect(answer?.body.data.controls.items[0].requirements.items).toHaveLength(2);
      return counted.count;
    };
    const five = await run(5);
    expect(await run(50)).toBe(five);
  });
});
