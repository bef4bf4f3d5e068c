import { afterAll, describe, expect, it } from "vitest";
import { seedDemo } from "../../src/admin/seed.js";
import { openDatabase } from "../../src/platform/db/database.js";
import { createTestApp } from "../helpers/test-app.js";

// The other files open copies of an embedded database migrated before they start. A database
// migrated by the process itself (a first start, or a start that applies a new migration) differs:
// the embedded database learns the array types of the enums the migrations made only at its next
// start, and a list page that bound an enum array answered 500 until then.
const database = await openDatabase({ kind: "embedded" });
const t = await createTestApp({ database });
const org = await seedDemo(database.db, "Fresh");
afterAll(() => database.close());

describe("an embedded database migrated by this process", () => {
  it("answers the lists that bind their parents as arrays, on both transports", async () => {
    const taskId = org.taskIds[0] as string;
    const vendorId = org.vendorIds[0] as string;
    const created = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: "first", entityType: "vendor", entityId: vendorId, userId: org.userIds[0] },
    });
    expect(created.status).toBe(201);
    const rest = await t.rest("GET", `/v1/comments?entityType=task&entityId=${taskId}`, { key: org.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body.items).toEqual([]);
    const gql = await t.gql(
      `query($ids: [ID!]!) { nodes(ids: $ids) { ... on Vendor { taskItemStats { total } comments(limit: 2) { totalCount items { content } } } } }`,
      { ids: [vendorId] },
      { key: org.apiKey },
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.nodes[0].comments).toEqual({ totalCount: 1, items: [{ content: "first" }] });
    expect(gql.body.data.nodes[0].taskItemStats.total).toBeGreaterThanOrEqual(0);
  });
});
