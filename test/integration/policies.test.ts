import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org } = await openFixture({ organizations: 1 });

const createVersion = `mutation($id: ID!, $sourceVersionId: ID, $changelog: String) {
  createPolicyVersion(id: $id, sourceVersionId: $sourceVersionId, changelog: $changelog) { versionId version }
}`;

describe("create policy version", () => {
  it("answers 201 with the new draft's id and number, copying the current version", async () => {
    // Its own organization: other tests add versions to the shared one's policies.
    const org = await t.seedOrg();
    const policyId = org.policyIds[0] as string;
    const res = await t.rest("POST", `/v1/policies/${policyId}/versions`, {
      key: org.apiKey,
      body: { changelog: "Tighten wording" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ versionId: expect.stringMatching(/^pv_/), version: 2 });
    const created = await t.db.policyVersion.findUniqueOrThrow({ where: { id: res.body.versionId } });
    const current = await t.db.policy.findUniqueOrThrow({ where: { id: policyId }, include: { currentVersion: true } });
    expect(created).toMatchObject({
      status: "draft",
      changelog: "Tighten wording",
      policyId,
      sourceVersionId: current.currentVersionId,
    });
    expect(created.content).toEqual(current.currentVersion?.content);
    expect(current.currentVersion?.version).toBe(1);
    const audit = await t.db.auditEvent.findFirst({ where: { action: "policy.version_created", entityId: policyId } });
    expect(audit?.data).toMatchObject({ version: 2, versionId: res.body.versionId });
  });

  it("accepts an empty body and no body at all", async () => {
    const org = await t.seedOrg();
    const policyId = org.policyIds[1] as string;
    const none = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey });
    expect(none.status).toBe(201);
    const empty = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: {} });
    expect(empty.status).toBe(201);
    expect([none.body.version, empty.body.version]).toEqual([2, 3]);
  });

  it("bases the draft on the given source version", async () => {
    const org = await t.seedOrg();
    const policyId = org.policyIds[1] as string;
    expect((await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey })).body.version).toBe(2);
    const source = await t.db.policyVersion.findFirstOrThrow({ where: { policyId, version: 2 } });
    await t.db.policyVersion.update({
      where: { id: source.id },
      data: { content: [{ type: "paragraph", text: "edited draft" }] },
    });
    const res = await t.gql(createVersion, { id: policyId, sourceVersionId: source.id }, { key: org.apiKey });
    expect(res.body.errors).toBeUndefined();
    const created = await t.db.policyVersion.findUniqueOrThrow({ where: { id: res.body.data.createPolicyVersion.versionId } });
    expect(created.content).toEqual([{ type: "paragraph", text: "edited draft" }]);
    expect(created.sourceVersionId).toBe(source.id);
  });

  it("answers 404 for an unknown policy and for a source version of another policy", async () => {
    expect((await t.rest("POST", "/v1/policies/pol_missing/versions", { key: org.apiKey, body: {} })).status).toBe(404);
    const other = await t.db.policyVersion.findFirstOrThrow({ where: { policyId: org.policyIds[1] } });
    const res = await t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions`, {
      key: org.apiKey,
      body: { sourceVersionId: other.id },
    });
    expect(res.status).toBe(404);
    expect(res.body.message).toContain(other.id);
  });

  it("validates changelog and field types", async () => {
    const path = `/v1/policies/${org.policyIds[0]}/versions`;
    const long = await t.rest("POST", path, { key: org.apiKey, body: { changelog: "x".repeat(10_001) } });
    expect(long.status).toBe(400);
    expect(long.body.details).toEqual([{ path: "changelog", message: expect.any(String) }]);
    expect((await t.rest("POST", path, { key: org.apiKey, body: { changelog: 5 } })).status).toBe(400);
    expect((await t.rest("POST", path, { key: org.apiKey, body: { sourceVersionId: "" } })).status).toBe(400);
    expect((await t.rest("POST", path, { key: org.apiKey, body: { content: [] } })).status).toBe(400);
  });

  it("never reuses a number, even after the highest draft is deleted", async () => {
    const policyId = org.policyIds[0] as string;
    const first = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: {} });
    await t.db.policyVersion.delete({ where: { id: first.body.versionId } });
    const next = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: {} });
    expect(next.body.version).toBe(first.body.version + 1);
  });

  it("gives 30 concurrent requests 30 distinct consecutive numbers and no error", async () => {
    const policy = await t.db.policy.create({
      data: { id: `pol_concurrent_${Date.now()}`, organizationId: org.organizationId, name: "Concurrency", lastVersionNumber: 0 },
    });
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 2
          ? t.rest("POST", `/v1/policies/${policy.id}/versions`, { key: org.apiKey, body: {} })
          : t
              .gql(createVersion, { id: policy.id }, { key: org.apiKey })
              .then((r) => ({ status: r.body.errors ? 500 : 201, body: r.body.data?.createPolicyVersion })),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(30).fill(201));
    const numbers = results.map((r) => r.body.version).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });
});
