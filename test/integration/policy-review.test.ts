import { beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();
/** Session headers: the owner (0), the admin (1), the auditor (2). */
const as: Record<"owner" | "admin" | "auditor", Record<string, string>> = { owner: {}, admin: {}, auditor: {} };

beforeAll(async () => {
  for (const [role, i] of [
    ["owner", 0],
    ["admin", 1],
    ["auditor", 2],
  ] as const) {
    const session = await createSession(t.db, org.userIds[i] as string, 3_600_000);
    as[role] = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
  }
});

const ownerMember = () => org.memberIds[0] as string;
const adminMember = () => org.memberIds[1] as string;

async function newPolicy() {
  const res = await t.rest("POST", "/v1/policies", {
    key: org.apiKey,
    body: { name: "Access control", content: [{ type: "p" }] },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function draft(policyId: string) {
  const res = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: org.apiKey, body: { changelog: "Tighten" } });
  expect(res.status).toBe(201);
  return res.body as { versionId: string; version: number };
}

const step = (policyId: string, versionId: string, action: string) => `/v1/policies/${policyId}/versions/${versionId}/${action}`;

async function policyRow(id: string) {
  return t.db.policy.findUniqueOrThrow({ where: { id }, select: { status: true, currentVersionId: true } });
}

describe("policy review", () => {
  it("submit → approve publishes the version and makes it current, auditing every step", async () => {
    const policyId = await newPolicy();
    const first = await policyRow(policyId);
    const { versionId, version } = await draft(policyId);
    expect(version).toBe(2);

    const submitted = await t.rest("POST", step(policyId, versionId, "submit"), {
      key: org.apiKey,
      body: { approverId: adminMember() },
    });
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ id: versionId, status: "in_review", approverId: adminMember(), publishedAt: null });
    expect(await policyRow(policyId)).toEqual({ status: "needs_review", currentVersionId: first.currentVersionId });

    const approved = await t.rest("POST", step(policyId, versionId, "approve"), { headers: as.admin });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ id: versionId, status: "published", approverId: adminMember() });
    expect(new Date(approved.body.publishedAt).getTime()).toBeGreaterThan(0);
    expect(await policyRow(policyId)).toEqual({ status: "published", currentVersionId: versionId });

    const actions = (await t.db.auditEvent.findMany({ where: { entityId: policyId }, orderBy: { createdAt: "asc" } })).map(
      (e) => [e.action, e.actorUserId],
    );
    expect(actions).toEqual([
      ["policy.created", null],
      ["policy.version_created", null],
      ["policy.version_submitted", null],
      ["policy.version_approved", org.userIds[1]],
    ]);
  });

  it("reject sends the version back to draft with the reason; it can be submitted again, and numbers stay consecutive", async () => {
    const policyId = await newPolicy();
    const { versionId } = await draft(policyId);
    await t.rest("POST", step(policyId, versionId, "submit"), { key: org.apiKey, body: { approverId: ownerMember() } });
    const rejected = await t.gql(
      "mutation($id: ID!, $v: ID!, $r: String!) { rejectPolicyVersion(id: $id, versionId: $v, reason: $r) { id status rejectionReason } }",
      { id: policyId, v: versionId, r: "Section 3 is vague" },
      { headers: as.owner },
    );
    expect(rejected.body.errors).toBeUndefined();
    expect(rejected.body.data.rejectPolicyVersion).toEqual({
      id: versionId,
      status: "draft",
      rejectionReason: "Section 3 is vague",
    });
    expect((await policyRow(policyId)).status).toBe("published");
    const event = await t.db.auditEvent.findFirst({ where: { entityId: policyId, action: "policy.version_rejected" } });
    expect(event?.data).toMatchObject({ versionId, reason: "Section 3 is vague" });

    const resubmitted = await t.rest("POST", step(policyId, versionId, "submit"), {
      key: org.apiKey,
      body: { approverId: ownerMember() },
    });
    expect(resubmitted.status).toBe(200);
    expect(resubmitted.body).toMatchObject({ status: "in_review", rejectionReason: null });
    expect((await draft(policyId)).version).toBe(3);
  });

  it("only the named approver, with a user credential, approves or rejects (403 otherwise)", async () => {
    const policyId = await newPolicy();
    const { versionId } = await draft(policyId);
    await t.rest("POST", step(policyId, versionId, "submit"), { key: org.apiKey, body: { approverId: adminMember() } });
    for (const [name, opts] of [
      ["owner (not the approver)", { headers: as.owner }],
      ["API key", { key: org.apiKey }],
    ] as const) {
      const approve = await t.rest("POST", step(policyId, versionId, "approve"), opts);
      expect(approve.status, name).toBe(403);
      expect(approve.body.code).toBe("FORBIDDEN");
      const reject = await t.rest("POST", step(policyId, versionId, "reject"), { ...opts, body: { reason: "no" } });
      expect(reject.status, name).toBe(403);
    }
    // The auditor lacks policy:update altogether.
    expect((await t.rest("POST", step(policyId, versionId, "approve"), { headers: as.auditor })).status).toBe(403);
    const version = await t.db.policyVersion.findUniqueOrThrow({ where: { id: versionId } });
    expect(version.status).toBe("in_review");
  });

  it("follows the state rules: only drafts are submitted, only versions in review are approved or rejected (409)", async () => {
    const policyId = await newPolicy();
    const { versionId } = await draft(policyId);
    const current = (await policyRow(policyId)).currentVersionId as string;
    expect((await t.rest("POST", step(policyId, versionId, "approve"), { headers: as.admin })).status).toBe(409);
    expect((await t.rest("POST", step(policyId, versionId, "reject"), { headers: as.admin, body: { reason: "x" } })).status).toBe(
      409,
    );
    // A published version never changes: it cannot be submitted, approved or rejected again.
    const published = await t.db.policyVersion.findUniqueOrThrow({ where: { id: current } });
    const submitPublished = await t.rest("POST", step(policyId, current, "submit"), {
      key: org.apiKey,
      body: { approverId: adminMember() },
    });
    expect(submitPublished.status).toBe(409);
    expect(submitPublished.body.code).toBe("CONFLICT");
    expect((await t.rest("POST", step(policyId, current, "approve"), { headers: as.admin })).status).toBe(409);
    expect(await t.db.policyVersion.findUniqueOrThrow({ where: { id: current } })).toEqual(published);

    await t.rest("POST", step(policyId, versionId, "submit"), { key: org.apiKey, body: { approverId: adminMember() } });
    const twice = await t.rest("POST", step(policyId, versionId, "submit"), {
      key: org.apiKey,
      body: { approverId: adminMember() },
    });
    expect(twice.status).toBe(409);
    expect((await t.rest("POST", step(policyId, versionId, "approve"), { headers: as.admin })).status).toBe(200);
    expect((await t.rest("POST", step(policyId, versionId, "approve"), { headers: as.admin })).status).toBe(409);
  });

  it("refuses approvers that are missing, foreign or deactivated (404) or may not update policies (400)", async () => {
    const policyId = await newPolicy();
    const { versionId } = await draft(policyId);
    const submit = (approverId: string) =>
      t.rest("POST", step(policyId, versionId, "submit"), { key: org.apiKey, body: { approverId } });
    expect((await submit("mem_missing")).status).toBe(404);
    expect((await submit(other.memberIds[0] as string)).status).toBe(404);
    const auditor = await submit(org.memberIds[2] as string);
    expect(auditor.status).toBe(400);
    expect(auditor.body.details[0].path).toBe("approverId");
    const deactivated = await t.rest("POST", "/v1/people", {
      key: org.apiKey,
      body: { email: `gone-${Date.now()}@example.com`, name: "Gone", role: "admin" },
    });
    expect(deactivated.status).toBe(201);
    await t.rest("PATCH", `/v1/people/${deactivated.body.id}`, { key: org.apiKey, body: { isActive: false } });
    expect((await submit(deactivated.body.id)).status).toBe(404);
    const missingBody = await t.rest("POST", step(policyId, versionId, "submit"), { key: org.apiKey, body: {} });
    expect(missingBody.status).toBe(400);
    expect((await t.db.policyVersion.findUniqueOrThrow({ where: { id: versionId } })).status).toBe("draft");
  });

  it("is 404 for another organization's policy or version, and for a version of another policy", async () => {
    const policyId = await newPolicy();
    const { versionId } = await draft(policyId);
    const foreign = await t.rest("POST", step(policyId, versionId, "submit"), {
      key: other.apiKey,
      body: { approverId: other.memberIds[1] },
    });
    expect(foreign.status).toBe(404);
    const otherPolicy = await newPolicy();
    const mismatched = await t.rest("POST", step(otherPolicy, versionId, "submit"), {
      key: org.apiKey,
      body: { approverId: adminMember() },
    });
    expect(mismatched.status).toBe(404);
  });

  it("rejects a blank or over-long reason with 400", async () => {
    const policyId = await newPolicy();
    const { versionId } = await draft(policyId);
    await t.rest("POST", step(policyId, versionId, "submit"), { key: org.apiKey, body: { approverId: adminMember() } });
    for (const reason of ["  ", "x".repeat(2001)]) {
      const res = await t.rest("POST", step(policyId, versionId, "reject"), { headers: as.admin, body: { reason } });
      expect(res.status).toBe(400);
    }
  });

  it("replays an approval sent again with the same Idempotency-Key", async () => {
    const policyId = await newPolicy();
    const { versionId } = await draft(policyId);
    await t.rest("POST", step(policyId, versionId, "submit"), { key: org.apiKey, body: { approverId: adminMember() } });
    const headers = { ...as.admin, "idempotency-key": `approve-${versionId}` };
    const first = await t.rest("POST", step(policyId, versionId, "approve"), { headers });
    const retry = await t.rest("POST", step(policyId, versionId, "approve"), { headers });
    expect(first.status).toBe(200);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.body).toEqual(first.body);
  });

  it("concurrent approvals of two versions of one policy leave exactly one current, published version", async () => {
    for (let round = 0; round < 3; round++) {
      const policyId = await newPolicy();
      const a = await draft(policyId);
      const b = await draft(policyId);
      for (const v of [a, b]) {
        const res = await t.rest("POST", step(policyId, v.versionId, "submit"), {
          key: org.apiKey,
          body: { approverId: adminMember() },
        });
        expect(res.status).toBe(200);
      }
      const results = await Promise.all(
        [a, b].map((v) => t.rest("POST", step(policyId, v.versionId, "approve"), { headers: as.admin })),
      );
      expect(results.map((r) => r.status)).toEqual([200, 200]);
      const policy = await policyRow(policyId);
      expect(policy.status).toBe("published");
      expect([a.versionId, b.versionId]).toContain(policy.currentVersionId);
      const versions = await t.db.policyVersion.findMany({ where: { policyId }, orderBy: { version: "asc" } });
      expect(versions.map((v) => [v.version, v.status])).toEqual([
        [1, "published"],
        [2, "published"],
        [3, "published"],
      ]);
      // The audit trail names, for the later approval, the earlier one as the version it replaced.
      const approvals = await t.db.auditEvent.findMany({
        where: { entityId: policyId, action: "policy.version_approved" },
        orderBy: { createdAt: "asc" },
      });
      const replaced = approvals.map((e) => (e.data as { previousCurrentVersionId: string }).previousCurrentVersionId);
      expect(replaced).toContain(versions[0]?.id);
      expect(replaced.filter((id) => id === versions[0]?.id)).toHaveLength(1);
    }
  });

  it("lists versions with their review fields (REST may carry status, approverId, rejectionReason, publishedAt)", async () => {
    const policyId = await newPolicy();
    const { versionId } = await draft(policyId);
    await t.rest("POST", step(policyId, versionId, "submit"), { key: org.apiKey, body: { approverId: adminMember() } });
    const res = await t.rest("GET", `/v1/policies/${policyId}/versions`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.items[0]).toMatchObject({ id: versionId, status: "in_review", approverId: adminMember(), publishedAt: null });
    expect(res.body.items[1]).toMatchObject({ version: 1, status: "published", approverId: null });
  });
});
