import { describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();

/** Headers of a session of the seed's i-th user in its organization. */
async function sessionOf(seed: SeedResult, i: number) {
  const session = await createSession(t.db, seed.userIds[i] as string, 3_600_000);
  return { authorization: `Bearer ${session.token}`, "x-organization-id": seed.organizationId };
}

async function comment(authorIndex: number, attachments = 0) {
  const res = await t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: {
      content: `Written by user ${authorIndex}`,
      entityId: org.vendorIds[0],
      entityType: "vendor",
      userId: org.userIds[authorIndex],
      attachments: Array.from({ length: attachments }, (_, i) => ({
        fileName: `evidence-${i}.txt`,
        fileType: "text/plain",
        fileData: Buffer.from(`bytes ${i}`).toString("base64"),
      })),
    },
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; attachments: { id: string }[] };
}

describe("updateComment", () => {
  it("lets the author edit with a session (PATCH) and records the old and new text", async () => {
    const { id } = await comment(1);
    const res = await t.rest("PATCH", `/v1/comments/${id}`, { headers: await sessionOf(org, 1), body: { content: "Edited" } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, content: "Edited", author: { id: org.userIds[1] } });
    const event = await t.db.auditEvent.findFirst({ where: { entityId: id, action: "comment.updated" } });
    expect(event?.data).toEqual({ changes: { content: { from: "Written by user 1", to: "Edited" } } });
    expect(event?.actorUserId).toBe(org.userIds[1]);
  });

  it("lets an API key edit when userId names the author, over GraphQL too", async () => {
    const { id } = await comment(2);
    const res = await t.gql(
      `mutation($id: ID!, $content: String!, $userId: ID) { updateComment(id: $id, content: $content, userId: $userId) { id content } }`,
      { id, content: "Edited by key", userId: org.userIds[2] },
      { key: org.apiKey },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.updateComment).toEqual({ id, content: "Edited by key" });
  });

  it("is 403 for another author (session or API key naming someone else), 400 for an API key without userId", async () => {
    const { id } = await comment(1);
    const bySession = await t.rest("PATCH", `/v1/comments/${id}`, { headers: await sessionOf(org, 0), body: { content: "x" } });
    expect(bySession.status).toBe(403);
    expect(bySession.body.code).toBe("FORBIDDEN");
    const byKey = await t.rest("PATCH", `/v1/comments/${id}`, {
      key: org.apiKey,
      body: { content: "x", userId: org.userIds[0] },
    });
    expect(byKey.status).toBe(403);
    const noUser = await t.rest("PATCH", `/v1/comments/${id}`, { key: org.apiKey, body: { content: "x" } });
    expect(noUser.status).toBe(400);
    // With a user credential, userId is ignored: naming the author does not make the caller the author.
    const ignored = await t.rest("PATCH", `/v1/comments/${id}`, {
      headers: await sessionOf(org, 0),
      body: { content: "x", userId: org.userIds[1] },
    });
    expect(ignored.status).toBe(403);
    const stored = await t.db.comment.findUnique({ where: { id } });
    expect(stored?.content).toBe("Written by user 1");
  });

  it("is 404 for another organization's comment, and for an API key naming a foreign user", async () => {
    const { id } = await comment(1);
    const foreign = await t.rest("PATCH", `/v1/comments/${id}`, {
      key: other.apiKey,
      body: { content: "x", userId: other.userIds[0] },
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe("NOT_FOUND");
    const foreignUser = await t.rest("PATCH", `/v1/comments/${id}`, {
      key: org.apiKey,
      body: { content: "x", userId: other.userIds[0] },
    });
    expect(foreignUser.status).toBe(404);
  });

  it("validates the text as on create", async () => {
    const { id } = await comment(1);
    for (const content of ["   ", "x".repeat(2001)]) {
      const res = await t.rest("PATCH", `/v1/comments/${id}`, { key: org.apiKey, body: { content, userId: org.userIds[1] } });
      expect(res.status).toBe(400);
    }
    const emoji = await t.rest("PATCH", `/v1/comments/${id}`, {
      key: org.apiKey,
      body: { content: "😀".repeat(2000), userId: org.userIds[1] },
    });
    expect(emoji.status).toBe(200);
  });
});

describe("deleteComment", () => {
  it("answers 204 with no body and removes the comment, its attachment rows and bytes, auditing the content", async () => {
    const created = await comment(1, 2);
    const res = await t.rest("DELETE", `/v1/comments/${created.id}`, { headers: await sessionOf(org, 1) });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(await t.db.comment.count({ where: { id: created.id } })).toBe(0);
    expect(await t.db.attachment.count({ where: { commentId: created.id } })).toBe(0);
    for (const a of created.attachments) {
      const download = await t.rest("GET", `/v1/attachments/${a.id}`, { key: org.apiKey });
      expect(download.status).toBe(404);
    }
    const event = await t.db.auditEvent.findFirst({ where: { entityId: created.id, action: "comment.deleted" } });
    expect(event).toMatchObject({ actorUserId: org.userIds[1], organizationId: org.organizationId });
    expect(event?.data).toMatchObject({
      content: "Written by user 1",
      entityType: "vendor",
      entityId: org.vendorIds[0],
      authorUserId: org.userIds[1],
      attachments: [
        expect.objectContaining({ name: expect.stringMatching(/^evidence-/) }),
        expect.objectContaining({ name: expect.stringMatching(/^evidence-/) }),
      ],
    });
    const again = await t.rest("DELETE", `/v1/comments/${created.id}`, { headers: await sessionOf(org, 1) });
    expect(again.status).toBe(404);
  });

  it("takes userId in the query string with an API key; GraphQL answers the id and the entity", async () => {
    const a = await comment(2);
    const rest = await t.rest("DELETE", `/v1/comments/${a.id}?userId=${org.userIds[2]}`, { key: org.apiKey });
    expect(rest.status).toBe(204);
    const b = await comment(2);
    const gql = await t.gql(
      "mutation($id: ID!, $userId: ID) { deleteComment(id: $id, userId: $userId) { deletedId entity { __typename ... on Vendor { id } } } }",
      { id: b.id, userId: org.userIds[2] },
      { key: org.apiKey },
    );
    const entity = { __typename: "Vendor", id: org.vendorIds[0] };
    expect(gql.body).toEqual({ data: { deleteComment: { deletedId: b.id, entity } } });
  });

  it("is 403 for another author, 400 for an API key without userId or with a body, 404 across organizations", async () => {
    const created = await comment(1, 1);
    const notAuthor = await t.rest("DELETE", `/v1/comments/${created.id}?userId=${org.userIds[0]}`, { key: org.apiKey });
    expect(notAuthor.status).toBe(403);
    const bySession = await t.rest("DELETE", `/v1/comments/${created.id}`, { headers: await sessionOf(org, 0) });
    expect(bySession.status).toBe(403);
    const noUser = await t.rest("DELETE", `/v1/comments/${created.id}`, { key: org.apiKey });
    expect(noUser.status).toBe(400);
    const withBody = await t.rest("DELETE", `/v1/comments/${created.id}`, { key: org.apiKey, body: { userId: org.userIds[1] } });
    expect(withBody.status).toBe(400);
    const foreign = await t.rest("DELETE", `/v1/comments/${created.id}?userId=${other.userIds[0]}`, { key: other.apiKey });
    expect(foreign.status).toBe(404);
    expect(await t.db.comment.count({ where: { id: created.id } })).toBe(1);
    expect(await t.db.attachment.count({ where: { commentId: created.id } })).toBe(1);
  });

  it("needs comment:create", async () => {
    const created = await comment(1);
    const reader = await t.keyWith(org.organizationId, ["comment:read"]);
    const res = await t.rest("DELETE", `/v1/comments/${created.id}?userId=${org.userIds[1]}`, { key: reader.key });
    expect(res.status).toBe(403);
    const edit = await t.rest("PATCH", `/v1/comments/${created.id}`, {
      key: reader.key,
      body: { content: "x", userId: org.userIds[1] },
    });
    expect(edit.status).toBe(403);
  });
});
