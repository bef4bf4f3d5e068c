import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org: victim, other: intruder } = await openFixture();

async function snapshot(organizationId: string) {
  const where = { where: { organizationId } };
  return JSON.stringify(
    await Promise.all([
      t.db.member.findMany({ ...where, orderBy: { id: "asc" } }),
      t.db.device.findMany({ ...where, orderBy: { id: "asc" } }),
      t.db.comment.findMany({ ...where, orderBy: { id: "asc" } }),
      t.db.policy.findMany({ ...where, orderBy: { id: "asc" } }),
      t.db.policyVersion.findMany({ ...where, orderBy: { id: "asc" } }),
      t.db.auditEvent.findMany({ ...where, orderBy: { id: "asc" } }),
    ]),
  );
}

describe("isolation between organizations", () => {
  it("answers 404 for every operation on the other organization's ids, on both transports, and changes nothing", async () => {
    const before = await snapshot(victim.organizationId);
    const key = intruder.apiKey;
    const rest = [
      await t.rest("GET", `/v1/tasks/${victim.taskIds[0]}`, { key }),
      await t.rest("PATCH", `/v1/people/${victim.memberIds[0]}/unlink-device`, { key }),
      await t.rest("POST", `/v1/policies/${victim.policyIds[0]}/versions`, { key, body: {} }),
      await t.rest("GET", `/v1/task-management/stats?entityId=${victim.vendorIds[0]}&entityType=vendor`, { key }),
      await t.rest("POST", "/v1/comments", {
        key,
        body: { content: "x", entityId: victim.taskIds[0], entityType: "task", userId: intruder.userIds[0] },
      }),
      await t.rest("POST", "/v1/comments", {
        key,
        body: { content: "x", entityId: intruder.taskIds[0], entityType: "task", userId: victim.userIds[0] },
      }),
    ];
    expect(rest.map((r) => r.status)).toEqual([404, 404, 404, 404, 404, 404]);
    const gql = [
      await t.gql(`query($id: ID!) { task(taskId: $id) { id } }`, { id: victim.taskIds[0] }, { key }),
      await t.gql(`mutation($id: ID!) { unlinkDevice(id: $id) { id } }`, { id: victim.memberIds[0] }, { key }),
      await t.gql(`mutation($id: ID!) { createPolicyVersion(id: $id) { version } }`, { id: victim.policyIds[0] }, { key }),
      await t.gql(
        `query($id: ID!) { taskItemStats(entityId: $id, entityType: risk) { total } }`,
        { id: victim.riskIds[0] },
        { key },
      ),
      await t.gql(
        `mutation($id: ID!, $u: ID!) { createComment(content: "x", entityId: $id, entityType: policy, userId: $u) { id } }`,
        {
          id: victim.policyIds[0],
          u: intruder.userIds[0],
        },
        { key },
      ),
    ];
    expect(gql.map((r) => r.body.errors?.[0]?.extensions?.code)).toEqual(Array(5).fill("NOT_FOUND"));
    const source = await t.db.policyVersion.findFirstOrThrow({ where: { policyId: victim.policyIds[0] } });
    const crossSource = await t.rest("POST", `/v1/policies/${intruder.policyIds[0]}/versions`, {
      key,
      body: { sourceVersionId: source.id },
    });
    expect(crossSource.status).toBe(404);
    expect(await snapshot(victim.organizationId)).toBe(before);
  });
});
