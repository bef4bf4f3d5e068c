import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

let t: TestApp;
let org: SeedResult;
let owner: string;

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
  owner = org.userIds[0] as string;
});
afterAll(() => t.close());

const b64 = (text: string) => Buffer.from(text).toString("base64");
const pdf = { fileName: "evidence.pdf", fileType: "application/pdf", fileData: b64("%PDF-1.7 evidence") };

const createComment = `mutation($content: String!, $entityId: ID!, $entityType: CommentEntityType!, $contextUrl: String, $attachments: [AttachmentInput!], $userId: ID) {
  createComment(content: $content, entityId: $entityId, entityType: $entityType, contextUrl: $contextUrl, attachments: $attachments, userId: $userId) {
    id content createdAt
    author { id name email image deactivated }
    attachments { id name type size createdAt }
  }
}`;

function post(body: unknown, key = org.apiKey) {
  return t.rest("POST", "/v1/comments", { key, body });
}

async function expectInvalid(body: Record<string, unknown>, path: string) {
  const res = await post({ content: "x", entityId: org.taskIds[0], entityType: "task", userId: owner, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.code).toBe("BAD_USER_INPUT");
  expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  const gql = await t.gql(
    createComment,
    { content: "x", entityId: org.taskIds[0], entityType: "task", userId: owner, ...body },
    { key: org.apiKey },
  );
  expect(gql.body.errors?.[0]?.extensions?.code, JSON.stringify(gql.body).slice(0, 500)).toBe("BAD_USER_INPUT");
  return res;
}

describe("create comment", () => {
  it("answers 201 with the comment, its author and attachment metadata", async () => {
    const res = await post({
      content: "Looks good",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: owner,
      contextUrl: "https://app.example.com/tasks/1",
      attachments: [{ ...pdf, description: "SOC 2 letter" }],
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(["attachments", "author", "content", "createdAt", "id"]);
    expect(res.body.id).toMatch(/^cmt_/);
    expect(res.body.content).toBe("Looks good");
    expect(res.body.author).toEqual({
      id: owner,
      name: "Ada Owner",
      email: expect.stringContaining("@demo.example"),
      image: null,
      deactivated: false,
    });
    expect(res.body.attachments).toEqual([
      {
        id: expect.stringMatching(/^att_/),
        name: "evidence.pdf",
        type: "application/pdf",
        size: 17,
        sha256: createHash("sha256").update("%PDF-1.7 evidence").digest("hex"),
        createdAt: expect.any(String),
      },
    ]);
    const stored = await t.db.attachment.findUniqueOrThrow({ where: { id: res.body.attachments[0].id } });
    const { body } = await t.app.services.comments.attachments.open(stored);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer));
    expect(Buffer.concat(chunks).toString()).toBe("%PDF-1.7 evidence");
    expect(stored.description).toBe("SOC 2 letter");
    const comment = await t.db.comment.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(comment.apiKeyId).toMatch(/^apk_/);
    expect(comment.contextUrl).toBe("https://app.example.com/tasks/1");
    const audit = await t.db.auditEvent.findFirst({ where: { entityId: res.body.id, action: "comment.created" } });
    expect(audit?.actorApiKeyId).toBe(comment.apiKeyId);
  });

  it("works the same over GraphQL", async () => {
    const res = await t.gql(
      createComment,
      { content: "Via GraphQL", entityId: org.vendorIds[0], entityType: "vendor", userId: owner },
      { key: org.apiKey },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createComment).toMatchObject({ content: "Via GraphQL", author: { id: owner }, attachments: [] });
  });

  it.each([
    ["task", () => org.taskIds[0]],
    ["vendor", () => org.vendorIds[0]],
    ["risk", () => org.riskIds[0]],
    ["policy", () => org.policyIds[0]],
  ])("accepts a comment on a %s and 404s for a missing one", async (entityType, id) => {
    expect((await post({ content: "ok", entityId: id(), entityType, userId: owner })).status).toBe(201);
    const missing = await post({ content: "ok", entityId: `${entityType}_missing`, entityType, userId: owner });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe("NOT_FOUND");
  });

  it("404s when the entity id names another entity type", async () => {
    const res = await post({ content: "ok", entityId: org.vendorIds[0], entityType: "risk", userId: owner });
    expect(res.status).toBe(404);
  });

  it("counts content in code points: 2000 emoji pass, 2001 characters fail", async () => {
    expect((await post({ content: "😀".repeat(2000), entityId: org.taskIds[0], entityType: "task", userId: owner })).status).toBe(
      201,
    );
    await expectInvalid({ content: "a".repeat(2001) }, "content");
  });

  it("refuses empty and whitespace-only content", async () => {
    await expectInvalid({ content: "" }, "content");
    await expectInvalid({ content: " \n\t " }, "content");
  });

  it("refuses wrong types instead of coercing them", async () => {
    await expectInvalid({ content: 123 }, "content");
    await expectInvalid({ content: { text: "x" } }, "content");
    await expectInvalid({ entityType: "finding" }, "entityType");
    await expectInvalid({ attachments: "a.pdf" }, "attachments");
  });

  it("refuses missing required fields and unknown fields over REST", async () => {
    const res = await post({ content: "x", userId: owner, organizationId: "org_other" });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(["entityId", "entityType", "organizationId"]);
  });

  it("refuses malformed JSON, a non-object body and a non-JSON content type", async () => {
    const malformed = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      rawBody: '{"content":',
      headers: { "content-type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe("MALFORMED_JSON");
    const array = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      rawBody: "[1]",
      headers: { "content-type": "application/json" },
    });
    expect(array.status).toBe(400);
    const form = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      rawBody: "content=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(form.status).toBe(415);
    expect(form.body).toMatchObject({ statusCode: 415, error: "Unsupported Media Type", code: "UNSUPPORTED_MEDIA_TYPE" });
  });

  it("validates contextUrl: absolute http(s), at most 2048 characters", async () => {
    await expectInvalid({ contextUrl: "/relative/path" }, "contextUrl");
    await expectInvalid({ contextUrl: "javascript:alert(1)" }, "contextUrl");
    await expectInvalid({ contextUrl: `https://example.com/${"a".repeat(2029)}` }, "contextUrl");
    const ok = await post({
      content: "x",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: owner,
      contextUrl: `https://example.com/${"a".repeat(2028)}`,
    });
    expect(ok.status).toBe(201);
  });

  it("requires userId with an API key, naming an active member", async () => {
    const missing = await post({ content: "x", entityId: org.taskIds[0], entityType: "task" });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([{ path: "userId", message: expect.any(String) }]);
    const stranger = await post({ content: "x", entityId: org.taskIds[0], entityType: "task", userId: "usr_stranger" });
    expect(stranger.status).toBe(404);
    await t.db.member.update({ where: { id: org.memberIds[3] }, data: { isActive: false } });
    try {
      const inactive = await post({ content: "x", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[3] });
      expect(inactive.status).toBe(404);
    } finally {
      await t.db.member.update({ where: { id: org.memberIds[3] }, data: { isActive: true } });
    }
  });

  it("validates attachments", async () => {
    await expectInvalid({ attachments: [{ ...pdf, fileData: "not base64!" }] }, "attachments.0.fileData");
    await expectInvalid({ attachments: [{ ...pdf, fileData: "" }] }, "attachments.0.fileData");
    await expectInvalid({ attachments: [{ ...pdf, fileType: "pdf" }] }, "attachments.0.fileType");
    await expectInvalid({ attachments: [{ ...pdf, fileName: "../../etc/passwd" }] }, "attachments.0.fileName");
    await expectInvalid({ attachments: [{ ...pdf, fileName: "" }] }, "attachments.0.fileName");
    await expectInvalid({ attachments: [{ ...pdf, fileName: `${"a".repeat(252)}.pdf` }] }, "attachments.0.fileName");
    await expectInvalid({ attachments: [{ ...pdf, description: "d".repeat(501) }] }, "attachments.0.description");
    await expectInvalid({ attachments: Array.from({ length: 11 }, () => pdf) }, "attachments");
  });

  it("refuses executables by name, by type and by content", async () => {
    await expectInvalid({ attachments: [{ ...pdf, fileName: "setup.exe" }] }, "attachments.0");
    await expectInvalid({ attachments: [{ ...pdf, fileName: "report.pdf.sh" }] }, "attachments.0");
    await expectInvalid({ attachments: [{ ...pdf, fileType: "application/x-msdownload" }] }, "attachments.0");
    await expectInvalid({ attachments: [{ ...pdf, fileData: b64("MZ\x90\x00 fake PE") }] }, "attachments.0");
    await expectInvalid(
      { attachments: [{ ...pdf, fileName: "notes.txt", fileType: "text/plain", fileData: b64("#!/bin/sh\nrm -rf /") }] },
      "attachments.0",
    );
  });

  it("limits each attachment to 10 MiB and all to 25 MiB", async () => {
    const MiB = 1024 * 1024;
    const big = (bytes: number) => ({ ...pdf, fileData: Buffer.alloc(bytes, 1).toString("base64") });
    await expectInvalid({ attachments: [big(10 * MiB + 1)] }, "attachments.0.fileData");
    await expectInvalid({ attachments: [big(9 * MiB), big(9 * MiB), big(8 * MiB)] }, "attachments");
    const ok = await post({
      content: "x",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: owner,
      attachments: [big(10 * MiB)],
    });
    expect(ok.status).toBe(201);
    expect(ok.body.attachments[0].size).toBe(10 * MiB);
  });

  it("checks the attachment uploader and leaves nothing behind when one is wrong", async () => {
    const before = { comments: await t.db.comment.count(), attachments: await t.db.attachment.count() };
    const res = await post({
      content: "x",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: owner,
      attachments: [pdf, { ...pdf, userId: "usr_stranger" }],
    });
    expect(res.status).toBe(404);
    expect({ comments: await t.db.comment.count(), attachments: await t.db.attachment.count() }).toEqual(before);
    const ok = await post({
      content: "x",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: owner,
      attachments: [{ ...pdf, userId: org.userIds[1] }],
    });
    expect(ok.status).toBe(201);
    const stored = await t.db.attachment.findUniqueOrThrow({ where: { id: ok.body.attachments[0].id } });
    expect(stored.uploaderId).toBe(org.memberIds[1]);
  });

  it("makes the caller the uploader under a user credential, whatever userId an attachment names", async () => {
    const { createSession } = await import("../../src/auth/sessions.js");
    const session = await createSession(t.db, org.userIds[3] as string, 3_600_000);
    const res = await t.rest("POST", "/v1/comments", {
      headers: { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId },
      body: { content: "x", entityId: org.taskIds[0], entityType: "task", attachments: [{ ...pdf, userId: owner }] },
    });
    expect(res.status).toBe(201);
    const stored = await t.db.attachment.findUniqueOrThrow({ where: { id: res.body.attachments[0].id } });
    expect(stored.uploaderId).toBe(org.memberIds[3]);
  });

  it("rolls back the comment when storing an attachment fails in the database", async () => {
    await t.db.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION test_fail_attachment() RETURNS trigger AS $$
      BEGIN IF NEW.name = 'boom.pdf' THEN RAISE EXCEPTION 'disk full'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
    await t.db.$executeRawUnsafe(
      `CREATE TRIGGER test_fail_attachment BEFORE INSERT ON "Attachment" FOR EACH ROW EXECUTE FUNCTION test_fail_attachment()`,
    );
    try {
      const started = new Date();
      const before = {
        comments: await t.db.comment.count(),
        attachments: await t.db.attachment.count(),
        audit: await t.db.auditEvent.count(),
      };
      const res = await post({
        content: "x",
        entityId: org.taskIds[0],
        entityType: "task",
        userId: owner,
        attachments: [pdf, { ...pdf, fileName: "boom.pdf" }],
      });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        statusCode: 500,
        error: "Internal Server Error",
        code: "INTERNAL_SERVER_ERROR",
        message: "Internal server error",
      });
      expect(res.text).not.toContain("disk full");
      expect({
        comments: await t.db.comment.count(),
        attachments: await t.db.attachment.count(),
        audit: await t.db.auditEvent.count(),
      }).toEqual(before);
      // The two files' objects, already in the store, are handed to the deletion job (which checks no row names them).
      const scheduled = await t.db.attachmentDeletion.findMany({ where: { createdAt: { gte: started } } });
      expect(scheduled).toHaveLength(2);
      const store = t.app.services.comments.attachments.settings.store;
      for (const { objectKey } of scheduled)
        expect(await store.digest(objectKey)).toMatchObject({ size: Buffer.from(pdf.fileData, "base64").length });
    } finally {
      await t.db.$executeRawUnsafe(`DROP TRIGGER test_fail_attachment ON "Attachment"`);
    }
  });

  it("issues the same number of SQL statements for 1 and 5 attachments, beside the store's own", async () => {
    // The database store writes each file's object before the comment's transaction (one file, its
    // statements); the comment, its attachments' rows and its audit event take the same statements however many.
    const run = async (n: number) => {
      const { statements } = await t.countQueries(() =>
        post({
          content: "x",
          entityId: org.taskIds[0],
          entityType: "task",
          userId: owner,
          attachments: Array.from({ length: n }, () => pdf),
        }),
      );
      return statements.filter((s) => !/^(BEGIN|COMMIT|ROLLBACK)/i.test(s.trim()) && !/"ApiKey"|"AttachmentObject/.test(s));
    };
    const one = await run(1);
    const five = await run(5);
    expect(five.length).toBe(one.length);
  });
});
