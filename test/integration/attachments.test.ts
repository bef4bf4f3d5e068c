import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer as createTcpServer, type Socket } from "node:net";
import { GetObjectCommand, HeadObjectCommand } from "@aws-sdk/client-s3";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyAttachments } from "../../src/admin/attachments.js";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { deleteDueObjects, SWEEP_AFTER_EXPIRY_MS } from "../../src/modules/comments/attachments.jobs.js";
import { openAttachmentStores } from "../../src/platform/attachments/create-store.js";
import type { StoreKind } from "../../src/platform/attachments/store.js";
import { type S3TestServer, startS3Server } from "../helpers/s3-server.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

// Contract section 15 through both transports, once per store: direct uploads by real HTTP PUT to
// the URL handed out, attaching them (and inline bytes) to comments, downloads by URL and streamed,
// every hostile case of issue 44's item 7, and the store failing.

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest();
const pdf = (text: string) => Buffer.from(`%PDF-1.7\n${text}\n%%EOF\n`);

/** What landed in the bucket under a key, read with the SDK's own client. */
async function s3Bytes(s3: S3TestServer, key: string): Promise<Buffer> {
  const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  return Buffer.from(await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

// biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary JSON
type Answer = { status: number; headers: Headers; body: any; text: string };

/** The app served over real HTTP on a free port: the URLs it signs point at it, and fetch reaches them. */
async function serve(t: TestApp) {
  const server = createServer((req, res) => t.app.yoga(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function http(
    method: string,
    path: string,
    opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers["x-api-key"] = opts.key;
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${base}${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: response.status, headers: response.headers, body, text } as Answer;
  }

  return {
    base,
    http,
    gql: (query: string, variables: Record<string, unknown>, key: string) =>
      http("POST", "/graphql", { key, body: { query, variables } }),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const uploadMutation = `mutation($fileName: String!, $fileType: String!, $size: Int!, $sha256: String!) {
  createAttachmentUpload(fileName: $fileName, fileType: $fileType, size: $size, sha256: $sha256) { id uploadUrl method headers expiresAt }
}`;
const commentMutation = `mutation($content: String!, $entityId: ID!, $entityType: CommentEntityType!, $attachments: [AttachmentInput!], $userId: ID) {
  createComment(content: $content, entityId: $entityId, entityType: $entityType, attachments: $attachments, userId: $userId) {
    id attachments { id name type size sha256 }
  }
}`;
const downloadUrlQuery = `query($id: ID!) { attachmentDownloadUrl(id: $id) { url expiresAt } }`;

/** The REST status a GraphQL error stands for, by its code. */
const statusOf = (code: string) =>
  ({ BAD_USER_INPUT: 400, NOT_FOUND: 404, CONFLICT: 409, SERVICE_UNAVAILABLE: 503 })[code as "NOT_FOUND"] ?? 500;

type Declared = { fileName: string; fileType: string; size: number; sha256: string };
const declare = (bytes: Buffer, fileName = "report.pdf", fileType = "application/pdf"): Declared => ({
  fileName,
  fileType,
  size: bytes.length,
  sha256: sha256(bytes).toString("base64"),
});

const pdfItem = (fileName: string) => ({ fileName, fileType: "application/pdf", fileData: pdf(fileName).toString("base64") });

describe.each(["database", "filesystem", "s3"] as StoreKind[])("attachments on the %s store", (kind) => {
  let t: TestApp;
  let s3: S3TestServer | undefined;
  let served: Awaited<ReturnType<typeof serve>>;
  let org: SeedResult;
  let other: SeedResult;

  beforeAll(async () => {
    s3 = kind === "s3" ? await startS3Server() : undefined;
    t = await createTestApp({ attachmentStore: kind, s3 });
    served = await serve(t);
    org = await t.seedOrg();
    other = await t.seedOrg();
  });
  afterAll(async () => {
    await served.close();
    await t.close();
    await s3?.close();
  });

  const http = (...args: Parameters<typeof served.http>) => served.http(...args);
  const gql = (query: string, variables: Record<string, unknown>, key = org.apiKey) => served.gql(query, variables, key);

  /** An upload over REST (or GraphQL), its bytes sent by a real PUT to the URL it answered. */
  async function upload(
    bytes: Buffer,
    opts: { key?: string; via?: "rest" | "graphql"; declared?: Declared; put?: boolean } = {},
  ) {
    const key = opts.key ?? org.apiKey;
    const declared = opts.declared ?? declare(bytes);
    let ticket: { id: string; uploadUrl: string; method: string; headers: Record<string, string>; expiresAt: string };
    if (opts.via === "graphql") {
      const res = await gql(uploadMutation, declared, key);
      expect(res.body.errors).toBeUndefined();
      ticket = res.body.data.createAttachmentUpload;
    } else {
      const res = await http("POST", "/v1/attachment-uploads", { key, body: declared });
      expect(res.status, res.text).toBe(201);
      ticket = res.body;
    }
    if (opts.put !== false) {
      const put = await fetch(ticket.uploadUrl, { method: ticket.method, headers: ticket.headers, body: new Uint8Array(bytes) });
      expect(put.status, await put.text()).toBe(200);
    }
    return ticket;
  }

  const comment = (attachments: unknown[], key = org.apiKey, userId = org.userIds[0]) =>
    http("POST", "/v1/comments", {
      key,
      body: { content: "evidence", entityId: org.taskIds[0], entityType: "task", userId, attachments },
    });
  const commentByGraphql = (attachments: unknown[], key = org.apiKey, userId = org.userIds[0]) =>
    gql(commentMutation, { content: "evidence", entityId: org.taskIds[0], entityType: "task", userId, attachments }, key);

  /** The same refusal on both transports: status, code and the item named. */
  async function refusedOnBoth(attachments: () => Promise<unknown[]>, status: number, path: string) {
    const rest = await comment(await attachments());
    expect(rest.status, rest.text).toBe(status);
    expect(rest.body.details?.map((d: { path: string }) => d.path)).toContain(path);
    const graphql = await commentByGraphql(await attachments());
    const error = graphql.body.errors?.[0];
    expect(statusOf(error?.extensions?.code), JSON.stringify(graphql.body)).toBe(status);
    expect(error.extensions.details?.map((d: { path: string }) => d.path)).toContain(path);
  }

  const counts = async () => ({
    comments: await t.db.comment.count({ where: { organizationId: org.organizationId } }),
    attachments: await t.db.attachment.count({ where: { organizationId: org.organizationId } }),
    audit: await t.db.auditEvent.count({ where: { organizationId: org.organizationId } }),
  });

  it("takes a file by direct upload: PUT to the URL answered, then attached by uploadId, on both transports", async () => {
    for (const via of ["rest", "graphql"] as const) {
      const bytes = pdf(`direct ${via} ${randomBytes(8).toString("hex")}`);
      const ticket = await upload(bytes, { via });
      expect(ticket).toMatchObject({
        id: expect.stringMatching(/^upl_/),
        method: "PUT",
        headers: {
          "Content-Type": "application/pdf",
          "Content-Length": String(bytes.length),
          "x-amz-checksum-sha256": sha256(bytes).toString("base64"),
        },
      });
      const ttl = Date.parse(ticket.expiresAt) - Date.now();
      expect(ttl).toBeGreaterThan(880_000);
      expect(ttl).toBeLessThanOrEqual(900_000);
      // The URL names no organization, caller or file.
      for (const secret of [org.organizationId, "report", org.apiKey]) expect(ticket.uploadUrl).not.toContain(secret);

      const created =
        via === "rest"
          ? await comment([{ uploadId: ticket.id, description: "pen test" }])
          : await commentByGraphql([{ uploadId: ticket.id }]);
      const answer = via === "rest" ? created.body : created.body.data.createComment;
      expect(created.status, created.text).toBe(via === "rest" ? 201 : 200);
      const hex = sha256(bytes).toString("hex");
      expect(answer.attachments).toEqual([
        expect.objectContaining({ name: "report.pdf", type: "application/pdf", size: bytes.length, sha256: hex }),
      ]);
      const row = await t.db.attachment.findUniqueOrThrow({ where: { id: answer.attachments[0].id } });
      expect(row).toMatchObject({ store: kind, sha256: hex, size: bytes.length });
      expect(row.objectKey).toMatch(/^[0-9a-f]{32}$/);
      const uploaded = await t.db.attachmentUpload.findUniqueOrThrow({ where: { id: ticket.id } });
      expect(uploaded.attachmentId).toBe(row.id);
      expect(uploaded.objectKey).toBe(row.objectKey);
      // The audit chain vouches for the bytes: the comment's event carries their SHA-256.
      const event = await t.db.auditEvent.findFirstOrThrow({ where: { entityId: answer.id, action: "comment.created" } });
      expect((event.data as { attachments: unknown[] }).attachments).toEqual([
        { id: row.id, name: "report.pdf", type: "application/pdf", size: bytes.length, sha256: hex },
      ]);
      if (s3) {
        const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: row.objectKey }));
        expect(head).toMatchObject({ ContentLength: bytes.length, ContentType: "application/pdf" });
        expect(await s3Bytes(s3, row.objectKey)).toEqual(bytes);
      }
    }
  });

  it("puts inline fileData in the store too, with its SHA-256 computed", async () => {
    const bytes = pdf("inline");
    const res = await comment([{ fileName: "inline.pdf", fileType: "application/pdf", fileData: bytes.toString("base64") }]);
    expect(res.status, res.text).toBe(201);
    const row = await t.db.attachment.findUniqueOrThrow({ where: { id: res.body.attachments[0].id } });
    expect(row).toMatchObject({ store: kind, sha256: sha256(bytes).toString("hex"), size: bytes.length });
    expect(row.objectKey).toMatch(/^[0-9a-f]{32}$/);
    if (s3) expect(await s3Bytes(s3, row.objectKey)).toEqual(bytes);
    const event = await t.db.auditEvent.findFirstOrThrow({ where: { entityId: res.body.id, action: "comment.created" } });
    expect(JSON.stringify(event.data)).toContain(sha256(bytes).toString("hex"));
  });

  it("mixes inline and uploaded files in one comment, and keys every object randomly", async () => {
    const a = pdf("mixed a");
    const b = pdf("mixed b");
    const ticket = await upload(b, { declared: declare(b, "Prüfbericht 2026.pdf") });
    const res = await comment([
      { fileName: "a.pdf", fileType: "application/pdf", fileData: a.toString("base64") },
      { uploadId: ticket.id, fileName: "Prüfbericht 2026.pdf" },
    ]);
    expect(res.status, res.text).toBe(201);
    const rows = await t.db.attachment.findMany({ where: { commentId: res.body.id } });
    const keys = rows.map((r) => r.objectKey);
    expect(new Set(keys).size).toBe(2);
    for (const key of keys) {
      expect(key).toMatch(/^[0-9a-f]{32}$/);
      expect(key).not.toContain(org.organizationId.slice(4));
    }
  });

  it("downloads by a credential-free URL with the type and a UTF-8 file name, refused once altered", async () => {
    const bytes = pdf("download by URL");
    const name = "Évaluation des risques — 2026.pdf";
    const ticket = await upload(bytes, { declared: declare(bytes, name) });
    const created = await comment([{ uploadId: ticket.id }]);
    const id = created.body.attachments[0].id;

    const rest = await http("GET", `/v1/attachments/${id}/download-url`, { key: org.apiKey });
    expect(rest.status, rest.text).toBe(200);
    expect(Object.keys(rest.body).sort()).toEqual(["expiresAt", "url"]);
    const ttl = Date.parse(rest.body.expiresAt) - Date.now();
    expect(ttl).toBeGreaterThan(280_000);
    expect(ttl).toBeLessThanOrEqual(300_000);
    const graphql = await gql(downloadUrlQuery, { id });
    expect(graphql.body.data.attachmentDownloadUrl.url).toEqual(expect.any(String));

    for (const url of [rest.body.url, graphql.body.data.attachmentDownloadUrl.url]) {
      const file = await fetch(url);
      expect(file.status).toBe(200);
      expect(file.headers.get("content-type")).toBe("application/pdf");
      const disposition = file.headers.get("content-disposition") ?? "";
      expect(disposition).toMatch(/^attachment;/);
      expect(disposition).toContain(`filename*=UTF-8''${encodeURIComponent(name)}`);
      expect(Buffer.from(await file.arrayBuffer())).toEqual(bytes);
    }
    // The signature's last character changed in its lowest bit (base64url ignores the last
    // character's low bits when it decodes: that spelling must be refused too): refused.
    const url = new URL(rest.body.url);
    const signed = [...url.searchParams.entries()].find(([k]) => /^(sig|X-Amz-Signature)$/.test(k));
    expect(signed).toBeDefined();
    const [param, value] = signed as [string, string];
    const alphabet = param === "sig" ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" : "0123456789abcdef";
    const last = alphabet.indexOf(value.at(-1) as string);
    url.searchParams.set(param, `${value.slice(0, -1)}${alphabet[last ^ 1]}`);
    expect((await fetch(url)).status).toBe(403);

    // Another organization's attachment is missing, on both transports.
    expect((await http("GET", `/v1/attachments/${id}/download-url`, { key: other.apiKey })).status).toBe(404);
    const foreign = await gql(downloadUrlQuery, { id }, other.apiKey);
    expect(foreign.body.errors[0].extensions.code).toBe("NOT_FOUND");
  });

  it("streams GET /v1/attachments/{id} from the store, with the SHA-256 as ETag", async () => {
    const bytes = Buffer.concat([pdf("streamed"), randomBytes(3 * 1024 * 1024)]);
    const ticket = await upload(bytes);
    const id = (await comment([{ uploadId: ticket.id }])).body.attachments[0].id;
    const res = await fetch(`${served.base}/v1/attachments/${id}`, { headers: { "x-api-key": org.apiKey } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-length")).toBe(String(bytes.length));
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const etag = res.headers.get("etag");
    expect(etag).toBe(`"${sha256(bytes).toString("base64url")}"`);
    // By digest: a deep comparison of 3 MiB takes vitest half a minute.
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toEqual(sha256(bytes));
    const again = await fetch(`${served.base}/v1/attachments/${id}`, {
      headers: { "x-api-key": org.apiKey, "if-none-match": etag as string },
    });
    expect(again.status).toBe(304);
    // Over GraphQL the metadata and, for a file of at most 10 MiB, its base64.
    const graphql = await gql(`query($id: ID!) { attachment(id: $id) { size sha256 contentBase64 } }`, { id });
    const { contentBase64, ...metadata } = graphql.body.data.attachment;
    expect(metadata).toEqual({ size: bytes.length, sha256: sha256(bytes).toString("hex") });
    expect(contentBase64 === bytes.toString("base64")).toBe(true);
  });

  it("refuses another organization's or another caller's upload (404), on both transports", async () => {
    const bytes = pdf("foreign");
    const foreign = await upload(bytes, { key: other.apiKey });
    await refusedOnBoth(async () => [{ uploadId: foreign.id }], 404, "attachments.0.uploadId");
    // The same organization, another API key: another caller.
    const second = await t.keyWith(org.organizationId, ["comment:create", "comment:read"]);
    const theirs = await upload(bytes, { key: second.key });
    await refusedOnBoth(async () => [{ uploadId: theirs.id }], 404, "attachments.0.uploadId");
    await refusedOnBoth(async () => [{ uploadId: "upl_missing" }], 404, "attachments.0.uploadId");
    // Its own caller attaches it.
    expect((await comment([{ uploadId: theirs.id }], second.key)).status).toBe(201);
  });

  it("takes the person behind a session as the caller: another session of theirs attaches the upload, another person's does not", async () => {
    const sessionOf = async (userId: string) => {
      const { token } = await createSession(t.db, userId, 3_600_000);
      return { authorization: `Bearer ${token}`, "x-organization-id": org.organizationId };
    };
    const bytes = pdf("by a person");
    const declared = declare(bytes);
    const made = await http("POST", "/v1/attachment-uploads", {
      headers: await sessionOf(org.userIds[0] as string),
      body: declared,
    });
    expect(made.status, made.text).toBe(201);
    const put = await fetch(made.body.uploadUrl, { method: "PUT", headers: made.body.headers, body: new Uint8Array(bytes) });
    expect(put.status).toBe(200);
    const body = { content: "mine", entityId: org.taskIds[0], entityType: "task", attachments: [{ uploadId: made.body.id }] };
    const stranger = await http("POST", "/v1/comments", { headers: await sessionOf(org.userIds[1] as string), body });
    expect(stranger.status, stranger.text).toBe(404);
    expect((await http("POST", "/v1/comments", { key: org.apiKey, body: { ...body, userId: org.userIds[0] } })).status).toBe(404);
    const again = await http("POST", "/v1/comments", { headers: await sessionOf(org.userIds[0] as string), body });
    expect(again.status, again.text).toBe(201);
  });

  it("attaches an upload once (409 the second time, naming the item), also when two comments race for it", async () => {
    const ticket = await upload(pdf("twice"));
    expect((await comment([{ uploadId: ticket.id }])).status).toBe(201);
    await refusedOnBoth(async () => [{ uploadId: ticket.id }], 409, "attachments.0.uploadId");
    await refusedOnBoth(async () => [pdfItem("a.pdf"), { uploadId: ticket.id }], 409, "attachments.1.uploadId");

    const raced = await upload(pdf("race"));
    const before = await counts();
    const answers = await Promise.all([comment([{ uploadId: raced.id }]), comment([{ uploadId: raced.id }])]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const after = await counts();
    expect(after.comments - before.comments).toBe(1);
    expect(after.attachments - before.attachments).toBe(1);
  });

  it("never changes or re-creates an attached object: PUTs to its upload URL after attaching and after the comment's deletion", async () => {
    const bytes = pdf(`written once ${randomBytes(8).toString("hex")}`);
    const ticket = await upload(bytes);
    const created = await comment([{ uploadId: ticket.id }]);
    expect(created.status, created.text).toBe(201);
    const id = created.body.attachments[0].id;
    const row = await t.db.attachment.findUniqueOrThrow({ where: { id } });
    const other = Buffer.from(bytes.map((b, i) => (i === 10 ? b ^ 1 : b)));
    const putAgain = async (body: Buffer) => {
      const response = await fetch(ticket.uploadUrl, { method: "PUT", headers: ticket.headers, body: new Uint8Array(body) });
      await response.arrayBuffer();
      return response.status;
    };
    // Refused by the store itself: S3 412 (If-None-Match) or 400 (BadDigest), the service's URLs 409.
    const refused = kind === "s3" ? [400, 412] : [409];
    const unchanged = async () => {
      const answer = await fetch(`${served.base}/v1/attachments/${id}`, { headers: { "x-api-key": org.apiKey } });
      expect(answer.status).toBe(200);
      expect(Buffer.from(await answer.arrayBuffer())).toEqual(bytes);
      expect(await verifyAttachments(t.db, t.attachmentStores.storeOf, org.organizationId)).toMatchObject({ mismatched: [] });
      if (s3) expect(await s3Bytes(s3, row.objectKey)).toEqual(bytes);
    };
    for (const body of [bytes, other]) expect(refused).toContain(await putAgain(body));
    await unchanged();

    // The comment deleted: its object stays while the upload URL could still write it, so that URL cannot re-create it.
    expect((await http("DELETE", `/v1/comments/${created.body.id}?userId=${org.userIds[0]}`, { key: org.apiKey })).status).toBe(
      204,
    );
    const storeOf = t.attachmentStores.storeOf;
    const quiet = pino({ level: "silent" });
    const now = new Date();
    // The pass sees every due deletion of the shared database: what it says of this object is what counts.
    const kept = { size: bytes.length, sha256: row.sha256 };
    const writableUntil = Date.parse(ticket.expiresAt) + SWEEP_AFTER_EXPIRY_MS;
    const postponedTo = async () =>
      (await t.db.attachmentDeletion.findFirstOrThrow({ where: { objectKey: row.objectKey } })).nextAttemptAt.getTime();
    expect(await deleteDueObjects(t.db, storeOf, quiet, now)).toMatchObject({ postponed: expect.any(Number) });
    expect(await postponedTo()).toBe(writableUntil);
    for (const body of [bytes, other]) expect(refused).toContain(await putAgain(body));
    expect(await storeOf(kind)?.digest(row.objectKey)).toEqual(kept);
    // Once the URL expired (and a PUT begun in time had its hour to finish), the object goes.
    await deleteDueObjects(t.db, storeOf, quiet, new Date(writableUntil - 1_000));
    expect(await storeOf(kind)?.digest(row.objectKey)).toEqual(kept);
    await deleteDueObjects(t.db, storeOf, quiet, new Date(writableUntil + 1_000));
    expect(await storeOf(kind)?.digest(row.objectKey)).toBeNull();
    expect(await t.db.attachmentDeletion.count({ where: { objectKey: row.objectKey } })).toBe(0);
  });

  it("refuses names with C1 controls or bidirectional marks and overrides, on both transports, uploaded or inline", async () => {
    for (const mark of ["\u0085", "\u009b", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069"]) {
      const fileName = `report${mark}fdp.pdf`;
      const body = declare(pdf("named"), fileName);
      const rest = await http("POST", "/v1/attachment-uploads", { key: org.apiKey, body });
      expect(rest.status, JSON.stringify(fileName)).toBe(400);
      expect(rest.body.details.map((d: { path: string }) => d.path)).toContain("fileName");
      const graphql = await gql(uploadMutation, body);
      expect(graphql.body.errors?.[0]?.extensions?.code, JSON.stringify(fileName)).toBe("BAD_USER_INPUT");
      await refusedOnBoth(async () => [pdfItem(fileName)], 400, "attachments.0.fileName");
    }
  });

  it("serves stored bytes on both routes with a sandbox CSP, nosniff and attachment, and a filename= that holds no path", async () => {
    const bytes = Buffer.from('<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>');
    const name = "..\uff0f..\uff0f.github\uff0fworkflows\uff0fci\u2215evil\u2044x\uff3c.xml";
    const ticket = await upload(bytes, { declared: declare(bytes, name, "text/xml") });
    const created = await comment([{ uploadId: ticket.id }]);
    expect(created.status, created.text).toBe(201);
    const id = created.body.attachments[0].id;
    const { url } = (await http("GET", `/v1/attachments/${id}/download-url`, { key: org.apiKey })).body;
    const answers = [
      ["GET /v1/attachments/{id}", await fetch(`${served.base}/v1/attachments/${id}`, { headers: { "x-api-key": org.apiKey } })],
      [
        "HEAD /v1/attachments/{id}",
        await fetch(`${served.base}/v1/attachments/${id}`, { method: "HEAD", headers: { "x-api-key": org.apiKey } }),
      ],
      ["the download URL", await fetch(url)],
      // A presigned GET is not signed for HEAD on S3.
      ...(kind === "s3" ? [] : [["HEAD of the download URL", await fetch(url, { method: "HEAD" })] as const]),
    ] as const;
    for (const [what, answer] of answers) {
      expect(answer.status, what).toBe(200);
      await answer.arrayBuffer();
      const disposition = answer.headers.get("content-disposition") ?? "";
      const fallback = /filename="([^"]*)"/.exec(disposition)?.[1];
      expect(disposition, what).toMatch(/^attachment; /);
      expect(fallback, what).toBeDefined();
      // Printable ASCII only (no control character), and no path separator.
      expect(fallback, what).toMatch(/^[ -~]+$/);
      expect(fallback, what).not.toMatch(/[/\\]/);
      expect(decodeURIComponent(/filename\*=UTF-8''([^;]+)/.exec(disposition)?.[1] ?? ""), what).toBe(name);
      // S3 serves its own URLs: it sets no CSP; every answer the service gives itself does.
      if (kind === "s3" && what.includes("download URL")) continue;
      expect(answer.headers.get("content-security-policy"), what).toBe("default-src 'none'; sandbox");
      expect(answer.headers.get("x-content-type-options"), what).toBe("nosniff");
    }
  });

  it("refuses an expired upload (400) and one whose bytes the store does not hold as declared (400), naming the item", async () => {
    const expired = await upload(pdf("expired"));
    await t.db.attachmentUpload.update({ where: { id: expired.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await refusedOnBoth(async () => [{ uploadId: expired.id }], 400, "attachments.0.uploadId");

    // Never sent.
    const unsent = await upload(pdf("never sent"), { put: false });
    await refusedOnBoth(async () => [pdfItem("first.pdf"), { uploadId: unsent.id }], 400, "attachments.1");

    // Other bytes under the upload's key than it declared (written past the URL's checks).
    const swapped = await upload(pdf("declared"), { put: false });
    const row = await t.db.attachmentUpload.findUniqueOrThrow({ where: { id: swapped.id } });
    const otherBytes = pdf("swapped!");
    await t.app.services.comments.attachments.settings.store.put(row.objectKey, otherBytes, {
      size: otherBytes.length,
      sha256: sha256(otherBytes).toString("hex"),
      type: "application/pdf",
    });
    const before = await counts();
    await refusedOnBoth(async () => [{ uploadId: swapped.id }], 400, "attachments.0");
    expect(await counts()).toEqual(before);
  });

  it("refuses fileData with uploadId, neither, and one upload twice, naming the item", async () => {
    const ticket = await upload(pdf("both"));
    await refusedOnBoth(async () => [{ ...pdfItem("x.pdf"), uploadId: ticket.id }], 400, "attachments.0");
    await refusedOnBoth(
      async () => [pdfItem("ok.pdf"), { fileName: "x.pdf", fileType: "application/pdf" }],
      400,
      "attachments.1",
    );
    await refusedOnBoth(async () => [{ uploadId: ticket.id }, { uploadId: ticket.id }], 400, "attachments.1.uploadId");
    // A name other than the upload's.
    await refusedOnBoth(async () => [{ uploadId: ticket.id, fileName: "other.pdf" }], 400, "attachments.0.fileName");
  });

  it("refuses a declared size over the limit, executable names, types and content, on both transports", async () => {
    const max = t.app.services.comments.attachments.settings.maxBytes;
    const cases: [Partial<Declared>, string][] = [
      [{ size: max + 1 }, "size"],
      [{ size: 0 }, "size"],
      [{ fileName: "setup.exe", fileType: "application/octet-stream" }, "fileName"],
      [{ fileName: "report.pdf.sh" }, "fileName"],
      [{ fileType: "application/x-msdownload" }, "fileType"],
      [{ sha256: "not base64" }, "sha256"],
      [{ sha256: Buffer.alloc(31).toString("base64") }, "sha256"],
      [{ fileName: "../etc/passwd.pdf" }, "fileName"],
    ];
    for (const [change, path] of cases) {
      const body = { ...declare(pdf("limits")), ...change };
      const rest = await http("POST", "/v1/attachment-uploads", { key: org.apiKey, body });
      expect(rest.status, `${JSON.stringify(change)}: ${rest.text}`).toBe(400);
      expect(rest.body.details.map((d: { path: string }) => d.path)).toContain(path);
      const graphql = await gql(uploadMutation, body);
      expect(graphql.body.errors?.[0]?.extensions?.code, JSON.stringify(change)).toBe("BAD_USER_INPUT");
    }
    // An executable's first bytes under an evidence name: refused when attached.
    const exe = Buffer.concat([Buffer.from("MZ\x90\x00"), randomBytes(64)]);
    const disguised = await upload(exe, { declared: declare(exe, "invoice.pdf") });
    await refusedOnBoth(async () => [{ uploadId: disguised.id }], 400, "attachments.0");
  });

  it("holds at most 100 pending uploads per caller: the 101st is 409, on both transports", async () => {
    const caller = await t.keyWith(org.organizationId, ["comment:create"]);
    const declared = declare(pdf("pending"));
    for (let i = 0; i < 100; i++) {
      const res = await t.rest("POST", "/v1/attachment-uploads", { key: caller.key, body: declared });
      expect(res.status).toBe(201);
    }
    const rest = await http("POST", "/v1/attachment-uploads", { key: caller.key, body: declared });
    expect(rest.status).toBe(409);
    expect(rest.body.code).toBe("CONFLICT");
    const graphql = await gql(uploadMutation, declared, caller.key);
    expect(graphql.body.errors[0].extensions.code).toBe("CONFLICT");
    // Another caller is not held back by this one's uploads; an expired upload no longer counts.
    expect((await http("POST", "/v1/attachment-uploads", { key: org.apiKey, body: declared })).status).toBe(201);
    const oldest = await t.db.attachmentUpload.findFirstOrThrow({
      where: { apiKeyId: caller.id },
      orderBy: { createdAt: "asc" },
    });
    await t.db.attachmentUpload.update({ where: { id: oldest.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await http("POST", "/v1/attachment-uploads", { key: caller.key, body: declared })).status).toBe(201);
  });

  it("needs comment:create to upload and comment:read to download", async () => {
    const reader = await t.keyWith(org.organizationId, ["comment:read"]);
    const res = await http("POST", "/v1/attachment-uploads", { key: reader.key, body: declare(pdf("x")) });
    expect(res.status).toBe(403);
    const writer = await t.keyWith(org.organizationId, ["comment:create"]);
    const id = (await comment([pdfItem("p.pdf")])).body.attachments[0].id;
    expect((await http("GET", `/v1/attachments/${id}/download-url`, { key: writer.key })).status).toBe(403);
    // Text PostgreSQL cannot hold, in the path: 400 as over GraphQL, never a 500.
    const nul = await http("GET", "/v1/attachments/att_%00", { key: org.apiKey });
    expect(nul.status).toBe(400);
    expect(nul.body.code).toBe("BAD_USER_INPUT");
  });
});

describe("the store failing", () => {
  // An S3 endpoint that accepts connections and never answers: every store operation waits for it.
  const sockets = new Set<Socket>();
  const silent = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  let t: TestApp;
  let served: Awaited<ReturnType<typeof serve>>;
  let org: SeedResult;
  const timeoutMs = 500;

  beforeAll(async () => {
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const probe = await createTestApp();
    const stores = openAttachmentStores(
      {
        store: "s3",
        dir: "",
        s3: {
          bucket: "evidence",
          region: "us-east-1",
          endpoint,
          forcePathStyle: true,
          credentials: { accessKeyId: "x", secretAccessKey: "y" },
        },
        publicUrl: undefined,
        timeoutMs,
        urlSecret: randomBytes(32).toString("hex"),
      },
      { db: probe.db },
    );
    t = await createTestApp({ attachmentStores: stores });
    served = await serve(t);
    org = await t.seedOrg();
  });
  afterAll(async () => {
    await served.close();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  const counts = async () => ({
    comments: await t.db.comment.count({ where: { organizationId: org.organizationId } }),
    attachments: await t.db.attachment.count({ where: { organizationId: org.organizationId } }),
    audit: await t.db.auditEvent.count({ where: { organizationId: org.organizationId } }),
  });

  it("answers a fast 503 with Retry-After to a change that needs it, on both transports, writing nothing", async () => {
    const before = await counts();
    const body = { content: "x", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] };
    const bytes = pdf("down");
    const ticket = await served.http("POST", "/v1/attachment-uploads", { key: org.apiKey, body: declare(bytes) });
    expect(ticket.status, ticket.text).toBe(201);
    for (const attachments of [[pdfItem("inline.pdf")], [{ uploadId: ticket.body.id }]]) {
      const started = Date.now();
      const rest = await served.http("POST", "/v1/comments", { key: org.apiKey, body: { ...body, attachments } });
      expect(rest.status, rest.text).toBe(503);
      expect(rest.body).toMatchObject({ statusCode: 503, code: "SERVICE_UNAVAILABLE" });
      expect(rest.headers.get("retry-after")).toMatch(/^\d+$/);
      const graphql = await served.gql(commentMutation, { ...body, attachments }, org.apiKey);
      expect(graphql.body.errors[0].extensions.code).toBe("SERVICE_UNAVAILABLE");
      // Two requests, each bounded by the store's timeout.
      expect(Date.now() - started).toBeLessThan(4 * timeoutMs + 2_000);
    }
    expect(await counts()).toEqual(before);
    expect((await t.db.attachmentUpload.findUniqueOrThrow({ where: { id: ticket.body.id } })).attachmentId).toBeNull();
  });

  it("answers 503 to reading the bytes, while the metadata still answers", async () => {
    // A committed attachment in the silent store (written by hand: nothing can be written there now).
    const commentId = `cmt_${randomBytes(8).toString("hex")}`;
    const authorId = (await t.db.member.findFirstOrThrow({ where: { organizationId: org.organizationId } })).id;
    await t.db.comment.create({
      data: {
        id: commentId,
        organizationId: org.organizationId,
        entityType: "task",
        entityId: org.taskIds[0] as string,
        content: "x",
        authorId,
      },
    });
    const id = `att_${randomBytes(8).toString("hex")}`;
    await t.db.attachment.create({
      data: {
        id,
        organizationId: org.organizationId,
        commentId,
        name: "a.pdf",
        type: "application/pdf",
        size: 5,
        uploaderId: authorId,
        store: "s3",
        objectKey: randomBytes(16).toString("hex"),
        sha256: sha256(Buffer.from("bytes")).toString("hex"),
      },
    });
    const rest = await served.http("GET", `/v1/attachments/${id}`, { key: org.apiKey });
    expect(rest.status, rest.text).toBe(503);
    expect(rest.body.code).toBe("SERVICE_UNAVAILABLE");
    expect(rest.headers.get("retry-after")).toMatch(/^\d+$/);
    const metadata = await served.gql(`query($id: ID!) { attachment(id: $id) { name size sha256 } }`, { id }, org.apiKey);
    expect(metadata.body.data.attachment).toMatchObject({ name: "a.pdf", size: 5 });
    const content = await served.gql(`query($id: ID!) { attachment(id: $id) { contentBase64 } }`, { id }, org.apiKey);
    expect(content.body.errors[0].extensions.code).toBe("SERVICE_UNAVAILABLE");
  });

  it("goes on with everything else, /ready included", async () => {
    expect((await served.http("GET", "/ready")).status).toBe(200);
    expect((await served.http("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey })).status).toBe(200);
    const plain = await served.http("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: "no file", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] },
    });
    expect(plain.status).toBe(201);
  });
});

describe("an S3 store that refuses the service's credentials (a wrong secret)", () => {
  let s3: S3TestServer;
  let t: TestApp;
  let served: Awaited<ReturnType<typeof serve>>;
  let org: SeedResult;
  beforeAll(async () => {
    s3 = await startS3Server();
    const probe = await createTestApp();
    const stores = openAttachmentStores(
      {
        store: "s3",
        dir: "",
        s3: { ...s3.settings, credentials: { accessKeyId: s3.credentials.accessKeyId, secretAccessKey: "not-the-secret" } },
        publicUrl: undefined,
        timeoutMs: 2_000,
        urlSecret: randomBytes(32).toString("hex"),
      },
      { db: probe.db },
    );
    t = await createTestApp({ attachmentStores: stores });
    served = await serve(t);
    org = await t.seedOrg();
  });
  afterAll(async () => {
    await served.close();
    await s3.close();
  });

  it("answers 503 with Retry-After to a change that needs it, on both transports, and /ready says the store fails", async () => {
    const body = {
      content: "x",
      entityId: org.taskIds[0],
      entityType: "task",
      userId: org.userIds[0],
      attachments: [pdfItem("a.pdf")],
    };
    const rest = await served.http("POST", "/v1/comments", { key: org.apiKey, body });
    expect(rest.status, rest.text).toBe(503);
    expect(rest.body).toMatchObject({ code: "SERVICE_UNAVAILABLE" });
    expect(rest.body.message).toContain("refuses the service's credentials");
    expect(rest.headers.get("retry-after")).toMatch(/^\d+$/);
    const graphql = await served.gql(commentMutation, body, org.apiKey);
    expect(graphql.body.errors[0].extensions.code).toBe("SERVICE_UNAVAILABLE");
    const ready = await served.http("GET", "/ready");
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: "ready", attachmentStore: "failing" });
  });
});

describe("an organization's uploads not yet attached", () => {
  it("declare at most ATTACHMENT_UNATTACHED_MAX_BYTES together: past it, 409 on both transports, until one is attached", async () => {
    const t = await createTestApp({ attachments: { unattachedMaxBytes: 1_000 } });
    const served = await serve(t);
    try {
      const org = await t.seedOrg();
      const other = await t.seedOrg();
      const bytes = pdf("x".repeat(400));
      const declared = declare(bytes);
      const first = await served.http("POST", "/v1/attachment-uploads", { key: org.apiKey, body: declared });
      expect(first.status, first.text).toBe(201);
      // Another caller of the organization counts too: the bound is the organization's.
      const colleague = await t.keyWith(org.organizationId, ["comment:create"]);
      expect((await served.http("POST", "/v1/attachment-uploads", { key: colleague.key, body: declared })).status).toBe(201);
      const rest = await served.http("POST", "/v1/attachment-uploads", { key: org.apiKey, body: declared });
      expect(rest.status, rest.text).toBe(409);
      expect(rest.body.message).toContain("ATTACHMENT_UNATTACHED_MAX_BYTES");
      const graphql = await served.gql(uploadMutation, declared, org.apiKey);
      expect(graphql.body.errors[0].extensions.code).toBe("CONFLICT");
      // Another organization is not held back.
      expect((await served.http("POST", "/v1/attachment-uploads", { key: other.apiKey, body: declared })).status).toBe(201);
      // Attached, an upload no longer counts.
      const put = await fetch(first.body.uploadUrl, { method: "PUT", headers: first.body.headers, body: new Uint8Array(bytes) });
      expect(put.status).toBe(200);
      const attached = await served.http("POST", "/v1/comments", {
        key: org.apiKey,
        body: {
          content: "x",
          entityId: org.taskIds[0],
          entityType: "task",
          userId: org.userIds[0],
          attachments: [{ uploadId: first.body.id }],
        },
      });
      expect(attached.status, attached.text).toBe(201);
      expect((await served.http("POST", "/v1/attachment-uploads", { key: org.apiKey, body: declared })).status).toBe(201);
    } finally {
      await served.close();
    }
  });
});

describe("refusals the database makes for the caller", () => {
  it("are logged at info with the request id, never as errors: an upload raced for, a NUL in an id", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: "debug" }, {
      write: (line: string) => lines.push(JSON.parse(line)),
    } as unknown as NodeJS.WritableStream);
    const t = await createTestApp({ logger });
    const served = await serve(t);
    try {
      const org = await t.seedOrg();
      const bytes = pdf("raced");
      const ticket = await served.http("POST", "/v1/attachment-uploads", { key: org.apiKey, body: declare(bytes) });
      await fetch(ticket.body.uploadUrl, { method: "PUT", headers: ticket.body.headers, body: new Uint8Array(bytes) });
      const body = {
        content: "x",
        entityId: org.taskIds[0],
        entityType: "task",
        userId: org.userIds[0],
        attachments: [{ uploadId: ticket.body.id }],
      };
      const raced = await Promise.all([0, 1, 2].map(() => served.http("POST", "/v1/comments", { key: org.apiKey, body })));
      expect(raced.map((r) => r.status).sort()).toEqual([201, 409, 409]);
      const nul = [
        await served.http("GET", "/v1/attachments/att_a%00b", { key: org.apiKey }),
        await served.http("GET", "/v1/attachments/att_a%00b/download-url", { key: org.apiKey }),
        await served.gql('query { attachment(id: "att_a\\u0000b") { id } }', {}, org.apiKey),
      ];
      expect(nul.map((r) => r.status)).toEqual([400, 400, 200]);
      await expect.poll(() => lines.filter((l) => l.msg === "request").length).toBeGreaterThanOrEqual(8);
      expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
      // Every refusal the database made is one line at info, naming its request.
      for (const line of lines.filter((l) => l.msg === "a database refusal answered as the caller's")) {
        expect(line.level).toBe(30);
        expect(line.requestId).toMatch(/^[\w-]{36}$/);
      }
      const download = lines.find((l) => l.msg === "a database refusal answered as the caller's" && l.code === "BAD_USER_INPUT");
      expect(download?.requestId).toBe(nul[1]?.headers.get("x-request-id"));
    } finally {
      await served.close();
    }
  });
});
