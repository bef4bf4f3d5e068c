import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();

function comment(content: string, extra: Record<string, unknown> = {}, entityId = org.vendorIds[0]) {
  return t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: { content, entityId, entityType: "vendor", userId: org.userIds[0], ...extra },
  });
}

describe("list comments of an entity", () => {
  it("lists newest first with authors and attachments, paging with nextCursor", async () => {
    // A vendor of its own: other tests comment on the seeded ones.
    const vendor = await t.rest("POST", "/v1/vendors", { key: org.apiKey, body: { name: "Listed vendor" } });
    expect(vendor.status).toBe(201);
    const vendorId = vendor.body.id as string;
    for (let i = 0; i < 5; i++) {
      const res = await comment(
        `c${i}`,
        {
          attachments: [{ fileName: `f${i}.txt`, fileType: "text/plain", fileData: Buffer.from(`file ${i}`).toString("base64") }],
        },
        vendorId,
      );
      expect(res.status).toBe(201);
    }
    const first = await t.rest("GET", `/v1/comments?entityId=${vendorId}&entityType=vendor&limit=3`, { key: org.apiKey });
    expect(first.status).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(["items", "nextCursor"]);
    expect(first.body.items.map((c: { content: string }) => c.content)).toEqual(["c4", "c3", "c2"]);
    expect(first.body.items[0].author).toMatchObject({ id: org.userIds[0], name: "Ada Owner" });
    expect(first.body.items[0].attachments).toEqual([
      {
        id: expect.stringMatching(/^att_/),
        name: "f4.txt",
        type: "text/plain",
        size: 6,
        sha256: createHash("sha256").update("file 4").digest("hex"),
        createdAt: expect.any(String),
      },
    ]);
    const second = await t.rest(
      "GET",
      `/v1/comments?entityId=${vendorId}&entityType=vendor&limit=3&cursor=${first.body.nextCursor}`,
      {
        key: org.apiKey,
      },
    );
    expect(second.body.items.map((c: { content: string }) => c.content)).toEqual(["c1", "c0"]);
    expect(second.body.nextCursor).toBeNull();
    const gql = await t.gql(
      `query($id: ID!) { comments(entityId: $id, entityType: vendor, limit: 3) { items { content author { name } attachments { name } } nextCursor } }`,
      { id: vendorId },
      { key: org.apiKey },
    );
    expect(gql.body.data.comments.nextCursor).toBe(first.body.nextCursor);
    expect(gql.body.data.comments.items[0]).toEqual({
      content: "c4",
      author: { name: "Ada Owner" },
      attachments: [{ name: "f4.txt" }],
    });
  });

  it("costs the same number of SQL statements for 5 and 50 comments", async () => {
    const entityId = org.vendorIds[1] as string;
    for (let i = 0; i < 50; i++)
      await comment(`bulk ${i}`, { attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: "YQ==" }] }, entityId);
    const small = await t.countQueries(() =>
      t.rest("GET", `/v1/comments?entityId=${entityId}&entityType=vendor&limit=5`, { key: org.apiKey }),
    );
    const large = await t.countQueries(() =>
      t.rest("GET", `/v1/comments?entityId=${entityId}&entityType=vendor&limit=50`, { key: org.apiKey }),
    );
    expect(large.count).toBe(small.count);
    // key, entity check, comments, attachments, authors, users: one statement each, whatever the page size
    expect(small.count).toBeLessThanOrEqual(6);
  });

  it("pages with no repeats and no gaps while comments are being added", async () => {
    const entityId = org.riskIds[0] as string;
    const post = (content: string) =>
      t.rest("POST", "/v1/comments", {
        key: org.apiKey,
        body: { content, entityId, entityType: "risk", userId: org.userIds[0] },
      });
    const existing: string[] = [];
    for (let i = 0; i < 40; i++) existing.push((await post(`before ${i}`)).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let inserted = 0;
    do {
      const query: string = `/v1/comments?entityId=${entityId}&entityType=risk&limit=7${cursor ? `&cursor=${cursor}` : ""}`;
      const [page] = await Promise.all([
        t.rest("GET", query, { key: org.apiKey }),
        post(`during ${inserted++}`),
        post(`during ${inserted++}`),
      ]);
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((c: { id: string }) => c.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(existing.filter((id) => !seen.includes(id))).toEqual([]);
    expect(inserted).toBeGreaterThan(10);
  });

  it("validates the entity and the page arguments", async () => {
    const base = `/v1/comments?entityType=vendor`;
    expect((await t.rest("GET", `${base}&entityId=vnd_missing`, { key: org.apiKey })).status).toBe(404);
    expect((await t.rest("GET", `${base}&entityId=${other.vendorIds[0]}`, { key: org.apiKey })).status).toBe(404);
    for (const page of ["limit=0", "limit=101", "limit=abc", "limit=1.5", "cursor=bogus"]) {
      const res = await t.rest("GET", `${base}&entityId=${org.vendorIds[0]}&${page}`, { key: org.apiKey });
      expect(res.status, page).toBe(400);
      expect(res.body.code).toBe("BAD_USER_INPUT");
    }
    // More than a default page of its own, whichever tests ran before.
    for (let i = 0; i < 21; i++) await comment(`page ${i}`, {}, org.vendorIds[1]);
    const defaultPage = await t.rest("GET", `${base}&entityId=${org.vendorIds[1]}`, { key: org.apiKey });
    expect(defaultPage.body.items).toHaveLength(20);
  });
});

describe("download an attachment", () => {
  it("answers the stored bytes with the stored type, as an attachment that cannot be rendered", async () => {
    const bytes = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0x10]);
    const created = await comment("with file", {
      attachments: [{ fileName: 'rapport été".pdf', fileType: "application/pdf", fileData: bytes.toString("base64") }],
    });
    expect(created.status).toBe(400);
    const ok = await comment("with file", {
      attachments: [{ fileName: "rapport été.pdf", fileType: "application/pdf", fileData: bytes.toString("base64") }],
    });
    const id = ok.body.attachments[0].id;
    const response = await t.app.fetch(new Request(`http://test/v1/attachments/${id}`, { headers: { "x-api-key": org.apiKey } }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/pdf");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("content-disposition")).toBe(
      `attachment; filename="rapport ete.pdf"; filename*=UTF-8''${encodeURIComponent("rapport été.pdf")}`,
    );
    expect(response.headers.get("content-security-policy")).toContain("sandbox");
    expect(Buffer.from(await response.arrayBuffer())).toEqual(bytes);
    // The same when the GET announces a body (chunked) that turns out empty.
    const chunked = await t.app.fetch(
      new Request(`http://test/v1/attachments/${id}`, { headers: { "x-api-key": org.apiKey, "transfer-encoding": "chunked" } }),
    );
    expect(chunked.status).toBe(200);
    expect(chunked.headers.get("content-type")).toBe("application/pdf");
    expect(chunked.headers.get("etag")).toBe(response.headers.get("etag"));
    expect(Buffer.from(await chunked.arrayBuffer())).toEqual(bytes);
    const gql = await t.gql(
      `query($id: ID!) { attachment(id: $id) { name type size contentBase64 } }`,
      { id },
      { key: org.apiKey },
    );
    expect(gql.body.data.attachment).toEqual({
      name: "rapport été.pdf",
      type: "application/pdf",
      size: 7,
      contentBase64: bytes.toString("base64"),
    });
  });

  it("answers 404 for another organization's attachment, in our envelope", async () => {
    const ok = await comment("file", { attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: "YQ==" }] });
    const res = await t.rest("GET", `/v1/attachments/${ok.body.attachments[0].id}`, { key: other.apiKey });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("NOT_FOUND");
  });
});

describe("audit events", () => {
  it("lists the organization's events newest first, only its own", async () => {
    await comment("audited");
    const res = await t.rest("GET", "/v1/audit-events?limit=5", { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.items[0]).toMatchObject({
      action: "comment.created",
      entityType: "comment",
      actorApiKeyId: expect.stringMatching(/^apk_/),
    });
    expect(Object.keys(res.body.items[0]).sort()).toEqual(
      [
        "action",
        "actorApiKeyId",
        "actorUserId",
        "createdAt",
        "data",
        "entityId",
        "entityType",
        "hash",
        "id",
        "requestId",
        "sequence",
      ].sort(),
    );
    // Section 14: each event's place in the organization's chain, newest (highest sequence) first.
    const sequences = res.body.items.map((e: { sequence: number }) => e.sequence);
    expect(sequences.every((n: unknown) => Number.isInteger(n) && (n as number) > 0)).toBe(true);
    expect(sequences).toEqual([...sequences].sort((a: number, b: number) => b - a));
    for (const e of res.body.items) expect(e.hash).toMatch(/^[0-9a-f]{64}$/);
    // The same fields over GraphQL.
    const gql = await t.gql(`{ auditEvents(limit: 5) { items { id sequence hash } } }`, {}, { key: org.apiKey });
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.auditEvents.items).toEqual(
      res.body.items.map((e: { id: string; sequence: number; hash: string }) => ({
        id: e.id,
        sequence: e.sequence,
        hash: e.hash,
      })),
    );
    const theirs = await t.rest("GET", "/v1/audit-events?limit=100", { key: other.apiKey });
    // Their chain is their own: 1, 2, 3 … without gaps.
    expect(theirs.body.items.map((e: { sequence: number }) => e.sequence).sort((a: number, b: number) => a - b)).toEqual(
      theirs.body.items.map((_: unknown, i: number) => i + 1),
    );
    // The other organization's own: its seed's (members, key, and the records it made), none of ours.
    const seeded = ["api_key.created", ...Array(4).fill("member.created"), ...Array(3).fill("task.created")];
    seeded.push(
      "vendor.created",
      "vendor.created",
      "risk.created",
      ...Array(4).fill("task_item.created"),
      "policy.created",
      "policy.created",
    );
    expect(theirs.body.items.map((e: { action: string }) => e.action).sort()).toEqual(seeded.sort());
  });
});

describe("the author's e-mail follows the member rule (contract section 10)", () => {
  it("is null without member:read on both transports and through notifications; the caller's own and member:read show it", async () => {
    const { createSession } = await import("../../src/auth/sessions.js");
    const taskId = org.taskIds[0] as string;
    const adaEmail = (await t.db.user.findUniqueOrThrow({ where: { id: org.userIds[0] as string } })).email;
    // Ada mentions Edsger (an employee: comment:read, no member:read), who then comments himself.
    const mention = `@[Edsger Employee](${org.memberIds[3]}) author e-mail check`;
    const created = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: mention, entityId: taskId, entityType: "task", userId: org.userIds[0] },
    });
    expect(created.status).toBe(201);
    expect(created.body.author.email).toBe(adaEmail);
    const session = await createSession(t.db, org.userIds[3] as string, 3_600_000);
    const headers = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
    const own = await t.rest("POST", "/v1/comments", {
      headers,
      body: { content: "my own e-mail stays mine to see", entityId: taskId, entityType: "task" },
    });
    expect(own.status).toBe(201);
    const edsgerEmail = own.body.author.email as string;
    expect(edsgerEmail).toMatch(/^edsger\./);

    const restList = await t.rest("GET", `/v1/comments?entityId=${taskId}&entityType=task&limit=100`, { headers });
    expect(restList.status).toBe(200);
    const byContent = (items: { content: string; author: { email: string | null } }[], content: string) =>
      items.find((c) => c.content === content)?.author;
    expect(byContent(restList.body.items, mention)).toMatchObject({ id: org.userIds[0], name: "Ada Owner", email: null });
    expect(byContent(restList.body.items, "my own e-mail stays mine to see")?.email).toBe(edsgerEmail);

    const query = `query($id: ID!) { comments(entityId: $id, entityType: task, limit: 100) { items { content author { id name email } } } }`;
    const gql = await t.gql(query, { id: taskId }, { headers });
    expect(gql.body.errors).toBeUndefined();
    expect(byContent(gql.body.data.comments.items, mention)).toEqual({ id: org.userIds[0], name: "Ada Owner", email: null });

    const inbox = await t.gql(
      "{ viewer { notifications(limit: 20) { items { comment { content author { email } } } } } }",
      {},
      { headers },
    );
    expect(inbox.body.errors).toBeUndefined();
    const notified = inbox.body.data.viewer.notifications.items.find(
      (n: { comment: { content: string } | null }) => n.comment?.content === mention,
    );
    expect(notified.comment.author.email).toBeNull();

    const reader = await t.keyWith(org.organizationId, ["comment:read", "member:read"]);
    const full = await t.gql(query, { id: taskId }, { key: reader.key });
    expect(byContent(full.body.data.comments.items, mention)?.email).toBe(adaEmail);
    const commentOnly = await t.keyWith(org.organizationId, ["comment:read"]);
    const restKey = await t.rest("GET", `/v1/comments?entityId=${taskId}&entityType=task&limit=100`, { key: commentOnly.key });
    expect(byContent(restKey.body.items, mention)?.email).toBeNull();
  });
});
