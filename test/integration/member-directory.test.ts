import { beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, keyWith } = await openFixture({ organizations: 1 });
/** A session of the demo organization's employee (user 3): tasks and comments, no member:read. */
let employee: Record<string, string> = {};
let admin: Record<string, string> = {};
beforeAll(async () => {
  for (const [i, set] of [
    [3, (h: Record<string, string>) => (employee = h)],
    [1, (h: Record<string, string>) => (admin = h)],
  ] as const) {
    const session = await createSession(t.db, org.userIds[i] as string, 3_600_000);
    set({ authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId });
  }
});

type GqlError = { path: (string | number)[]; extensions: { code: string } };
const refusedPaths = (errors: GqlError[] | undefined) =>
  (errors ?? []).map((e) => {
    expect(e.extensions.code).toBe("FORBIDDEN");
    return e.path.join(".");
  });

describe("the member directory", () => {
  it("shows an employee who is assigned to a task (id and name), and refuses the rest of the member at its paths", async () => {
    const assigned = await t.rest("PATCH", `/v1/tasks/${org.taskIds[0]}`, {
      key: org.apiKey,
      body: { assigneeId: org.memberIds[1] },
    });
    expect(assigned.status).toBe(200);
    const res = await t.gql(
      "query($id: ID!) { task(taskId: $id) { id assignee { id name role user { email } } } }",
      { id: org.taskIds[0] },
      { headers: employee },
    );
    expect(res.status).toBe(200);
    expect(res.body.data.task.assignee).toEqual({ id: org.memberIds[1], name: "Grace Admin", role: null, user: null });
    expect(refusedPaths(res.body.errors).sort()).toEqual(["task.assignee.role", "task.assignee.user"]);
  });

  it("lets any credential read a member's id and name through member and node, and nothing more", async () => {
    const key = await keyWith(["task:read"]);
    const res = await t.gql(
      "query($id: ID!) { member(id: $id) { id name isActive } node(id: $id) { ... on Member { name department } } }",
      { id: org.memberIds[0] },
      { key },
    );
    expect(res.body.data).toEqual({
      member: { id: org.memberIds[0], name: "Ada Owner", isActive: null },
      node: { name: "Ada Owner", department: null },
    });
    expect(refusedPaths(res.body.errors).sort()).toEqual(["member.isActive", "node.department"]);
    // REST is unchanged: a member without member:read is a 403.
    const rest = await t.rest("GET", `/v1/people/${org.memberIds[0]}`, { key });
    expect(rest.status).toBe(403);
    expect(rest.body.code).toBe("FORBIDDEN");
  });

  it("reads the whole of one's own membership without member:read", async () => {
    const res = await t.gql("{ viewer { member { id name role jobTitle user { email } } } }", {}, { headers: employee });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.viewer.member).toMatchObject({ id: org.memberIds[3], name: "Edsger Employee", role: "employee" });
  });

  it("answers the whole member to the caller that just wrote it with member:update, on both transports", async () => {
    const key = await keyWith(["member:update"]);
    const rest = await t.rest("PATCH", `/v1/people/${org.memberIds[3]}/unlink-device`, { key });
    expect(rest.status).toBe(200);
    expect(Object.keys(rest.body).sort()).toEqual(
      [
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
      ].sort(),
    );
    const gql = await t.gql(
      "mutation($id: ID!) { unlinkDevice(id: $id) { id name role deviceLabelId } }",
      { id: org.memberIds[3] },
      { key },
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.unlinkDevice).toEqual({
      id: org.memberIds[3],
      name: "Edsger Employee",
      role: "employee",
      deviceLabelId: null,
    });
  });

  it("keeps REST's member non-null in the OpenAPI document: REST answers a refusal with 403, never with null", async () => {
    const doc = await t.rest("GET", "/v1/openapi.json");
    const member = doc.body.components.schemas.Member;
    const allowsNull = (property: { type?: unknown; anyOf?: { type?: string }[]; nullable?: boolean }) =>
      (Array.isArray(property.type) && property.type.includes("null")) ||
      property.anyOf?.some((s) => s.type === "null") === true ||
      property.nullable === true;
    for (const field of ["organizationId", "userId", "role", "createdAt", "department", "isActive", "user"]) {
      expect(allowsNull(member.properties[field]), field).toBe(false);
    }
    expect(allowsNull(member.properties.jobTitle)).toBe(true);
    expect(member.properties.name).toBeUndefined();
  });

  it("names a version's approver (PolicyVersion.approver) to any reader of policies", async () => {
    const policy = await t.rest("POST", "/v1/policies", { key: org.apiKey, body: { name: "Approvals", content: [] } });
    const draft = await t.rest("POST", `/v1/policies/${policy.body.id}/versions`, { key: org.apiKey, body: {} });
    const submitted = await t.rest("POST", `/v1/policies/${policy.body.id}/versions/${draft.body.versionId}/submit`, {
      key: org.apiKey,
      body: { approverId: org.memberIds[1] },
    });
    expect(submitted.status).toBe(200);
    const key = await keyWith(["policy:read"]);
    const res = await t.gql(
      "query($id: ID!) { node(id: $id) { ... on PolicyVersion { status approverId approver { id name role } } } }",
      { id: draft.body.versionId },
      { key },
    );
    expect(res.body.data.node).toEqual({
      status: "in_review",
      approverId: org.memberIds[1],
      approver: { id: org.memberIds[1], name: "Grace Admin", role: null },
    });
    expect(refusedPaths(res.body.errors)).toEqual(["node.approver.role"]);
    // The approver, once named, sees it too.
    const own = await t.gql(
      "query($id: ID!) { node(id: $id) { ... on PolicyVersion { approver { role } } } }",
      { id: draft.body.versionId },
      { headers: admin },
    );
    expect(own.body.data.node.approver.role).toBe("admin");
  });

  it("names who created and who submitted a version (createdBy, submittedBy) to any reader of policies", async () => {
    const policy = await t.rest("POST", "/v1/policies", { headers: admin, body: { name: "Authors", content: [] } });
    const draft = await t.rest("POST", `/v1/policies/${policy.body.id}/versions`, { headers: admin, body: {} });
    const submitted = await t.rest("POST", `/v1/policies/${policy.body.id}/versions/${draft.body.versionId}/submit`, {
      headers: admin,
      body: { approverId: org.memberIds[0] },
    });
    expect(submitted.status).toBe(200);
    const key = await keyWith(["policy:read"]);
    const res = await t.gql(
      "query($id: ID!) { node(id: $id) { ... on PolicyVersion { createdBy { id name role } submittedBy { id name } } } }",
      { id: draft.body.versionId },
      { key },
    );
    expect(res.body.data.node).toEqual({
      createdBy: { id: org.memberIds[1], name: "Grace Admin", role: null },
      submittedBy: { id: org.memberIds[1], name: "Grace Admin" },
    });
    expect(refusedPaths(res.body.errors)).toEqual(["node.createdBy.role"]);
  });
});
