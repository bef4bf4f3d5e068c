import { beforeAll, describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();

const policyFields = "id name description status currentVersionId createdAt updatedAt";
const versionFields = "id version status changelog content sourceVersionId createdAt approverId rejectionReason publishedAt";
const createMutation = `mutation($name: String!, $description: String, $content: JSON) {
  createPolicy(name: $name, description: $description, content: $content) { ${policyFields} }
}`;
const policyQuery = `query($id: ID!) { policy(id: $id) { ${policyFields} } }`;
const versionsQuery = `query($id: ID!, $limit: Int, $cursor: String) {
  policyVersions(id: $id, limit: $limit, cursor: $cursor) { items { ${versionFields} } nextCursor }
}`;

const isoDate = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const doc = [{ type: "paragraph", content: [{ type: "text", text: "Keep secrets secret." }] }];

async function createPolicy(body: Record<string, unknown> = { name: "Test policy" }) {
  const res = await t.rest("POST", "/v1/policies", { key: org.apiKey, body });
  expect(res.status).toBe(201);
  return res.body;
}

describe("create policy", () => {
  it("answers 201 with the policy, published, whose current version 1 holds the content; with an audit event", async () => {
    const res = await t.rest("POST", "/v1/policies", {
      key: org.apiKey,
      body: { name: "Data Retention Policy", description: "How long we keep what", content: doc },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^pol_/),
      name: "Data Retention Policy",
      description: "How long we keep what",
      status: "published",
      currentVersionId: expect.stringMatching(/^pv_/),
      createdAt: isoDate,
      updatedAt: isoDate,
    });
    const policy = await t.db.policy.findUniqueOrThrow({ where: { id: res.body.id }, include: { versions: true } });
    expect(policy).toMatchObject({ organizationId: org.organizationId, lastVersionNumber: 1 });
    expect(policy.versions).toEqual([
      expect.objectContaining({
        id: res.body.currentVersionId,
        organizationId: org.organizationId,
        version: 1,
        status: "published",
        content: doc,
        changelog: null,
        sourceVersionId: null,
        createdByKeyId: expect.stringMatching(/^apk_/),
      }),
    ]);
    const audit = await t.db.auditEvent.findMany({ where: { action: "policy.created", entityId: res.body.id } });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      organizationId: org.organizationId,
      entityType: "policy",
      data: { name: "Data Retention Policy", versionId: res.body.currentVersionId, version: 1 },
    });
  });

  it("creates the same over GraphQL, with a JSON object as content", async () => {
    const res = await t.gql(
      createMutation,
      { name: "Access Policy", content: { type: "doc", content: [] } },
      { key: org.apiKey },
    );
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const created = res.body.data.createPolicy;
    expect(created).toEqual({
      id: expect.stringMatching(/^pol_/),
      name: "Access Policy",
      description: null,
      status: "published",
      currentVersionId: expect.stringMatching(/^pv_/),
      createdAt: isoDate,
      updatedAt: isoDate,
    });
    const version = await t.db.policyVersion.findUniqueOrThrow({ where: { id: created.currentVersionId } });
    expect(version.content).toEqual({ type: "doc", content: [] });
  });

  it("takes a literal JSON value in the GraphQL document too", async () => {
    const res = await t.gql(
      `mutation { createPolicy(name: "Literal", content: [{type: "paragraph"}]) { currentVersionId } }`,
      {},
      {
        key: org.apiKey,
      },
    );
    expect(res.body.errors).toBeUndefined();
    const version = await t.db.policyVersion.findUniqueOrThrow({ where: { id: res.body.data.createPolicy.currentVersionId } });
    expect(version.content).toEqual([{ type: "paragraph" }]);
  });

  it("stores [] as content when none is given", async () => {
    const created = await createPolicy({ name: "Empty" });
    const version = await t.db.policyVersion.findUniqueOrThrow({ where: { id: created.currentVersionId } });
    expect(version.content).toEqual([]);
  });

  it("counts lengths in code points: 255 emoji are a valid name, 10000 a valid description", async () => {
    const created = await createPolicy({ name: "📜".repeat(255), description: "📜".repeat(10_000) });
    expect(created.name).toBe("📜".repeat(255));
  });

  it.each([
    ["no name", { name: undefined }, "name"],
    ["an empty name", { name: "" }, "name"],
    ["a whitespace name", { name: " \n\t " }, "name"],
    ["a 256-character name", { name: "x".repeat(256) }, "name"],
    ["a number as name", { name: 1 }, "name"],
    ["a 10001-character description", { description: "x".repeat(10_001) }, "description"],
    ["a string as content", { content: "All staff protect company information." }, "content"],
    ["a number as content", { content: 42 }, "content"],
    ["a boolean as content", { content: true }, "content"],
    ["null as content", { content: null }, "content"],
    ["an unknown field", { status: "draft" }, "status"],
    ["a changelog, which createPolicy does not take", { changelog: "first" }, "changelog"],
  ])("answers 400 for %s and writes nothing", async (_label, change, path) => {
    const before = await Promise.all([t.db.policy.count(), t.db.policyVersion.count(), t.db.auditEvent.count()]);
    const res = await t.rest("POST", "/v1/policies", { key: org.apiKey, body: { name: "Valid", ...change } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.details).toEqual([{ path, message: expect.any(String) }]);
    expect(await Promise.all([t.db.policy.count(), t.db.policyVersion.count(), t.db.auditEvent.count()])).toEqual(before);
  });

  it("answers BAD_USER_INPUT over GraphQL for content that is not an array or object, null included", async () => {
    for (const content of ["text", 3, false, null]) {
      const res = await t.gql(createMutation, { name: "Bad content", content }, { key: org.apiKey });
      expect(res.body.data).toBeNull();
      expect(res.body.errors[0].extensions).toEqual({
        code: "BAD_USER_INPUT",
        details: [{ path: "content", message: "must be a JSON array or object, nested at most 64 levels" }],
      });
    }
    const blank = await t.gql(createMutation, { name: "   " }, { key: org.apiKey });
    expect(blank.body.errors[0].extensions.details).toEqual([{ path: "name", message: "must not be empty or only whitespace" }]);
  });

  it("needs policy:create", async () => {
    const { key: reader } = await t.keyWith(org.organizationId, ["policy:read", "policy:update"]);
    const denied = await t.rest("POST", "/v1/policies", { key: reader, body: { name: "x" } });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe("FORBIDDEN");
    const { key } = await t.keyWith(org.organizationId, ["policy:create"]);
    expect((await t.rest("POST", "/v1/policies", { key, body: { name: "x" } })).status).toBe(201);
  });

  it("is followed by version 2 from createPolicyVersion, copying version 1", async () => {
    const created = await createPolicy({ name: "Versioned", content: doc });
    const res = await t.rest("POST", `/v1/policies/${created.id}/versions`, { key: org.apiKey, body: { changelog: "Edits" } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ versionId: expect.stringMatching(/^pv_/), version: 2 });
    const draft = await t.db.policyVersion.findUniqueOrThrow({ where: { id: res.body.versionId } });
    expect(draft).toMatchObject({ status: "draft", content: doc, sourceVersionId: created.currentVersionId });
    const policy = await t.rest("GET", `/v1/policies/${created.id}`, { key: org.apiKey });
    expect(policy.body.currentVersionId).toBe(created.currentVersionId);
  });
});

describe("get policy", () => {
  it("answers 200 with the policy over REST and the same over GraphQL", async () => {
    const created = await createPolicy({ name: "Readable", description: "d" });
    const res = await t.rest("GET", `/v1/policies/${created.id}`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
    const gql = await t.gql(policyQuery, { id: created.id }, { key: org.apiKey });
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.policy).toEqual(created);
  });

  it("answers the seeded policies too", async () => {
    const res = await t.rest("GET", `/v1/policies/${org.policyIds[0]}`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: org.policyIds[0], name: "Information Security Policy", status: "published" });
  });

  it("answers 404 for a missing policy and another organization's, on both transports", async () => {
    for (const id of ["pol_missing", other.policyIds[0]]) {
      const res = await t.rest("GET", `/v1/policies/${id}`, { key: org.apiKey });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ statusCode: 404, error: "Not Found", code: "NOT_FOUND", message: expect.any(String) });
      const gql = await t.gql(policyQuery, { id }, { key: org.apiKey });
      // Nullable over GraphQL: null with its error, the other root fields still answer.
      expect(gql.body.data).toEqual({ policy: null });
      expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
    }
  });

  it("needs policy:read, and answers 405 for another method", async () => {
    const { key } = await t.keyWith(org.organizationId, ["policy:create"]);
    expect((await t.rest("GET", `/v1/policies/${org.policyIds[0]}`, { key })).status).toBe(403);
    const wrong = await t.rest("DELETE", `/v1/policies/${org.policyIds[0]}`, { key: org.apiKey });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")?.split(", ").sort()).toEqual(["GET", "HEAD", "PATCH"]);
  });
});

describe("list policy versions", () => {
  let policyId: string;

  beforeAll(async () => {
    const created = await createPolicy({ name: "Many versions", content: doc });
    policyId = created.id;
    for (let i = 2; i <= 25; i++) {
      const res = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: { changelog: `v${i}` } });
      expect(res.body.version).toBe(i);
    }
  });

  it("answers the versions highest first, each with exactly its fields, the same on both transports", async () => {
    const res = await t.rest("GET", `/v1/policies/${policyId}/versions?limit=2`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["items", "nextCursor"]);
    const policy = await t.db.policy.findUniqueOrThrow({ where: { id: policyId } });
    const v24 = await t.db.policyVersion.findFirstOrThrow({ where: { policyId, version: 24 } });
    expect(res.body.items).toEqual([
      {
        id: expect.stringMatching(/^pv_/),
        version: 25,
        status: "draft",
        changelog: "v25",
        content: doc,
        sourceVersionId: policy.currentVersionId,
        createdAt: isoDate,
        approverId: null,
        rejectionReason: null,
        publishedAt: null,
      },
      expect.objectContaining({ id: v24.id, version: 24 }),
    ]);
    expect(res.body.nextCursor).toEqual(expect.any(String));
    const gql = await t.gql(versionsQuery, { id: policyId, limit: 2 }, { key: org.apiKey });
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.policyVersions).toEqual(res.body);
  });

  it("pages through 25 versions in pages of 10, each once, in descending order", async () => {
    const seen: number[] = [];
    const ids = new Set<string>();
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const path: string = `/v1/policies/${policyId}/versions?limit=10${cursor ? `&cursor=${cursor}` : ""}`;
      const res = await t.rest("GET", path, { key: org.apiKey });
      expect(res.status).toBe(200);
      sizes.push(res.body.items.length);
      for (const item of res.body.items) {
        seen.push(item.version);
        ids.add(item.id);
      }
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(sizes).toEqual([10, 10, 5]);
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => 25 - i));
    expect(ids.size).toBe(25);
  });

  it("pages the same way over GraphQL", async () => {
    const first = await t.gql(versionsQuery, { id: policyId, limit: 10 }, { key: org.apiKey });
    const second = await t.gql(
      versionsQuery,
      { id: policyId, limit: 10, cursor: first.body.data.policyVersions.nextCursor },
      {
        key: org.apiKey,
      },
    );
    expect(second.body.data.policyVersions.items.map((v: { version: number }) => v.version)).toEqual([
      15, 14, 13, 12, 11, 10, 9, 8, 7, 6,
    ]);
  });

  it("answers 20 by default and up to 100", async () => {
    const byDefault = await t.rest("GET", `/v1/policies/${policyId}/versions`, { key: org.apiKey });
    expect(byDefault.body.items).toHaveLength(20);
    const all = await t.rest("GET", `/v1/policies/${policyId}/versions?limit=100`, { key: org.apiKey });
    expect(all.status).toBe(200);
    expect(all.body.items).toHaveLength(25);
    expect(all.body.nextCursor).toBeNull();
  });

  it("answers 400 for a limit out of 1..100 or a bogus cursor, on both transports", async () => {
    for (const [query, path] of [
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=-1", "limit"],
      ["limit=2.5", "limit"],
      ["cursor=bogus", "cursor"],
      ["order=asc", "order"],
    ]) {
      const res = await t.rest("GET", `/v1/policies/${policyId}/versions?${query}`, { key: org.apiKey });
      expect(res.status, query).toBe(400);
      expect(res.body.code, query).toBe("BAD_USER_INPUT");
      expect(res.body.details, query).toEqual([{ path, message: expect.any(String) }]);
    }
    for (const variables of [{ limit: 0 }, { limit: 101 }, { cursor: "bogus" }]) {
      const gql = await t.gql(versionsQuery, { id: policyId, ...variables }, { key: org.apiKey });
      expect(gql.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    }
  });

  it("answers 404 for a missing policy and another organization's, on both transports", async () => {
    for (const id of ["pol_missing", other.policyIds[0]]) {
      const res = await t.rest("GET", `/v1/policies/${id}/versions`, { key: org.apiKey });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe("NOT_FOUND");
      const gql = await t.gql(versionsQuery, { id }, { key: org.apiKey });
      expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
    }
  });

  it("costs a constant number of SQL statements per page", async () => {
    const statements = async (limit: number) =>
      (
        await t.countQueries(async () => {
          const res = await t.gql(versionsQuery, { id: policyId, limit }, { key: org.apiKey });
          expect(res.body.data.policyVersions.items).toHaveLength(limit);
        })
      ).statements;
    const small = await statements(2);
    const large = await statements(25);
    expect(large.length).toBe(small.length);
    // One statement picks the page's ids by the list's filter and order, one reads those rows.
    expect(large.filter((s) => s.includes('"PolicyVersion"'))).toHaveLength(2);
  });

  it("needs policy:read; POST on the same path still creates a version", async () => {
    // Its own policy: a version added to the shared one would change what the listing tests see.
    const { id: policyId } = await createPolicy({ name: "Write only", content: doc });
    const { key } = await t.keyWith(org.organizationId, ["policy:update"]);
    expect((await t.rest("GET", `/v1/policies/${policyId}/versions`, { key })).status).toBe(403);
    const created = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key, body: {} });
    expect(created.status).toBe(201);
    expect(created.body.version).toBe(2);
    const wrong = await t.rest("PATCH", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: {} });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")?.split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
  });
});
