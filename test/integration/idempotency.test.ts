import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

let n = 0;
const newKey = () => `retry-${Date.now()}-${n++}`;

const { t, org, other } = await openFixture();

const comment = (content: string) => ({ content, entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] });
const post = (key: string, body: unknown, apiKey = org.apiKey) =>
  t.rest("POST", "/v1/comments", { key: apiKey, body, headers: { "idempotency-key": key } });
const countComments = () => t.db.comment.count({ where: { organizationId: org.organizationId } });

describe("Idempotency-Key on REST", () => {
  it("returns the first answer to a retry without writing again", async () => {
    const key = newKey();
    const before = await countComments();
    const first = await post(key, comment("once"));
    expect(first.status).toBe(201);
    const retry = await post(key, comment("once"));
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await countComments()).toBe(before + 1);
  });

  it("answers 422 for the same key with another body", async () => {
    const key = newKey();
    expect((await post(key, comment("first"))).status).toBe(201);
    const reuse = await post(key, comment("second"));
    expect(reuse.status).toBe(422);
    expect(reuse.body).toMatchObject({ statusCode: 422, code: "IDEMPOTENCY_KEY_REUSED" });
  });

  it("writes once when retries race", async () => {
    const key = newKey();
    const before = await countComments();
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(key, comment("racing"))));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(201));
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await countComments()).toBe(before + 1);
  });

  it("keeps keys per organization", async () => {
    const key = newKey();
    expect((await post(key, comment("mine"))).status).toBe(201);
    const theirs = await post(
      key,
      { content: "theirs", entityId: other.taskIds[0], entityType: "task", userId: other.userIds[0] },
      other.apiKey,
    );
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
  });

  it("replays a refusal from the operation, but not a refusal of the request itself", async () => {
    const key = newKey();
    const missing = { ...comment("x"), entityId: "tsk_missing" };
    expect((await post(key, missing)).status).toBe(404);
    const replay = await post(key, missing);
    expect(replay.status).toBe(404);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");

    const other = newKey();
    expect((await post(other, { ...comment("x"), content: 5 })).status).toBe(400);
    expect((await post(other, comment("fixed"))).status).toBe(201);
  });

  it("runs again once a key has expired", async () => {
    const key = newKey();
    const since = new Date(Date.now() - 1);
    const first = await post(key, comment("old"));
    await t.db.idempotencyKey.updateMany({
      where: { createdAt: { gte: since } },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const again = await post(key, comment("old"));
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(first.body.id);
  });

  it("refuses a malformed key", async () => {
    const res = await post("has spaces in it", comment("x"));
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_USER_INPUT");
  });

  it("applies to every create, e.g. policy versions", async () => {
    const key = newKey();
    const path = `/v1/policies/${org.policyIds[0]}/versions`;
    const first = await t.rest("POST", path, { key: org.apiKey, body: {}, headers: { "idempotency-key": key } });
    const retry = await t.rest("POST", path, { key: org.apiKey, body: {}, headers: { "idempotency-key": key } });
    expect(retry.body).toEqual(first.body);
    const next = await t.rest("POST", path, { key: org.apiKey, body: {} });
    expect(next.body.version).toBe(first.body.version + 1);
  });
});

describe("Idempotency-Key on GraphQL mutations", () => {
  const mutation = `mutation($title: String!) { createTask(title: $title) { id title } }`;
  const send = (key: string, title: string) =>
    t.gql(mutation, { title }, { key: org.apiKey, headers: { "idempotency-key": key } });

  it("returns the first answer to a retry, and 422 for other variables", async () => {
    const key = newKey();
    const before = await t.db.task.count({ where: { organizationId: org.organizationId } });
    const first = await send(key, "Once over GraphQL");
    const retry = await send(key, "Once over GraphQL");
    expect(retry.body).toEqual(first.body);
    expect(await t.db.task.count({ where: { organizationId: org.organizationId } })).toBe(before + 1);
    const reuse = await send(key, "Another title");
    expect(reuse.status).toBe(422);
    expect(reuse.body.errors[0].extensions.code).toBe("IDEMPOTENCY_KEY_REUSED");
  });

  it("ignores the header on queries", async () => {
    const key = newKey();
    const query = `query($id: ID!) { task(taskId: $id) { id } }`;
    const a = await t.gql(query, { id: org.taskIds[0] }, { key: org.apiKey, headers: { "idempotency-key": key } });
    const b = await t.gql(query, { id: org.taskIds[1] }, { key: org.apiKey, headers: { "idempotency-key": key } });
    expect(a.body.data.task.id).toBe(org.taskIds[0]);
    expect(b.body.data.task.id).toBe(org.taskIds[1]);
  });
});

describe("one transaction per keyed request", () => {
  /** The statements of `send`, in order: the key, the change, its answer, one COMMIT. */
  const statementsOf = async (send: () => Promise<unknown>) => {
    const { statements } = await t.countQueries(send);
    const at = (pattern: RegExp) => statements.findIndex((s) => pattern.test(s));
    // PGlite's adapter reports its COMMIT as a comment (`-- Implicit "COMMIT" query ...`).
    return {
      commits: statements.filter((s) => /\bCOMMIT\b/.test(s)).length,
      key: at(/^\s*INSERT INTO "IdempotencyKey"/),
      answer: at(/^\s*UPDATE "IdempotencyKey"/),
      commit: at(/\bCOMMIT\b/),
      at,
    };
  };

  it("runs a REST create, its key and its answer in one transaction: the service's own transaction joins it", async () => {
    // The comment's insert, audit row and mentions are a transaction of the service's own.
    const s = await statementsOf(() => post(newKey(), comment("in one transaction")));
    expect(s.commits).toBe(1);
    const change = s.at(/INSERT INTO "public"."Comment"/);
    expect(s.key).toBeGreaterThan(-1);
    expect(s.key).toBeLessThan(change);
    expect(change).toBeLessThan(s.answer);
    expect(s.answer).toBeLessThan(s.commit);
  });

  it("runs a GraphQL mutation, its key and its answer in one transaction", async () => {
    const s = await statementsOf(() =>
      t.gql(
        `mutation { createTask(title: "In one transaction") { id } }`,
        {},
        { key: org.apiKey, headers: { "idempotency-key": newKey() } },
      ),
    );
    expect(s.commits).toBe(1);
    const change = s.at(/INSERT INTO "public"."Task"/);
    expect(s.key).toBeLessThan(change);
    expect(change).toBeLessThan(s.answer);
    expect(s.answer).toBeLessThan(s.commit);
  });

  it("keeps a refusal from a failed statement, as any refusal of the operation, with nothing of the change", async () => {
    // NUL cannot be stored: PostgreSQL refuses the statement, which aborts the request's transaction.
    const key = newKey();
    const before = await t.db.task.count({ where: { organizationId: org.organizationId } });
    const send = (title: string) =>
      t.gql(
        `mutation($title: String!) { createTask(title: $title) { id } }`,
        { title },
        { key: org.apiKey, headers: { "idempotency-key": key } },
      );
    const refused = await send("nul \u0000 inside");
    expect(refused.status).toBe(200);
    expect(refused.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    const again = await send("nul \u0000 inside");
    expect(again.body).toEqual(refused.body);
    expect((await send("no nul inside")).status).toBe(422);
    expect(await t.db.task.count({ where: { organizationId: org.organizationId } })).toBe(before);
  });
});

describe("live events of a keyed request", () => {
  /** A new task of the organization, and its next comment.created event (undefined after `timeoutMs`). */
  const watchedTask = async (log: string[], timeoutMs: number) => {
    const task = await t.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: "Watched" } });
    const subscription = t.app.services.events.subscribe(
      "comment.created",
      org.organizationId,
      (event) => event.entityId === task.body.id,
    );
    const next = subscription.next().then((result) => {
      log.push("event");
      return result.value as { id: string };
    });
    const timeout = new Promise<undefined>((resolve) => setTimeout(resolve, timeoutMs));
    return { taskId: task.body.id as string, event: Promise.race([next, timeout]).finally(() => subscription.return?.()) };
  };

  it("are published once the request's transaction has committed, not while it runs", async () => {
    const log: string[] = [];
    const { taskId, event } = await watchedTask(log, 10_000);
    t.database.onQuery((sql) => {
      if (/\bCOMMIT\b/.test(sql)) log.push("commit");
    });
    try {
      const created = await post(newKey(), { ...comment("seen after the commit"), entityId: taskId });
      expect(created.status).toBe(201);
      expect((await event)?.id).toBe(created.body.id);
    } finally {
      t.database.onQuery(undefined);
    }
    // On PostgreSQL the event went out while the answer was being written, before the COMMIT.
    expect(log).toEqual(["commit", "event"]);
  });

  it("are never published when the request's transaction rolls back", async () => {
    const { taskId, event } = await watchedTask([], 1_000);
    // The comment is written, then the second mutation is refused: nothing of the request commits.
    const answer = await t.gql(
      `mutation($entityId: ID!, $userId: ID) {
        a: createComment(content: "rolled back", entityType: task, entityId: $entityId, userId: $userId) { id }
        b: createTask(title: "nul \u0000 inside") { id }
      }`,
      { entityId: taskId, userId: org.userIds[0] },
      { key: org.apiKey, headers: { "idempotency-key": newKey() } },
    );
    expect(answer.body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(await t.db.comment.count({ where: { entityId: taskId } })).toBe(0);
    expect(await event).toBeUndefined();
  });
});
