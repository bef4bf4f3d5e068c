import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

// Every log line of the app, parsed.
const lines: Array<Record<string, unknown>> = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
    done();
  },
});

let t: TestApp;
let org: SeedResult;

const b64 = (text: string) => Buffer.from(text).toString("base64");
const boom = { fileName: "boom.pdf", fileType: "application/pdf", fileData: b64("%PDF-1.7") };
const createComment = `mutation($content: String!, $entityId: ID!, $userId: ID, $attachments: [AttachmentInput!]) {
  createComment(content: $content, entityId: $entityId, entityType: task, userId: $userId, attachments: $attachments) { id }
}`;

beforeAll(async () => {
  t = await createTestApp({ logger: pino({ level: "info" }, sink) });
  org = await t.seedOrg();
  // An unexpected database failure on demand: storing an attachment named boom.pdf.
  await t.db.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION test_fail_attachment() RETURNS trigger AS $$
    BEGIN IF NEW.name = 'boom.pdf' THEN RAISE EXCEPTION 'disk full'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
  await t.db.$executeRawUnsafe(
    `CREATE TRIGGER test_fail_attachment BEFORE INSERT ON "Attachment" FOR EACH ROW EXECUTE FUNCTION test_fail_attachment()`,
  );
});
afterAll(async () => {
  await t.db.$executeRawUnsafe(`DROP TRIGGER IF EXISTS test_fail_attachment ON "Attachment"`);
  await t.close();
});
beforeEach(() => {
  lines.length = 0;
});

const unexpected = () => lines.filter((line) => line.msg === "unexpected error");

describe("request ids", () => {
  it("are echoed when sane and made up otherwise, on both transports, and in the request log", async () => {
    const rest = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key: org.apiKey, headers: { "x-request-id": "rest-1" } });
    expect(rest.headers.get("x-request-id")).toBe("rest-1");
    const graphql = await t.app.fetch(
      new Request("http://test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": org.apiKey, "x-request-id": "bad id" },
        body: JSON.stringify({ query: "{ __typename }" }),
      }),
    );
    const made = graphql.headers.get("x-request-id");
    expect(made).toMatch(/^[0-9a-f-]{36}$/);
    const logged = lines.filter((line) => line.msg === "request").map((line) => [line.path, line.requestId]);
    expect(logged).toEqual([
      [`/v1/tasks/${org.taskIds[0]}`, "rest-1"],
      ["/graphql", made],
    ]);
  });

  it("an unexpected error is answered without its cause and logged once with the id of its own request", async () => {
    // Two failing requests in flight at once, one per transport: each log line names its own request.
    const [rest, graphql] = await Promise.all([
      t.rest("POST", "/v1/comments", {
        key: org.apiKey,
        headers: { "x-request-id": "rest-fails" },
        body: { content: "x", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0], attachments: [boom] },
      }),
      t.app.fetch(
        new Request("http://test/graphql", {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": org.apiKey, "x-request-id": "graphql-fails" },
          body: JSON.stringify({
            query: createComment,
            variables: { content: "x", entityId: org.taskIds[0], userId: org.userIds[0], attachments: [boom] },
          }),
        }),
      ),
    ]);
    expect(rest.status).toBe(500);
    expect(rest.body.code).toBe("INTERNAL_SERVER_ERROR");
    const body = await graphql.text();
    expect(JSON.parse(body).errors[0].extensions.code).toBe("INTERNAL_SERVER_ERROR");
    expect(`${rest.text}${body}`).not.toContain("disk full");

    const logged = unexpected().map((line) => [line.requestId, (line.err as { message: string }).message]);
    expect(logged.sort()).toEqual([
      ["graphql-fails", expect.stringContaining("disk full")],
      ["rest-fails", expect.stringContaining("disk full")],
    ]);
  });

  it("errors of the caller are not logged as unexpected", async () => {
    await t.rest("GET", "/v1/tasks/tsk_nope", { key: org.apiKey });
    await t.gql("{ task(taskId: 1) { id } }", {}, { key: org.apiKey });
    expect(unexpected()).toEqual([]);
  });
});
