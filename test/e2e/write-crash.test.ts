import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/admin/admin.service.js";
import { seedDemo } from "../../src/admin/seed.js";
import { permissions } from "../../src/auth/permissions.js";
import { openDatabase } from "../../src/platform/db/database.js";
import { reachable, type ServerProcess, startServer } from "../helpers/server-process.js";
import { migratedPostgresDatabase, usePostgres } from "../helpers/test-app.js";

/**
 * A write load on one organization (create comment, with and without Idempotency-Key, 16 at a
 * time) with a webhook endpoint listening, the server killed with SIGKILL in the middle of it, then
 * another replica started on the database: the organization's chain verifies, and every
 * acknowledged comment has its audit event and its webhook delivery (contract sections 12 and 14).
 */
const run = usePostgres && (await reachable(5432));

describe.runIf(run)("a SIGKILL in the middle of a write load", () => {
  let drop: () => Promise<void>;
  let url: string;
  let apiKey: string;
  let demo: Awaited<ReturnType<typeof seedDemo>>;
  const servers: ServerProcess[] = [];
  let sql: pg.Client;

  beforeAll(async () => {
    const created = await migratedPostgresDatabase();
    drop = created.drop;
    url = created.url;
    const database = await openDatabase({ kind: "postgres", url });
    demo = await seedDemo(database.db);
    apiKey = (await createApiKey(database.db, { organizationId: demo.organizationId, name: "load", scopes: [...permissions] }))
      .key;
    await database.close();
    sql = new pg.Client({ connectionString: url });
    await sql.connect();
  }, 120_000);

  afterAll(async () => {
    for (const server of servers) server.child.kill("SIGKILL");
    await sql?.end();
    await drop?.();
  });

  // The deliveries stay queued (no worker): each one is a row to find.
  const start = async () => {
    const server = await startServer(
      { LOG_LEVEL: "warn", REDIS_URL: "", DATABASE_URL: url, WEBHOOK_WORKER: "false", MAIL_WORKER: "false" },
      { until: "ready" },
    );
    servers.push(server);
    return server;
  };
  const headers = { "x-api-key": "", "content-type": "application/json" };

  it("leaves the chain verifiable and every acknowledged comment with its event and its delivery", async () => {
    const first = await start();
    headers["x-api-key"] = apiKey;
    const endpoint = await fetch(`${first.url}/v1/webhook-endpoints`, {
      method: "POST",
      headers,
      body: JSON.stringify({ url: "https://hooks.example.com/crash" }),
    });
    expect(endpoint.status).toBe(201);

    const acknowledged: string[] = [];
    let sent = 0;
    let stopped = false;
    const writer = async (lane: number) => {
      while (!stopped) {
        const i = sent++;
        const keyed: Record<string, string> = i % 2 === 0 ? { "idempotency-key": `crash-${lane}-${i}` } : {};
        const answer = await fetch(`${first.url}/v1/comments`, {
          method: "POST",
          headers: { ...headers, ...keyed },
          body: JSON.stringify({
            content: `Load ${i} for @[Member](${demo.memberIds[1]})`,
            entityId: demo.taskIds[0],
            entityType: "task",
            userId: demo.userIds[0],
          }),
        }).then(
          async (r) => (r.status === 201 ? ((await r.json()) as { id: string }).id : `status ${r.status}`),
          () => null,
        );
        if (answer === null) return; // the server is gone
        if (answer.startsWith("status")) throw new Error(`a write was refused before the kill: ${answer}`);
        acknowledged.push(answer);
      }
    };
    const lanes = Array.from({ length: 16 }, (_, lane) => writer(lane));
    await first.waitFor(() => acknowledged.length >= 60, "60 acknowledged writes");
    first.child.kill("SIGKILL");
    await first.exited;
    stopped = true;
    await Promise.all(lanes);
    expect(first.child.signalCode).toBe("SIGKILL");
    // Writes were still in flight: some never had an answer.
    expect(sent).toBeGreaterThan(acknowledged.length);

    const second = await start();
    const verified = await fetch(`${second.url}/v1/audit/verify`, { headers });
    expect(verified.status).toBe(200);
    const answer = await verified.json();
    expect(answer).toMatchObject({ ok: true, firstBrokenSequence: null });

    const { rows } = await sql.query<{ id: string; event: string | null; deliveries: string; notifications: string }>(
      `SELECT c."id", e."id" AS "event",
              (SELECT count(*) FROM "WebhookDelivery" d WHERE d."eventId" = e."id") AS "deliveries",
              (SELECT count(*) FROM "Notification" n WHERE n."commentId" = c."id") AS "notifications"
       FROM unnest($1::text[]) AS a("id")
       LEFT JOIN "Comment" c ON c."id" = a."id"
       LEFT JOIN "AuditEvent" e ON e."entityId" = a."id" AND e."action" = 'comment.created'`,
      [acknowledged],
    );
    expect(rows).toHaveLength(acknowledged.length);
    const missing = rows.filter((r) => !r.id || !r.event || Number(r.deliveries) !== 1 || Number(r.notifications) !== 1);
    expect(missing).toEqual([]);

    // Nothing half-written either: every comment committed has its event, and every event its delivery.
    const orphans = await sql.query(
      `SELECT
         (SELECT count(*) FROM "Comment" c WHERE c."organizationId" = $1
            AND NOT EXISTS (SELECT 1 FROM "AuditEvent" e WHERE e."entityId" = c."id" AND e."action" = 'comment.created')) AS "commentsWithoutEvent",
         (SELECT count(*) FROM "AuditEvent" e WHERE e."organizationId" = $1 AND e."action" = 'comment.created'
            AND NOT EXISTS (SELECT 1 FROM "WebhookDelivery" d WHERE d."eventId" = e."id")) AS "eventsWithoutDelivery",
         (SELECT count(*) FROM "AuditEvent" e WHERE e."organizationId" = $1) AS "events"`,
      [demo.organizationId],
    );
    expect(orphans.rows[0]).toMatchObject({ commentsWithoutEvent: "0", eventsWithoutDelivery: "0" });
    expect(answer.checked).toBe(Number(orphans.rows[0].events));
  }, 180_000);
});
