import { createHash, randomBytes } from "node:crypto";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { createUser } from "../../src/admin/admin.service.js";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { deleteDueObjects } from "../../src/modules/comments/attachments.jobs.js";
import { openFixture } from "../helpers/fixtures.js";

// Contract section 16's evidence on both transports: files from section 15's uploads, accepted at
// once with control:update or vendor:update, submitted by a control's owner without it and reviewed
// by someone else; its audit events carry the file's SHA-256; its object goes after the deletion
// commits; its file is downloaded by whoever reads the evidence.

const { t, org, other, keyWith } = await openFixture();
const logger = pino({ level: "silent" });

let n = 0;
const pdf = () => Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(64)]);
type Auth = { key?: string; headers?: Record<string, string> };

/** An upload of `auth`'s caller with its bytes sent: its id. */
async function upload(auth: Auth, bytes = pdf()) {
  const created = await t.rest("POST", "/v1/attachment-uploads", {
    ...auth,
    body: {
      fileName: `report-${n++}.pdf`,
      fileType: "application/pdf",
      size: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("base64"),
    },
  });
  expect(created.status, created.text).toBe(201);
  const put = await t.app.fetch(
    new Request(created.body.uploadUrl, { method: "PUT", headers: created.body.headers, body: new Uint8Array(bytes) }),
  );
  expect(put.status).toBe(200);
  return { uploadId: created.body.id as string, sha256: createHash("sha256").update(bytes).digest("hex"), bytes };
}

async function person(seed: SeedResult, role: "employee" | "auditor" | "admin") {
  const { userId, memberId } = await createUser(t.db, {
    email: `${role}.${Date.now()}${n++}@example.com`,
    name: `A ${role}`,
    organizationId: seed.organizationId,
    role,
  });
  const { token } = await createSession(t.db, userId, 3_600_000);
  return {
    memberId: memberId as string,
    headers: { authorization: `Bearer ${token}`, "x-organization-id": seed.organizationId },
  };
}

async function control(seed: SeedResult, body: Record<string, unknown> = {}) {
  const created = await t.rest("POST", "/v1/controls", {
    key: seed.apiKey,
    body: { code: `EV-${Date.now().toString(36)}${n++}`, name: "Backups tested", ...body },
  });
  expect(created.status, created.text).toBe(201);
  return created.body.id as string;
}

const auditOf = (entityId: string) =>
  t.db.auditEvent.findMany({ where: { entityId }, orderBy: { sequence: "asc" }, select: { action: true, data: true } });

describe("evidence", () => {
  it("adds an upload as accepted evidence with control:update, validUntil from evidenceEveryDays, sha256 in its event", async () => {
    const controlId = await control(org, { evidenceEveryDays: 90 });
    const file = await upload({ key: org.apiKey });
    const collectedAt = new Date(Date.now() - 10 * 86_400_000).toISOString();
    const added = await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
      key: org.apiKey,
      body: { uploadId: file.uploadId, description: "Restore test", collectedAt },
    });
    expect(added.status, added.text).toBe(201);
    expect(added.body).toMatchObject({
      controlId,
      vendorId: null,
      status: "accepted",
      description: "Restore test",
      collectedAt,
      validUntil: new Date(Date.parse(collectedAt) + 90 * 86_400_000).toISOString(),
      submittedById: null,
      attachment: { sha256: file.sha256, type: "application/pdf", size: file.bytes.length },
    });
    expect(added.body.id).toMatch(/^evd_/);
    const [event] = await auditOf(added.body.id);
    expect(event).toMatchObject({ action: "evidence.added", data: { sha256: file.sha256, controlId, status: "accepted" } });
    // The same upload attaches once.
    const again = await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
      key: org.apiKey,
      body: { uploadId: file.uploadId },
    });
    expect(again.status).toBe(409);
    expect(again.body.details[0]).toEqual({
      path: "uploadId",
      message: "this upload is already attached: an upload is used once",
    });
    // The control's evidence, over both transports, with the file's download URL in the graph.
    const listed = await t.rest("GET", `/v1/controls/${controlId}/evidence`, { key: org.apiKey });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((e: { id: string }) => e.id)).toEqual([added.body.id]);
    const graph = await t.gql(
      `query($id: ID!) { control(id: $id) { evidence { totalCount items { id downloadUrl { url } attachment { name } } } } }`,
      { id: controlId },
      { key: org.apiKey },
    );
    expect(graph.body.errors).toBeUndefined();
    const url = graph.body.data.control.evidence.items[0].downloadUrl.url as string;
    const served = await t.app.fetch(new Request(url));
    expect(served.status).toBe(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(file.bytes)).toBe(true);
  });

  it("takes validUntil as given, refuses collectedAt in the future, an upload of another caller and a missing one", async () => {
    const controlId = await control(org, { evidenceEveryDays: 30 });
    const file = await upload({ key: org.apiKey });
    const future = await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
      key: org.apiKey,
      body: { uploadId: file.uploadId, collectedAt: new Date(Date.now() + 3_600_000).toISOString() },
    });
    expect(future.status).toBe(400);
    expect(future.body.details[0].path).toBe("collectedAt");
    const validUntil = "2031-01-01T00:00:00.000Z";
    const added = await t.gql(
      `mutation($c: ID!, $u: ID!, $v: DateTime) { addEvidence(controlId: $c, uploadId: $u, validUntil: $v) { status validUntil } }`,
      { c: controlId, u: file.uploadId, v: validUntil },
      { key: org.apiKey },
    );
    expect(added.body.data.addEvidence).toEqual({ status: "accepted", validUntil });
    const theirs = await upload({ key: other.apiKey });
    const foreign = await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
      key: org.apiKey,
      body: { uploadId: theirs.uploadId },
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.details[0].path).toBe("uploadId");
    const otherControl = await control(other);
    const mine = await upload({ key: org.apiKey });
    expect(
      (await t.rest("POST", `/v1/controls/${otherControl}/evidence`, { key: org.apiKey, body: { uploadId: mine.uploadId } }))
        .status,
    ).toBe(404);
  });

  it("answers an empty control or vendor id with 404, not a 500 (found by the GraphQL fuzzer)", async () => {
    // An empty id is falsy: the control's branch once took it for a vendor's, without an id.
    for (const [field, arg] of [
      ["addEvidence", "controlId"],
      ["addVendorEvidence", "vendorId"],
    ] as const) {
      const res = await t.gql(
        `mutation($id: ID!, $upload: ID!) { ${field}(${arg}: $id, uploadId: $upload) { id } }`,
        { id: "", upload: "upl_missing" },
        { key: org.apiKey },
      );
      expect(res.body.errors?.[0]?.extensions?.code, JSON.stringify(res.body)).toBe("NOT_FOUND");
    }
  });

  it("lets a control's owner without control:update submit evidence, reviewed by someone else: accepted or rejected once", async () => {
    const seed = await t.seedOrg();
    const owner = await person(seed, "employee");
    const admin = await person(seed, "admin");
    const auditor = await person(seed, "auditor");
    const stranger = await person(seed, "employee");
    const controlId = await control(seed, { ownerId: owner.memberId });
    const submit = async () => {
      const file = await upload({ headers: owner.headers });
      const answer = await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
        headers: owner.headers,
        body: { uploadId: file.uploadId },
      });
      expect(answer.status, answer.text).toBe(201);
      expect(answer.body).toMatchObject({ status: "submitted", submittedById: owner.memberId });
      return answer.body.id as string;
    };
    const first = await submit();
    // The owner reads it; another employee does not even see it; the auditor may read but not add.
    expect((await t.rest("GET", `/v1/evidence/${first}`, { headers: owner.headers })).status).toBe(200);
    expect((await t.rest("GET", `/v1/evidence/${first}`, { headers: stranger.headers })).status).toBe(404);
    expect((await t.rest("GET", `/v1/evidence/${first}`, { headers: auditor.headers })).status).toBe(200);
    const strangers = await upload({ headers: stranger.headers });
    expect(
      (
        await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
          headers: stranger.headers,
          body: { uploadId: strangers.uploadId },
        })
      ).status,
    ).toBe(404);
    const auditors = await upload({ headers: auditor.headers });
    expect(
      (
        await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
          headers: auditor.headers,
          body: { uploadId: auditors.uploadId },
        })
      ).status,
    ).toBe(403);
    // Nobody reviews their own submission; the owner without control:update reviews nothing.
    expect((await t.rest("POST", `/v1/evidence/${first}/accept`, { headers: owner.headers })).status).toBe(403);
    const accepted = await t.rest("POST", `/v1/evidence/${first}/accept`, { headers: admin.headers });
    expect(accepted.status, accepted.text).toBe(200);
    expect(accepted.body).toMatchObject({ status: "accepted", reviewedById: admin.memberId });
    const twice = await t.rest("POST", `/v1/evidence/${first}/accept`, { headers: admin.headers });
    expect(twice.status).toBe(409);
    const second = await submit();
    expect(
      (await t.rest("POST", `/v1/evidence/${second}/reject`, { headers: admin.headers, body: { reason: " " } })).status,
    ).toBe(400);
    const rejected = await t.gql(
      `mutation($id: ID!) { rejectEvidence(id: $id, reason: "Not the Q3 review") { status rejectionReason reviewedBy { id } } }`,
      { id: second },
      { headers: admin.headers },
    );
    expect(rejected.body.data.rejectEvidence).toEqual({
      status: "rejected",
      rejectionReason: "Not the Q3 review",
      reviewedBy: { id: admin.memberId },
    });
    expect((await t.rest("POST", `/v1/evidence/${second}/accept`, { headers: admin.headers })).status).toBe(409);
    const actions = [...(await auditOf(first)), ...(await auditOf(second))].map((e) => e.action);
    expect(actions).toEqual(["evidence.added", "evidence.accepted", "evidence.added", "evidence.rejected"]);
    for (const event of [...(await auditOf(first)), ...(await auditOf(second))]) {
      expect((event.data as { sha256: string }).sha256).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it("serves an evidence file to whoever reads the evidence, and to no one else", async () => {
    const seed = await t.seedOrg();
    const owner = await person(seed, "employee");
    const stranger = await person(seed, "employee");
    const auditor = await person(seed, "auditor");
    const controlId = await control(seed, { ownerId: owner.memberId });
    const file = await upload({ key: seed.apiKey });
    const added = await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
      key: seed.apiKey,
      body: { uploadId: file.uploadId },
    });
    const attachmentId = added.body.attachment.id as string;
    for (const auth of [{ headers: owner.headers }, { headers: auditor.headers }, { key: seed.apiKey }]) {
      const bytes = await t.rest("GET", `/v1/attachments/${attachmentId}`, auth);
      expect(bytes.status).toBe(200);
      const link = await t.rest("GET", `/v1/attachments/${attachmentId}/download-url`, auth);
      expect(link.status).toBe(200);
      expect(link.body.url).toMatch(/^http/);
    }
    // The stranger has comment:read, but not this evidence: as if it did not exist.
    expect((await t.rest("GET", `/v1/attachments/${attachmentId}`, { headers: stranger.headers })).status).toBe(404);
    expect((await t.rest("GET", `/v1/attachments/${attachmentId}/download-url`, { headers: stranger.headers })).status).toBe(404);
    const taskOnly = await keyWith(["task:read"], seed);
    expect((await t.rest("GET", `/v1/attachments/${attachmentId}`, { key: taskOnly })).status).toBe(403);
    const controlReader = await keyWith(["control:read"], seed);
    expect((await t.rest("GET", `/v1/attachments/${attachmentId}`, { key: controlReader })).status).toBe(200);
    expect((await t.rest("GET", `/v1/attachments/${attachmentId}`, { key: other.apiKey })).status).toBe(404);
    // A comment's file is still comment:read's alone.
    const comment = await t.rest("POST", "/v1/comments", {
      key: seed.apiKey,
      body: {
        content: "x",
        entityId: seed.taskIds[0],
        entityType: "task",
        userId: seed.userIds[0],
        attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: "YQ==" }],
      },
    });
    const commentFile = comment.body.attachments[0].id;
    expect((await t.rest("GET", `/v1/attachments/${commentFile}`, { key: controlReader })).status).toBe(403);
    expect((await t.rest("GET", `/v1/attachments/${commentFile}`, { headers: stranger.headers })).status).toBe(200);
  });

  it("adds evidence to one control from many requests at once, each 201 (no deadlock on the control's lock)", async () => {
    const controlId = await control(org, { evidenceEveryDays: 90 });
    const files = await Promise.all(Array.from({ length: 6 }, () => upload({ key: org.apiKey })));
    const answers = await Promise.all(
      files.map((file) =>
        t.rest("POST", `/v1/controls/${controlId}/evidence`, { key: org.apiKey, body: { uploadId: file.uploadId } }),
      ),
    );
    expect(answers.map((a) => [a.status, a.body.code])).toEqual(files.map(() => [201, undefined]));
    expect(await t.db.evidence.count({ where: { controlId } })).toBe(6);
  });

  it("deletes evidence and its file's row at once, and its object only after the deletion committed", async () => {
    const controlId = await control(org);
    const file = await upload({ key: org.apiKey });
    const added = await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
      key: org.apiKey,
      body: { uploadId: file.uploadId },
    });
    const attachment = await t.db.attachment.findUniqueOrThrow({ where: { id: added.body.attachment.id } });
    const store = t.attachmentStores.storeOf(attachment.store as never);
    expect(await store?.digest(attachment.objectKey)).toMatchObject({ sha256: file.sha256 });
    const deleted = await t.rest("DELETE", `/v1/evidence/${added.body.id}`, { key: org.apiKey });
    expect(deleted.status).toBe(204);
    expect(await t.db.attachment.findUnique({ where: { id: attachment.id } })).toBeNull();
    expect((await t.rest("GET", `/v1/evidence/${added.body.id}`, { key: org.apiKey })).status).toBe(404);
    expect(await t.db.attachmentDeletion.count({ where: { objectKey: attachment.objectKey } })).toBe(1);
    // While its upload URL could still write the key, the object waits (docs/attachments.md, "Written once").
    await deleteDueObjects(t.db, t.attachmentStores.storeOf, logger, new Date(Date.now() + 60_000));
    expect(await store?.digest(attachment.objectKey)).toMatchObject({ sha256: file.sha256 });
    await deleteDueObjects(t.db, t.attachmentStores.storeOf, logger, new Date(Date.now() + 2 * 3_600_000));
    expect(await store?.digest(attachment.objectKey)).toBeNull();
    const [, event] = await auditOf(added.body.id);
    expect(event).toMatchObject({ action: "evidence.deleted", data: { sha256: file.sha256 } });
    // Deleting a control takes its evidence and schedules its files' objects too.
    const second = await upload({ key: org.apiKey });
    const kept = await t.rest("POST", `/v1/controls/${controlId}/evidence`, {
      key: org.apiKey,
      body: { uploadId: second.uploadId },
    });
    const row = await t.db.attachment.findUniqueOrThrow({ where: { id: kept.body.attachment.id } });
    expect((await t.rest("DELETE", `/v1/controls/${controlId}`, { key: org.apiKey })).status).toBe(204);
    expect(await t.db.evidence.findUnique({ where: { id: kept.body.id } })).toBeNull();
    expect(await t.db.attachmentDeletion.count({ where: { objectKey: row.objectKey } })).toBe(1);
  });

  it("adds vendor evidence with vendor:update, listed as Vendor.evidence and on REST", async () => {
    const file = await upload({ key: org.apiKey });
    const vendorId = org.vendorIds[0] as string;
    const updater = await keyWith(["vendor:update", "comment:create"]);
    const mine = await upload({ key: updater });
    const added = await t.rest("POST", `/v1/vendors/${vendorId}/evidence`, {
      key: updater,
      body: { uploadId: mine.uploadId, validUntil: "2030-06-30T00:00:00.000Z", description: "SOC 2 type II" },
    });
    expect(added.status, added.text).toBe(201);
    expect(added.body).toMatchObject({ vendorId, controlId: null, status: "accepted", validUntil: "2030-06-30T00:00:00.000Z" });
    const reader = await keyWith(["control:read", "comment:create"]);
    const refused = await t.rest("POST", `/v1/vendors/${vendorId}/evidence`, { key: reader, body: { uploadId: file.uploadId } });
    expect(refused.status).toBe(403);
    const listed = await t.rest("GET", `/v1/vendors/${vendorId}/evidence`, { key: org.apiKey });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((e: { id: string }) => e.id)).toContain(added.body.id);
    const graph = await t.gql(
      `query($id: ID!) { vendor(id: $id) { evidence(filter: { status: [accepted] }) { totalCount items { id } } } }`,
      { id: vendorId },
      { key: org.apiKey },
    );
    expect(graph.body.data.vendor.evidence.items.map((e: { id: string }) => e.id)).toContain(added.body.id);
    expect((await t.rest("GET", `/v1/evidence/${added.body.id}`, { key: await keyWith(["control:read"]) })).status).toBe(403);
    expect((await t.rest("GET", `/v1/evidence/${added.body.id}`, { key: await keyWith(["vendor:read"]) })).status).toBe(200);
    expect((await t.rest("GET", `/v1/vendors/${other.vendorIds[0]}/evidence`, { key: org.apiKey })).status).toBe(404);
  });
});
