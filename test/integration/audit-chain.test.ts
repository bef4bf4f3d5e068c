import { createHash, createPublicKey, randomUUID, verify as verifySignature } from "node:crypto";
import canonicalize from "canonicalize";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { startAuditTimers } from "../../src/modules/audit/audit.jobs.js";
import { writeAuditEvent } from "../../src/modules/audit/audit.service.js";
import { newId } from "../../src/platform/ids.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

let t: TestApp;
let org: SeedResult;

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
});
afterAll(() => t.close());

const KEYS = [
  "sequence",
  "id",
  "organizationId",
  "action",
  "entityType",
  "entityId",
  "actorUserId",
  "actorApiKeyId",
  "data",
  "requestId",
  "createdAt",
  "hash",
];

/** The contract's hash, written here from its words, not from the service's code. */
function contractHash(previous: string, line: Record<string, unknown>): string {
  const { hash: _, ...withoutHash } = line;
  return createHash("sha256")
    .update(`${previous}\n${canonicalize(withoutHash)}`)
    .digest("hex");
}

/** The stored events of an organization as export lines, in sequence order, straight from the table. */
async function storedLines(organizationId: string) {
  const rows = await t.db.auditEvent.findMany({ where: { organizationId }, orderBy: [{ sequence: "asc" }, { id: "asc" }] });
  return rows.map((r) => ({
    sequence: r.sequence,
    id: r.id,
    organizationId: r.organizationId,
    action: r.action,
    entityType: r.entityType,
    entityId: r.entityId,
    actorUserId: r.actorUserId,
    actorApiKeyId: r.actorApiKeyId,
    data: r.data,
    requestId: r.requestId,
    createdAt: r.createdAt.toISOString(),
    hash: r.hash,
  }));
}

async function comment(seeded: SeedResult, content = "A comment") {
  const res = await t.rest("POST", "/v1/comments", {
    key: seeded.apiKey,
    body: { content, entityId: seeded.taskIds[0], entityType: "task", userId: seeded.userIds[0] },
  });
  expect(res.status, res.text).toBe(201);
}

/** Changes the table behind the service's back: as a database writer would, with the trigger off. */
async function tamper(...statements: string[]) {
  await t.db.$transaction(async (tx) => {
    await tx.$executeRawUnsafe("SET LOCAL session_replication_role = replica");
    for (const statement of statements) await tx.$executeRawUnsafe(statement);
  });
}

async function verifyBoth(key: string, query = "") {
  const rest = await t.rest("GET", `/v1/audit/verify${query}`, { key });
  expect(rest.status, rest.text).toBe(200);
  const params = new URLSearchParams(query.slice(1));
  const gql = await t.gql(
    "query($from: Int, $to: Int) { verifyAuditTrail(from: $from, to: $to) { ok checked firstBrokenSequence reason } }",
    {
      from: params.get("from") ? Number(params.get("from")) : null,
      to: params.get("to") ? Number(params.get("to")) : null,
    },
    { key },
  );
  expect(gql.body.data?.verifyAuditTrail, JSON.stringify(gql.body)).toEqual(rest.body);
  return rest.body as { ok: boolean; checked: number; firstBrokenSequence: number | null; reason: string | null };
}

/** A fresh organization with `n` comment events after its seed's. */
async function orgWithEvents(n: number) {
  const seeded = await t.seedOrg();
  for (let i = 0; i < n; i++) await comment(seeded, `c${i}`);
  const count = await t.db.auditEvent.count({ where: { organizationId: seeded.organizationId } });
  return { ...seeded, count };
}

describe("the chain", () => {
  it("gives every event the next sequence, 1, 2, 3 ..., and the hash the contract defines", async () => {
    for (let i = 0; i < 3; i++) await comment(org, `n${i}`);
    const lines = await storedLines(org.organizationId);
    expect(lines.length).toBeGreaterThan(3);
    let previous = "0".repeat(64);
    lines.forEach((line, index) => {
      expect(line.sequence).toBe(index + 1);
      expect(line.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(line.hash).toBe(contractHash(previous, line));
      previous = line.hash;
    });
    const head = await t.db.auditChainHead.findUniqueOrThrow({ where: { organizationId: org.organizationId } });
    expect(head).toMatchObject({ sequence: lines.length, hash: previous });
  });

  it("shows sequence and hash on both transports", async () => {
    const lines = await storedLines(org.organizationId);
    const last = lines[lines.length - 1];
    const rest = await t.rest("GET", "/v1/audit-events?limit=1", { key: org.apiKey });
    expect(rest.status).toBe(200);
    expect(rest.body.items[0]).toMatchObject({ id: last?.id, sequence: last?.sequence, hash: last?.hash });
    const gql = await t.gql("{ auditEvents(limit: 1) { items { id sequence hash } } }", {}, { key: org.apiKey });
    expect(gql.body.data.auditEvents.items[0]).toEqual({ id: last?.id, sequence: last?.sequence, hash: last?.hash });
  });

  it("gives the events of one change consecutive sequences", async () => {
    const before = await t.db.auditChainHead.findUniqueOrThrow({ where: { organizationId: org.organizationId } });
    const ids = [newId("aud"), newId("aud"), newId("aud")];
    await t.db.$transaction(async (tx) => {
      for (const id of ids) {
        await writeAuditEvent(tx, {
          id,
          organizationId: org.organizationId,
          action: "test.batch",
          entityType: "task",
          entityId: org.taskIds[0] as string,
          data: { at: new Date("2026-01-01T00:00:00Z"), n: 1.5, nested: { b: [1, "x"], a: null } },
        });
      }
    });
    const rows = await t.db.auditEvent.findMany({ where: { id: { in: ids } }, orderBy: { sequence: "asc" } });
    expect(rows.map((r) => r.id)).toEqual(ids);
    expect(rows.map((r) => r.sequence)).toEqual([1, 2, 3].map((n) => before.sequence + n));
    expect((await verifyBoth(org.apiKey)).ok).toBe(true);
  });

  it("writes an event, its chain and its deliveries in one statement: a plain comment's own, without a transaction; else the last before the COMMIT (a keyed request's: after its answer)", async () => {
    const fresh = await t.seedOrg();
    const endpoint = await t.rest("POST", "/v1/webhook-endpoints", {
      key: fresh.apiKey,
      body: { url: "https://hooks.example.com/chain" },
    });
    expect(endpoint.status).toBe(201);
    const create =
      (headers: Record<string, string> = {}, content = "Last") =>
      async () => {
        const res = await t.rest("POST", "/v1/comments", {
          key: fresh.apiKey,
          headers,
          body: { content, entityId: fresh.taskIds[0], entityType: "task", userId: fresh.userIds[0] },
        });
        expect(res.status, res.text).toBe(201);
      };
    // PGlite's adapter logs its transaction control as comments (`-- Implicit "COMMIT" query ...`).
    const isControl = (s: string) => /^(BEGIN|COMMIT|ROLLBACK)|Implicit "(BEGIN|COMMIT|ROLLBACK)"/i.test(s.trim());
    const keyed: Record<string, string> = { "idempotency-key": randomUUID() };
    const mention = `For @[Grace](${fresh.memberIds[1]})`;
    for (const [headers, content, ownStatement] of [
      [{}, "Last", true],
      [keyed, "Last", false],
      [{}, mention, false],
    ] as const) {
      const { statements } = await t.countQueries(create(headers, content));
      const chained = statements.filter((s) => s.includes('"AuditChainHead"'));
      expect(chained).toHaveLength(1);
      expect(chained[0]).toContain('INSERT INTO "AuditEvent"');
      expect(chained[0]).toContain('INSERT INTO "WebhookDelivery"');
      expect(statements.filter((s) => s.includes('"WebhookDelivery"'))).toHaveLength(1);
      const last = statements.findLastIndex((s) => !isControl(s));
      expect(statements[last]).toBe(chained[0]);
      if (ownStatement) {
        // The comment and its event in one statement: no transaction around it.
        expect(chained[0]).toContain('INSERT INTO "Comment"');
        expect(statements.filter(isControl)).toEqual([]);
      } else expect(statements[last + 1]).toMatch(/COMMIT/i);
    }
    expect(
      await t.db.webhookDelivery.count({ where: { organizationId: fresh.organizationId, eventType: "comment.created" } }),
    ).toBe(3);

    // A service's statements after writeAuditEvent still come before it.
    const { statements } = await t.countQueries(() =>
      t.db.$transaction(async (tx) => {
        await writeAuditEvent(tx, {
          id: newId("aud"),
          organizationId: fresh.organizationId,
          action: "test.last",
          entityType: "task",
          entityId: fresh.taskIds[0] as string,
        });
        await tx.$queryRawUnsafe(`SELECT 'after the event' AS "marker"`);
      }),
    );
    const work = statements.filter((s) => !isControl(s));
    expect(work[0]).toContain("after the event");
    expect(work[1]).toContain('"AuditChainHead"');
    expect((await verifyBoth(fresh.apiKey)).ok).toBe(true);
  });

  it("writes no event when the change fails after writeAuditEvent", async () => {
    const before = await t.db.auditEvent.count({ where: { organizationId: org.organizationId } });
    await expect(
      t.db.$transaction(async (tx) => {
        await writeAuditEvent(tx, {
          id: newId("aud"),
          organizationId: org.organizationId,
          action: "test.failed",
          entityType: "task",
          entityId: org.taskIds[0] as string,
        });
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    expect(await t.db.auditEvent.count({ where: { organizationId: org.organizationId } })).toBe(before);
    expect((await verifyBoth(org.apiKey)).ok).toBe(true);
  });

  it("refuses UPDATE, DELETE and TRUNCATE of audit events in the database", async () => {
    const [line] = await storedLines(org.organizationId);
    await expect(t.db.$executeRawUnsafe(`UPDATE "AuditEvent" SET "action" = 'x' WHERE "id" = $1`, line?.id)).rejects.toThrow(
      /append-only/,
    );
    await expect(t.db.$executeRawUnsafe(`DELETE FROM "AuditEvent" WHERE "id" = $1`, line?.id)).rejects.toThrow(/append-only/);
    await expect(t.db.$executeRawUnsafe(`TRUNCATE "AuditEvent"`)).rejects.toThrow(/append-only/);
    expect(await t.db.auditEvent.count({ where: { id: line?.id } })).toBe(1);
  });
});

describe("verification", () => {
  it("answers ok over GraphQL, REST and a range, and needs audit:read", async () => {
    const count = await t.db.auditEvent.count({ where: { organizationId: org.organizationId } });
    expect(await verifyBoth(org.apiKey)).toEqual({ ok: true, checked: count, firstBrokenSequence: null, reason: null });
    expect(await verifyBoth(org.apiKey, "?from=2&to=3")).toEqual({
      ok: true,
      checked: 2,
      firstBrokenSequence: null,
      reason: null,
    });
    const { key } = await t.keyWith(org.organizationId, ["task:read"]);
    expect((await t.rest("GET", "/v1/audit/verify", { key })).status).toBe(403);
    const bad = await t.rest("GET", "/v1/audit/verify?from=0", { key: org.apiKey });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("BAD_USER_INPUT");
    const reversed = await t.rest("GET", "/v1/audit/verify?from=5&to=2", { key: org.apiKey });
    expect(reversed.status).toBe(400);
  });

  it("names a changed event", async () => {
    const o = await orgWithEvents(4);
    await tamper(
      `UPDATE "AuditEvent" SET "data" = '{"content":"edited"}' WHERE "organizationId" = '${o.organizationId}' AND "sequence" = 3`,
    );
    const result = await verifyBoth(o.apiKey);
    expect(result).toMatchObject({ ok: false, checked: 2, firstBrokenSequence: 3 });
    expect(result.reason).toMatch(/does not match its hash/);
  });

  it("names a removed event", async () => {
    const o = await orgWithEvents(4);
    await tamper(`DELETE FROM "AuditEvent" WHERE "organizationId" = '${o.organizationId}' AND "sequence" = 3`);
    const result = await verifyBoth(o.apiKey);
    expect(result).toMatchObject({ ok: false, firstBrokenSequence: 3 });
    expect(result.reason).toMatch(/missing/);
  });

  it("names an inserted event", async () => {
    const o = await orgWithEvents(4);
    await tamper(
      `INSERT INTO "AuditEvent" ("id", "organizationId", "action", "entityType", "entityId", "createdAt", "sequence", "hash")
       SELECT 'aud_forged', "organizationId", 'task.updated', "entityType", "entityId", "createdAt", "sequence", "hash"
       FROM "AuditEvent" WHERE "organizationId" = '${o.organizationId}' AND "sequence" = 3`,
    );
    const result = await verifyBoth(o.apiKey);
    expect(result).toMatchObject({ ok: false, firstBrokenSequence: 3 });
  });

  it("names a reordered event", async () => {
    const o = await orgWithEvents(4);
    await tamper(
      `UPDATE "AuditEvent" SET "sequence" = CASE "sequence" WHEN 3 THEN 4 ELSE 3 END
       WHERE "organizationId" = '${o.organizationId}' AND "sequence" IN (3, 4)`,
    );
    const result = await verifyBoth(o.apiKey);
    expect(result).toMatchObject({ ok: false, checked: 2, firstBrokenSequence: 3 });
  });

  it("finds an insertion whose chain was recomputed, at the signed checkpoint it contradicts", async () => {
    const o = await orgWithEvents(4);
    const checkpoint = await t.rest("POST", "/v1/audit/checkpoints", { key: o.apiKey });
    expect(checkpoint.status).toBe(201);
    // A writer who knows the algorithm moves events 3.. up by one, puts one in at 3, and rehashes.
    const lines = await storedLines(o.organizationId);
    const forged = { ...(lines[2] as (typeof lines)[number]), id: "aud_forged2", action: "task.deleted" };
    const rewritten = [...lines.slice(0, 2), forged, ...lines.slice(2)];
    let previous = "0".repeat(64);
    const statements: string[] = [`DELETE FROM "AuditEvent" WHERE "organizationId" = '${o.organizationId}'`];
    rewritten.forEach((line, index) => {
      const next = { ...line, sequence: index + 1 };
      next.hash = contractHash(previous, next);
      previous = next.hash;
      statements.push(
        `INSERT INTO "AuditEvent" ("id", "organizationId", "actorUserId", "actorApiKeyId", "action", "entityType", "entityId", "data", "requestId", "createdAt", "sequence", "hash")
         VALUES ('${next.id}', '${next.organizationId}', ${next.actorUserId ? `'${next.actorUserId}'` : "NULL"}, ${next.actorApiKeyId ? `'${next.actorApiKeyId}'` : "NULL"},
           '${next.action}', '${next.entityType}', '${next.entityId}', ${next.data === null ? "NULL" : `'${JSON.stringify(next.data).replaceAll("'", "''")}'`},
           ${next.requestId ? `'${next.requestId}'` : "NULL"}, '${next.createdAt}', ${next.sequence}, '${next.hash}')`,
      );
    });
    statements.push(
      `UPDATE "AuditChainHead" SET "sequence" = ${rewritten.length}, "hash" = '${previous}' WHERE "organizationId" = '${o.organizationId}'`,
    );
    await tamper(...statements);
    const result = await verifyBoth(o.apiKey);
    expect(result).toMatchObject({ ok: false, firstBrokenSequence: checkpoint.body.sequence });
    expect(result.reason).toMatch(/signed checkpoint/);
  });

  it("names a chain cut short of a checkpoint", async () => {
    const o = await orgWithEvents(4);
    const signed = await t.gql("mutation { createAuditCheckpoint { sequence } }", {}, { key: o.apiKey });
    const end = signed.body.data.createAuditCheckpoint.sequence as number;
    expect(end).toBe(o.count);
    const kept = await storedLines(o.organizationId);
    const newEnd = kept[end - 3] as (typeof kept)[number];
    await tamper(
      `DELETE FROM "AuditEvent" WHERE "organizationId" = '${o.organizationId}' AND "sequence" > ${end - 2}`,
      `UPDATE "AuditChainHead" SET "sequence" = ${end - 2}, "hash" = '${newEnd.hash}' WHERE "organizationId" = '${o.organizationId}'`,
    );
    const result = await verifyBoth(o.apiKey);
    expect(result).toMatchObject({ ok: false, checked: end - 2, firstBrokenSequence: end - 1 });
    expect(result.reason).toMatch(/short of the signed checkpoint/);
  });

  it("refuses a checkpoint whose signature is not the service's", async () => {
    const o = await orgWithEvents(2);
    await t.rest("POST", "/v1/audit/checkpoints", { key: o.apiKey });
    await tamper(
      `UPDATE "AuditCheckpoint" SET "signature" = '${Buffer.alloc(64).toString("base64url")}' WHERE "organizationId" = '${o.organizationId}'`,
    );
    const result = await verifyBoth(o.apiKey);
    expect(result).toMatchObject({ ok: false, firstBrokenSequence: o.count });
    expect(result.reason).toMatch(/no valid signature/);
  });
});

describe("checkpoints", () => {
  it("signs the head on demand, lists it on both transports, and checks with the public key", async () => {
    const o = await orgWithEvents(1);
    const eventsBefore = await t.db.auditEvent.count({ where: { organizationId: o.organizationId } });
    const created = await t.rest("POST", "/v1/audit/checkpoints", { key: o.apiKey });
    expect(created.status).toBe(201);
    const head = await t.db.auditChainHead.findUniqueOrThrow({ where: { organizationId: o.organizationId } });
    expect(created.body).toMatchObject({
      organizationId: o.organizationId,
      sequence: head.sequence,
      hash: head.hash,
      purgedEvents: null,
    });
    expect(created.body.signedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const pem = await t.rest("GET", "/v1/audit/public-key");
    expect(pem.status).toBe(200);
    expect(pem.headers.get("content-type")).toContain("application/x-pem-file");
    expect(pem.text).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    const statement = {
      organizationId: o.organizationId,
      sequence: head.sequence,
      hash: head.hash,
      signedAt: created.body.signedAt,
    };
    const signature = Buffer.from(created.body.signature, "base64url");
    expect(signature).toHaveLength(64);
    expect(verifySignature(null, Buffer.from(canonicalize(statement) as string), createPublicKey(pem.text), signature)).toBe(
      true,
    );
    expect(
      verifySignature(
        null,
        Buffer.from(canonicalize({ ...statement, sequence: 1 }) as string),
        createPublicKey(pem.text),
        signature,
      ),
    ).toBe(false);

    const list = await t.rest("GET", "/v1/audit/checkpoints", { key: o.apiKey });
    expect(list.status).toBe(200);
    expect(list.body.items[0]).toMatchObject({ id: created.body.id, signature: created.body.signature });
    const gql = await t.gql(
      "{ auditCheckpoints(limit: 5) { totalCount items { id sequence hash signedAt signature } } }",
      {},
      { key: o.apiKey },
    );
    expect(gql.body.data.auditCheckpoints.totalCount).toBe(1);
    expect(gql.body.data.auditCheckpoints.items[0].id).toBe(created.body.id);

    // Reads, verification, checkpoints and exports write no audit event.
    await verifyBoth(o.apiKey);
    await t.rest("GET", "/v1/audit-events/export", { key: o.apiKey });
    expect(await t.db.auditEvent.count({ where: { organizationId: o.organizationId } })).toBe(eventsBefore);
  });

  it("signs one for each organization whose chain went on (the timer's work), and none again until it goes on", async () => {
    const o = await orgWithEvents(1);
    const trail = t.app.services.audit.trail;
    await trail.signDue();
    const signed = await t.db.auditCheckpoint.findMany({ where: { organizationId: o.organizationId } });
    expect(signed.map((c) => c.sequence)).toEqual([o.count]);
    await trail.signDue();
    expect(await t.db.auditCheckpoint.count({ where: { organizationId: o.organizationId } })).toBe(1);
    await comment(o);
    await trail.signDue();
    expect(await t.db.auditCheckpoint.count({ where: { organizationId: o.organizationId } })).toBe(2);
    expect((await verifyBoth(o.apiKey)).ok).toBe(true);
  });

  it("is signed by the replica's timer within AUDIT_CHECKPOINT_SECONDS of a new event", async () => {
    const o = await orgWithEvents(1);
    const timers = startAuditTimers(t.app.services.audit.trail, { checkpointSeconds: 1, logger: pino({ level: "silent" }) });
    try {
      const started = Date.now();
      while (
        Date.now() - started < 5_000 &&
        (await t.db.auditCheckpoint.count({ where: { organizationId: o.organizationId } })) === 0
      ) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(Date.now() - started).toBeLessThan(2_500);
      const [checkpoint] = await t.db.auditCheckpoint.findMany({ where: { organizationId: o.organizationId } });
      expect(checkpoint?.sequence).toBe(o.count);
    } finally {
      await timers.stop();
    }
  });

  it("refuses createAuditCheckpoint without audit:read", async () => {
    const { key } = await t.keyWith(org.organizationId, ["comment:create"]);
    expect((await t.rest("POST", "/v1/audit/checkpoints", { key })).status).toBe(403);
    const gql = await t.gql("mutation { createAuditCheckpoint { id } }", {}, { key });
    expect(gql.body.errors[0].extensions.code).toBe("FORBIDDEN");
  });
});

describe("export", () => {
  it("streams jsonl lines with exactly the contract's keys, chained, then a signed checkpoint", async () => {
    const o = await orgWithEvents(3);
    const res = await t.rest("GET", "/v1/audit-events/export?format=jsonl", { key: o.apiKey });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename=".+\.jsonl"$/);
    const lines = res.text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    const events = lines.slice(0, -1);
    expect(events).toHaveLength(o.count);
    expect(events).toEqual(await storedLines(o.organizationId));
    let previous = "0".repeat(64);
    for (const line of events) {
      expect(Object.keys(line).sort()).toEqual([...KEYS].sort());
      expect(line.hash).toBe(contractHash(previous, line));
      previous = line.hash;
    }
    const { checkpoint } = lines[lines.length - 1];
    expect(checkpoint).toMatchObject({ organizationId: o.organizationId, sequence: o.count, hash: previous });
    const { signature, ...statement } = checkpoint;
    const key = createPublicKey((await t.rest("GET", "/v1/audit/public-key")).text);
    expect(verifySignature(null, Buffer.from(canonicalize(statement) as string), key, Buffer.from(signature, "base64url"))).toBe(
      true,
    );
  });

  it("exports a range as csv and as OCSF API Activity", async () => {
    const o = await orgWithEvents(3);
    const stored = await storedLines(o.organizationId);
    const csv = await t.rest("GET", "/v1/audit-events/export?format=csv&from=2&to=4", { key: o.apiKey });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toContain("text/csv");
    expect(csv.headers.get("content-disposition")).toMatch(/^attachment; filename=".+\.csv"$/);
    const rows = csv.text.trimEnd().split("\r\n");
    expect(rows[0]).toBe(KEYS.join(","));
    expect(rows).toHaveLength(4);
    expect(rows[1]?.startsWith(`2,${stored[1]?.id},`)).toBe(true);
    expect(rows[3]?.endsWith(`,${stored[3]?.hash}`)).toBe(true);

    const ocsf = await t.rest("GET", "/v1/audit-events/export?format=ocsf&from=2&to=2", { key: o.apiKey });
    expect(ocsf.status).toBe(200);
    const records = ocsf.text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      class_uid: 6003,
      category_uid: 6,
      time: Date.parse(stored[1]?.createdAt as string),
      api: { operation: stored[1]?.action },
      unmapped: { sequence: 2, hash: stored[1]?.hash },
    });
    expect(records[0].type_uid).toBe(600300 + records[0].activity_id);
  });

  it("prefixes with ' every csv cell that begins with =, +, -, @, a tab or a carriage return (OWASP), and leaves jsonl as hashed", async () => {
    const o = await t.seedOrg();
    // A caller's own request id, as it sent it.
    const sent = await t.rest("POST", "/v1/comments", {
      key: o.apiKey,
      headers: { "x-request-id": "-2-3-A1" },
      body: { content: "Formula", entityId: o.taskIds[0], entityType: "task", userId: o.userIds[0] },
    });
    expect(sent.status, sent.text).toBe(201);
    // Every other character, in values the writer keeps as it is given them.
    const formulas = ["=1+2", "+SUM(A1:A9)", "@SUM(A1)", "\tx", "\r=1+2", "-cmd|' /C calc'!A0"];
    for (const requestId of formulas) {
      await writeAuditEvent(t.db, {
        id: newId("aud"),
        organizationId: o.organizationId,
        action: "test.formula",
        entityType: "task",
        entityId: o.taskIds[0] as string,
        data: {},
        requestId,
      });
    }
    const csv = await t.rest("GET", "/v1/audit-events/export?format=csv", { key: o.apiKey });
    expect(csv.status).toBe(200);
    expect(csv.text).toContain(",'-2-3-A1,");
    expect(csv.text).not.toContain(",-2-3-A1,");
    expect(csv.text).toContain(",'=1+2,");
    expect(csv.text).toContain(",'+SUM(A1:A9),");
    expect(csv.text).toContain(",'@SUM(A1),");
    expect(csv.text).toContain(",'\tx,");
    // A line break makes it a quoted field: the prefix is inside the quotes.
    expect(csv.text).toContain(`,"'\r=1+2",`);
    expect(csv.text).toContain(",'-cmd|' /C calc'!A0,");
    // No cell of the export begins with a formula character.
    const cells = csv.text.split(/,|\r\n/).map((cell) => cell.replace(/^"/, ""));
    expect(cells.filter((cell) => /^[=+\-@\t\r]/.test(cell))).toEqual([]);
    // jsonl keeps the values the hashes are computed from.
    const jsonl = await t.rest("GET", "/v1/audit-events/export", { key: o.apiKey });
    const requestIds = jsonl.text
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line).requestId);
    expect(requestIds).toEqual(expect.arrayContaining(["-2-3-A1", ...formulas]));
    expect((await verifyBoth(o.apiKey)).ok).toBe(true);
  });

  it("refuses bad input, a missing credential and a missing permission in the error envelope", async () => {
    for (const query of ["?format=xml", "?from=abc", "?from=0", "?from=5&to=1", "?limit=3"]) {
      const res = await t.rest("GET", `/v1/audit-events/export${query}`, { key: org.apiKey });
      expect(res.status, query).toBe(400);
      expect(res.body.code).toBe("BAD_USER_INPUT");
    }
    const anonymous = await t.rest("GET", "/v1/audit-events/export");
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.code).toBe("UNAUTHENTICATED");
    const { key } = await t.keyWith(org.organizationId, ["task:read"]);
    const forbidden = await t.rest("GET", "/v1/audit-events/export", { key });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.code).toBe("FORBIDDEN");
    expect((await t.rest("POST", "/v1/audit-events/export", { key: org.apiKey })).status).toBe(405);
  });
});

describe("retention purge", () => {
  it("removes the events before a date, signs what it removed, and the chain verifies and goes on from there", async () => {
    const o = await orgWithEvents(2);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const cut = new Date();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await comment(o, "after the cut");
    const all = await storedLines(o.organizationId);
    const kept = all.filter((line) => new Date(line.createdAt) >= cut);
    expect(kept.length).toBe(1);
    const through = (kept[0]?.sequence as number) - 1;

    const { removed, checkpoint } = await t.app.services.audit.trail.purge(o.organizationId, cut);
    expect(removed).toBe(through);
    expect(checkpoint).toMatchObject({ sequence: through, hash: all[through - 1]?.hash, purgedEvents: through });
    expect(await storedLines(o.organizationId)).toEqual(kept);
    expect(await verifyBoth(o.apiKey)).toEqual({ ok: true, checked: 1, firstBrokenSequence: null, reason: null });

    await comment(o, "later");
    expect(await verifyBoth(o.apiKey)).toMatchObject({ ok: true, checked: 2 });
    // Nothing more to purge before the same date; the trigger still refuses a DELETE of its own.
    expect((await t.app.services.audit.trail.purge(o.organizationId, cut)).removed).toBe(0);
    await expect(
      t.db.$executeRawUnsafe(`DELETE FROM "AuditEvent" WHERE "organizationId" = $1`, o.organizationId),
    ).rejects.toThrow(/append-only/);
  });

  it("removes nothing from a chain that does not verify", async () => {
    const o = await orgWithEvents(3);
    await tamper(`UPDATE "AuditEvent" SET "action" = 'x' WHERE "organizationId" = '${o.organizationId}' AND "sequence" = 2`);
    await expect(t.app.services.audit.trail.purge(o.organizationId, new Date(Date.now() + 60_000))).rejects.toThrow(
      /do not verify/,
    );
    expect(await t.db.auditEvent.count({ where: { organizationId: o.organizationId } })).toBe(o.count);
  });
});
