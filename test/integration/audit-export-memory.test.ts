import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { chainHash } from "../../src/platform/audit-chain.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

const EVENTS = 100_000;

// The heap that stays after a collection is what "flat" is about: garbage awaiting the collector is not.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const retained = () => {
  gc();
  return process.memoryUsage().heapUsed;
};
const BASE = Date.parse("2026-01-01T00:00:00.000Z");

let t: TestApp;
let org: SeedResult;
let first: number;

/** The export line of the g-th made event, as the INSERT ... SELECT below writes it. */
function lineOf(organizationId: string, g: number, sequence: number) {
  return {
    sequence,
    id: `aud_bulk${String(g).padStart(8, "0")}`,
    organizationId,
    action: "task.updated",
    entityType: "task",
    entityId: `tsk_${g % 50}`,
    actorUserId: null,
    actorApiKeyId: "key_bulk",
    data: { changes: { title: { from: `t${g}`, to: `t${g + 1}` } } },
    requestId: `req-${g}`,
    createdAt: new Date(BASE + g).toISOString(),
  };
}

beforeAll(async () => {
  t = await createTestApp({ ownDatabase: true });
  org = await t.seedOrg();
  const head = await t.db.auditChainHead.findUniqueOrThrow({ where: { organizationId: org.organizationId } });
  first = head.sequence + 1;
  // The chain computed here with the service's own hash, then one INSERT ... SELECT over generate_series.
  const hashes: string[] = [];
  let previous = head.hash;
  for (let g = 1; g <= EVENTS; g++) {
    previous = chainHash(previous, lineOf(org.organizationId, g, head.sequence + g));
    hashes.push(previous);
  }
  await t.db.$executeRawUnsafe(
    `INSERT INTO "AuditEvent" ("id", "organizationId", "actorUserId", "actorApiKeyId", "action", "entityType", "entityId", "data", "requestId", "createdAt", "sequence", "hash")
     SELECT 'aud_bulk' || lpad(g::text, 8, '0'), $1, NULL, 'key_bulk', 'task.updated', 'task', 'tsk_' || (g % 50),
            jsonb_build_object('changes', jsonb_build_object('title', jsonb_build_object('from', 't' || g, 'to', 't' || (g + 1)))),
            'req-' || g, $2::timestamp(3) + g * interval '1 millisecond', $3::int + g, h."hash"
     FROM generate_series(1, ${EVENTS}) g JOIN unnest($4::text[]) WITH ORDINALITY AS h("hash", "n") ON h."n" = g`,
    org.organizationId,
    new Date(BASE).toISOString(),
    head.sequence,
    hashes,
  );
  await t.db.auditChainHead.update({
    where: { organizationId: org.organizationId },
    data: { sequence: head.sequence + EVENTS, hash: previous },
  });
}, 120_000);
afterAll(() => t.close());

describe("a 100,000-event audit trail", () => {
  it("exports as jsonl streamed from the database, with the heap flat, ending with its signed checkpoint", async () => {
    const response = await t.app.fetch(
      new Request("http://test/v1/audit-events/export?format=jsonl", { headers: { "x-api-key": org.apiKey } }),
    );
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    const baseline = retained();
    let chunks = 0;
    let peak = 0;
    let bytes = 0;
    let lines = 0;
    let tail = "";
    let lastLine = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      const text = tail + decoder.decode(value, { stream: true });
      const parts = text.split("\n");
      tail = parts.pop() as string;
      lines += parts.length;
      if (parts.length) lastLine = parts[parts.length - 1] as string;
      if (++chunks % 10 === 0) peak = Math.max(peak, retained() - baseline);
    }
    // The whole file is about 40 MB and its rows as objects several times that: a stream that read
    // them all first would keep far more than this.
    expect(bytes).toBeGreaterThan(30_000_000);
    expect(chunks).toBeGreaterThan(90);
    expect(peak).toBeLessThan(16 * 1024 * 1024);
    const events = await t.db.auditEvent.count({ where: { organizationId: org.organizationId } });
    expect(lines).toBe(events + 1);
    expect(tail).toBe("");
    const last = JSON.parse(lastLine);
    expect(last.checkpoint).toMatchObject({ organizationId: org.organizationId, sequence: first + EVENTS - 1 });
  }, 60_000);

  it("verifies in batches", async () => {
    const result = await t.app.services.audit.trail.verify(org.organizationId, {});
    expect(result).toMatchObject({ ok: true, firstBrokenSequence: null });
    expect(result.checked).toBe(first + EVENTS - 1);
  }, 60_000);
});
