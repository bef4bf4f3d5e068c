import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, usePostgres } from "../helpers/test-app.js";

const createComment = `mutation($content: String!, $entityId: ID!, $userId: ID) {
  createComment(content: $content, entityId: $entityId, entityType: task, userId: $userId) { id }
}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The gauge's value in /metrics. */
async function waitingInGate(t: TestApp): Promise<number> {
  const text = await (await t.app.fetch(new Request("http://test/metrics"))).text();
  return Number(/^write_gate_waiting (\d+)/m.exec(text)?.[1] ?? Number.NaN);
}

describe("one organization's mutations a few at a time (DATABASE_WRITES_PER_ORGANIZATION, write-gate.ts)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ writes: { perOrganization: 2 } });
  });
  afterAll(() => t.close());

  it("commits every one of many concurrent changes of one organization, on both transports", async () => {
    const org = await t.seedOrg();
    const entityId = org.taskIds[0] as string;
    const userId = org.userIds[0] as string;
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        i % 2
          ? t.rest("POST", "/v1/comments", {
              key: org.apiKey,
              body: { content: `rest ${i}`, entityId, entityType: "task", userId },
            })
          : t.gql(createComment, { content: `graphql ${i}`, entityId, userId }, { key: org.apiKey }),
      ),
    );
    expect(answers.map((a) => ("errors" in (a.body ?? {}) ? a.body.errors : a.status))).toEqual(
      answers.map((_, i) => (i % 2 ? 201 : 200)),
    );
    const events = await t.db.auditEvent.findMany({
      where: { organizationId: org.organizationId, action: "comment.created" },
      select: { sequence: true },
    });
    expect(events).toHaveLength(24);
    expect(new Set(events.map((e) => e.sequence)).size).toBe(24);
    expect(await waitingInGate(t)).toBe(0);
  });
});

describe.runIf(usePostgres)("the gate while an organization's changes are stuck in PostgreSQL", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ writes: { perOrganization: 1, maxWaitMs: 600 } });
  });
  afterAll(() => t.close());

  it("queues the next changes in the service, answers them 503 after the wait, and holds up no read or other organization", async () => {
    const [a, b] = [await t.seedOrg(), await t.seedOrg()];
    const comment = (org: typeof a, content: string) =>
      t.rest("POST", "/v1/comments", {
        key: org.apiKey,
        body: { content, entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] },
      });
    // The organization's chain head exists once it has an event.
    expect((await comment(a, "first")).status).toBe(201);

    // Another transaction holds the chain head's row: A's next change waits for it in PostgreSQL.
    let release = () => {};
    let locked = () => {};
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const holder = t.db.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT 1 FROM "AuditChainHead" WHERE "organizationId" = ${a.organizationId} FOR UPDATE`;
        locked();
        await new Promise<void>((resolve) => {
          release = resolve;
        });
      },
      { timeout: 20_000 },
    );
    await isLocked;
    try {
      const stuck = comment(a, "stuck in PostgreSQL");
      await sleep(150);
      const started = Date.now();
      const queuedRest = comment(a, "queued over REST");
      const queuedGraphql = t.gql(
        createComment,
        { content: "queued over GraphQL", entityId: a.taskIds[0], userId: a.userIds[0] },
        { key: a.apiKey },
      );
      await sleep(150);
      // Both wait in the service, not in PostgreSQL: one backend waits on the row, not three.
      expect(await waitingInGate(t)).toBe(2);
      const waitingOnTheRow = await t.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%AuditChainHead%'`;
      expect(waitingOnTheRow[0]?.n).toBe(1);
      // Another organization's change and the organization's reads go on meanwhile.
      expect((await comment(b, "elsewhere")).status).toBe(201);
      expect((await t.rest("GET", `/v1/tasks/${a.taskIds[0]}`, { key: a.apiKey })).status).toBe(200);

      const [overRest, overGraphql] = await Promise.all([queuedRest, queuedGraphql]);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(overRest.status).toBe(503);
      expect(overRest.headers.get("retry-after")).toBeTruthy();
      expect(overRest.body).toMatchObject({ statusCode: 503, code: "SERVICE_UNAVAILABLE" });
      expect(overGraphql.body.errors[0].extensions.code).toBe("SERVICE_UNAVAILABLE");
      expect(overGraphql.body.data ?? null).toBeNull();

      release();
      await holder;
      expect((await stuck).status).toBe(201);
      // Nothing is left waiting, and the organization writes again at once.
      expect(await waitingInGate(t)).toBe(0);
      expect((await comment(a, "after")).status).toBe(201);
    } finally {
      release();
      await holder.catch(() => {});
    }
  });
});
