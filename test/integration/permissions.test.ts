import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../src/admin/admin.service.js";
import type { SeedResult } from "../../src/admin/seed.js";
import { type Permission, permissions, rolePermissions } from "../../src/auth/permissions.js";
import { createSession } from "../../src/auth/sessions.js";
import type { MemberRole } from "../../src/generated/prisma/enums.js";
import { restRoutes } from "../../src/rest/routes.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

let t: TestApp;
let org: SeedResult;
let attachmentId: string;
let n = 0;
const unique = () => `${Date.now()}${n++}`;

type Call = { rest: [method: string, path: string, body?: unknown]; gql: [query: string, variables: Record<string, unknown>] };

/** Every operation with the permission the contract gives it, and a valid call of it on each transport. */
const operations: Record<string, { permission: Permission; call: () => Call }> = {
  "Mutation.createComment": {
    permission: "comment:create",
    call: () => {
      const args = { content: "hi", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] };
      return {
        rest: ["POST", "/v1/comments", args],
        gql: [
          "mutation($content: String!, $entityId: ID!, $entityType: CommentEntityType!, $userId: ID) { createComment(content: $content, entityId: $entityId, entityType: $entityType, userId: $userId) { id } }",
          args,
        ],
      };
    },
  },
  "Query.comments": {
    permission: "comment:read",
    call: () => ({
      rest: ["GET", `/v1/comments?entityId=${org.taskIds[0]}&entityType=task`],
      gql: ["query($id: ID!) { comments(entityId: $id, entityType: task) { nextCursor } }", { id: org.taskIds[0] }],
    }),
  },
  "Query.attachment": {
    permission: "comment:read",
    call: () => ({
      rest: ["GET", `/v1/attachments/${attachmentId}`],
      gql: ["query($id: ID!) { attachment(id: $id) { id } }", { id: attachmentId }],
    }),
  },
  "Mutation.unlinkDevice": {
    permission: "member:update",
    call: () => ({
      rest: ["PATCH", `/v1/people/${org.memberIds[3]}/unlink-device`],
      gql: ["mutation($id: ID!) { unlinkDevice(id: $id) { id } }", { id: org.memberIds[3] }],
    }),
  },
  "Mutation.createMember": {
    permission: "member:create",
    call: () => {
      const args = { email: `m${unique()}@example.com`, name: "M", role: "employee" };
      return {
        rest: ["POST", "/v1/people", args],
        gql: [
          "mutation($email: String!, $name: String!, $role: MemberRole!) { createMember(email: $email, name: $name, role: $role) { id } }",
          { ...args, email: `g${args.email}` },
        ],
      };
    },
  },
  "Query.members": {
    permission: "member:read",
    call: () => ({ rest: ["GET", "/v1/people"], gql: ["{ members { nextCursor } }", {}] }),
  },
  "Query.member": {
    permission: "member:read",
    call: () => ({
      rest: ["GET", `/v1/people/${org.memberIds[3]}`],
      gql: ["query($id: ID!) { member(id: $id) { id } }", { id: org.memberIds[3] }],
    }),
  },
  "Mutation.updateMember": {
    permission: "member:update",
    call: () => ({
      rest: ["PATCH", `/v1/people/${org.memberIds[3]}`, { jobTitle: "Engineer" }],
      gql: ['mutation($id: ID!) { updateMember(id: $id, jobTitle: "Engineer II") { id } }', { id: org.memberIds[3] }],
    }),
  },
  "Mutation.createTask": {
    permission: "task:create",
    call: () => ({ rest: ["POST", "/v1/tasks", { title: "T" }], gql: ['mutation { createTask(title: "T") { id } }', {}] }),
  },
  "Query.tasks": { permission: "task:read", call: () => ({ rest: ["GET", "/v1/tasks"], gql: ["{ tasks { nextCursor } }", {}] }) },
  "Query.task": {
    permission: "task:read",
    call: () => ({
      rest: ["GET", `/v1/tasks/${org.taskIds[0]}`],
      gql: ["query($id: ID!) { task(taskId: $id) { id } }", { id: org.taskIds[0] }],
    }),
  },
  "Mutation.updateTask": {
    permission: "task:update",
    call: () => ({
      rest: ["PATCH", `/v1/tasks/${org.taskIds[1]}`, { status: "in_progress" }],
      gql: ["mutation($id: ID!) { updateTask(taskId: $id, status: todo) { id } }", { id: org.taskIds[1] }],
    }),
  },
  "Mutation.createVendor": {
    permission: "vendor:create",
    call: () => ({ rest: ["POST", "/v1/vendors", { name: "V" }], gql: ['mutation { createVendor(name: "V") { id } }', {}] }),
  },
  "Mutation.createRisk": {
    permission: "risk:create",
    call: () => ({ rest: ["POST", "/v1/risks", { title: "R" }], gql: ['mutation { createRisk(title: "R") { id } }', {}] }),
  },
  "Mutation.createTaskItem": {
    permission: "task:create",
    call: () => {
      const args = { title: "I", entityId: org.vendorIds[0], entityType: "vendor" };
      return {
        rest: ["POST", "/v1/task-management", args],
        gql: [
          "mutation($title: String!, $entityId: ID!, $entityType: TaskItemEntityType!) { createTaskItem(title: $title, entityId: $entityId, entityType: $entityType) { id } }",
          args,
        ],
      };
    },
  },
  "Query.taskItems": {
    permission: "task:read",
    call: () => ({
      rest: ["GET", `/v1/task-management?entityId=${org.vendorIds[0]}&entityType=vendor`],
      gql: ["query($id: ID!) { taskItems(entityId: $id, entityType: vendor) { nextCursor } }", { id: org.vendorIds[0] }],
    }),
  },
  "Query.taskItemStats": {
    permission: "task:read",
    call: () => ({
      rest: ["GET", `/v1/task-management/stats?entityId=${org.vendorIds[0]}&entityType=vendor`],
      gql: ["query($id: ID!) { taskItemStats(entityId: $id, entityType: vendor) { total } }", { id: org.vendorIds[0] }],
    }),
  },
  "Mutation.updateTaskItem": {
    permission: "task:update",
    call: () => ({
      rest: ["PATCH", `/v1/task-management/${org.taskItemIds[0]}`, { priority: "high" }],
      gql: ["mutation($id: ID!) { updateTaskItem(id: $id, priority: low) { id } }", { id: org.taskItemIds[0] }],
    }),
  },
  "Mutation.createPolicy": {
    permission: "policy:create",
    call: () => ({ rest: ["POST", "/v1/policies", { name: "P" }], gql: ['mutation { createPolicy(name: "P") { id } }', {}] }),
  },
  "Query.policy": {
    permission: "policy:read",
    call: () => ({
      rest: ["GET", `/v1/policies/${org.policyIds[0]}`],
      gql: ["query($id: ID!) { policy(id: $id) { id } }", { id: org.policyIds[0] }],
    }),
  },
  "Query.policyVersions": {
    permission: "policy:read",
    call: () => ({
      rest: ["GET", `/v1/policies/${org.policyIds[0]}/versions`],
      gql: ["query($id: ID!) { policyVersions(id: $id) { nextCursor } }", { id: org.policyIds[0] }],
    }),
  },
  "Mutation.createPolicyVersion": {
    permission: "policy:update",
    call: () => ({
      rest: ["POST", `/v1/policies/${org.policyIds[0]}/versions`, {}],
      gql: ["mutation($id: ID!) { createPolicyVersion(id: $id) { version } }", { id: org.policyIds[0] }],
    }),
  },
  "Query.auditEvents": {
    permission: "audit:read",
    call: () => ({ rest: ["GET", "/v1/audit-events"], gql: ["{ auditEvents { nextCursor } }", {}] }),
  },
};

type Credential = { name: string; headers: () => Record<string, string>; holds: (p: Permission) => boolean };
const credentials: Credential[] = [];

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
  const comment = await t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: {
      content: "x",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: org.userIds[0],
      attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: "YQ==" }],
    },
  });
  attachmentId = comment.body.attachments[0].id;
  for (const role of Object.keys(rolePermissions) as MemberRole[]) {
    const { userId } = await createUser(t.db, {
      email: `${role}.${unique()}@example.com`,
      name: role,
      organizationId: org.organizationId,
      role,
    });
    const { token } = await createSession(t.db, userId, 3_600_000);
    credentials.push({
      name: `a session of a ${role}`,
      headers: () => ({ authorization: `Bearer ${token}`, "x-organization-id": org.organizationId }),
      holds: (p) => rolePermissions[role].includes(p),
    });
  }
});
afterAll(() => t.close());

describe("permissions", () => {
  it("the matrix covers every REST route", () => {
    expect(Object.keys(operations).sort()).toEqual(Object.keys(restRoutes).sort());
  });

  it.each(Object.keys(rolePermissions))("grants and refuses by role: %s", async (role) => {
    const credential = credentials.find((c) => c.name.endsWith(` ${role}`)) as Credential;
    for (const [field, { permission, call }] of Object.entries(operations)) {
      await expectOutcome(field, call(), credential.headers(), credential.holds(permission));
    }
  });

  it("grants an API key exactly its scopes", async () => {
    for (const [field, { permission, call }] of Object.entries(operations)) {
      // Granting a role needs every permission of that role: createMember makes an employee.
      const grants = field === "Mutation.createMember" ? rolePermissions.employee : [];
      const only = await t.keyWith(org.organizationId, [permission, ...grants]);
      await expectOutcome(field, call(), { "x-api-key": only.key }, true);
      const allBut = await t.keyWith(
        org.organizationId,
        permissions.filter((p) => p !== permission),
      );
      await expectOutcome(field, call(), { "x-api-key": allBut.key }, false);
    }
  });
});

async function expectOutcome(field: string, call: Call, headers: Record<string, string>, allowed: boolean) {
  const [method, path, body] = call.rest;
  const rest = await t.rest(method, path, { headers, body });
  const gql = await t.gql(call.gql[0], call.gql[1], { headers });
  const gqlCode = gql.body.errors?.[0]?.extensions?.code;
  const label = `${field} (${allowed ? "allowed" : "refused"}): REST ${rest.status} ${rest.text.slice(0, 200)} / GraphQL ${JSON.stringify(gql.body).slice(0, 200)}`;
  if (allowed) {
    expect(rest.status, label).toBeLessThan(300);
    expect(gqlCode, label).toBeUndefined();
  } else {
    expect(rest.status, label).toBe(403);
    expect(rest.body.code, label).toBe("FORBIDDEN");
    expect(gqlCode, label).toBe("FORBIDDEN");
  }
}
