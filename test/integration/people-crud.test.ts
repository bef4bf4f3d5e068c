import { randomBytes } from "node:crypto";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { permissions } from "../../src/auth/permissions.js";
import { createSession } from "../../src/auth/sessions.js";
import type { Prisma } from "../../src/generated/prisma/client.js";
import { openFixture } from "../helpers/fixtures.js";

const memberFields = `id organizationId userId role createdAt department jobTitle isActive deviceLabelId
  user { id name email emailVerified image createdAt updatedAt lastLogin }`;
const memberKeys = [
  "createdAt",
  "department",
  "deviceLabelId",
  "id",
  "isActive",
  "jobTitle",
  "organizationId",
  "role",
  "user",
  "userId",
];
const userKeys = ["createdAt", "email", "emailVerified", "id", "image", "lastLogin", "name", "updatedAt"];

const createMember = `mutation($email: String!, $name: String!, $role: MemberRole!, $department: Department, $jobTitle: String, $deviceLabelId: Int) {
  createMember(email: $email, name: $name, role: $role, department: $department, jobTitle: $jobTitle, deviceLabelId: $deviceLabelId) { ${memberFields} }
}`;
const updateMember = `mutation($id: ID!, $role: MemberRole, $department: Department, $jobTitle: String, $isActive: Boolean, $deviceLabelId: Int) {
  updateMember(id: $id, role: $role, department: $department, jobTitle: $jobTitle, isActive: $isActive, deviceLabelId: $deviceLabelId) { ${memberFields} }
}`;
const getMember = `query($id: ID!) { member(id: $id) { ${memberFields} } }`;
const listMembers = `query($limit: Int, $cursor: String) { members(limit: $limit, cursor: $cursor) { items { ${memberFields} } nextCursor } }`;

const uniqueEmail = (label = "person") => `${label}.${randomBytes(4).toString("hex")}@example.com`;

// Each describe seeds organizations of its own.
const { t } = await openFixture({ organizations: 0 });

/** Headers of a session for the user, acting in the organization. */
async function sessionOf(userId: string, organizationId: string) {
  const { token } = await createSession(t.db, userId, 3_600_000);
  return { authorization: `Bearer ${token}`, "x-organization-id": organizationId };
}

describe("create member", () => {
  let org: SeedResult;
  beforeAll(async () => {
    org = await t.seedOrg();
  });

  it("creates the user and the member, answering 201 with the member over REST", async () => {
    const email = uniqueEmail("rita");
    const res = await t.rest("POST", "/v1/people", {
      key: org.apiKey,
      body: {
        email: `  ${email.toUpperCase()} `,
        name: "Rita Reviewer",
        role: "auditor",
        department: "qms",
        jobTitle: "QA lead",
        deviceLabelId: 0,
      },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(memberKeys);
    expect(Object.keys(res.body.user).sort()).toEqual(userKeys);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^mem_[0-9a-f]{32}$/),
      organizationId: org.organizationId,
      role: "auditor",
      department: "qms",
      jobTitle: "QA lead",
      isActive: true,
      deviceLabelId: 0,
      user: { email, name: "Rita Reviewer", emailVerified: false, image: null, lastLogin: null },
    });
    expect(res.body.userId).toBe(res.body.user.id);
    expect(res.body.user.id).toMatch(/^usr_/);
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
    const stored = await t.db.member.findUniqueOrThrow({ where: { id: res.body.id }, include: { user: true } });
    expect(stored.user.email).toBe(email);
  });

  it("applies the defaults and answers the same shape over GraphQL", async () => {
    const email = uniqueEmail();
    const res = await t.gql(createMember, { email, name: "Gail Graph", role: "employee" }, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const member = res.body.data.createMember;
    expect(Object.keys(member).sort()).toEqual(memberKeys);
    expect(member).toMatchObject({ role: "employee", department: "none", jobTitle: null, deviceLabelId: null, isActive: true });
    const rest = await t.rest("GET", `/v1/people/${member.id}`, { key: org.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual(member);
  });

  it("writes a member.created audit event in the same transaction", async () => {
    const email = uniqueEmail();
    const res = await t.rest("POST", "/v1/people", { key: org.apiKey, body: { email, name: "Audited", role: "contractor" } });
    expect(res.status).toBe(201);
    const events = await t.db.auditEvent.findMany({ where: { entityId: res.body.id } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      organizationId: org.organizationId,
      action: "member.created",
      entityType: "member",
      actorUserId: null,
      actorApiKeyId: expect.stringMatching(/^apk_/),
      data: { userId: res.body.userId, email, role: "contractor", department: "none", jobTitle: null, deviceLabelId: null },
    });
  });

  it("reuses an existing user without renaming them", async () => {
    const other = await t.seedOrg();
    const existing = await t.db.user.findUniqueOrThrow({ where: { id: other.userIds[2] } });
    const res = await t.rest("POST", "/v1/people", {
      key: org.apiKey,
      body: { email: existing.email.toUpperCase(), name: "Another Name", role: "employee" },
    });
    expect(res.status).toBe(201);
    expect(res.body.userId).toBe(existing.id);
    // The answer shows the name the caller gave, never the one another organization stored...
    expect(res.body.user.name).toBe("Another Name");
    // ...and the account keeps its own.
    expect((await t.db.user.findUniqueOrThrow({ where: { id: existing.id } })).name).toBe(existing.name);
    expect(await t.db.user.count({ where: { email: existing.email } })).toBe(1);
  });

  it("answers 409 CONFLICT when the person is already a member, on both transports", async () => {
    const email = uniqueEmail();
    expect(
      (await t.rest("POST", "/v1/people", { key: org.apiKey, body: { email, name: "Once", role: "employee" } })).status,
    ).toBe(201);
    const again = await t.rest("POST", "/v1/people", {
      key: org.apiKey,
      body: { email: ` ${email.toUpperCase()}`, name: "Twice", role: "admin" },
    });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ statusCode: 409, error: "Conflict", code: "CONFLICT" });
    const gql = await t.gql(createMember, { email, name: "Thrice", role: "admin" }, { key: org.apiKey });
    expect(gql.body.data).toBeNull();
    expect(gql.body.errors[0].extensions.code).toBe("CONFLICT");
    const user = await t.db.user.findUniqueOrThrow({ where: { email }, include: { memberships: true } });
    expect(user.memberships).toHaveLength(1);
    expect(user.memberships[0]?.role).toBe("employee");
  });

  it.each([
    [{ name: "No Email", role: "employee" }, "email"],
    [{ email: uniqueEmail(), role: "employee" }, "name"],
    [{ email: uniqueEmail(), name: "No Role" }, "role"],
    [{ email: "not-an-email", name: "X", role: "employee" }, "email"],
    [{ email: "two@@example.com", name: "X", role: "employee" }, "email"],
    [{ email: `${"a".repeat(250)}@example.com`, name: "X", role: "employee" }, "email"],
    [{ email: uniqueEmail(), name: "   ", role: "employee" }, "name"],
    [{ email: uniqueEmail(), name: "", role: "employee" }, "name"],
    [{ email: uniqueEmail(), name: "n".repeat(256), role: "employee" }, "name"],
    [{ email: uniqueEmail(), name: "X", role: "boss" }, "role"],
    [{ email: uniqueEmail(), name: "X", role: "employee", department: "sales" }, "department"],
    [{ email: uniqueEmail(), name: "X", role: "employee", jobTitle: "j".repeat(256) }, "jobTitle"],
    [{ email: uniqueEmail(), name: "X", role: "employee", jobTitle: "  " }, "jobTitle"],
    [{ email: uniqueEmail(), name: "X", role: "employee", deviceLabelId: -1 }, "deviceLabelId"],
    [{ email: uniqueEmail(), name: "X", role: "employee", deviceLabelId: 1.5 }, "deviceLabelId"],
    [{ email: uniqueEmail(), name: "X", role: "employee", deviceLabelId: "7" }, "deviceLabelId"],
    [{ email: uniqueEmail(), name: 42, role: "employee" }, "name"],
    [{ email: uniqueEmail(), name: "X", role: "employee", isActive: false }, "isActive"],
  ])("answers 400 for %j with a detail at %s", async (body, path) => {
    const before = await t.db.member.count({ where: { organizationId: org.organizationId } });
    const res = await t.rest("POST", "/v1/people", { key: org.apiKey, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
    expect(await t.db.member.count({ where: { organizationId: org.organizationId } })).toBe(before);
  });

  it("takes a null department on create as not given: the default applies", async () => {
    const res = await t.rest("POST", "/v1/people", {
      key: org.apiKey,
      body: { email: uniqueEmail(), name: "X", role: "employee", department: null },
    });
    expect(res.status).toBe(201);
    expect(res.body.department).toBe("none");
  });

  it("validates the same way over GraphQL", async () => {
    const res = await t.gql(createMember, { email: "nope", name: " ", role: "employee", deviceLabelId: -3 }, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect(res.body.errors[0].extensions.details.map((d: { path: string }) => d.path).sort()).toEqual([
      "deviceLabelId",
      "email",
      "name",
    ]);
  });

  it("counts a name's length in code points: 255 emoji pass", async () => {
    const res = await t.rest("POST", "/v1/people", {
      key: org.apiKey,
      body: { email: uniqueEmail(), name: "😀".repeat(255), role: "employee", jobTitle: "🚀".repeat(255) },
    });
    expect(res.status).toBe(201);
    expect(res.body.user.name).toBe("😀".repeat(255));
  });

  it("needs member:create", async () => {
    const { key } = await t.keyWith(org.organizationId, ["member:read", "member:update"]);
    const res = await t.rest("POST", "/v1/people", { key, body: { email: uniqueEmail(), name: "X", role: "employee" } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
  });
});

describe("get member", () => {
  let org: SeedResult;
  let other: SeedResult;
  beforeAll(async () => {
    org = await t.seedOrg();
    other = await t.seedOrg();
  });

  it("answers 200 with the member over REST and GraphQL", async () => {
    const res = await t.rest("GET", `/v1/people/${org.memberIds[0]}`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(memberKeys);
    expect(res.body).toMatchObject({ id: org.memberIds[0], userId: org.userIds[0], role: "owner", deviceLabelId: 101 });
    const gql = await t.gql(getMember, { id: org.memberIds[0] }, { key: org.apiKey });
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.member).toEqual(res.body);
  });

  it("answers 404 for a missing member and for another organization's member", async () => {
    for (const id of ["mem_missing", other.memberIds[0]]) {
      const res = await t.rest("GET", `/v1/people/${id}`, { key: org.apiKey });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ statusCode: 404, error: "Not Found", code: "NOT_FOUND", message: expect.any(String) });
      const gql = await t.gql(getMember, { id }, { key: org.apiKey });
      // Nullable over GraphQL: null with its error, the other root fields still answer.
      expect(gql.body.data).toEqual({ member: null });
      expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
    }
  });

  it("needs member:read", async () => {
    const { key } = await t.keyWith(org.organizationId, ["task:read"]);
    expect((await t.rest("GET", `/v1/people/${org.memberIds[0]}`, { key })).status).toBe(403);
    expect((await t.rest("GET", "/v1/people", { key })).status).toBe(403);
  });
});

describe("list members", () => {
  let org: SeedResult;
  let other: SeedResult;
  beforeAll(async () => {
    org = await t.seedOrg();
    other = await t.seedOrg();
    // 4 seeded + 41 = 45 members
    for (let i = 0; i < 41; i++) {
      const res = await t.rest("POST", "/v1/people", {
        key: org.apiKey,
        body: { email: uniqueEmail(`bulk${i}`), name: `Bulk ${i}`, role: "employee" },
      });
      expect(res.status).toBe(201);
    }
  });

  it("answers 200 with the first 20, newest first, and a cursor", async () => {
    const res = await t.rest("GET", "/v1/people", { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["items", "nextCursor"]);
    expect(res.body.items).toHaveLength(20);
    expect(Object.keys(res.body.items[0]).sort()).toEqual(memberKeys);
    expect(Object.keys(res.body.items[0].user).sort()).toEqual(userKeys);
    expect(res.body.nextCursor).toEqual(expect.any(String));
    expect(res.body.items[0].user.name).toBe("Bulk 40");
  });

  it("pages through all 45 members once each, newest first, on both transports", async () => {
    const expected = (
      await t.db.member.findMany({
        where: { organizationId: org.organizationId },
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        select: { id: true },
      })
    ).map((m) => m.id);
    expect(expected).toHaveLength(45);

    const restIds: string[] = [];
    let cursor: string | null = null;
    const sizes: number[] = [];
    do {
      const query: string = cursor ? `?limit=20&cursor=${encodeURIComponent(cursor)}` : "?limit=20";
      const res = await t.rest("GET", `/v1/people${query}`, { key: org.apiKey });
      expect(res.status).toBe(200);
      sizes.push(res.body.items.length);
      restIds.push(...res.body.items.map((m: { id: string }) => m.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(sizes).toEqual([20, 20, 5]);
    expect(restIds).toEqual(expected);

    const gqlIds: string[] = [];
    cursor = null;
    do {
      const res = await t.gql(listMembers, { limit: 20, cursor }, { key: org.apiKey });
      expect(res.body.errors).toBeUndefined();
      gqlIds.push(...res.body.data.members.items.map((m: { id: string }) => m.id));
      cursor = res.body.data.members.nextCursor;
    } while (cursor);
    expect(gqlIds).toEqual(expected);
    expect(expected.some((id) => other.memberIds.includes(id))).toBe(false);
  });

  it("gives a null cursor on the last page", async () => {
    const res = await t.rest("GET", "/v1/people?limit=100", { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(45);
    expect(res.body.nextCursor).toBeNull();
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["limit=abc", "limit"],
    ["limit=-1", "limit"],
    ["cursor=bogus", "cursor"],
    [`cursor=${Buffer.from(JSON.stringify(["x"])).toString("base64url")}`, "cursor"],
    ["offset=5", "offset"],
  ])("answers 400 for ?%s", async (query, path) => {
    const res = await t.rest("GET", `/v1/people?${query}`, { key: org.apiKey });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.details).toEqual([{ path, message: expect.any(String) }]);
  });

  it("refuses a bad limit or cursor over GraphQL too", async () => {
    for (const variables of [{ limit: 0 }, { limit: 101 }, { cursor: "bogus" }]) {
      const res = await t.gql(listMembers, variables, { key: org.apiKey });
      expect(res.body.data?.members ?? null).toBeNull();
      expect(res.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    }
  });

  it("costs the same SQL statements whatever the page size: one for the members, one for their users", async () => {
    const small = await t.countQueries(() => t.gql(listMembers, { limit: 2 }, { key: org.apiKey }));
    const large = await t.countQueries(() => t.gql(listMembers, { limit: 45 }, { key: org.apiKey }));
    expect(large.count).toBe(small.count);
    expect(large.statements.filter((s) => s.includes('FROM "public"."Member"'))).toHaveLength(1);
    expect(large.statements.filter((s) => s.includes('FROM "public"."User"'))).toHaveLength(1);
    const rest = await t.countQueries(() => t.rest("GET", "/v1/people?limit=45", { key: org.apiKey }));
    expect(rest.count).toBe(small.count);
  });
});

describe("update member", () => {
  let org: SeedResult;
  beforeAll(async () => {
    org = await t.seedOrg();
  });

  const auditsOf = (id: string) =>
    t.db.auditEvent.findMany({
      where: { entityId: id, action: "member.updated" },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    });

  /** The demo employee of a new organization, with `state` over its seeded fields (for a test that changes it). */
  async function ownEmployee(state: Prisma.MemberUpdateInput = {}) {
    const own = await t.seedOrg();
    const id = own.memberIds[3] as string;
    await t.db.member.update({ where: { id }, data: state });
    return { org: own, id };
  }

  it("changes the given fields, answers 200 with the member and records what changed", async () => {
    const { org, id } = await ownEmployee();
    const res = await t.rest("PATCH", `/v1/people/${id}`, {
      key: org.apiKey,
      body: { role: "auditor", department: "it", jobTitle: "Engineer", deviceLabelId: 104 },
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(memberKeys);
    expect(res.body).toMatchObject({
      id,
      role: "auditor",
      department: "it",
      jobTitle: "Engineer",
      isActive: true,
      deviceLabelId: 104,
      user: { id: org.userIds[3] },
    });
    const audits = await auditsOf(id);
    expect(audits).toHaveLength(1);
    // deviceLabelId was already 104: not a change
    expect(audits[0]?.data).toEqual({
      changes: {
        role: { from: "employee", to: "auditor" },
        department: { from: "none", to: "it" },
        jobTitle: { from: null, to: "Engineer" },
      },
    });
    expect(audits[0]?.actorApiKeyId).toMatch(/^apk_/);
  });

  it("leaves absent fields unchanged and clears jobTitle and deviceLabelId with null", async () => {
    const { org, id } = await ownEmployee({ role: "auditor", department: "it", jobTitle: "Engineer" });
    const res = await t.rest("PATCH", `/v1/people/${id}`, { key: org.apiKey, body: { jobTitle: null, deviceLabelId: null } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ role: "auditor", department: "it", jobTitle: null, deviceLabelId: null, isActive: true });
    const audits = await auditsOf(id);
    expect(audits.at(-1)?.data).toEqual({
      changes: { jobTitle: { from: "Engineer", to: null }, deviceLabelId: { from: 104, to: null } },
    });
  });

  it("deactivates and reactivates over GraphQL, with the same null semantics", async () => {
    const id = org.memberIds[2] as string;
    const off = await t.gql(updateMember, { id, isActive: false, jobTitle: "Auditor" }, { key: org.apiKey });
    expect(off.body.errors).toBeUndefined();
    expect(off.body.data.updateMember).toMatchObject({ id, isActive: false, jobTitle: "Auditor", role: "auditor" });
    const on = await t.gql(updateMember, { id, isActive: true, jobTitle: null }, { key: org.apiKey });
    expect(on.body.errors).toBeUndefined();
    expect(on.body.data.updateMember).toMatchObject({ isActive: true, jobTitle: null });
    const rest = await t.rest("GET", `/v1/people/${id}`, { key: org.apiKey });
    expect(rest.body).toEqual(on.body.data.updateMember);
  });

  it("answers 200 without writing anything when nothing actually changes", async () => {
    const { org, id } = await ownEmployee({ role: "auditor", department: "it" });
    const before = await t.db.member.findUniqueOrThrow({ where: { id } });
    const count = (await auditsOf(id)).length;
    const res = await t.rest("PATCH", `/v1/people/${id}`, { key: org.apiKey, body: { role: "auditor", department: "it" } });
    expect(res.status).toBe(200);
    expect(res.body.role).toBe("auditor");
    expect(await auditsOf(id)).toHaveLength(count);
    expect((await t.db.member.findUniqueOrThrow({ where: { id } })).updatedAt).toEqual(before.updatedAt);
  });

  it.each([
    [{}, ""],
    [{ role: null }, "role"],
    [{ department: null }, "department"],
    [{ isActive: null }, "isActive"],
    [{ role: "boss" }, "role"],
    [{ isActive: "false" }, "isActive"],
    [{ jobTitle: "j".repeat(256) }, "jobTitle"],
    [{ jobTitle: "" }, "jobTitle"],
    [{ deviceLabelId: -5 }, "deviceLabelId"],
    [{ deviceLabelId: 2 ** 31 }, "deviceLabelId"],
    [{ email: "x@example.com" }, "email"],
    [{ id: "mem_other" }, "id"],
  ])("answers 400 for %j with a detail at %j", async (body, path) => {
    const id = org.memberIds[3] as string;
    const before = await t.db.member.findUniqueOrThrow({ where: { id } });
    const res = await t.rest("PATCH", `/v1/people/${id}`, { key: org.apiKey, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
    expect(await t.db.member.findUniqueOrThrow({ where: { id } })).toEqual(before);
  });

  it("refuses an empty update and null for a required field over GraphQL", async () => {
    const id = org.memberIds[3] as string;
    const empty = await t.gql(updateMember, { id }, { key: org.apiKey });
    expect(empty.body.errors[0].extensions).toMatchObject({ code: "BAD_USER_INPUT", details: [{ path: "" }] });
    const nullRole = await t.gql(updateMember, { id, role: null }, { key: org.apiKey });
    expect(nullRole.body.errors[0].extensions).toMatchObject({ code: "BAD_USER_INPUT", details: [{ path: "role" }] });
  });

  it("answers 404 for a missing member and for another organization's, changing nothing", async () => {
    const other = await t.seedOrg();
    const missing = await t.rest("PATCH", "/v1/people/mem_missing", { key: org.apiKey, body: { department: "hr" } });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe("NOT_FOUND");
    const foreign = await t.rest("PATCH", `/v1/people/${other.memberIds[3]}`, { key: org.apiKey, body: { department: "hr" } });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe("NOT_FOUND");
    const gql = await t.gql(updateMember, { id: other.memberIds[3], role: "admin" }, { key: org.apiKey });
    expect(gql.body.errors[0].extensions.code).toBe("NOT_FOUND");
    const untouched = await t.db.member.findUniqueOrThrow({ where: { id: other.memberIds[3] } });
    expect(untouched).toMatchObject({ department: "none", role: "employee" });
    expect(await t.db.auditEvent.count({ where: { entityId: other.memberIds[3], action: "member.updated" } })).toBe(0);
  });

  it("needs member:update", async () => {
    const { key } = await t.keyWith(org.organizationId, ["member:read", "member:create"]);
    const res = await t.rest("PATCH", `/v1/people/${org.memberIds[3]}`, { key, body: { department: "hr" } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
  });
});

describe("owner role", () => {
  // Each test changes roles, so each has an organization of its own.
  let org: SeedResult;
  let admin: Record<string, string>;
  let owner: Record<string, string>;
  beforeEach(async () => {
    org = await t.seedOrg();
    owner = await sessionOf(org.userIds[0] as string, org.organizationId);
    admin = await sessionOf(org.userIds[1] as string, org.organizationId);
  });
  const [ownerIdx, adminIdx, auditorIdx, employeeIdx] = [0, 1, 2, 3];

  it("an admin user may change members who are not owners", async () => {
    const res = await t.rest("PATCH", `/v1/people/${org.memberIds[employeeIdx]}`, { headers: admin, body: { department: "hr" } });
    expect(res.status).toBe(200);
    expect(res.body.department).toBe("hr");
    const audit = await t.db.auditEvent.findFirst({ where: { entityId: org.memberIds[employeeIdx], action: "member.updated" } });
    expect(audit).toMatchObject({ actorUserId: org.userIds[adminIdx], actorApiKeyId: null });
  });

  it("an admin user may not make anyone an owner (403), over both transports", async () => {
    const id = org.memberIds[auditorIdx] as string;
    const res = await t.rest("PATCH", `/v1/people/${id}`, { headers: admin, body: { role: "owner" } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
    const gql = await t.gql(updateMember, { id, role: "owner" }, { headers: admin });
    expect(gql.body.errors[0].extensions.code).toBe("FORBIDDEN");
    const self = await t.rest("PATCH", `/v1/people/${org.memberIds[adminIdx]}`, { headers: admin, body: { role: "owner" } });
    expect(self.status).toBe(403);
    expect((await t.db.member.findUniqueOrThrow({ where: { id } })).role).toBe("auditor");
  });

  it("an admin user may not change or deactivate an owner (403)", async () => {
    const id = org.memberIds[ownerIdx] as string;
    for (const body of [{ jobTitle: "CEO" }, { isActive: false }, { role: "employee" }]) {
      const res = await t.rest("PATCH", `/v1/people/${id}`, { headers: admin, body });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe("FORBIDDEN");
    }
    expect(await t.db.member.findUniqueOrThrow({ where: { id } })).toMatchObject({
      role: "owner",
      isActive: true,
      jobTitle: null,
    });
  });

  it("an admin user may not add an owner, but may add an admin", async () => {
    const refused = await t.rest("POST", "/v1/people", {
      headers: admin,
      body: { email: uniqueEmail(), name: "O", role: "owner" },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("FORBIDDEN");
    const added = await t.rest("POST", "/v1/people", {
      headers: admin,
      body: { email: uniqueEmail(), name: "A", role: "admin" },
    });
    expect(added.status).toBe(201);
    const audit = await t.db.auditEvent.findFirst({ where: { entityId: added.body.id } });
    expect(audit).toMatchObject({ action: "member.created", actorUserId: org.userIds[adminIdx], actorApiKeyId: null });
  });

  it("an owner user may make someone an owner; an API key holding every permission may too, member:update alone not", async () => {
    const res = await t.rest("PATCH", `/v1/people/${org.memberIds[auditorIdx]}`, { headers: owner, body: { role: "owner" } });
    expect(res.status).toBe(200);
    expect(res.body.role).toBe("owner");
    const weak = await t.keyWith(org.organizationId, ["member:update"]);
    const refused = await t.rest("PATCH", `/v1/people/${org.memberIds[employeeIdx]}`, { key: weak.key, body: { role: "owner" } });
    expect(refused.status).toBe(403);
    const { key } = await t.keyWith(org.organizationId, [...permissions]);
    const byKey = await t.rest("PATCH", `/v1/people/${org.memberIds[employeeIdx]}`, { key, body: { role: "owner" } });
    expect(byKey.status).toBe(200);
    expect(byKey.body.role).toBe("owner");
    const demoted = await t.rest("PATCH", `/v1/people/${org.memberIds[employeeIdx]}`, { key, body: { role: "employee" } });
    expect(demoted.status).toBe(200);
  });

  it("never leaves the organization without an active owner (409)", async () => {
    const solo = await t.seedOrg();
    const ownerId = solo.memberIds[0] as string;
    for (const body of [{ role: "admin" }, { isActive: false }]) {
      const res = await t.rest("PATCH", `/v1/people/${ownerId}`, { key: solo.apiKey, body });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe("CONFLICT");
    }
    expect(await t.db.member.findUniqueOrThrow({ where: { id: ownerId } })).toMatchObject({ role: "owner", isActive: true });
    const promote = await t.rest("PATCH", `/v1/people/${solo.memberIds[1]}`, { key: solo.apiKey, body: { role: "owner" } });
    expect(promote.status).toBe(200);
    const step = await t.rest("PATCH", `/v1/people/${ownerId}`, { key: solo.apiKey, body: { role: "admin" } });
    expect(step.status).toBe(200);
    expect(await t.db.auditEvent.findFirst({ where: { entityId: ownerId, action: "member.updated" } })).toMatchObject({
      data: { changes: { role: { from: "owner", to: "admin" } } },
    });
  });
});
