import { describe, expect, it } from "vitest";
import { shippedKeys, shippedRequirementId } from "../../scripts/catalogs/migration.mjs";
import { createFrameworkImportService } from "../../src/modules/frameworks/frameworks.import.js";
import { openFixture } from "../helpers/fixtures.js";
import { oscalCatalog } from "../helpers/oscal.js";

const { t, org, other } = await openFixture();
const operator = createFrameworkImportService(t.db);

const frameworkFields = [
  "adopted",
  "createdAt",
  "custom",
  "id",
  "key",
  "license",
  "name",
  "readiness",
  "requirementCount",
  "source",
  "updatedAt",
  "version",
];
const IMPORT = `mutation($format: FrameworkFormat!, $document: String!, $key: String, $name: String, $version: String) {
  importFramework(format: $format, document: $document, key: $key, name: $name, version: $version) {
    id key name version source license custom requirementCount } }`;
const MAP = `mutation($document: String!) {
  importRequirementMapping(document: $document) { sourceKey targetKey sourceFrameworkId targetFrameworkId mappingCount } }`;

let keys = 0;
const uniqueKey = (base: string) => `${base}-${++keys}`;
const plainDocument = (key: string, requirements: unknown[] = defaultRequirements) =>
  JSON.stringify({
    key,
    name: "Acme controls",
    version: "2026",
    source: "Acme, https://acme.example",
    license: "Acme's own",
    requirements,
  });
const defaultRequirements = [
  { ref: "AC", title: "Access", assessable: false },
  { ref: "AC-1", title: "Access reviews", description: "Review access each quarter.", parent: "AC" },
  { ref: "AC-1.a", title: "Privileged access", parent: "AC-1" },
];

async function requirementsOf(frameworkId: string) {
  return t.db.requirement.findMany({
    where: { frameworkId },
    orderBy: { position: "asc" },
    select: { id: true, ref: true, title: true, description: true, parentId: true, assessable: true, position: true },
  });
}

describe("shipped frameworks", () => {
  it("are installed by the migrations: outlines for every organization, the baselines mapped to the full catalog", async () => {
    const shipped = await t.db.framework.findMany({
      where: { organizationId: null, key: { in: shippedKeys } },
      select: { key: true, requirementCount: true, version: true, _count: { select: { requirements: true } } },
    });
    expect(shipped.map((f) => f.key).sort()).toEqual([...shippedKeys].sort());
    for (const f of shipped) expect(f.requirementCount, f.key).toBe(f._count.requirements);
    const ac21 = await t.db.requirement.findUniqueOrThrow({
      where: { id: shippedRequirementId("nist-sp-800-53-rev5", "AC-2(1)") },
      select: { ref: true, description: true, assessable: true, parent: { select: { ref: true } } },
    });
    expect(ac21).toEqual({ ref: "AC-2(1)", description: null, assessable: true, parent: { ref: "AC-2" } });
    const low = await t.db.requirementMapping.findFirstOrThrow({
      where: {
        organizationId: null,
        sourceId: shippedRequirementId("nist-sp-800-53-rev5-low", "AC-2"),
        targetId: shippedRequirementId("nist-sp-800-53-rev5", "AC-2"),
      },
      select: { relationship: true },
    });
    expect(low.relationship).toBe("equal");
    // Between shipped frameworks only: the worker's database is shared with the files before this
    // one, whose operator-made frameworks may carry mappings of their own (organizationId null too).
    const shippedRequirement = { framework: { organizationId: null, key: { in: shippedKeys } } };
    expect(
      await t.db.requirementMapping.count({
        where: { organizationId: null, source: shippedRequirement, target: shippedRequirement },
      }),
    ).toBe(149 + 287);
  });
});

describe("importFramework", () => {
  it("answers 201 with the framework over REST, writes its tree all at once and audits it in the organization's chain", async () => {
    const key = uniqueKey("acme-controls");
    const res = await t.rest("POST", "/v1/frameworks", {
      key: org.apiKey,
      body: { format: "json", document: plainDocument(key) },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(frameworkFields);
    expect(res.body).toMatchObject({ key, name: "Acme controls", version: "2026", custom: true, requirementCount: 3 });
    expect(res.body.id).toMatch(/^fw_[0-9a-f]{32}$/);
    const stored = await t.db.framework.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(stored.organizationId).toBe(org.organizationId);
    const requirements = await requirementsOf(res.body.id);
    expect(requirements.map((r) => [r.ref, r.position, r.assessable])).toEqual([
      ["AC", 1, false],
      ["AC-1", 2, true],
      ["AC-1.a", 3, true],
    ]);
    expect(requirements[1]?.parentId).toBe(requirements[0]?.id);
    expect(requirements[2]?.parentId).toBe(requirements[1]?.id);
    expect(requirements[1]?.description).toBe("Review access each quarter.");
    const events = await t.db.auditEvent.findMany({ where: { organizationId: org.organizationId, entityId: res.body.id } });
    expect(events.map((e) => e.action)).toEqual(["framework.imported"]);
    expect(events[0]?.data).toMatchObject({ key, format: "json", requirementCount: 3 });
  });

  it("imports NIST's OSCAL over GraphQL: key, name and version from the metadata, statements as descriptions", async () => {
    const document = JSON.stringify(
      oscalCatalog({
        title: "Acme Extended Catalog",
        version: "1.0",
        groups: [
          {
            id: "xx",
            title: "Extras",
            controls: [
              {
                id: "xx-1",
                label: "XX-1",
                title: "First",
                statement: "Do the first thing.",
                controls: [{ id: "xx-1.1", label: "XX-1(1)", title: "Deeper" }],
              },
              { id: "xx-2", label: "XX-2", title: "Gone", withdrawn: true },
            ],
          },
        ],
      }),
    );
    const res = await t.gql(IMPORT, { format: "oscal", document }, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const framework = res.body.data.importFramework;
    expect(framework).toMatchObject({
      key: "acme-extended-catalog",
      name: "Acme Extended Catalog",
      version: "1.0",
      custom: true,
      requirementCount: 3,
    });
    const requirements = await requirementsOf(framework.id);
    expect(requirements.map((r) => [r.ref, r.assessable, r.description])).toEqual([
      ["XX", false, null],
      ["XX-1", true, "Do the first thing.\n  a. Review it [organization-defined frequency]."],
      ["XX-1(1)", true, null],
    ]);
  });

  it("imports CSV with key, name and version as arguments, and asks for them when absent", async () => {
    const key = uniqueKey("acme-csv");
    const document = 'ref,title,description,parent,assessable\nG,"Group, first",,,false\nG.1,Item,"Quoted ""text""",G,\n';
    const res = await t.rest("POST", "/v1/frameworks", {
      key: org.apiKey,
      body: { format: "csv", document, key, name: "Acme CSV", version: "1" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ key, requirementCount: 2, source: null, license: null });
    expect((await requirementsOf(res.body.id))[1]?.description).toBe('Quoted "text"');
    const missing = await t.rest("POST", "/v1/frameworks", { key: org.apiKey, body: { format: "csv", document } });
    expect(missing.status).toBe(400);
    expect(missing.body.details.map((d: { path: string }) => d.path)).toEqual(["key", "name", "version"]);
  });

  it("refuses a bad document with a 400 naming the first bad path or line, on both transports, writing nothing", async () => {
    const key = uniqueKey("acme-bad");
    const duplicate = plainDocument(key, [
      { ref: "A", title: "One" },
      { ref: "A", title: "Two" },
    ]);
    const rest = await t.rest("POST", "/v1/frameworks", { key: org.apiKey, body: { format: "json", document: duplicate } });
    expect(rest.status).toBe(400);
    expect(rest.body.code).toBe("BAD_USER_INPUT");
    expect(rest.body.details).toEqual([
      { path: "/requirements/1/ref", message: expect.stringMatching(/already the ref of \/requirements\/0/) },
    ]);
    const csv = await t.gql(
      IMPORT,
      { format: "csv", document: "ref,title,parent\nA,One,\nB,Two,Z\n", key, name: "x", version: "1" },
      { key: org.apiKey },
    );
    expect(csv.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect(csv.body.errors[0].extensions.details).toEqual([{ path: "line 3 (parent)", message: expect.stringMatching(/"Z"/) }]);
    expect(csv.body.errors[0].message).toMatch(/line 3/);
    const oscal = await t.gql(
      IMPORT,
      { format: "oscal", document: JSON.stringify({ catalog: { uuid: "x" } }) },
      { key: org.apiKey },
    );
    expect(oscal.body.errors[0].extensions.details[0].path).toBe("/catalog");
    expect(await t.db.framework.count({ where: { key } })).toBe(0);
  });

  it("takes an 800-53-sized OSCAL document (about 4 MB) through the REST body limits", async () => {
    const controls = Array.from({ length: 60 }, (_, c) => ({
      id: `zz-${c + 1}`,
      label: `ZZ-${c + 1}`,
      title: `Control ${c + 1}`,
      statement: "Long statement text. ".repeat(160),
      controls: Array.from({ length: 19 }, (_, e) => ({
        id: `zz-${c + 1}.${e + 1}`,
        label: `ZZ-${c + 1}(${e + 1})`,
        title: `Enhancement ${e + 1}`,
        statement: "Enhancement text. ".repeat(160),
      })),
    }));
    const document = JSON.stringify(
      oscalCatalog({ title: "Large Catalog", version: "1", groups: [{ id: "zz", title: "Large", controls }] }),
    );
    expect(document.length).toBeGreaterThan(3_500_000);
    const res = await t.rest("POST", "/v1/frameworks", {
      key: org.apiKey,
      body: { format: "oscal", document, key: uniqueKey("large") },
    });
    expect(res.status).toBe(201);
    expect(res.body.requirementCount).toBe(1 + 60 * 20);
  });

  it("answers 409 for a shipped framework's key or one the organization already has, on both transports", async () => {
    const shipped = await t.rest("POST", "/v1/frameworks", {
      key: org.apiKey,
      body: { format: "json", document: plainDocument("nist-csf-2.0") },
    });
    expect(shipped.status).toBe(409);
    expect(shipped.body).toMatchObject({ code: "CONFLICT", message: expect.stringMatching(/shipped/) });
    const key = uniqueKey("acme-twice");
    expect(
      (await t.gql(IMPORT, { format: "json", document: plainDocument(key) }, { key: org.apiKey })).body.errors,
    ).toBeUndefined();
    const again = await t.gql(IMPORT, { format: "json", document: plainDocument(key) }, { key: org.apiKey });
    expect(again.body.errors[0].extensions.code).toBe("CONFLICT");
    expect(await t.db.framework.count({ where: { key, organizationId: org.organizationId } })).toBe(1);
  });

  it("keeps a custom framework to its organization: another one may use the same key and never sees it", async () => {
    const key = uniqueKey("acme-private");
    const mine = await t.rest("POST", "/v1/frameworks", {
      key: org.apiKey,
      body: { format: "json", document: plainDocument(key) },
    });
    const theirs = await t.rest("POST", "/v1/frameworks", {
      key: other.apiKey,
      body: { format: "json", document: plainDocument(key) },
    });
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.body.id).not.toBe(mine.body.id);
    const visibleToOther = await t.db.framework.findMany({
      where: { key, OR: [{ organizationId: null }, { organizationId: other.organizationId }] },
      select: { id: true },
    });
    expect(visibleToOther).toEqual([{ id: theirs.body.id }]);
    const otherEvents = await t.db.auditEvent.count({ where: { organizationId: other.organizationId, entityId: mine.body.id } });
    expect(otherEvents).toBe(0);
  });

  it("needs framework:manage on both transports", async () => {
    const reader = await t.keyWith(org.organizationId, ["framework:read"]);
    const rest = await t.rest("POST", "/v1/frameworks", {
      key: reader.key,
      body: { format: "json", document: plainDocument(uniqueKey("x")) },
    });
    expect(rest.status).toBe(403);
    const gql = await t.gql(MAP, { document: "{}" }, { key: reader.key });
    expect(gql.body.errors[0].extensions.code).toBe("FORBIDDEN");
  });
});

describe("importRequirementMapping", () => {
  async function customFramework() {
    const key = uniqueKey("acme-mapped");
    const res = await t.rest("POST", "/v1/frameworks", {
      key: org.apiKey,
      body: { format: "json", document: plainDocument(key) },
    });
    expect(res.status).toBe(201);
    return { key, id: res.body.id as string };
  }

  it("imports an organization's mapping set from its own framework to a shipped one (201), all of it its own", async () => {
    const { key, id } = await customFramework();
    const document = JSON.stringify({
      source: key,
      target: "soc2-tsc-2017",
      mappings: [
        { sourceRef: "AC-1", targetRef: "CC6.2", relationship: "subset" },
        { sourceRef: "AC-1.a", targetRef: "CC6.3", relationship: "equal" },
      ],
    });
    const res = await t.rest("POST", "/v1/frameworks/mappings", { key: org.apiKey, body: { document } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      sourceKey: key,
      targetKey: "soc2-tsc-2017",
      sourceFrameworkId: id,
      targetFrameworkId: expect.stringMatching(/^fw_/),
      mappingCount: 2,
    });
    const rows = await t.db.requirementMapping.findMany({
      where: { source: { frameworkId: id } },
      select: { organizationId: true, relationship: true, target: { select: { ref: true } } },
      orderBy: { target: { ref: "asc" } },
    });
    expect(rows).toEqual([
      { organizationId: org.organizationId, relationship: "subset", target: { ref: "CC6.2" } },
      { organizationId: org.organizationId, relationship: "equal", target: { ref: "CC6.3" } },
    ]);
    // Imported again, a pair takes its new relationship and is not doubled.
    const again = JSON.stringify({
      source: key,
      target: "soc2-tsc-2017",
      mappings: [{ sourceRef: "AC-1", targetRef: "CC6.2", relationship: "superset" }],
    });
    const gql = await t.gql(MAP, { document: again }, { key: org.apiKey });
    expect(gql.body.data.importRequirementMapping.mappingCount).toBe(1);
    expect(await t.db.requirementMapping.count({ where: { source: { frameworkId: id } } })).toBe(2);
    expect(
      (await t.db.requirementMapping.findFirstOrThrow({ where: { source: { frameworkId: id, ref: "AC-1" } } })).relationship,
    ).toBe("superset");
    const events = await t.db.auditEvent.findMany({
      where: { organizationId: org.organizationId, action: "framework.mappings_imported" },
    });
    expect(events.length).toBeGreaterThanOrEqual(2);
  });

  it("names every unknown ref in a 400 and writes nothing", async () => {
    const { key, id } = await customFramework();
    const document = JSON.stringify({
      source: key,
      target: "iso-iec-27001-2022",
      mappings: [
        { sourceRef: "AC-1", targetRef: "A.5.15", relationship: "intersect" },
        { sourceRef: "AC-9", targetRef: "A.5.15", relationship: "equal" },
        { sourceRef: "AC-1", targetRef: "A.9.99", relationship: "equal" },
      ],
    });
    const res = await t.rest("POST", "/v1/frameworks/mappings", { key: org.apiKey, body: { document } });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(["/mappings/1/sourceRef", "/mappings/2/targetRef"]);
    expect(res.body.message).toMatch(/AC-9.*A\.9\.99/);
    expect(await t.db.requirementMapping.count({ where: { source: { frameworkId: id } } })).toBe(0);
    const bad = await t.gql(
      MAP,
      {
        document: JSON.stringify({
          source: key,
          target: "x",
          mappings: [{ sourceRef: "AC-1", targetRef: "y", relationship: "same" }],
        }),
      },
      { key: org.apiKey },
    );
    expect(bad.body.errors[0].extensions.details[0].path).toBe("/mappings/0/relationship");
  });

  it("leaves a set between two shipped frameworks to the operator (403), and keeps another organization's frameworks unknown (400)", async () => {
    const shippedOnly = JSON.stringify({
      source: "iso-iec-27001-2022",
      target: "soc2-tsc-2017",
      mappings: [{ sourceRef: "A.5.15", targetRef: "CC6.1", relationship: "intersect" }],
    });
    const res = await t.rest("POST", "/v1/frameworks/mappings", { key: org.apiKey, body: { document: shippedOnly } });
    expect(res.status).toBe(403);
    const { key } = await customFramework();
    const foreign = JSON.stringify({
      source: key,
      target: "soc2-tsc-2017",
      mappings: [{ sourceRef: "AC-1", targetRef: "CC6.1", relationship: "equal" }],
    });
    const fromOther = await t.rest("POST", "/v1/frameworks/mappings", { key: other.apiKey, body: { document: foreign } });
    expect(fromOther.status).toBe(400);
    expect(fromOther.body.details[0].path).toBe("/source");
    // The operator's set is shipped: every organization's readiness may use it.
    const result = await operator.importShippedMappingSet(shippedOnly);
    expect(result.mappingCount).toBe(1);
    expect(await t.db.requirementMapping.count({ where: { organizationId: null, source: { ref: "A.5.15" } } })).toBe(1);
  });
});

describe("an operator's import", () => {
  it("fills in a shipped framework's descriptions when key and version match, and changes nothing else", async () => {
    const frameworkId = (await t.db.framework.findFirstOrThrow({ where: { key: "iso-iec-27001-2022", organizationId: null } }))
      .id;
    const before = await requirementsOf(frameworkId);
    const frameworkBefore = await t.db.framework.findUniqueOrThrow({ where: { id: frameworkId } });
    const document = JSON.stringify({
      key: "iso-iec-27001-2022",
      name: "Someone's licensed copy",
      version: "2022",
      requirements: [
        { ref: "A.5", title: "Other title", assessable: true },
        { ref: "A.5.1", title: "Other title", description: "The licensed text of A.5.1.", parent: "A.5" },
        { ref: "A.9.1", title: "Not in the outline", description: "Left out." },
      ],
    });
    const result = await operator.importShipped({ format: "json", document });
    expect(result).toMatchObject({ id: frameworkId, created: false, descriptionsFilled: 1, unmatched: ["A.9.1"] });
    const after = await requirementsOf(frameworkId);
    expect(after).toEqual(before.map((r) => (r.ref === "A.5.1" ? { ...r, description: "The licensed text of A.5.1." } : r)));
    expect(await t.db.framework.findUniqueOrThrow({ where: { id: frameworkId } })).toEqual(frameworkBefore);
  });

  it("answers 409 for a shipped key of another version, and creates a new shipped framework for a new key", async () => {
    const document = plainDocument("nist-csf-2.0");
    await expect(operator.importShipped({ format: "json", document })).rejects.toMatchObject({
      code: "CONFLICT",
      message: expect.stringMatching(/version 1\.0\.0.*--version 1\.0\.0/),
    });
    const key = uniqueKey("operator-catalog");
    const created = await operator.importShipped({ format: "json", document: plainDocument(key) });
    expect(created).toMatchObject({ key, created: true, requirementCount: 3 });
    expect((await t.db.framework.findUniqueOrThrow({ where: { id: created.id } })).organizationId).toBeNull();
    const clash = await t.rest("POST", "/v1/frameworks", {
      key: org.apiKey,
      body: { format: "json", document: plainDocument(key) },
    });
    expect(clash.status).toBe(409);
  });
});
