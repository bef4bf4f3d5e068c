import { createHash } from "node:crypto";
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import type { Prisma } from "../../src/generated/prisma/client.js";
import type { EvidenceRequestMailJob } from "../../src/modules/evidence-requests/evidence-requests.mail.js";
import { expireDue, remindDue } from "../../src/modules/evidence-requests/evidence-requests.service.js";
import { restObjectOf } from "../../src/modules/webhooks/webhooks.objects.js";
import { newId } from "../../src/platform/ids.js";
import { openFixture } from "../helpers/fixtures.js";

// Evidence requests (contract section 17) on both transports: the request and its link, the
// token's reach, the page, submission and review. The mail port records what the changes queue.
const queued: EvidenceRequestMailJob[] = [];
const mail = {
  enqueue: async () => {},
  enqueueEvidenceRequest: async (_tx: Prisma.TransactionClient, job: EvidenceRequestMailJob) => {
    queued.push(job);
  },
};
const { t, org, other, keyWith, appWith } = await openFixture({ mail });

const DAY = 86_400_000;
const inDays = (days: number) => new Date(Date.now() + days * DAY).toISOString();
const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest();
const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);
const withToken = (token: string) => ({ "x-evidence-request-token": token });

async function controlOf(organization: SeedResult) {
  const id = newId("ctl");
  await t.db.control.create({
    data: { id, organizationId: organization.organizationId, code: `C-${id.slice(-8)}`, name: "Access review" },
  });
  return id;
}

/** A request over REST for the organization's first vendor; its answer with the link. */
async function createRequest(
  body: Record<string, unknown> = {},
  key = org.apiKey,
  organization = org,
): Promise<{ id: string; url: string; token: string; body: Record<string, unknown> }> {
  const res = await t.rest("POST", "/v1/evidence-requests", {
    key,
    body: {
      vendorId: organization.vendorIds[0],
      title: "SOC 2 Type II report",
      instructions: "The 2026 report and its bridge letter.",
      recipientEmail: "security@vendor.example",
      recipientName: "Vendor Security",
      dueAt: inDays(10),
      ...body,
    },
  });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id, url: res.body.url, token: tokenOf(res.body.url), body: res.body };
}

/** An upload through the link, its bytes PUT to the URL it answered (the service's own, in process). */
async function uploadThroughLink(token: string, bytes: Buffer, fileName = "report.pdf") {
  const res = await t.rest("POST", "/v1/attachment-uploads", {
    headers: withToken(token),
    body: { fileName, fileType: "application/pdf", size: bytes.length, sha256: sha256(bytes).toString("base64") },
  });
  expect(res.status, res.text).toBe(201);
  const put = await t.app.fetch(
    new Request(res.body.uploadUrl, { method: "PUT", headers: res.body.headers, body: new Uint8Array(bytes) }),
  );
  expect(put.status).toBeLessThan(300);
  return res.body.id as string;
}

const page = (token: string) => t.app.fetch(new Request(`http://test/requests/${token}`));
const pdf = (text: string) => Buffer.from(`%PDF-1.7\n${text}\n%%EOF\n`);

describe("creating a request", () => {
  it("answers 201 with the link once: PUBLIC_URL or the request's origin + /requests/<256-bit token>, kept only as its SHA-256", async () => {
    const { id, url, token, body } = await createRequest();
    expect(url).toBe(`http://test/requests/${token}`);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token, "base64url")).toHaveLength(32);
    expect(body).toMatchObject({
      status: "open",
      vendorId: org.vendorIds[0],
      controlId: null,
      recipientEmail: "security@vendor.example",
    });
    const row = await t.db.evidenceRequest.findUniqueOrThrow({ where: { id } });
    expect(row.tokenHash).toBe(sha256(token).toString("hex"));
    expect(JSON.stringify(row)).not.toContain(token);
    // expiresAt defaults to dueAt + 7 days.
    expect(row.expiresAt.getTime() - row.dueAt.getTime()).toBe(7 * DAY);
    // Reads never carry the link: REST leaves the key out, GraphQL answers null.
    const read = await t.rest("GET", `/v1/evidence-requests/${id}`, { key: org.apiKey });
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty("url");
    expect(read.text).not.toContain(token);
    const graph = await t.gql("query($id: ID!) { evidenceRequest(id: $id) { id url status } }", { id }, { key: org.apiKey });
    expect(graph.body.data.evidenceRequest).toEqual({ id, url: null, status: "open" });
    const listed = await t.rest("GET", "/v1/evidence-requests", { key: org.apiKey });
    expect(listed.text).not.toContain(token);
    // The invitation is queued in the same change, naming the request and never the link.
    expect(queued.filter((job) => job.evidenceRequestId === id)).toEqual([
      expect.objectContaining({ kind: "invitation", generation: 1 }),
    ]);
    const events = await t.db.auditEvent.findMany({ where: { entityId: id }, orderBy: { sequence: "asc" } });
    expect(events.map((e) => e.action)).toEqual(["evidence_request.created", "evidence_request.sent"]);
  });

  it("creates over GraphQL for a control, with control:update", async () => {
    const controlId = await controlOf(org);
    const res = await t.gql(
      `mutation($controlId: ID!, $dueAt: DateTime!) {
        createEvidenceRequest(controlId: $controlId, title: "Quarterly access review", recipientEmail: "auditor@firm.example", dueAt: $dueAt) {
          id controlId vendorId status url control { id code }
        }
      }`,
      { controlId, dueAt: inDays(5) },
      { key: await keyWith(["control:update", "control:read"]) },
    );
    expect(res.body.errors).toBeUndefined();
    const created = res.body.data.createEvidenceRequest;
    expect(created).toMatchObject({ controlId, vendorId: null, status: "open", control: { id: controlId } });
    expect(created.url).toMatch(/^http:\/\/test\/requests\/[A-Za-z0-9_-]{43}$/);
  });

  it("refuses with 400: both or neither target, dueAt past, expiresAt before dueAt or more than 90 days ahead", async () => {
    const controlId = await controlOf(org);
    const cases: [Record<string, unknown>, string][] = [
      [{ controlId }, "controlId"],
      [{ vendorId: null }, "controlId"],
      [{ dueAt: inDays(-1) }, "dueAt"],
      [{ dueAt: inDays(91), expiresAt: inDays(91) }, "dueAt"],
      [{ dueAt: inDays(10), expiresAt: inDays(9) }, "expiresAt"],
      [{ dueAt: inDays(10), expiresAt: inDays(91) }, "expiresAt"],
      [{ recipientEmail: "not an address" }, "recipientEmail"],
    ];
    for (const [body, path] of cases) {
      const res = await t.rest("POST", "/v1/evidence-requests", {
        key: org.apiKey,
        body: { vendorId: org.vendorIds[0], title: "x", recipientEmail: "a@b.example", dueAt: inDays(3), ...body },
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    // The default expiry stops at 90 days ahead.
    const late = await createRequest({ dueAt: inDays(88) });
    const row = await t.db.evidenceRequest.findUniqueOrThrow({ where: { id: late.id } });
    expect(row.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 90 * DAY);
    expect(row.expiresAt.getTime()).toBeGreaterThan(row.dueAt.getTime());
  });

  it("needs vendor:update for a vendor's request and control:update for a control's (403), and another organization's target is 404", async () => {
    const controlId = await controlOf(org);
    const vendorOnly = await keyWith(["vendor:update", "vendor:read"]);
    const denied = await t.rest("POST", "/v1/evidence-requests", {
      key: vendorOnly,
      body: { controlId, title: "x", recipientEmail: "a@b.example", dueAt: inDays(3) },
    });
    expect(denied.status).toBe(403);
    const controlOnly = await keyWith(["control:update", "control:read"]);
    const alsoDenied = await t.rest("POST", "/v1/evidence-requests", {
      key: controlOnly,
      body: { vendorId: org.vendorIds[0], title: "x", recipientEmail: "a@b.example", dueAt: inDays(3) },
    });
    expect(alsoDenied.status).toBe(403);
    const foreign = await t.rest("POST", "/v1/evidence-requests", {
      key: org.apiKey,
      body: { vendorId: other.vendorIds[0], title: "x", recipientEmail: "a@b.example", dueAt: inDays(3) },
    });
    expect(foreign.status).toBe(404);
  });
});

describe("the organization's requests", () => {
  it("lists with filters, search, sort and totalCount on both transports; another organization's ids are 404", async () => {
    const fresh = await t.seedOrg();
    const a = await createRequest({ title: "Pen test findings", dueAt: inDays(3) }, fresh.apiKey, fresh);
    const b = await createRequest({ title: "Insurance certificate", dueAt: inDays(20) }, fresh.apiKey, fresh);
    await t.rest("POST", `/v1/evidence-requests/${b.id}/cancel`, { key: fresh.apiKey });
    const due = await t.rest("GET", `/v1/evidence-requests?dueBefore=${encodeURIComponent(inDays(10))}&sort=dueAt`, {
      key: fresh.apiKey,
    });
    expect(due.status, due.text).toBe(200);
    expect(due.body.items.map((r: { id: string }) => r.id)).toEqual([a.id]);
    const cancelled = await t.rest("GET", "/v1/evidence-requests?status=cancelled", { key: fresh.apiKey });
    expect(cancelled.body.items.map((r: { id: string }) => r.id)).toEqual([b.id]);
    const graph = await t.gql(
      `query($vendorId: ID!) { evidenceRequests(filter: { vendorId: [$vendorId], search: "certif" }, orderBy: { field: title, direction: asc }) {
        totalCount items { id title url } edges { node { id } }
      } }`,
      { vendorId: fresh.vendorIds[0] },
      { key: fresh.apiKey },
    );
    expect(graph.body.errors).toBeUndefined();
    expect(graph.body.data.evidenceRequests).toMatchObject({ totalCount: 1, items: [{ id: b.id, url: null }] });
    // Another organization sees none of them, and their ids are 404 on every route.
    const theirs = await t.rest("GET", "/v1/evidence-requests", { key: org.apiKey });
    expect(theirs.body.items.map((r: { id: string }) => r.id)).not.toContain(a.id);
    for (const [method, path] of [
      ["GET", `/v1/evidence-requests/${a.id}`],
      ["POST", `/v1/evidence-requests/${a.id}/cancel`],
      ["POST", `/v1/evidence-requests/${a.id}/resend`],
      ["POST", `/v1/evidence-requests/${a.id}/accept`],
    ] as const) {
      const res = await t.rest(method, path, { key: org.apiKey });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const reject = await t.rest("POST", `/v1/evidence-requests/${a.id}/reject`, { key: org.apiKey, body: { reason: "no" } });
    expect(reject.status).toBe(404);
    const graphRead = await t.gql("query($id: ID!) { evidenceRequest(id: $id) { id } }", { id: a.id }, { key: org.apiKey });
    expect(graphRead.body.errors[0].extensions.code).toBe("NOT_FOUND");
  });

  it("shows a caller only the kinds it may read: vendors' with vendor:read, controls' with control:read", async () => {
    const fresh = await t.seedOrg();
    const controlId = await controlOf(fresh);
    const onVendor = await createRequest({}, fresh.apiKey, fresh);
    const onControl = await createRequest({ vendorId: undefined, controlId }, fresh.apiKey, fresh);
    const vendorReader = await keyWith(["vendor:read"], fresh);
    const listed = await t.rest("GET", "/v1/evidence-requests", { key: vendorReader });
    expect(listed.body.items.map((r: { id: string }) => r.id)).toEqual([onVendor.id]);
    expect((await t.rest("GET", `/v1/evidence-requests/${onControl.id}`, { key: vendorReader })).status).toBe(404);
    expect((await t.rest("GET", "/v1/evidence-requests", { key: await keyWith(["task:read"], fresh) })).status).toBe(403);
  });
});

describe("the link's token", () => {
  it("reads its request (currentEvidenceRequest), and the first view is audited as opened by the recipient's e-mail", async () => {
    const { id, token } = await createRequest();
    const rest = await t.rest("GET", "/v1/evidence-requests/current", { headers: withToken(token) });
    expect(rest.status, rest.text).toBe(200);
    const name = (await t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } })).name;
    expect(rest.body).toMatchObject({
      organizationName: name,
      title: "SOC 2 Type II report",
      instructions: "The 2026 report and its bridge letter.",
      status: "open",
      files: [],
    });
    const graph = await t.gql(
      "{ currentEvidenceRequest { organizationName status files { name } } }",
      {},
      { headers: withToken(token) },
    );
    expect(graph.body).toEqual({ data: { currentEvidenceRequest: { organizationName: name, status: "open", files: [] } } });
    const opened = await t.db.auditEvent.findMany({ where: { entityId: id, action: "evidence_request.opened" } });
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({ actorUserId: null, actorApiKeyId: null });
    expect(opened[0]?.data).toMatchObject({ actorEmail: "security@vendor.example" });
  });

  it("is 401 on every other route and operation, on both transports", async () => {
    const { id, token } = await createRequest();
    for (const [method, path] of [
      ["GET", "/v1/evidence-requests"],
      ["GET", `/v1/evidence-requests/${id}`],
      ["POST", `/v1/evidence-requests/${id}/cancel`],
      ["GET", `/v1/tasks/${org.taskIds[0]}`],
      ["GET", "/v1/vendors"],
      ["GET", "/v1/audit-events/export"],
      ["GET", "/v1/audit-events"],
    ] as const) {
      const res = await t.rest(method, path, { headers: withToken(token) });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.text).not.toContain(token);
    }
    const comment = await t.rest("POST", "/v1/comments", {
      headers: withToken(token),
      body: { content: "hi", entityId: org.taskIds[0], entityType: "task" },
    });
    expect(comment.status).toBe(401);
    for (const query of [
      "{ viewer { permissions } }",
      "{ __typename }",
      "{ __schema { types { name } } }",
      "{ currentEvidenceRequest { title } vendors { totalCount } }",
      `query { ...Both } fragment Both on Query { currentEvidenceRequest { title } tasks { totalCount } }`,
    ]) {
      const res = await t.gql(query, {}, { headers: withToken(token) });
      expect(res.body.data ?? null, query).toBeNull();
      expect(res.body.errors[0].extensions.code, query).toBe("UNAUTHENTICATED");
    }
    // A member's key does not reach the page's operations.
    const asKey = await t.rest("GET", "/v1/evidence-requests/current", { key: org.apiKey });
    expect(asKey.status).toBe(401);
  });

  it("answers a wrong token exactly as an expired one, and a resend's new token ends the old link at once", async () => {
    const { id, token } = await createRequest();
    const wrong = await t.rest("GET", "/v1/evidence-requests/current", {
      headers: withToken(`${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`),
    });
    const malformed = await t.rest("GET", "/v1/evidence-requests/current", { headers: withToken("x") });
    const resent = await t.rest("POST", `/v1/evidence-requests/${id}/resend`, { key: org.apiKey });
    expect(resent.status, resent.text).toBe(200);
    const fresh = tokenOf(resent.body.url);
    expect(fresh).not.toBe(token);
    const replaced = await t.rest("GET", "/v1/evidence-requests/current", { headers: withToken(token) });
    await t.db.evidenceRequest.update({ where: { id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const expired = await t.rest("GET", "/v1/evidence-requests/current", { headers: withToken(fresh) });
    for (const res of [wrong, malformed, replaced, expired]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual(wrong.body);
    }
    expect(queued.filter((job) => job.evidenceRequestId === id).map((job) => [job.kind, job.generation])).toEqual([
      ["invitation", 1],
      ["invitation", 2],
    ]);
  });
});

describe("the page", () => {
  it("shows the organization, title, instructions, due date and a labelled form, with the page's headers", async () => {
    const { token } = await createRequest({ instructions: "<b>Both</b> files, please." });
    const res = await page(token);
    expect(res.status).toBe(200);
    const html = await res.text();
    const name = (await t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } })).name;
    expect(html).toContain(name);
    expect(html).toContain("SOC 2 Type II report");
    expect(html).toContain("&#60;b&#62;Both&#60;/b&#62; files, please.");
    expect(html).toMatch(/<label for="files">/);
    expect(html).toMatch(/<label for="note">/);
    expect(html).toMatch(/<button type="submit"/);
    expect(html).not.toMatch(/<script>|<script(?![^>]*\ssrc=)/);
    expect(html).not.toContain(token);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/connect-src 'self' http:\/\/test/);
    expect(csp).toContain("frame-ancestors 'none'");
    const script = await t.app.fetch(new Request("http://test/evidence-request-page/request.js"));
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toContain("javascript");
    // The page's calls answer with the same headers.
    const call = await t.rest("GET", "/v1/evidence-requests/current", { headers: withToken(token) });
    for (const name of [
      "cache-control",
      "referrer-policy",
      "x-frame-options",
      "x-content-type-options",
      "content-security-policy",
    ]) {
      expect(call.headers.get(name), name).toBe(res.headers.get(name) === null ? null : call.headers.get(name));
    }
    expect(call.headers.get("cache-control")).toBe("no-store");
    expect(call.headers.get("referrer-policy")).toBe("no-referrer");
    expect(call.headers.get("x-frame-options")).toBe("DENY");
    expect(call.headers.get("etag")).toBeNull();
  });

  it("answers every dead link with the same 410 page: wrong, expired, cancelled, replaced, accepted", async () => {
    const gone: string[] = [];
    const wrong = await page("A".repeat(43));
    const odd = await page("not-a-token");
    const cancelled = await createRequest();
    await t.rest("POST", `/v1/evidence-requests/${cancelled.id}/cancel`, { key: org.apiKey });
    const replaced = await createRequest();
    await t.rest("POST", `/v1/evidence-requests/${replaced.id}/resend`, { key: org.apiKey });
    const expired = await createRequest();
    await t.db.evidenceRequest.update({ where: { id: expired.id }, data: { expiresAt: new Date(Date.now() - 1) } });
    const accepted = await createRequest();
    await t.db.evidenceRequest.update({ where: { id: accepted.id }, data: { status: "accepted" } });
    for (const res of [
      wrong,
      odd,
      await page(cancelled.token),
      await page(replaced.token),
      await page(expired.token),
      await page(accepted.token),
    ]) {
      expect(res.status).toBe(410);
      expect(res.headers.get("cache-control")).toBe("no-store");
      gone.push(await res.text());
    }
    expect(new Set(gone).size).toBe(1);
    expect(gone[0]).toContain("This link no longer works");
    expect(gone[0]).not.toContain("SOC 2");
  });
});

describe("submission and review", () => {
  it("makes each file a submitted evidence item of the vendor, notifies the creator, and the page then shows it awaits review", async () => {
    const { id, token } = await createRequest();
    // The creator is a member when a user created it: give the request one, as a JWT's would have.
    await t.db.evidenceRequest.update({ where: { id }, data: { createdById: org.memberIds[1] } });
    const first = await uploadThroughLink(token, pdf("one"), "report.pdf");
    const second = await uploadThroughLink(token, pdf("two"), "bridge-letter.pdf");
    const res = await t.rest("POST", "/v1/evidence-requests/current/submission", {
      headers: withToken(token),
      body: { uploadIds: [first, second], note: "Both attached." },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe("submitted");
    expect(res.body.files.map((f: { name: string }) => f.name).sort()).toEqual(["bridge-letter.pdf", "report.pdf"]);
    const evidence = await t.db.evidence.findMany({ where: { evidenceRequestId: id }, include: { attachment: true } });
    expect(evidence).toHaveLength(2);
    for (const item of evidence) {
      expect(item).toMatchObject({
        status: "submitted",
        vendorId: org.vendorIds[0],
        submittedByEmail: "security@vendor.example",
      });
    }
    expect(evidence.map((e) => e.attachment.sha256).sort()).toEqual(
      [sha256(pdf("one")).toString("hex"), sha256(pdf("two")).toString("hex")].sort(),
    );
    const notification = await t.db.notification.findFirst({ where: { entityId: id, reason: "evidence_submitted" } });
    expect(notification).toMatchObject({ recipientId: org.memberIds[1], entityType: "evidence_request" });
    const submitted = await t.db.auditEvent.findFirstOrThrow({ where: { entityId: id, action: "evidence_request.submitted" } });
    expect(submitted).toMatchObject({ actorUserId: null, actorApiKeyId: null });
    expect(submitted.data).toMatchObject({ actorEmail: "security@vendor.example", note: "Both attached." });
    // While it awaits review: the page has no form, and no more files are taken.
    const html = await (await page(token)).text();
    expect(html).toContain("await review");
    expect(html).not.toContain("<form");
    const more = await t.rest("POST", "/v1/attachment-uploads", {
      headers: withToken(token),
      body: { fileName: "x.pdf", fileType: "application/pdf", size: 10, sha256: sha256("x").toString("base64") },
    });
    expect(more.status).toBe(409);
  });

  it("accepting accepts its evidence and ends the link; rejecting rejects it, reopens the request, mails the reason and the link works again", async () => {
    const { id, token } = await createRequest();
    const upload = await uploadThroughLink(token, pdf("first"));
    const graph = await t.gql(
      "mutation($ids: [ID!]!) { submitEvidenceRequest(uploadIds: $ids, note: null) { status files { name sha256 status } } }",
      { ids: [upload] },
      { headers: withToken(token) },
    );
    expect(graph.body.errors).toBeUndefined();
    expect(graph.body.data.submitEvidenceRequest.status).toBe("submitted");
    const rejected = await t.rest("POST", `/v1/evidence-requests/${id}/reject`, {
      key: org.apiKey,
      body: { reason: "This is the 2025 report." },
    });
    expect(rejected.status, rejected.text).toBe(200);
    expect(rejected.body).toMatchObject({ status: "rejected", rejectionReason: "This is the 2025 report." });
    expect(rejected.body).not.toHaveProperty("url");
    expect((await t.db.evidence.findFirstOrThrow({ where: { evidenceRequestId: id } })).status).toBe("rejected");
    expect(queued.filter((job) => job.evidenceRequestId === id).map((job) => job.kind)).toEqual(["invitation", "rejection"]);
    // The same link works again and says why.
    const again = await page(token);
    expect(again.status).toBe(200);
    const html = await again.text();
    expect(html).toContain("This is the 2025 report.");
    expect(html).toContain("<form");
    const second = await uploadThroughLink(token, pdf("second"));
    const resubmitted = await t.rest("POST", "/v1/evidence-requests/current/submission", {
      headers: withToken(token),
      body: { uploadIds: [second] },
    });
    expect(resubmitted.status, resubmitted.text).toBe(200);
    const accepted = await t.gql(
      "mutation($id: ID!) { acceptEvidenceRequest(id: $id) { status evidence { status } } }",
      { id },
      { key: org.apiKey },
    );
    expect(accepted.body.errors).toBeUndefined();
    expect(accepted.body.data.acceptEvidenceRequest).toEqual({
      status: "accepted",
      evidence: [{ status: "rejected" }, { status: "accepted" }],
    });
    expect((await page(token)).status).toBe(410);
    const actions = (await t.db.auditEvent.findMany({ where: { entityId: id }, orderBy: { sequence: "asc" } })).map(
      (e) => e.action,
    );
    expect(actions).toEqual([
      "evidence_request.created",
      "evidence_request.sent",
      "evidence_request.submitted",
      "evidence_request.rejected",
      "evidence_request.opened",
      "evidence_request.submitted",
      "evidence_request.accepted",
    ]);
  });

  it("takes at most 20 files not yet submitted per request (409), and an upload of the link is no one else's", async () => {
    const { token } = await createRequest();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await t.rest("POST", "/v1/attachment-uploads", {
        headers: withToken(token),
        body: { fileName: `f${i}.pdf`, fileType: "application/pdf", size: 10, sha256: sha256(`x${i}`).toString("base64") },
      });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    const over = await t.rest("POST", "/v1/attachment-uploads", {
      headers: withToken(token),
      body: { fileName: "f21.pdf", fileType: "application/pdf", size: 10, sha256: sha256("x21").toString("base64") },
    });
    expect(over.status).toBe(409);
    // A member's comment cannot attach the link's upload.
    const comment = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: {
        content: "mine?",
        entityId: org.taskIds[0],
        entityType: "task",
        userId: org.userIds[0],
        attachments: [{ uploadId: ids[0] }],
      },
    });
    expect(comment.status, comment.text).toBe(404);
  });
});

describe("the timers", () => {
  it("reminds once, 3 days before dueAt while open, and expires a link past expiresAt with its audit event", async () => {
    const soon = await createRequest({ dueAt: inDays(2) });
    const later = await createRequest({ dueAt: inDays(30) });
    const before = queued.length;
    await remindDue(t.db, mail);
    await remindDue(t.db, mail);
    const reminders = queued.slice(before).filter((job) => job.kind === "reminder");
    expect(reminders.map((job) => job.evidenceRequestId)).toContain(soon.id);
    expect(reminders.map((job) => job.evidenceRequestId)).not.toContain(later.id);
    expect(reminders.filter((job) => job.evidenceRequestId === soon.id)).toHaveLength(1);
    expect((await t.db.evidenceRequest.findUniqueOrThrow({ where: { id: soon.id } })).remindedAt).not.toBeNull();
    await expireDue(t.db, new Date(Date.now() + 10 * DAY));
    expect((await t.db.evidenceRequest.findUniqueOrThrow({ where: { id: soon.id } })).status).toBe("expired");
    expect((await t.db.evidenceRequest.findUniqueOrThrow({ where: { id: later.id } })).status).toBe("open");
    const event = await t.db.auditEvent.findFirstOrThrow({ where: { entityId: soon.id, action: "evidence_request.expired" } });
    expect(event).toMatchObject({ actorUserId: null, actorApiKeyId: null });
  });
});

describe("the link's reach across organizations and links", () => {
  it("refuses another link's upload, and another organization's, with 404", async () => {
    const mine = await createRequest();
    const sibling = await createRequest();
    const theirs = await createRequest({}, other.apiKey, other);
    const siblingUpload = await uploadThroughLink(sibling.token, pdf("sibling"));
    const foreignUpload = await uploadThroughLink(theirs.token, pdf("foreign"));
    for (const uploadId of [siblingUpload, foreignUpload]) {
      const res = await t.rest("POST", "/v1/evidence-requests/current/submission", {
        headers: withToken(mine.token),
        body: { uploadIds: [uploadId] },
      });
      expect(res.status, res.text).toBe(404);
      expect(res.text).not.toContain(theirs.token);
    }
    expect((await t.db.evidenceRequest.findUniqueOrThrow({ where: { id: mine.id } })).status).toBe("open");
  });
});

describe("where the token never goes", () => {
  it("is in no log line, audit event, webhook message, metric or error, after a request went through every sink", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "trace" }, { write: (line: string) => void lines.push(line) });
    const app = await appWith({ logger, mail });
    const fresh = await app.seedOrg();
    await app.rest("POST", "/v1/webhook-endpoints", { key: fresh.apiKey, body: { url: "https://hooks.example.com/siem" } });
    const created = await app.rest("POST", "/v1/evidence-requests", {
      key: fresh.apiKey,
      body: { vendorId: fresh.vendorIds[0], title: "Report", recipientEmail: "r@vendor.example", dueAt: inDays(4) },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const tokens = [tokenOf(created.body.url)];
    const call = (path: string, init: RequestInit = {}) => app.app.fetch(new Request(`http://test${path}`, init));
    // The page, its calls, a submission, a rejection, a resend, a wrong and a dead token.
    await call(`/requests/${tokens[0]}`);
    await call("/v1/evidence-requests/current", { headers: withToken(tokens[0] as string) });
    const bytes = pdf("sinks");
    const upload = await app.rest("POST", "/v1/attachment-uploads", {
      headers: withToken(tokens[0] as string),
      body: { fileName: "r.pdf", fileType: "application/pdf", size: bytes.length, sha256: sha256(bytes).toString("base64") },
    });
    await app.app.fetch(
      new Request(upload.body.uploadUrl, { method: "PUT", headers: upload.body.headers, body: new Uint8Array(bytes) }),
    );
    await app.rest("POST", "/v1/evidence-requests/current/submission", {
      headers: withToken(tokens[0] as string),
      body: { uploadIds: [upload.body.id] },
    });
    await app.rest("POST", `/v1/evidence-requests/${id}/reject`, { key: fresh.apiKey, body: { reason: "again" } });
    const resent = await app.rest("POST", `/v1/evidence-requests/${id}/resend`, { key: fresh.apiKey });
    tokens.push(tokenOf(resent.body.url));
    const errors = [
      await call(`/requests/${tokens[0]}`),
      await call("/v1/evidence-requests/current", { headers: withToken(tokens[0] as string) }),
      await call("/v1/vendors", { headers: withToken(tokens[1] as string) }),
      await call("/graphql", {
        method: "POST",
        headers: { ...withToken(tokens[1] as string), "content-type": "application/json" },
        body: JSON.stringify({ query: "{ viewer { permissions } }" }),
      }),
      await call(`/requests/${tokens[1]}x`),
    ];
    const sinks: Record<string, string> = {
      logs: lines.join("\n"),
      errors: (await Promise.all(errors.map((r) => r.text()))).join("\n"),
      metrics: await (await call("/metrics")).text(),
    };
    const events = await app.db.auditEvent.findMany({ where: { organizationId: fresh.organizationId } });
    sinks.audit = JSON.stringify(events);
    // What the webhook worker would send for each event: the event and the record's REST shape.
    const messages = [];
    for (const event of events) {
      messages.push({
        data: event.data,
        object: await restObjectOf(app.db, event.organizationId, { type: event.entityType, id: event.entityId }),
      });
    }
    sinks.webhooks = JSON.stringify(messages);
    sinks.notifications = JSON.stringify(await app.db.notification.findMany({ where: { organizationId: fresh.organizationId } }));
    sinks.row = JSON.stringify(await app.db.evidenceRequest.findUniqueOrThrow({ where: { id } }));
    sinks.mailJobs = JSON.stringify(queued.filter((job) => job.evidenceRequestId === id));
    // The sinks saw the request: a test that looked at empty sinks would prove nothing.
    expect(sinks.logs).toContain("/requests/{token}");
    expect(sinks.metrics).toContain('route="/requests/{token}"');
    expect(sinks.audit).toContain("evidence_request.opened");
    expect(sinks.mailJobs).toContain("rejection");
    for (const [sink, text] of Object.entries(sinks)) {
      for (const token of tokens) expect(text.includes(token), `${sink} holds a token`).toBe(false);
    }
    await app.close();
  });
});

describe("guessing", () => {
  it("limits wrong tokens per address, on the page and in the header alike (429 past AUTH_FAILURES_PER_MINUTE)", async () => {
    const guarded = await appWith({ authFailuresPerMinute: 3 });
    const answers: number[] = [];
    for (let i = 0; i < 2; i++)
      answers.push((await guarded.app.fetch(new Request(`http://test/requests/${"A".repeat(42)}${i}`))).status);
    answers.push((await guarded.rest("GET", "/v1/evidence-requests/current", { headers: withToken("B".repeat(43)) })).status);
    const page = await guarded.app.fetch(new Request(`http://test/requests/${"C".repeat(43)}`));
    const call = await guarded.rest("GET", "/v1/evidence-requests/current", { headers: withToken("D".repeat(43)) });
    expect(answers).toEqual([410, 410, 401]);
    expect(page.status).toBe(429);
    expect(await page.text()).toContain("This link no longer works");
    expect(call.status).toBe(429);
    await guarded.close();
  });
});

describe("a control's request", () => {
  it("makes submitted evidence of the control, and accepting it accepts the evidence, which makes the control ready", async () => {
    const controlId = await controlOf(org);
    const state = async () =>
      (await t.gql("query($id: ID!) { control(id: $id) { status { state } } }", { id: controlId }, { key: org.apiKey })).body.data
        .control.status.state;
    expect(await state()).toBe("not_ready");
    const { id, token } = await createRequest({ vendorId: undefined, controlId });
    const upload = await uploadThroughLink(token, pdf("access review"));
    const submitted = await t.rest("POST", "/v1/evidence-requests/current/submission", {
      headers: withToken(token),
      body: { uploadIds: [upload] },
    });
    expect(submitted.status, submitted.text).toBe(200);
    const accepted = await t.rest("POST", `/v1/evidence-requests/${id}/accept`, { key: org.apiKey });
    expect(accepted.status, accepted.text).toBe(200);
    expect(accepted.body.evidence).toEqual([expect.objectContaining({ controlId, status: "accepted", vendorId: null })]);
    const event = await t.db.auditEvent.findFirstOrThrow({
      where: { action: "evidence.accepted", entityId: accepted.body.evidence[0].id },
    });
    expect(event.data).toMatchObject({ sha256: sha256(pdf("access review")).toString("hex"), evidenceRequestId: id });
    expect(await state()).toBe("ready");
    const changed = await t.db.auditEvent.findFirst({ where: { action: "control.status_changed", entityId: controlId } });
    expect(changed?.data).toMatchObject({ from: "not_ready", to: "ready" });
  });
});
