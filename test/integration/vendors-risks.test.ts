import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org } = await openFixture({ organizations: 1 });

const kinds = [
  {
    label: "vendor",
    path: "/v1/vendors",
    field: "createVendor",
    nameField: "name",
    scope: "vendor:create",
    prefix: "vnd",
    listFields: ["assigneeId", "category", "status", "website"],
    mutation: `mutation($name: String!, $description: String) {
      createVendor(name: $name, description: $description) { id name description createdAt updatedAt } }`,
    count: () => t.db.vendor.count({ where: { organizationId: org.organizationId } }),
  },
  {
    label: "risk",
    path: "/v1/risks",
    field: "createRisk",
    nameField: "title",
    scope: "risk:create",
    prefix: "rsk",
    listFields: ["assigneeId", "category", "impact", "likelihood", "score", "status", "treatment"],
    mutation: `mutation($title: String!, $description: String) {
      createRisk(title: $title, description: $description) { id title description createdAt updatedAt } }`,
    count: () => t.db.risk.count({ where: { organizationId: org.organizationId } }),
  },
] as const;

describe.each(kinds)("create $label", (kind) => {
  const keys = ["createdAt", "description", "id", kind.nameField, "updatedAt", ...kind.listFields].sort();

  it("answers 201 with exactly the record's fields over REST", async () => {
    const res = await t.rest("POST", kind.path, {
      key: org.apiKey,
      body: { [kind.nameField]: "  Acme Cloud  ", description: "Hosts the production database" },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(keys);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(new RegExp(`^${kind.prefix}_[0-9a-f]{32}$`)),
      [kind.nameField]: "Acme Cloud",
      description: "Hosts the production database",
    });
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
    expect(res.body.updatedAt).toBe(res.body.createdAt);
  });

  it("answers the same shape over GraphQL, description defaulting to null", async () => {
    const res = await t.gql(kind.mutation, { [kind.nameField]: "Minimal" }, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const record = res.body.data[kind.field];
    expect(Object.keys(record).sort()).toEqual(keys.filter((k) => !kind.listFields.includes(k as never)));
    expect(record).toMatchObject({ [kind.nameField]: "Minimal", description: null });
  });

  it(`writes a ${kind.label}.created audit event in the organization`, async () => {
    const res = await t.rest("POST", kind.path, { key: org.apiKey, body: { [kind.nameField]: "Audited" } });
    expect(res.status).toBe(201);
    const events = await t.db.auditEvent.findMany({ where: { entityId: res.body.id } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      organizationId: org.organizationId,
      action: `${kind.label}.created`,
      entityType: kind.label,
      actorApiKeyId: expect.stringMatching(/^apk_/),
      data: { [kind.nameField]: "Audited" },
    });
  });

  it("counts lengths in code points: 255 emoji and a 10000-emoji description pass", async () => {
    const res = await t.rest("POST", kind.path, {
      key: org.apiKey,
      body: { [kind.nameField]: "🛡".repeat(255), description: "😀".repeat(10_000) },
    });
    expect(res.status).toBe(201);
  });

  it("can be commented on once created", async () => {
    const res = await t.rest("POST", kind.path, { key: org.apiKey, body: { [kind.nameField]: "Commented" } });
    const comment = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: "Looks fine", entityId: res.body.id, entityType: kind.label, userId: org.userIds[0] },
    });
    expect(comment.status).toBe(201);
  });

  it.each([
    [{}, kind.nameField],
    [{ [kind.nameField]: "" }, kind.nameField],
    [{ [kind.nameField]: "   " }, kind.nameField],
    [{ [kind.nameField]: "n".repeat(256) }, kind.nameField],
    [{ [kind.nameField]: null }, kind.nameField],
    [{ [kind.nameField]: 12 }, kind.nameField],
    [{ [kind.nameField]: "ok", description: "d".repeat(10_001) }, "description"],
    [{ [kind.nameField]: "ok", description: 3 }, "description"],
    [{ [kind.nameField]: "ok", website: "http://example.com" }, "website"],
  ])("answers 400 for %j with a detail at %s", async (body, path) => {
    const before = await kind.count();
    const res = await t.rest("POST", kind.path, { key: org.apiKey, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
    expect(await kind.count()).toBe(before);
  });

  it("validates the same way over GraphQL", async () => {
    const res = await t.gql(kind.mutation, { [kind.nameField]: " ", description: "d".repeat(10_001) }, { key: org.apiKey });
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect(res.body.errors[0].extensions.details.map((d: { path: string }) => d.path).sort()).toEqual(
      ["description", kind.nameField].sort(),
    );
  });

  it(`needs ${kind.scope}`, async () => {
    const { key } = await t.keyWith(org.organizationId, ["vendor:read", "risk:read", "task:create"]);
    const res = await t.rest("POST", kind.path, { key, body: { [kind.nameField]: "No" } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
  });

  it("answers 401 without a credential", async () => {
    const res = await t.rest("POST", kind.path, { body: { [kind.nameField]: "No" } });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("UNAUTHENTICATED");
  });
});
