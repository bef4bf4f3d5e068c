import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedDemo } from "../../src/admin/seed.js";
import { createAuditSigner, generateAuditSigningKey } from "../../src/modules/audit/audit.keys.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import { createTestApp, openOwnDatabase, type TestApp, usePostgres } from "../helpers/test-app.js";

// Two apps on one database, as two replicas are: on PostgreSQL each with its own connection pool,
// so their transactions truly run at once; on the embedded database (one connection) they share it.
let own: Awaited<ReturnType<typeof openOwnDatabase>>;
let second: Database | undefined;
let a: TestApp;
let b: TestApp;

beforeAll(async () => {
  own = await openOwnDatabase();
  second = usePostgres ? await openDatabase({ kind: "postgres", url: own.url as string, poolSize: 10 }) : undefined;
  const auditSigner = createAuditSigner(generateAuditSigningKey());
  a = await createTestApp({ database: own.database, auditSigner });
  b = await createTestApp({ database: second ?? own.database, auditSigner });
}, 60_000);
afterAll(async () => {
  await second?.close();
  await own.close();
});

describe("concurrent changes in one organization from two replicas", () => {
  it("get consecutive sequences in commit order and a chain that verifies", async () => {
    const org = await seedDemo(own.database.db, "Race");
    const before = await own.database.db.auditEvent.count({ where: { organizationId: org.organizationId } });
    const PER_APP = 40;
    const results = await Promise.all(
      Array.from({ length: PER_APP * 2 }, (_, i) =>
        (i % 2 ? b : a).rest("POST", "/v1/comments", {
          key: org.apiKey,
          body: {
            content: `race ${i}`,
            entityId: org.taskIds[i % org.taskIds.length],
            entityType: "task",
            userId: org.userIds[0],
          },
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(results.map(() => 201));
    // A checkpoint signed by one replica while the other writes.
    const [checkpoint] = await Promise.all([
      b.rest("POST", "/v1/audit/checkpoints", { key: org.apiKey }),
      a.rest("POST", "/v1/comments", {
        key: org.apiKey,
        body: { content: "one more", entityId: org.taskIds[0], entityType: "task", userId: org.userIds[0] },
      }),
    ]);
    expect(checkpoint.status).toBe(201);

    const rows = await own.database.db.auditEvent.findMany({
      where: { organizationId: org.organizationId },
      select: { sequence: true },
      orderBy: { sequence: "asc" },
    });
    const total = before + PER_APP * 2 + 1;
    expect(rows.map((r) => r.sequence)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    for (const app of [a, b]) {
      const verified = await app.rest("GET", "/v1/audit/verify", { key: org.apiKey });
      expect(verified.body).toEqual({ ok: true, checked: total, firstBrokenSequence: null, reason: null });
    }
  }, 120_000);
});
