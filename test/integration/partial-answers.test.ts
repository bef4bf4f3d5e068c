import { getNamedType, isObjectType } from "graphql";
import { describe, expect, it } from "vitest";
import { schema } from "../../src/schema.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, keyWith } = await openFixture({ organizations: 1 });
// A real endpoint, so that its refused delivery log is refused for the permission, not for a missing record.
const hook = await t.rest("POST", "/v1/webhook-endpoints", { key: org.apiKey, body: { url: "https://hooks.example.com/in" } });
const control = await t.rest("POST", "/v1/controls", { key: org.apiKey, body: { code: "PA-01", name: "Partial answers" } });
const framework = await t.db.framework.findFirstOrThrow({ where: { organizationId: null }, select: { id: true } });

/** Every root field answering a page type, with the arguments it needs. */
const listRoots = Object.values(schema.getQueryType()?.getFields() ?? {}).filter((field) =>
  getNamedType(field.type).name.endsWith("Connection"),
);

function call(name: string): string {
  const args: Record<string, string> = {
    comments: `(entityId: "${org.taskIds[0]}", entityType: task)`,
    controlEvidence: `(controlId: "${control.body.id}")`,
    frameworkRequirements: `(id: "${framework.id}")`,
    vendorEvidence: `(vendorId: "${org.vendorIds[0]}")`,
    policyVersions: `(id: "${org.policyIds[0]}")`,
    taskItems: `(entityId: "${org.vendorIds[0]}", entityType: vendor)`,
    webhookDeliveries: `(id: "${hook.body.id}")`,
  };
  return `${name}${args[name] ?? ""} { items { id } nextCursor }`;
}

describe("a refused list", () => {
  it("covers every list root of the schema", () => {
    expect(hook.status, hook.text).toBe(201);
    expect(control.status, control.text).toBe(201);
    expect(listRoots.map((f) => f.name).sort()).toEqual(
      [
        "auditCheckpoints",
        "auditEvents",
        "comments",
        "controlEvidence",
        "controls",
        "evidenceRequests",
        "frameworkRequirements",
        "frameworks",
        "members",
        "notifications",
        "policies",
        "policyVersions",
        "risks",
        "taskItems",
        "tasks",
        "vendorEvidence",
        "vendors",
        "webhookDeliveries",
        "webhookEndpoints",
      ].sort(),
    );
    for (const field of listRoots) {
      expect(isObjectType(field.type), `${field.name} must be nullable`).toBe(true);
    }
  });

  it("is null with FORBIDDEN at its path, and the viewer and every other root still answer", async () => {
    const key = await keyWith(["comment:create"]);
    const query = `{ viewer { permissions } ${listRoots.map((f) => call(f.name)).join(" ")} }`;
    const res = await t.gql(query, {}, { key });
    expect(res.status).toBe(200);
    expect(res.body.data, JSON.stringify(res.body.errors)).toBeDefined();
    expect(res.body.data.viewer.permissions).toEqual(["comment:create"]);
    for (const field of listRoots) expect(res.body.data[field.name], field.name).toBeNull();
    const refused = res.body.errors.map((e: { path: string[]; extensions: { code: string } }) => [e.path, e.extensions.code]);
    expect(refused.sort()).toEqual(listRoots.map((f) => [[f.name], "FORBIDDEN"]).sort());
  });

  it("leaves the lists the caller may read", async () => {
    const key = await keyWith(["task:read"]);
    const res = await t.gql("{ viewer { permissions } members { items { id } } tasks { items { id } } }", {}, { key });
    expect(res.status).toBe(200);
    expect(res.body.data.members).toBeNull();
    expect(res.body.data.tasks.items.length).toBeGreaterThan(0);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: ["members"], extensions: { code: "FORBIDDEN" } })]);
  });

  it("stays a 403 over REST", async () => {
    const key = await keyWith(["task:read"]);
    const res = await t.rest("GET", "/v1/people", { key });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
  });
});
