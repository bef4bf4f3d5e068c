import { describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { openFixture } from "../helpers/fixtures.js";

const { t } = await openFixture({ organizations: 0 });

/** A fresh organization with session headers for its owner (0) and admin (1). */
async function team() {
  const org = await t.seedOrg();
  const headers = async (i: number) => {
    const session = await createSession(t.db, org.userIds[i] as string, 3_600_000);
    return { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
  };
  return { org, owner: await headers(0), admin: await headers(1) };
}

const step = (policyId: string, versionId: string, action: string) => `/v1/policies/${policyId}/versions/${versionId}/${action}`;

async function draftBy(org: SeedResult, opts: { headers?: Record<string, string>; key?: string }) {
  const policy = await t.rest("POST", "/v1/policies", { key: org.apiKey, body: { name: "Change management" } });
  expect(policy.status).toBe(201);
  const created = await t.rest("POST", `/v1/policies/${policy.body.id}/versions`, { ...opts, body: {} });
  expect(created.status).toBe(201);
  return { policyId: policy.body.id as string, versionId: created.body.versionId as string };
}

const submitGql = `mutation($id: ID!, $v: ID!, $a: ID!) { submitPolicyVersion(id: $id, versionId: $v, approverId: $a) { id status } }`;
const approveGql = `mutation($id: ID!, $v: ID!) { approvePolicyVersion(id: $id, versionId: $v) { id status } }`;
const rejectGql = `mutation($id: ID!, $v: ID!) { rejectPolicyVersion(id: $id, versionId: $v, reason: "no") { id status } }`;

describe("four eyes in the policy review", () => {
  it("refuses, with 400 on both transports, an approver who created the version or is submitting it", async () => {
    const { org, owner, admin } = await team();
    const { policyId, versionId } = await draftBy(org, { headers: owner });
    const ownerMember = org.memberIds[0] as string;

    // The owner created it and names themself.
    const self = await t.rest("POST", step(policyId, versionId, "submit"), { headers: owner, body: { approverId: ownerMember } });
    expect(self.status).toBe(400);
    expect(self.body.code).toBe("BAD_USER_INPUT");
    expect(self.body.message).toMatch(/four eyes/);
    expect(self.body.details).toEqual([{ path: "approverId", message: expect.stringMatching(/creator and submitter/) }]);

    // The admin submits, naming the owner who created it.
    const creator = await t.gql(submitGql, { id: policyId, v: versionId, a: ownerMember }, { headers: admin });
    expect(creator.body.data?.submitPolicyVersion ?? null).toBeNull();
    expect(creator.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect(creator.body.errors[0].message).toMatch(/the version's creator/);

    // The admin names themself (neither created it, but is submitting it).
    const submitter = await t.rest("POST", step(policyId, versionId, "submit"), {
      headers: admin,
      body: { approverId: org.memberIds[1] },
    });
    expect(submitter.status).toBe(400);
    expect(submitter.body.message).toMatch(/you, the submitter/);

    const version = await t.db.policyVersion.findUniqueOrThrow({ where: { id: versionId } });
    expect(version).toMatchObject({ status: "draft", approverId: null, submittedByUserId: null });
  });

  it("records creator and submitter, readable as members in the graph; another member approves; every step's audit event names its actor", async () => {
    const { org, owner, admin } = await team();
    const { policyId, versionId } = await draftBy(org, { headers: owner });
    const submitted = await t.rest("POST", step(policyId, versionId, "submit"), {
      headers: owner,
      body: { approverId: org.memberIds[1] },
    });
    expect(submitted.status).toBe(200);

    const read = await t.gql(
      `query($id: ID!) { policyVersions(id: $id, limit: 1) { items { id createdBy { id } submittedBy { id } } } }`,
      { id: policyId },
      { headers: owner },
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data.policyVersions.items).toEqual([
      { id: versionId, createdBy: { id: org.memberIds[0] }, submittedBy: { id: org.memberIds[0] } },
    ]);

    const approved = await t.gql(approveGql, { id: policyId, v: versionId }, { headers: admin });
    expect(approved.body.errors).toBeUndefined();
    expect(approved.body.data.approvePolicyVersion).toEqual({ id: versionId, status: "published" });

    const events = await t.db.auditEvent.findMany({
      where: { entityId: policyId, action: { startsWith: "policy.version_" } },
      orderBy: { createdAt: "asc" },
    });
    expect(events.map((e) => [e.action, e.actorUserId])).toEqual([
      ["policy.version_created", org.userIds[0]],
      ["policy.version_submitted", org.userIds[0]],
      ["policy.version_approved", org.userIds[1]],
    ]);
    expect(events[1]?.data).toMatchObject({ approverId: org.memberIds[1], submittedByUserId: org.userIds[0] });
    expect(events[2]?.data).toMatchObject({
      approverId: org.memberIds[1],
      createdByUserId: org.userIds[0],
      submittedByUserId: org.userIds[0],
    });
  });

  it("answers 403 on both transports when the named approver created or submitted the version (one submitted before the rule)", async () => {
    const { org, owner, admin } = await team();
    for (const role of ["createdByUserId", "submittedByUserId"] as const) {
      const { policyId, versionId } = await draftBy(org, { key: org.apiKey });
      const submitted = await t.rest("POST", step(policyId, versionId, "submit"), {
        headers: owner,
        body: { approverId: org.memberIds[1] },
      });
      expect(submitted.status).toBe(200);
      // As a version submitted before four eyes was enforced: the approver is its creator or submitter.
      await t.db.policyVersion.update({ where: { id: versionId }, data: { [role]: org.userIds[1] } });

      const approve = await t.rest("POST", step(policyId, versionId, "approve"), { headers: admin });
      expect(approve.status, role).toBe(403);
      expect(approve.body.code).toBe("FORBIDDEN");
      expect(approve.body.message).toMatch(/Four eyes/);
      const reject = await t.rest("POST", step(policyId, versionId, "reject"), { headers: admin, body: { reason: "no" } });
      expect(reject.status, role).toBe(403);
      for (const query of [approveGql, rejectGql]) {
        const res = await t.gql(query, { id: policyId, v: versionId }, { headers: admin });
        expect(res.body.errors?.[0]?.extensions.code, role).toBe("FORBIDDEN");
      }
      const version = await t.db.policyVersion.findUniqueOrThrow({ where: { id: versionId } });
      expect(version.status).toBe("in_review");
    }
  });

  it("tells an organization's only member who may approve why they cannot approve their own change", async () => {
    const { org, owner } = await team();
    // Only the owner may approve: the admin leaves.
    await t.db.member.update({ where: { id: org.memberIds[1] }, data: { isActive: false } });
    const { policyId, versionId } = await draftBy(org, { headers: owner });
    const res = await t.rest("POST", step(policyId, versionId, "submit"), {
      headers: owner,
      body: { approverId: org.memberIds[0] },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
    expect(res.body.message).toMatch(/no other active member who may approve policies/);
    expect((await t.db.policyVersion.findUniqueOrThrow({ where: { id: versionId } })).status).toBe("draft");
  });

  it("records no one for an API key alone: any named member who may approve does", async () => {
    const { org, owner } = await team();
    const { policyId, versionId } = await draftBy(org, { key: org.apiKey });
    const submitted = await t.rest("POST", step(policyId, versionId, "submit"), {
      key: org.apiKey,
      body: { approverId: org.memberIds[0] },
    });
    expect(submitted.status).toBe(200);
    const version = await t.db.policyVersion.findUniqueOrThrow({ where: { id: versionId } });
    expect(version).toMatchObject({ createdByUserId: null, submittedByUserId: null, submittedByKeyId: expect.any(String) });
    const read = await t.gql(
      `query($id: ID!) { policyVersions(id: $id, limit: 1) { items { createdBy { id } submittedBy { id } } } }`,
      { id: policyId },
      { key: org.apiKey },
    );
    expect(read.body.data.policyVersions.items).toEqual([{ createdBy: null, submittedBy: null }]);
    expect((await t.rest("POST", step(policyId, versionId, "approve"), { headers: owner })).status).toBe(200);
  });
});
