import { describe, expect, it } from "vitest";
import { graphiqlExamples } from "../../src/http/graphiql.js";
import { restObjectOf } from "../../src/modules/webhooks/webhooks.objects.js";
import { openFixture } from "../helpers/fixtures.js";
import { adopt, makeControl, makeFramework, makeTask } from "../helpers/frameworks.js";

/** Frameworks and requirements read, adopted and marked applicable, on both transports (contract section 16). */
const { t, org, other, keyWith } = await openFixture();
const orgId = org.organizationId;

const shipped = await makeFramework(t.db, { groups: 2, perGroup: 3, name: "Shipped outline" });
const own = await makeFramework(t.db, { organizationId: orgId, groups: 1, perGroup: 2, name: "Our own catalog" });
const foreign = await makeFramework(t.db, { organizationId: other.organizationId, groups: 1, perGroup: 1 });

describe("reading", () => {
  it("lists shipped frameworks and the organization's own, never another's, on both transports", async () => {
    const gql = await t.gql(
      `{ frameworks(first: 100) { totalCount items { id key custom requirementCount adopted readiness { ready } } } }`,
      {},
      { key: org.apiKey },
    );
    expect(gql.body.errors).toBeUndefined();
    const ids = gql.body.data.frameworks.items.map((f: { id: string }) => f.id);
    expect(ids).toContain(shipped.id);
    expect(ids).toContain(own.id);
    expect(ids).not.toContain(foreign.id);
    expect(gql.body.data.frameworks.items.find((f: { id: string }) => f.id === own.id)).toEqual({
      id: own.id,
      key: own.key,
      custom: true,
      requirementCount: 3,
      adopted: false,
      readiness: null,
    });
    const rest = await t.rest("GET", "/v1/frameworks?limit=100", { key: org.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body.items.map((f: { id: string }) => f.id).sort()).toEqual([...ids].sort());
    expect(rest.body.items.find((f: { id: string }) => f.id === shipped.id)).toMatchObject({ custom: false, adopted: false });
  });

  it("dates a shipped framework by its catalog: created and last changed then, not created after its last change", async () => {
    const rest = await t.rest("GET", "/v1/frameworks?q=nist-sp-800-53-rev5&limit=100", { key: org.apiKey });
    expect(rest.status).toBe(200);
    const nist = rest.body.items.find((f: { key: string }) => f.key === "nist-sp-800-53-rev5");
    expect(nist).toMatchObject({ createdAt: "2026-12-03T14:00:00.000Z", updatedAt: "2026-12-03T14:00:00.000Z" });
  });

  it("filters by adopted and searches key and name", async () => {
    const fresh = await t.seedOrg();
    const mine = await makeFramework(t.db, { organizationId: fresh.organizationId, name: "Zebra Controls" });
    await adopt(t.db, fresh.organizationId, mine.id);
    const adopted = await t.gql(
      `{ frameworks(filter: { adopted: true }) { totalCount items { id } } }`,
      {},
      { key: fresh.apiKey },
    );
    expect(adopted.body.data.frameworks).toEqual({ totalCount: 1, items: [{ id: mine.id }] });
    const searched = await t.rest("GET", "/v1/frameworks?q=zebra", { key: fresh.apiKey });
    expect(searched.status).toBe(200);
    expect(searched.body.items.map((f: { id: string }) => f.id)).toEqual([mine.id]);
    const byKey = await t.rest("GET", `/v1/frameworks?q=${mine.key}&adopted=false`, { key: fresh.apiKey });
    expect(byKey.status).toBe(200);
    expect(byKey.body.items).toEqual([]);
  });

  it("reads a framework by id; another organization's is 404 on REST and null with NOT_FOUND over GraphQL", async () => {
    const rest = await t.rest("GET", `/v1/frameworks/${own.id}`, { key: org.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ id: own.id, key: own.key, custom: true, adopted: false, readiness: null });
    expect((await t.rest("GET", `/v1/frameworks/${foreign.id}`, { key: org.apiKey })).status).toBe(404);
    expect((await t.rest("GET", `/v1/frameworks/${foreign.id}/requirements`, { key: org.apiKey })).status).toBe(404);
    const gql = await t.gql(`query($id: ID!) { framework(id: $id) { id } }`, { id: foreign.id }, { key: org.apiKey });
    expect(gql.body.data.framework).toBeNull();
    expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
    const shippedToOther = await t.rest("GET", `/v1/frameworks/${shipped.id}`, { key: other.apiKey });
    expect(shippedToOther.status).toBe(200);
  });

  it("lists requirements in catalog order with parent and framework, filtered by parentId, assessable and search", async () => {
    const gql = await t.gql(
      `query($id: ID!, $g: ID!) {
        framework(id: $id) {
          all: requirements(first: 100) { totalCount items { ref position parent { ref } framework { id } } }
          under: requirements(filter: { parentId: [$g] }) { totalCount items { ref } }
          top: requirements(filter: { parentId: [null] }) { items { ref assessable } }
          found: requirements(filter: { search: "ement 2.3" }) { items { ref } }
        }
      }`,
      { id: shipped.id, g: shipped.groups[1] },
      { key: org.apiKey },
    );
    expect(gql.body.errors).toBeUndefined();
    const fw = gql.body.data.framework;
    expect(fw.all.totalCount).toBe(8);
    expect(fw.all.items.map((r: { ref: string }) => r.ref)).toEqual(["G1", "G1.1", "G1.2", "G1.3", "G2", "G2.1", "G2.2", "G2.3"]);
    expect(fw.all.items[1]).toEqual({ ref: "G1.1", position: 1, parent: { ref: "G1" }, framework: { id: shipped.id } });
    expect(fw.under).toEqual({ totalCount: 3, items: [{ ref: "G2.1" }, { ref: "G2.2" }, { ref: "G2.3" }] });
    expect(fw.top.items).toEqual([
      { ref: "G1", assessable: false },
      { ref: "G2", assessable: false },
    ]);
    expect(fw.found.items).toEqual([{ ref: "G2.3" }]);
    const rest = await t.rest("GET", `/v1/frameworks/${shipped.id}/requirements?limit=3&assessable=true`, { key: org.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body.items.map((r: { ref: string }) => r.ref)).toEqual(["G1.1", "G1.2", "G1.3"]);
    expect(rest.body.items[0]).toMatchObject({ status: null, applicability: null, parentId: shipped.groups[0] });
    const next = await t.rest(
      "GET",
      `/v1/frameworks/${shipped.id}/requirements?limit=3&assessable=true&cursor=${rest.body.nextCursor}`,
      { key: org.apiKey },
    );
    expect(next.body.items.map((r: { ref: string }) => r.ref)).toEqual(["G2.1", "G2.2", "G2.3"]);
  });

  it("needs framework:read: 403 on REST, null with FORBIDDEN over GraphQL", async () => {
    const key = await keyWith(["task:read"]);
    expect((await t.rest("GET", "/v1/frameworks", { key })).status).toBe(403);
    expect((await t.rest("GET", `/v1/frameworks/${shipped.id}`, { key })).status).toBe(403);
    const gql = await t.gql(`{ frameworks { totalCount } }`, {}, { key });
    expect(gql.body.data.frameworks).toBeNull();
    expect(gql.body.errors[0].extensions.code).toBe("FORBIDDEN");
  });
});

describe("adoption", () => {
  it("adopts and withdraws on REST with audit events; adopting twice records once; controls stay", async () => {
    const fresh = await t.seedOrg();
    const fw = await makeFramework(t.db, { groups: 1, perGroup: 2 });
    const done = await makeTask(t.db, fresh.organizationId, "done");
    const controlId = await makeControl(t.db, fresh.organizationId, {
      requirementIds: [fw.requirements[0] as string],
      taskIds: [done],
    });
    const adopted = await t.rest("POST", `/v1/frameworks/${fw.id}/adoption`, { key: fresh.apiKey });
    expect(adopted.status).toBe(200);
    expect(adopted.body).toMatchObject({ id: fw.id, adopted: true });
    expect(adopted.body.readiness).toEqual({
      assessable: 2,
      notApplicable: 0,
      unmapped: 1,
      ready: 1,
      partial: 0,
      notReady: 0,
      readyPercent: 50,
    });
    expect((await t.rest("POST", `/v1/frameworks/${fw.id}/adoption`, { key: fresh.apiKey })).status).toBe(200);
    const withdrawn = await t.rest("DELETE", `/v1/frameworks/${fw.id}/adoption`, { key: fresh.apiKey });
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body).toMatchObject({ adopted: false, readiness: null });
    const events = await t.db.auditEvent.findMany({
      where: { organizationId: fresh.organizationId, entityId: fw.id },
      orderBy: { sequence: "asc" },
      select: { action: true, data: true },
    });
    expect(events).toEqual([
      { action: "framework.adopted", data: { key: fw.key, name: expect.any(String), version: "1" } },
      { action: "framework.withdrawn", data: { key: fw.key, name: expect.any(String), version: "1" } },
    ]);
    expect(await t.db.controlRequirement.count({ where: { controlId } })).toBe(1);
  });

  it("adopts over GraphQL; another organization's framework is 404; framework:manage is needed", async () => {
    const fresh = await t.seedOrg();
    const gql = await t.gql(
      `mutation($id: ID!) { adoptFramework(frameworkId: $id) { id adopted readiness { assessable } } }`,
      { id: shipped.id },
      { key: fresh.apiKey },
    );
    expect(gql.body.data.adoptFramework).toEqual({ id: shipped.id, adopted: true, readiness: { assessable: 6 } });
    expect((await t.rest("POST", `/v1/frameworks/${foreign.id}/adoption`, { key: fresh.apiKey })).status).toBe(404);
    expect((await t.rest("DELETE", `/v1/frameworks/${foreign.id}/adoption`, { key: fresh.apiKey })).status).toBe(404);
    const reader = (await t.keyWith(fresh.organizationId, ["framework:read"])).key;
    expect((await t.rest("POST", `/v1/frameworks/${shipped.id}/adoption`, { key: reader })).status).toBe(403);
    const refused = await t.gql(
      `mutation($id: ID!) { withdrawFramework(frameworkId: $id) { id } }`,
      { id: shipped.id },
      { key: reader },
    );
    expect(refused.body.errors[0].extensions.code).toBe("FORBIDDEN");
  });
});

describe("webhook objects", () => {
  it("a framework event's object is the framework (shipped ones too), a requirement event's the requirement; another organization's is null", async () => {
    expect(await restObjectOf(t.db, orgId, { type: "framework", id: shipped.id })).toMatchObject({
      id: shipped.id,
      key: shipped.key,
      custom: false,
    });
    expect(await restObjectOf(t.db, orgId, { type: "framework", id: foreign.id })).toBeNull();
    expect(await restObjectOf(t.db, orgId, { type: "requirement", id: own.requirements[0] as string })).toMatchObject({
      frameworkId: own.id,
      ref: "G1.1",
    });
    expect(await restObjectOf(t.db, other.organizationId, { type: "requirement", id: own.requirements[0] as string })).toBeNull();
  });
});

describe("applicability", () => {
  it("marks a requirement not applicable with a justification (400 without), and back; audited; shown in status and readiness", async () => {
    const fresh = await t.seedOrg();
    const fw = await makeFramework(t.db, { groups: 1, perGroup: 2 });
    const [first] = fw.requirements as [string];
    expect(
      (
        await t.rest("PUT", `/v1/requirements/${first}/applicability`, {
          key: fresh.apiKey,
          body: { applicable: false, justification: "We have no offices" },
        })
      ).status,
    ).toBe(409);
    await adopt(t.db, fresh.organizationId, fw.id);
    const missing = await t.rest("PUT", `/v1/requirements/${first}/applicability`, {
      key: fresh.apiKey,
      body: { applicable: false },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([expect.objectContaining({ path: "justification" })]);
    const blank = await t.gql(
      `mutation($id: ID!) { setRequirementApplicability(requirementId: $id, applicable: false, justification: "   ") { id } }`,
      { id: first },
      { key: fresh.apiKey },
    );
    expect(blank.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    const set = await t.rest("PUT", `/v1/requirements/${first}/applicability`, {
      key: fresh.apiKey,
      body: { applicable: false, justification: "We have no offices" },
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      id: first,
      applicability: { applicable: false, justification: "We have no offices" },
      status: { state: "not_applicable", inheritedFromId: null },
    });
    const gql = await t.gql(
      `mutation($id: ID!) { setRequirementApplicability(requirementId: $id, applicable: true) { applicability { applicable justification } status { state } } }`,
      { id: first },
      { key: fresh.apiKey },
    );
    expect(gql.body.data.setRequirementApplicability).toEqual({
      applicability: { applicable: true, justification: null },
      status: { state: "unmapped" },
    });
    const events = await t.db.auditEvent.findMany({
      where: { organizationId: fresh.organizationId, action: "requirement.applicability_set" },
      orderBy: { sequence: "asc" },
      select: { entityId: true, data: true },
    });
    expect(events.map((e) => e.data)).toEqual([
      {
        frameworkId: fw.id,
        ref: "G1.1",
        applicable: false,
        justification: "We have no offices",
        from: { applicable: true, justification: null },
      },
      {
        frameworkId: fw.id,
        ref: "G1.1",
        applicable: true,
        justification: null,
        from: { applicable: false, justification: "We have no offices" },
      },
    ]);
  });

  it("refuses a group (400), another organization's requirement (404), and needs framework:manage", async () => {
    const fresh = await t.seedOrg();
    await adopt(t.db, fresh.organizationId, shipped.id);
    const group = await t.rest("PUT", `/v1/requirements/${shipped.groups[0]}/applicability`, {
      key: fresh.apiKey,
      body: { applicable: false, justification: "x" },
    });
    expect(group.status).toBe(400);
    const foreignRequirement = (await t.db.requirement.findFirstOrThrow({ where: { frameworkId: foreign.id, assessable: true } }))
      .id;
    expect(
      (
        await t.rest("PUT", `/v1/requirements/${foreignRequirement}/applicability`, {
          key: fresh.apiKey,
          body: { applicable: true },
        })
      ).status,
    ).toBe(404);
    const reader = (await t.keyWith(fresh.organizationId, ["framework:read"])).key;
    expect(
      (
        await t.rest("PUT", `/v1/requirements/${shipped.requirements[0]}/applicability`, {
          key: reader,
          body: { applicable: true },
        })
      ).status,
    ).toBe(403);
  });

  it("filters requirements by status and applicable", async () => {
    const fresh = await t.seedOrg();
    const fw = await makeFramework(t.db, { groups: 1, perGroup: 3 });
    await adopt(t.db, fresh.organizationId, fw.id);
    const done = await makeTask(t.db, fresh.organizationId, "done");
    await makeControl(t.db, fresh.organizationId, { requirementIds: [fw.requirements[0] as string], taskIds: [done] });
    await t.db.requirementApplicability.create({
      data: {
        organizationId: fresh.organizationId,
        requirementId: fw.requirements[2] as string,
        applicable: false,
        justification: "x",
      },
    });
    const gql = await t.gql(
      `query($id: ID!) { framework(id: $id) {
        ready: requirements(filter: { status: [ready] }) { totalCount items { ref } }
        open: requirements(filter: { status: [unmapped, not_ready, partial] }) { items { ref } }
        na: requirements(filter: { applicable: false }) { items { ref } }
        applies: requirements(filter: { applicable: true, assessable: true }) { items { ref } }
      } }`,
      { id: fw.id },
      { key: fresh.apiKey },
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.framework).toEqual({
      ready: { totalCount: 1, items: [{ ref: "G1.1" }] },
      open: { items: [{ ref: "G1.2" }] },
      na: { items: [{ ref: "G1.3" }] },
      applies: { items: [{ ref: "G1.1" }, { ref: "G1.2" }] },
    });
    const rest = await t.rest("GET", `/v1/frameworks/${fw.id}/requirements?status=not_applicable,ready`, { key: fresh.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body.items.map((r: { ref: string }) => r.ref)).toEqual(["G1.1", "G1.3"]);
  });
});

describe("a framework's page", () => {
  it("answers GraphiQL's FrameworkPage example within the cost limit", async () => {
    const fresh = await t.seedOrg();
    await adopt(t.db, fresh.organizationId, shipped.id);
    const response = await t.app.fetch(
      new Request("http://test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": fresh.apiKey },
        body: JSON.stringify({ query: graphiqlExamples, operationName: "FrameworkPage", variables: { frameworkId: shipped.id } }),
      }),
    );
    const body = await response.json();
    expect(body.errors).toBeUndefined();
    expect(body.data.framework.readiness).toMatchObject({ assessable: 6, unmapped: 6, readyPercent: 0 });
    expect(body.data.framework.requirements.edges).toHaveLength(6);
  });

  const page = `query($id: ID!, $n: Int) {
    framework(id: $id) {
      id name adopted
      readiness { assessable notApplicable unmapped ready partial notReady readyPercent }
      requirements(first: $n, filter: { assessable: true }) {
        totalCount
        edges { node { id ref title applicability { applicable } status { state inheritedFrom { ref } } controls { id code status { state evidenceDueAt } } } }
      }
    }
  }`;

  it("costs the same number of SQL statements for 5 requirements as for 100, whatever the controls and links", async () => {
    const fresh = await t.seedOrg();
    const fw = await makeFramework(t.db, { groups: 10, perGroup: 12 });
    await adopt(t.db, fresh.organizationId, fw.id);
    const done = await makeTask(t.db, fresh.organizationId, "done");
    const todo = await makeTask(t.db, fresh.organizationId, "todo");
    for (let i = 0; i < 40; i++) {
      await makeControl(t.db, fresh.organizationId, {
        requirementIds: fw.requirements.slice(i * 3, i * 3 + 4),
        taskIds: i % 2 ? [done] : [done, todo],
        policyIds: [fresh.policyIds[i % 2] as string],
        evidenceEveryDays: i % 3 ? null : 30,
      });
    }
    const run = (n: number) =>
      t.countQueries(async () => {
        const res = await t.gql(page, { id: fw.id, n }, { key: fresh.apiKey });
        expect(res.body.errors).toBeUndefined();
        expect(res.body.data.framework.requirements.edges).toHaveLength(n);
      });
    await run(1);
    const five = await run(5);
    const hundred = await run(100);
    expect(hundred.count, hundred.statements.join("\n")).toBe(five.count);
    // The framework with its adoption, the states of all its requirements (its readiness and the
    // page's requirements' states, one statement), the page's ids with its rows, its count, their
    // applicability, and their controls with their rows and states (6; 7 before the controls' states
    // were read with them, 10 before the rows were read with the ids that pick them).
    expect(five.count, five.statements.join("\n")).toBeLessThanOrEqual(6);

    // The controls' state alone (GraphiQL's FrameworkPage) comes from the framework's states, read with
    // its readiness: the framework, its states, the page with its rows, its count, the controls (5).
    const stateOnly = `query($id: ID!) {
      framework(id: $id) {
        readiness { ready }
        requirements(first: 100, filter: { assessable: true }) {
          totalCount
          edges { node { id status { state } controls { id status { state } } } }
        }
      }
    }`;
    let lean: { body: { data: { framework: { requirements: { edges: { node: unknown }[] } } } } } | undefined;
    const leanCount = await t.countQueries(async () => {
      lean = await t.gql(stateOnly, { id: fw.id }, { key: fresh.apiKey });
    });
    expect(leanCount.count, leanCount.statements.join("\n")).toBeLessThanOrEqual(5);
    // The reasons left out by @include, as the executor leaves them out: the same statements (the
    // controls read without their states).
    const skipped = await t.countQueries(async () => {
      const res = await t.gql(
        stateOnly
          .replace("query($id: ID!)", "query($id: ID!, $why: Boolean!)")
          .replace("controls { id status { state } }", "controls { id status { state reasons @include(if: $why) { code } } }"),
        { id: fw.id, why: false },
        { key: fresh.apiKey },
      );
      expect(res.body.errors).toBeUndefined();
    });
    expect(skipped.statements).toEqual(leanCount.statements);
    // The same states as read with their reasons (each control's own statement).
    const full = await t.gql(
      stateOnly.replace("controls { id status { state } }", "controls { id status { state reasons { code } } }"),
      {
        id: fw.id,
      },
      { key: fresh.apiKey },
    );
    const statesOf = (edges: { node: unknown }[]) =>
      edges.flatMap(({ node }) =>
        (node as { controls: { id: string; status: { state: string } }[] }).controls.map((c) => `${c.id} ${c.status.state}`),
      );
    const leanStates = statesOf(lean?.body.data.framework.requirements.edges ?? []);
    expect(leanStates.length).toBeGreaterThan(100);
    expect(new Set(leanStates.map((line) => line.split(" ")[1]))).toEqual(new Set(["ready", "not_ready"]));
    expect(leanStates).toEqual(statesOf(full.body.data.framework.requirements.edges));
  });
});

describe("the statement of applicability", () => {
  it("streams each assessable requirement in catalog order as JSON and CSV, cells neutralised", async () => {
    const fresh = await t.seedOrg();
    const fw = await makeFramework(t.db, { groups: 2, perGroup: 2 });
    await adopt(t.db, fresh.organizationId, fw.id);
    const done = await makeTask(t.db, fresh.organizationId, "done");
    await makeControl(t.db, fresh.organizationId, {
      requirementIds: [fw.requirements[0] as string],
      taskIds: [done],
      code: "AC-02",
    });
    await makeControl(t.db, fresh.organizationId, {
      requirementIds: [fw.requirements[0] as string, fw.requirements[1] as string],
      code: "AC-01",
    });
    await t.rest("PUT", `/v1/requirements/${fw.requirements[3]}/applicability`, {
      key: fresh.apiKey,
      body: { applicable: false, justification: '=HYPERLINK("x"), no, "quoted"' },
    });
    const json = await t.rest("GET", `/v1/frameworks/${fw.id}/statement-of-applicability`, { key: fresh.apiKey });
    expect(json.status).toBe(200);
    expect(json.headers.get("content-type")).toContain("application/json");
    expect(json.headers.get("content-disposition")).toMatch(/^attachment; filename="statement-of-applicability-.*\.json"$/);
    expect(json.body).toEqual([
      {
        ref: "G1.1",
        title: "Requirement 1.1",
        applicable: true,
        justification: null,
        controls: ["AC-01", "AC-02"],
        state: "partial",
      },
      { ref: "G1.2", title: "Requirement 1.2", applicable: true, justification: null, controls: ["AC-01"], state: "not_ready" },
      { ref: "G2.1", title: "Requirement 2.1", applicable: true, justification: null, controls: [], state: "unmapped" },
      {
        ref: "G2.2",
        title: "Requirement 2.2",
        applicable: false,
        justification: '=HYPERLINK("x"), no, "quoted"',
        controls: [],
        state: "not_applicable",
      },
    ]);
    const csv = await t.rest("GET", `/v1/frameworks/${fw.id}/statement-of-applicability?format=csv`, { key: fresh.apiKey });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toContain("text/csv");
    expect(csv.text.split("\r\n")).toEqual([
      "ref,title,applicable,justification,controls,state",
      "G1.1,Requirement 1.1,true,,AC-01 AC-02,partial",
      "G1.2,Requirement 1.2,true,,AC-01,not_ready",
      "G2.1,Requirement 2.1,true,,,unmapped",
      `G2.2,Requirement 2.2,false,"'=HYPERLINK(""x""), no, ""quoted""",,not_applicable`,
      "",
    ]);
  });

  it("is 409 for a framework not adopted, 404 for another organization's, 400 for an unknown format, 403 without framework:read", async () => {
    const fresh = await t.seedOrg();
    expect((await t.rest("GET", `/v1/frameworks/${shipped.id}/statement-of-applicability`, { key: fresh.apiKey })).status).toBe(
      409,
    );
    expect((await t.rest("GET", `/v1/frameworks/${foreign.id}/statement-of-applicability`, { key: fresh.apiKey })).status).toBe(
      404,
    );
    await adopt(t.db, fresh.organizationId, shipped.id);
    const bad = await t.rest("GET", `/v1/frameworks/${shipped.id}/statement-of-applicability?format=xlsx`, { key: fresh.apiKey });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("BAD_USER_INPUT");
    const key = (await t.keyWith(fresh.organizationId, ["task:read"])).key;
    expect((await t.rest("GET", `/v1/frameworks/${shipped.id}/statement-of-applicability`, { key })).status).toBe(403);
    const reader = (await t.keyWith(fresh.organizationId, ["framework:read"])).key;
    const read = await t.rest("GET", `/v1/frameworks/${shipped.id}/statement-of-applicability?format=csv`, { key: reader });
    expect(read.status).toBe(200);
    expect(read.text.trim().split("\r\n")).toHaveLength(7);
    expect((await t.rest("GET", `/v1/frameworks/${shipped.id}/statement-of-applicability`)).status).toBe(401);
    // Found by the REST fuzzer: a NUL in the id was a 500 (PostgreSQL text cannot hold it).
    const nul = await t.rest("GET", "/v1/frameworks/%00/statement-of-applicability", { key: fresh.apiKey });
    expect(nul.status).toBe(400);
    expect(nul.body.code).toBe("BAD_USER_INPUT");
  });

  it("reads a catalog larger than a batch in order", async () => {
    const fresh = await t.seedOrg();
    const fw = await makeFramework(t.db, { groups: 2, perGroup: 260 });
    await adopt(t.db, fresh.organizationId, fw.id);
    const res = await t.rest("GET", `/v1/frameworks/${fw.id}/statement-of-applicability`, { key: fresh.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(520);
    expect(res.body.map((l: { ref: string }) => l.ref)).toEqual(
      [1, 2].flatMap((g) => Array.from({ length: 260 }, (_, i) => `G${g}.${i + 1}`)),
    );
  });
});
