import { describe, expect, it } from "vitest";
import { rolePermissions } from "../../src/auth/permissions.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();

const kinds = [
  {
    label: "vendor",
    path: "/v1/vendors",
    one: "vendor",
    many: "vendors",
    update: "updateVendor",
    nameField: "name",
    ids: () => org.vendorIds,
    otherIds: () => other.vendorIds,
    create: (name: string) => t.rest("POST", "/v1/vendors", { key: org.apiKey, body: { name } }),
  },
  {
    label: "risk",
    path: "/v1/risks",
    one: "risk",
    many: "risks",
    update: "updateRisk",
    nameField: "title",
    ids: () => org.riskIds,
    otherIds: () => other.riskIds,
    create: (title: string) => t.rest("POST", "/v1/risks", { key: org.apiKey, body: { title } }),
  },
  {
    label: "policy",
    path: "/v1/policies",
    one: "policy",
    many: "policies",
    update: "updatePolicy",
    nameField: "name",
    ids: () => org.policyIds,
    otherIds: () => other.policyIds,
    create: (name: string) => t.rest("POST", "/v1/policies", { key: org.apiKey, body: { name } }),
  },
] as const;

describe.each(kinds)("$label reads and updates", (kind) => {
  it("lists the organization's records newest first, paginated with limit and cursor, over REST", async () => {
    const created = [];
    for (const n of [1, 2, 3]) {
      const res = await kind.create(`Paged ${kind.label} ${n}`);
      expect(res.status).toBe(201);
      created.push(res.body.id);
    }
    const first = await t.rest("GET", `${kind.path}?limit=2`, { key: org.apiKey });
    expect(first.status).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(["items", "nextCursor"]);
    expect(first.body.items.map((r: { id: string }) => r.id)).toEqual([created[2], created[1]]);
    expect(first.headers.get("etag")).toBeTruthy();
    const all: string[] = [...first.body.items.map((r: { id: string }) => r.id)];
    let cursor = first.body.nextCursor;
    while (cursor) {
      const page = await t.rest("GET", `${kind.path}?limit=2&cursor=${encodeURIComponent(cursor)}`, { key: org.apiKey });
      expect(page.status).toBe(200);
      all.push(...page.body.items.map((r: { id: string }) => r.id));
      cursor = page.body.nextCursor;
    }
    expect(new Set(all).size).toBe(all.length);
    for (const id of [...kind.ids(), ...created]) expect(all).toContain(id);
    for (const id of kind.otherIds()) expect(all).not.toContain(id);
  });

  it("refuses limits outside 1 to 100 with 400 on both transports", async () => {
    for (const limit of [0, 101]) {
      const res = await t.rest("GET", `${kind.path}?limit=${limit}`, { key: org.apiKey });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("BAD_USER_INPUT");
      const gql = await t.gql(`query($l: Int) { ${kind.many}(limit: $l) { nextCursor } }`, { l: limit }, { key: org.apiKey });
      expect(gql.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    }
  });

  it("reads one by id, with an ETag and 304 on If-None-Match; another organization's is 404", async () => {
    const id = kind.ids()[0] as string;
    const res = await t.rest("GET", `${kind.path}/${id}`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(id);
    const etag = res.headers.get("etag") as string;
    const again = await t.rest("GET", `${kind.path}/${id}`, { key: org.apiKey, headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    const foreign = await t.rest("GET", `${kind.path}/${kind.otherIds()[0]}`, { key: org.apiKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe("NOT_FOUND");
    const gql = await t.gql(`query($id: ID!) { ${kind.one}(id: $id) { id } }`, { id: kind.otherIds()[0] }, { key: org.apiKey });
    expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
  });

  it("updates the name and description, null clearing the description, with an audit event of the changes", async () => {
    const created = await kind.create(`Before ${kind.label}`);
    const id = created.body.id;
    const res = await t.rest("PATCH", `${kind.path}/${id}`, {
      key: org.apiKey,
      body: { [kind.nameField]: "  After  ", description: "Now described" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, [kind.nameField]: "After", description: "Now described" });
    const cleared = await t.gql(
      `mutation($id: ID!) { ${kind.update}(id: $id, description: null) { id description ${kind.nameField} } }`,
      { id },
      { key: org.apiKey },
    );
    expect(cleared.body.errors).toBeUndefined();
    expect(cleared.body.data[kind.update]).toEqual({ id, description: null, [kind.nameField]: "After" });
    const events = await t.db.auditEvent.findMany({
      where: { entityId: id, action: `${kind.label}.updated` },
      orderBy: { createdAt: "asc" },
    });
    expect(events.map((e) => e.data)).toEqual([
      {
        changes: {
          [kind.nameField]: { from: `Before ${kind.label}`, to: "After" },
          description: { from: null, to: "Now described" },
        },
      },
      { changes: { description: { from: "Now described", to: null } } },
    ]);
  });

  it("refuses an empty update, a null name and an unknown field with 400; another organization's record is 404", async () => {
    const id = kind.ids()[0] as string;
    const before = await t.rest("GET", `${kind.path}/${id}`, { key: org.apiKey });
    for (const body of [{}, { [kind.nameField]: null }, { [kind.nameField]: "   " }, { color: "red" }]) {
      const res = await t.rest("PATCH", `${kind.path}/${id}`, { key: org.apiKey, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe("BAD_USER_INPUT");
    }
    const foreign = await t.rest("PATCH", `${kind.path}/${kind.otherIds()[0]}`, {
      key: org.apiKey,
      body: { [kind.nameField]: "Hijacked" },
    });
    expect(foreign.status).toBe(404);
    const after = await t.rest("GET", `${kind.path}/${id}`, { key: org.apiKey });
    expect(after.body).toEqual(before.body);
  });

  it(`needs ${kind.label}:read to read and ${kind.label}:update to update`, async () => {
    const id = kind.ids()[0] as string;
    const reader = await t.keyWith(org.organizationId, [`${kind.label}:read`]);
    expect((await t.rest("GET", `${kind.path}/${id}`, { key: reader.key })).status).toBe(200);
    expect((await t.rest("GET", kind.path, { key: reader.key })).status).toBe(200);
    const denied = await t.rest("PATCH", `${kind.path}/${id}`, { key: reader.key, body: { description: "x" } });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe("FORBIDDEN");
    const writer = await t.keyWith(org.organizationId, [`${kind.label}:update`]);
    expect((await t.rest("GET", `${kind.path}/${id}`, { key: writer.key })).status).toBe(403);
    expect((await t.rest("GET", kind.path, { key: writer.key })).status).toBe(403);
    expect((await t.rest("PATCH", `${kind.path}/${id}`, { key: writer.key, body: { description: "x" } })).status).toBe(200);
  });
});

describe("permission vocabulary", () => {
  it("has vendor:update and risk:update, held by owner and admin only", () => {
    for (const permission of ["vendor:update", "risk:update"] as const) {
      expect(rolePermissions.owner).toContain(permission);
      expect(rolePermissions.admin).toContain(permission);
      for (const role of ["auditor", "employee", "contractor"] as const) expect(rolePermissions[role]).not.toContain(permission);
    }
  });
});
