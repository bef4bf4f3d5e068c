import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org } = await openFixture({ organizations: 1 });

const stats = `query($entityId: ID!, $entityType: TaskItemEntityType!) {
  taskItemStats(entityId: $entityId, entityType: $entityType) { total byStatus { todo in_progress in_review done canceled } }
}`;

describe("task item statistics", () => {
  it("counts the items of a vendor by status, with all five keys", async () => {
    const res = await t.rest("GET", `/v1/task-management/stats?entityId=${org.vendorIds[0]}&entityType=vendor`, {
      key: org.apiKey,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ total: 3, byStatus: { todo: 1, in_progress: 0, in_review: 1, done: 1, canceled: 0 } });
  });

  it("answers zeros for a vendor without items, and the same over GraphQL", async () => {
    const rest = await t.rest("GET", `/v1/task-management/stats?entityId=${org.vendorIds[1]}&entityType=vendor`, {
      key: org.apiKey,
    });
    expect(rest.body).toEqual({ total: 0, byStatus: { todo: 0, in_progress: 0, in_review: 0, done: 0, canceled: 0 } });
    const gql = await t.gql(stats, { entityId: org.riskIds[0], entityType: "risk" }, { key: org.apiKey });
    expect(gql.body.data.taskItemStats).toEqual({
      total: 1,
      byStatus: { todo: 0, in_progress: 1, in_review: 0, done: 0, canceled: 0 },
    });
  });

  it("answers 400 for another entity type or missing parameters", async () => {
    for (const query of [
      `entityId=${org.taskIds[0]}&entityType=task`,
      `entityId=${org.vendorIds[0]}`,
      "entityType=vendor",
      `entityId=${org.vendorIds[0]}&entityId=x&entityType=vendor`,
    ]) {
      const res = await t.rest("GET", `/v1/task-management/stats?${query}`, { key: org.apiKey });
      expect(res.status, query).toBe(400);
      expect(res.body.code).toBe("BAD_USER_INPUT");
    }
  });

  it("answers 404 for an unknown entity or one of the other type", async () => {
    expect(
      (await t.rest("GET", "/v1/task-management/stats?entityId=vnd_missing&entityType=vendor", { key: org.apiKey })).status,
    ).toBe(404);
    expect(
      (await t.rest("GET", `/v1/task-management/stats?entityId=${org.vendorIds[0]}&entityType=risk`, { key: org.apiKey })).status,
    ).toBe(404);
  });

  it("counts with one grouped query", async () => {
    const { statements } = await t.countQueries(() =>
      t.rest("GET", `/v1/task-management/stats?entityId=${org.vendorIds[0]}&entityType=vendor`, { key: org.apiKey }),
    );
    expect(statements.filter((s) => s.includes('"TaskItem"'))).toHaveLength(1);
  });
});
