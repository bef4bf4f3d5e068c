import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { composeMessage } from "../../src/modules/notifications/notifications.mail.js";
import { createNotifier } from "../../src/modules/notifications/notifications.service.js";
import { attemptDelivery } from "../../src/modules/webhooks/webhooks.http.js";
import { notifyDisabled } from "../../src/modules/webhooks/webhooks.notify.js";
import { createWebhookWorker } from "../../src/modules/webhooks/webhooks.worker.js";
import type { WebhookConfig } from "../../src/platform/config.js";
import { startJobQueue } from "../../src/platform/jobs.js";
import { openFixture } from "../helpers/fixtures.js";
import { openOwnDatabase } from "../helpers/test-app.js";
import { startWebhookReceiver, until } from "../helpers/webhook-receiver.js";

// Section 12 end to end in one process: the app (both transports), the delivery worker on the same
// database, and a real HTTP receiver on 127.0.0.1 that checks every message with the official
// `standardwebhooks` verifier. Schedules are 1 s; the failure window is 2.5 s.
const receiver = await startWebhookReceiver();
const lookups: string[] = [];
/** Host names the tests resolve themselves: one a rebinding DNS answers differently over time. */
const dns = new Map<string, string[][]>();
const resolve = async (hostname: string) => {
  lookups.push(hostname);
  const answers = dns.get(hostname);
  if (!answers?.length) throw new Error(`no such host ${hostname}`);
  return answers.length > 1 ? (answers.shift() as string[]) : (answers[0] as string[]);
};
const config: WebhookConfig = {
  timeoutMs: 1_000,
  retrySchedule: [1, 1, 1, 1, 1],
  disableAfterHours: 2.5 / 3600,
  allowedCidrs: ["127.0.0.1/32"],
  retentionDays: 30,
  pollIntervalMs: 100,
  worker: true,
  httpsOnly: false,
};
// The deliveries run on a real pg-boss in the same database, as on every replica.
const own = await openOwnDatabase();
const jobs = await startJobQueue({ pglite: own.database.pglite, url: own.url, logger: pino({ level: "silent" }) });
const { t, org, other, keyWith, appWith } = await openFixture({
  database: own.database,
  webhooks: { options: { ...config, resolve } },
});
const mailed: string[] = [];
const worker = createWebhookWorker({
  db: t.db,
  config,
  logger: pino({ level: process.env.WORKER_LOG ?? "silent" }),
  resolve,
  // The app's notifier, with an e-mail port that records the messages it is asked to send.
  onDisabled: notifyDisabled(
    createNotifier({
      links: { appUrl: "https://app.gateway.test" },
      mail: { enqueue: async (_tx, ids) => void mailed.push(...ids) },
      events: t.app.services.events,
    }),
  ),
});
await worker.start(jobs.boss);
afterAll(async () => {
  await worker.stop();
  await jobs.stop();
  await receiver.stop();
  await own.close();
});

const key = org.apiKey;
const author = org.userIds[0] as string;

async function endpoint(path: string, extra: Record<string, unknown> = {}, organization = org) {
  const res = await t.rest("POST", "/v1/webhook-endpoints", {
    key: organization.apiKey,
    body: { url: receiver.url(path), ...extra },
  });
  expect(res.status, res.text).toBe(201);
  receiver.secret(path, res.body.secret);
  return res.body as { id: string; secret: string; url: string };
}

async function comment(content: string, organization = org) {
  const res = await t.rest("POST", "/v1/comments", {
    key: organization.apiKey,
    body: { content, entityType: "task", entityId: organization.taskIds[0], userId: organization.userIds[0] },
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string };
}

const eventOf = async (entityId: string, action: string) =>
  t.db.auditEvent.findFirstOrThrow({ where: { entityId, action }, select: { id: true } });

/** A comment delivered (2xx) to a new endpoint at `path`: its audit event and its delivery's id. */
async function deliveredComment(path: string) {
  const hook = await endpoint(path, { eventTypes: ["comment.created"] });
  const event = await eventOf((await comment(`Delivered to ${path}`)).id, "comment.created");
  await until(() => receiver.at(path).some((r) => r.id === event.id));
  const delivery = await until(() =>
    t.db.webhookDelivery.findFirst({
      where: { endpointId: hook.id, eventId: event.id, status: "succeeded" },
      select: { id: true },
    }),
  );
  return { event, delivery };
}

describe("webhook endpoints", () => {
  it("creates with the secret once (201), reads never show it, and lists with the list rules", async () => {
    const created = await endpoint("/crud", { description: "SIEM", eventTypes: ["policy.*", "comment.created"] });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), "base64")).toHaveLength(32);
    const read = await t.rest("GET", `/v1/webhook-endpoints/${created.id}`, { key });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      id: created.id,
      description: "SIEM",
      eventTypes: ["policy.*", "comment.created"],
      enabled: true,
    });
    expect(read.body).not.toHaveProperty("secret");
    expect(read.text).not.toContain(created.secret);
    const listed = await t.rest("GET", "/v1/webhook-endpoints?limit=1", { key });
    expect(listed.status).toBe(200);
    expect(listed.body.items).toHaveLength(1);
    // Every filter the document offers works (createdAfter once answered 500: the list had no rule for it).
    const since = new Date(Date.parse(read.body.createdAt) - 1).toISOString();
    const after = await t.rest("GET", `/v1/webhook-endpoints?createdAfter=${since}&updatedBefore=2999-01-01T00:00:00Z`, {
      key,
    });
    expect(after.status, after.text).toBe(200);
    expect(after.body.items.map((e: { id: string }) => e.id)).toContain(created.id);
    const later = await t.rest("GET", `/v1/webhook-endpoints?createdAfter=${read.body.createdAt}`, { key });
    expect(later.body.items.map((e: { id: string }) => e.id)).not.toContain(created.id);
    const gql = await t.gql(
      `{ webhookEndpoints(filter: { enabled: true }) { totalCount items { id } } webhookEventTypes { type description } }`,
      {},
      { key },
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.webhookEndpoints.items.map((e: { id: string }) => e.id)).toContain(created.id);
    expect(gql.body.data.webhookEventTypes).toContainEqual(expect.objectContaining({ type: "comment.created" }));
    expect(gql.body.data.webhookEventTypes).toContainEqual(expect.objectContaining({ type: "webhook.test" }));
  });

  it("refuses an unknown type, an address literal outside WEBHOOK_ALLOWED_CIDRS and localhost with 400, on both transports", async () => {
    for (const body of [
      { url: receiver.url("/x"), eventTypes: ["comment.exploded"] },
      { url: receiver.url("/x"), eventTypes: ["nothing.*"] },
      { url: "http://169.254.169.254/latest/meta-data" },
      { url: "http://10.0.0.5/hook" },
      { url: "http://127.0.0.2/hook" },
      { url: "http://[::1]/hook" },
      { url: "http://[::ffff:127.0.0.1]/hook" },
      { url: "http://[fd00::1]/hook" },
      { url: "http://localhost:8080/hook" },
      { url: "http://api.localhost/hook" },
      { url: "ftp://example.com/hook" },
      { url: "http://user:pw@example.com/hook" },
    ]) {
      const res = await t.rest("POST", "/v1/webhook-endpoints", { key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe("BAD_USER_INPUT");
    }
    const gql = await t.gql(`mutation { createWebhookEndpoint(url: "http://localhost/x") { id } }`, {}, { key });
    expect(gql.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    const created = await endpoint("/upd");
    const update = await t.rest("PATCH", `/v1/webhook-endpoints/${created.id}`, { key, body: { url: "http://192.168.1.1/x" } });
    expect(update.status).toBe(400);
    const types = await t.rest("PATCH", `/v1/webhook-endpoints/${created.id}`, { key, body: { eventTypes: ["task.*"] } });
    expect(types.status).toBe(200);
    const audited = await t.db.auditEvent.findFirst({ where: { entityId: created.id, action: "webhook_endpoint.updated" } });
    expect(audited?.data).toEqual({ changes: { eventTypes: { from: [], to: ["task.*"] } } });
  });

  it("needs webhook:manage (403) and keeps another organization's endpoints and deliveries at 404", async () => {
    const created = await endpoint("/perm");
    const reader = await keyWith(["comment:read", "task:read", "audit:read"]);
    expect((await t.rest("GET", "/v1/webhook-endpoints", { key: reader })).status).toBe(403);
    expect((await t.rest("POST", "/v1/webhook-endpoints", { key: reader, body: { url: receiver.url("/p") } })).status).toBe(403);
    for (const [method, path] of [
      ["GET", `/v1/webhook-endpoints/${created.id}`],
      ["DELETE", `/v1/webhook-endpoints/${created.id}`],
      ["GET", `/v1/webhook-endpoints/${created.id}/deliveries`],
      ["POST", `/v1/webhook-endpoints/${created.id}/rotate-secret`],
      ["POST", `/v1/webhook-endpoints/${created.id}/test`],
    ] as const) {
      expect((await t.rest(method, path, { key: other.apiKey })).status, `${method} ${path}`).toBe(404);
    }
    const deleted = await t.rest("DELETE", `/v1/webhook-endpoints/${created.id}`, { key });
    expect(deleted.status).toBe(204);
    expect((await t.rest("GET", `/v1/webhook-endpoints/${created.id}`, { key })).status).toBe(404);
  });
});

describe("delivery", () => {
  it("sends a change's audit event, signed and verified by the official library, with the object in its REST shape", async () => {
    const hook = await endpoint("/events", { eventTypes: ["comment.*"] });
    const created = await comment("Hello webhooks");
    const event = await eventOf(created.id, "comment.created");
    const [message] = await until(() => receiver.at("/events").filter((r) => r.id === event.id).length && receiver.at("/events"));
    expect(message?.verified).not.toBeNull();
    expect(message?.headers["content-type"]).toBe("application/json");
    expect(Number(message?.headers["webhook-timestamp"])).toBeCloseTo(Date.now() / 1000, -2);
    const body = JSON.parse(message?.body as string);
    expect(body).toMatchObject({
      type: "comment.created",
      data: {
        eventId: event.id,
        organizationId: org.organizationId,
        action: "comment.created",
        entity: { type: "comment", id: created.id },
        actor: { userId: null, apiKeyId: expect.any(String) },
        object: created,
      },
    });
    // The receiver has the message before the worker records its answer: wait for the record.
    const log = await until(async () => {
      const res = await t.rest("GET", `/v1/webhook-endpoints/${hook.id}/deliveries?status=succeeded&eventType=comment.created`, {
        key,
      });
      return (res.status !== 200 || res.body.items.length > 0) && res;
    });
    expect(log.status, log.text).toBe(200);
    expect(log.body.items[0]).toMatchObject({
      eventId: event.id,
      eventType: "comment.created",
      status: "succeeded",
      attempts: 1,
      responseStatus: 200,
      responseBody: "ok",
    });
  });

  it("runs every attempt as a job of the pg-boss queue webhook-delivery; a job the delivery no longer names does nothing", async () => {
    const { event, delivery } = await deliveredComment("/jobs");
    const carried = await until(async () => {
      const { rows } = await jobs.boss
        .getDb()
        .executeSql(`SELECT id, state FROM pgboss.job WHERE name = $1 AND data->>'deliveryId' = $2`, [
          "webhook-delivery",
          delivery.id,
        ]);
      return rows.length > 0 && rows.every((row) => row.state === "completed") && rows;
    });
    expect(carried).toHaveLength(1);
    // A job sent again for the finished delivery (a repeat at-least-once allows) claims nothing and sends nothing.
    const repeat = await jobs.boss.send("webhook-delivery", { deliveryId: delivery.id });
    await until(async () => {
      const { rows } = await jobs.boss.getDb().executeSql(`SELECT state FROM pgboss.job WHERE id = $1`, [repeat]);
      return rows[0]?.state === "completed";
    });
    expect(receiver.at("/jobs").filter((r) => r.id === event.id)).toHaveLength(1);
    const after = await t.db.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } });
    expect(after).toMatchObject({ status: "succeeded", attempts: 1, jobId: null });
  });

  it("gives a delivery whose claim lapsed (its replica died mid-attempt) a new job, and sends it again with the same webhook-id", async () => {
    const { event, delivery } = await deliveredComment("/lapsed");
    // What a replica killed mid-attempt leaves: its job (now gone with it) and a claim that has lapsed.
    await t.db.webhookDelivery.update({
      where: { id: delivery.id },
      data: {
        status: "pending",
        nextAttemptAt: new Date(),
        jobId: "job-of-a-dead-replica",
        lockedUntil: new Date(Date.now() - 1000),
      },
    });
    await until(() => receiver.at("/lapsed").filter((r) => r.id === event.id).length === 2);
    const after = await until(() =>
      t.db.webhookDelivery.findFirst({ where: { id: delivery.id, status: "succeeded" }, select: { attempts: true } }),
    );
    expect(after.attempts).toBe(2);
    expect(receiver.at("/lapsed").every((r) => r.verified)).toBe(true);
  });

  it("gives a due delivery whose job never claimed it in 10 minutes (a job lost with the database) a new one", async () => {
    const { event, delivery } = await deliveredComment("/lost-job");
    // Relayed 11 minutes ago to a job that never ran: no claim was taken, so none lapses.
    const longAgo = new Date(Date.now() - 11 * 60_000);
    await t.db.$executeRaw`
      UPDATE "WebhookDelivery" SET "status" = 'pending', "nextAttemptAt" = ${longAgo}, "updatedAt" = ${longAgo},
        "jobId" = 'a-job-that-was-lost', "lockedUntil" = NULL
      WHERE "id" = ${delivery.id}`;
    await until(() => receiver.at("/lost-job").filter((r) => r.id === event.id).length === 2);
    const after = await until(() =>
      t.db.webhookDelivery.findFirst({ where: { id: delivery.id, status: "succeeded" }, select: { attempts: true } }),
    );
    expect(after.attempts).toBe(2);
  });

  it("sends the other records in their REST shape too: a member as GET /v1/people/{id}, a task as GET /v1/tasks/{id}", async () => {
    await endpoint("/records", { eventTypes: ["member.updated", "task.updated", "task_item.updated"] });
    const memberId = org.memberIds[3] as string;
    expect((await t.rest("PATCH", `/v1/people/${memberId}`, { key, body: { jobTitle: "Webhooks" } })).status).toBe(200);
    expect((await t.rest("PATCH", `/v1/tasks/${org.taskIds[1]}`, { key, body: { status: "done" } })).status).toBe(200);
    const item = await t.rest("PATCH", `/v1/task-management/${org.taskItemIds[1]}`, { key, body: { title: "Hooked" } });
    expect(item.status).toBe(200);
    const messages = await until(() => receiver.at("/records").length >= 3 && receiver.at("/records"));
    const objectOf = (type: string) => messages.map((m) => JSON.parse(m.body)).find((b) => b.type === type)?.data.object;
    expect(objectOf("member.updated")).toEqual((await t.rest("GET", `/v1/people/${memberId}`, { key })).body);
    expect(objectOf("task.updated")).toEqual((await t.rest("GET", `/v1/tasks/${org.taskIds[1]}`, { key })).body);
    expect(objectOf("task_item.updated")).toEqual(item.body);
  });

  it("leaves object null when it would make the body larger than 20 KB", async () => {
    await endpoint("/large", { eventTypes: ["vendor.created"] });
    const small = await t.rest("POST", "/v1/vendors", { key, body: { name: "Small" } });
    const large = await t.rest("POST", "/v1/vendors", { key, body: { name: "Large", description: "😀".repeat(10_000) } });
    expect([small.status, large.status]).toEqual([201, 201]);
    const messages = await until(() => receiver.at("/large").length >= 2 && receiver.at("/large").map((m) => JSON.parse(m.body)));
    const byId = (id: string) => messages.find((m) => m.data.entity.id === id);
    expect(byId(small.body.id).data.object).toEqual(small.body);
    expect(byId(large.body.id).data.object).toBeNull();
    expect(byId(large.body.id).data.entity).toEqual({ type: "vendor", id: large.body.id });
  });

  it("sends only the types an endpoint's filter selects; object is null after a delete", async () => {
    await endpoint("/policies-only", { eventTypes: ["policy.*"] });
    await endpoint("/all");
    const created = await comment("Filtered");
    const res = await t.rest("DELETE", `/v1/comments/${created.id}?userId=${author}`, { key });
    expect(res.status).toBe(204);
    const deleted = await eventOf(created.id, "comment.deleted");
    const message = await until(() => receiver.at("/all").find((r) => r.id === deleted.id));
    expect(JSON.parse(message.body).data.object).toBeNull();
    expect(receiver.at("/policies-only")).toHaveLength(0);
  });

  // The retry, timeout and failure tests below wait on the schedule, the timeout and the failure
  // window rather than work: they run at once (vitest runs consecutive concurrent tests together),
  // each in an organization of its own, so that no other test's comment reaches its endpoints.
  it.concurrent("retries 5xx on the schedule with the same webhook-id until a 2xx", async ({ expect }) => {
    const own = await t.seedOrg();
    receiver.on("/flaky", (res, nth) => res.writeHead(nth === 1 ? 500 : 200).end(nth === 1 ? "down" : "ok"));
    const hook = await endpoint("/flaky", { eventTypes: ["comment.created"] }, own);
    const created = await comment("Flaky", own);
    const event = await eventOf(created.id, "comment.created");
    await until(() => receiver.at("/flaky").length >= 2, 10_000, "the retry");
    const messages = receiver.at("/flaky");
    expect(messages.map((m) => m.id)).toEqual([event.id, event.id]);
    expect(messages.every((m) => m.verified !== null)).toBe(true);
    const gap = Number(messages[1]?.headers["webhook-timestamp"]) - Number(messages[0]?.headers["webhook-timestamp"]);
    expect(gap).toBeGreaterThanOrEqual(0);
    const delivery = await until(async () => {
      const d = await t.db.webhookDelivery.findFirst({ where: { endpointId: hook.id } });
      return d?.status === "succeeded" && d;
    });
    expect(delivery.attempts).toBe(2);
  });

  it.concurrent("honours Retry-After on 503 when it is longer than the schedule", async ({ expect }) => {
    const own = await t.seedOrg();
    receiver.on("/busy", (res) => res.writeHead(503, { "retry-after": "30" }).end("busy"));
    const hook = await endpoint("/busy", { eventTypes: ["comment.created"] }, own);
    await comment("Busy", own);
    const delivery = await until(async () => {
      const d = await t.db.webhookDelivery.findFirst({ where: { endpointId: hook.id } });
      return d?.status === "retrying" && d;
    });
    expect(delivery.responseStatus).toBe(503);
    expect((delivery.nextAttemptAt as Date).getTime() - (delivery.lastAttemptAt as Date).getTime()).toBeGreaterThanOrEqual(
      29_000,
    );
  });

  it.concurrent("treats a 3xx as a failure and never follows it", async ({ expect }) => {
    const own = await t.seedOrg();
    receiver.on("/moved", (res) => res.writeHead(302, { location: receiver.url("/moved-target") }).end());
    const hook = await endpoint("/moved", { eventTypes: ["comment.created"] }, own);
    await comment("Moved", own);
    const delivery = await until(async () => {
      const d = await t.db.webhookDelivery.findFirst({ where: { endpointId: hook.id } });
      return d && d.attempts >= 1 && d;
    });
    // Retrying, or failed once the failure window (2.5 s here) disabled the endpoint on a slow machine.
    expect(["retrying", "failed"]).toContain(delivery.status);
    expect(delivery).toMatchObject({ responseStatus: 302, error: "the endpoint answered 302" });
    expect(receiver.at("/moved-target")).toHaveLength(0);
  });

  it.concurrent("ends an attempt at WEBHOOK_TIMEOUT_MS when the receiver trickles bytes, and reads at most 1 KB of an answer", async ({
    expect,
  }) => {
    const own = await t.seedOrg();
    receiver.on("/trickle", (res) => {
      res.writeHead(200);
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(".")), 100);
      res.on("close", () => clearInterval(timer));
    });
    receiver.on("/chatty", (res) => res.writeHead(200).end("x".repeat(100_000)));
    const slow = await endpoint("/trickle", { eventTypes: ["comment.created"] }, own);
    const chatty = await endpoint("/chatty", { eventTypes: ["comment.created"] }, own);
    await comment("Slow", own);
    const delivery = await until(async () => {
      const d = await t.db.webhookDelivery.findFirst({ where: { endpointId: slow.id } });
      return d && d.attempts >= 1 && d;
    });
    expect(delivery.status).toBe("retrying");
    expect(delivery.error).toMatch(/within 1000 ms/);
    expect(delivery.durationMs).toBeGreaterThanOrEqual(900);
    expect(delivery.durationMs).toBeLessThan(2_000);
    const answered = await until(async () => {
      const d = await t.db.webhookDelivery.findFirst({ where: { endpointId: chatty.id } });
      return d?.status === "succeeded" && d;
    });
    expect(answered.responseBody).toHaveLength(1024);
  });

  it.concurrent("records any answer (NUL, invalid UTF-8, control bytes) escaped, and sends the message once", async ({
    expect,
  }) => {
    const own = await t.seedOrg();
    const key = own.apiKey;
    receiver.on("/binary", (res) => res.writeHead(200).end(Buffer.from([0x41, 0x00, 0xff, 0xfe, 0x00, 0x42, 0x07, 0xe2, 0x82])));
    const hook = await endpoint("/binary", { eventTypes: ["comment.created"] }, own);
    const event = await eventOf((await comment("Binary answer", own)).id, "comment.created");
    const delivery = await until(async () => {
      const d = await t.db.webhookDelivery.findFirst({ where: { endpointId: hook.id } });
      return d?.status === "succeeded" && d;
    });
    expect(delivery).toMatchObject({ responseStatus: 200, error: null, nextAttemptAt: null });
    expect(delivery.responseBody).toBe("A\\x00\\xff\\xfe\\x00B\\x07\\xe2\\x82");
    // Several polls of the relay later, one message per recorded attempt (one, unless the machine is
    // so loaded that the first outlived WEBHOOK_TIMEOUT_MS): nothing unrecorded lapsed to be sent again.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.at("/binary").map((m) => m.id)).toEqual(Array(delivery.attempts).fill(event.id));
    expect(delivery.attempts).toBeLessThanOrEqual(2);
    const listed = await t.rest("GET", `/v1/webhook-endpoints/${hook.id}/deliveries`, { key });
    expect(listed.body.items[0].responseBody).toBe("A\\x00\\xff\\xfe\\x00B\\x07\\xe2\\x82");
  });

  it.concurrent("counts an attempt whose record cannot be written as a failed one on the schedule, never sent again at once", async ({
    expect,
  }) => {
    const own = await t.seedOrg();
    // The database refuses to record this answer (as PostgreSQL refused a NUL byte before it was escaped).
    await t.db.$executeRawUnsafe(`
      CREATE FUNCTION refuse_unrecordable() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW."responseBody" = 'unrecordable' THEN RAISE EXCEPTION 'the test refuses this record'; END IF;
        RETURN NEW;
      END $$`);
    await t.db.$executeRawUnsafe(
      `CREATE TRIGGER refuse_unrecordable BEFORE UPDATE ON "WebhookDelivery" FOR EACH ROW EXECUTE FUNCTION refuse_unrecordable()`,
    );
    try {
      receiver.on("/unrecordable", (res, nth) => res.writeHead(200).end(nth === 1 ? "unrecordable" : "ok"));
      const hook = await endpoint("/unrecordable", { eventTypes: ["comment.created"] }, own);
      const event = await eventOf((await comment("Unrecordable answer", own)).id, "comment.created");
      const retrying = await until(async () => {
        const d = await t.db.webhookDelivery.findFirst({ where: { endpointId: hook.id } });
        return d?.status === "retrying" && d;
      });
      expect(retrying).toMatchObject({
        attempts: 1,
        responseStatus: null,
        responseBody: null,
        error: "the endpoint answered 200, but the attempt could not be recorded",
      });
      // The schedule's first wait (1 s here, up to 10 % jitter), not a lapsed claim's resend.
      const wait = (retrying.nextAttemptAt as Date).getTime() - (retrying.lastAttemptAt as Date).getTime();
      expect(wait).toBeGreaterThanOrEqual(990);
      expect(wait).toBeLessThan(1_200);
      const delivered = await until(async () => {
        const d = await t.db.webhookDelivery.findFirst({ where: { endpointId: hook.id } });
        return d?.status === "succeeded" && d;
      });
      expect(delivered).toMatchObject({ attempts: 2, responseBody: "ok" });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      // One message for the attempt and one for the retry the schedule allowed: nothing more.
      const messages = receiver.at("/unrecordable");
      expect(messages.map((m) => m.id)).toEqual([event.id, event.id]);
      const gap = Number(messages[1]?.headers["webhook-timestamp"]) - Number(messages[0]?.headers["webhook-timestamp"]);
      expect(gap).toBeGreaterThanOrEqual(1);
      expect(gap).toBeLessThan(5);
    } finally {
      await t.db.$executeRawUnsafe(`DROP TRIGGER refuse_unrecordable ON "WebhookDelivery"`);
      await t.db.$executeRawUnsafe(`DROP FUNCTION refuse_unrecordable()`);
    }
  });

  it.concurrent("disables at once on 410, with an audit event, and does not retry", async ({ expect }) => {
    const own = await t.seedOrg();
    const key = own.apiKey;
    receiver.on("/gone", (res) => res.writeHead(410).end("gone"));
    const hook = await endpoint("/gone", { eventTypes: ["comment.created"] }, own);
    await comment("Gone", own);
    const disabled = await until(async () => {
      const e = await t.db.webhookEndpoint.findUnique({ where: { id: hook.id } });
      return e?.enabled === false && e;
    });
    expect(disabled.disabledReason).toBe("gone");
    const delivery = await t.db.webhookDelivery.findFirstOrThrow({ where: { endpointId: hook.id } });
    expect(delivery).toMatchObject({ status: "failed", attempts: 1, responseStatus: 410, nextAttemptAt: null });
    const audit = await t.db.auditEvent.findFirst({ where: { entityId: hook.id, action: "webhook_endpoint.disabled" } });
    expect(audit?.data).toMatchObject({ reason: "gone" });
    // The owner and the admin hear of it (inbox, reason webhook_disabled); the auditor and the employee do not.
    const told = await t.db.notification.findMany({ where: { entityId: hook.id, reason: "webhook_disabled" } });
    expect(told.map((n) => n.recipientId).sort()).toEqual([own.memberIds[0], own.memberIds[1]].sort());
    expect(told.every((n) => n.entityType === "webhook_endpoint")).toBe(true);
    // And by e-mail: one message each, naming the endpoint.
    expect(mailed).toEqual(expect.arrayContaining(told.map((n) => n.id)));
    const mail = await composeMessage(t.db, told[0]?.id as string, {
      smtpUrl: "smtp://127.0.0.1:1",
      from: "Workspace <notify@gateway.test>",
      publicUrl: "http://gateway.test",
      unsubscribeSecret: "x".repeat(32),
      retryLimit: 0,
      retryDelaySeconds: 1,
      retryDelayMaxSeconds: 1,
      pollIntervalSeconds: 1,
      worker: false,
    });
    expect("subject" in mail && mail.subject).toContain(`webhook endpoint "${receiver.url("/gone")}" was disabled`);
    const read = await t.rest("GET", `/v1/webhook-endpoints/${hook.id}`, { key });
    expect(read.body).toMatchObject({ enabled: false, disabledReason: "gone" });

    // While it is disabled, replay and redeliver would only fail again: 409 saying to enable it first.
    for (const [path, body] of [
      [`/v1/webhook-endpoints/${hook.id}/replay`, { since: new Date(Date.now() - 60_000).toISOString() }],
      [`/v1/webhook-deliveries/${delivery.id}/redeliver`, undefined],
    ] as const) {
      const refused = await t.rest("POST", path, { key, body });
      expect(refused.status, refused.text).toBe(409);
      expect(refused.body).toMatchObject({ code: "CONFLICT", message: expect.stringContaining("enable it first") });
    }

    // Re-enabling is an update; replay queues the failed delivery again (202 with the count).
    receiver.on("/gone", (res) => res.writeHead(200).end("back"));
    const enabled = await t.rest("PATCH", `/v1/webhook-endpoints/${hook.id}`, { key, body: { enabled: true } });
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null });
    const audited = await t.db.auditEvent.findFirst({ where: { entityId: hook.id, action: "webhook_endpoint.updated" } });
    expect(audited?.data).toEqual({ changes: { enabled: { from: false, to: true } } });
    const replay = await t.rest("POST", `/v1/webhook-endpoints/${hook.id}/replay`, {
      key,
      body: { since: new Date(Date.now() - 60_000).toISOString() },
    });
    expect(replay.status, replay.text).toBe(202);
    expect(replay.body).toEqual({ queued: 1 });
    const badSince = await t.rest("POST", `/v1/webhook-endpoints/${hook.id}/replay`, { key, body: { since: "yesterday" } });
    expect(badSince.status).toBe(400);
    await until(() => receiver.at("/gone").length === 2, 10_000, "the replayed message");
    expect(receiver.at("/gone")[1]?.id).toBe(delivery.eventId);
  });

  it.concurrent("disables an endpoint whose every delivery failed for the failure window", async ({ expect }) => {
    const own = await t.seedOrg();
    receiver.on("/down", (res) => res.writeHead(500).end("down"));
    const hook = await endpoint("/down", { eventTypes: ["comment.created"] }, own);
    await comment("Down", own);
    const disabled = await until(
      async () => {
        const e = await t.db.webhookEndpoint.findUnique({ where: { id: hook.id } });
        return e?.enabled === false && e;
      },
      15_000,
      "the failure window",
    );
    expect(disabled.disabledReason).toBe("failing");
    expect(await t.db.auditEvent.count({ where: { entityId: hook.id, action: "webhook_endpoint.disabled" } })).toBe(1);
  });

  it("keeps only a URL's origin in audit events, their exports and webhook messages: the auditor never reads its path or query", async () => {
    const watcher = await endpoint("/endpoint-watch", { eventTypes: ["webhook_endpoint.*"] });
    // Chat and ticketing URLs carry their token in the path or the query.
    const first = "/chat/T0KEN-in-path?token=s3cret-in-query";
    const second = "/chat/OTHER-T0KEN?token=s3cret-two";
    const origin = `http://127.0.0.1:${receiver.port}`;
    const hook = await endpoint(first, { eventTypes: ["comment.created"] });
    expect(hook.url).toBe(receiver.url(first));
    receiver.on(second, (res) => res.writeHead(410).end("gone"));
    const moved = await t.rest("PATCH", `/v1/webhook-endpoints/${hook.id}`, { key, body: { url: receiver.url(second) } });
    expect(moved.status, moved.text).toBe(200);
    await comment("Disables the tokened endpoint");
    await until(async () => (await t.db.webhookEndpoint.findUnique({ where: { id: hook.id } }))?.enabled === false);
    const secretParts = /T0KEN|s3cret/;

    // The auditor (audit:read, no webhook:manage), signed in: events and every export, on both transports.
    const session = await createSession(t.db, org.userIds[2] as string, 60_000);
    const auditor = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
    expect((await t.rest("GET", `/v1/webhook-endpoints/${hook.id}`, { headers: auditor })).status).toBe(403);
    const events = await t.rest("GET", `/v1/audit-events?entityType=webhook_endpoint&entityId=${hook.id}`, { headers: auditor });
    expect(events.status, events.text).toBe(200);
    const byAction = Object.fromEntries(
      (events.body.items as { action: string; data: unknown }[]).map((e) => [e.action, e.data]),
    );
    expect(byAction["webhook_endpoint.created"]).toMatchObject({ url: origin });
    expect(byAction["webhook_endpoint.updated"]).toEqual({ changes: { url: { from: origin, to: origin } } });
    expect(byAction["webhook_endpoint.disabled"]).toEqual({ reason: "gone", url: origin });
    expect(events.text).not.toMatch(secretParts);
    const graph = await t.gql(
      `query($id: ID!) { auditEvents(filter: { entityType: "webhook_endpoint", entityId: [$id] }) { items { action data } } }`,
      { id: hook.id },
      { headers: auditor },
    );
    expect(graph.body.data.auditEvents.items).toHaveLength(3);
    expect(JSON.stringify(graph.body)).not.toMatch(secretParts);
    for (const format of ["jsonl", "csv", "ocsf"]) {
      const exported = await t.rest("GET", `/v1/audit-events/export?format=${format}`, { headers: auditor });
      expect(exported.status, exported.text).toBe(200);
      expect(exported.text).toContain(hook.id);
      expect(exported.text, format).not.toMatch(secretParts);
    }

    // The endpoints' own messages: the event's data and the endpoint's REST shape, origin only.
    const aboutHook = () => receiver.at("/endpoint-watch").filter((m) => m.body.includes(hook.id));
    await until(() => aboutHook().length >= 3, 10_000, "the endpoint's three events");
    const messages = aboutHook();
    expect(messages.map((m) => (m.verified as { type: string }).type).sort()).toEqual([
      "webhook_endpoint.created",
      "webhook_endpoint.disabled",
      "webhook_endpoint.updated",
    ]);
    for (const message of messages) {
      expect(message.body).not.toMatch(secretParts);
      expect((message.verified as { data: { object: { url: string } } }).data.object.url).toBe(origin);
    }
    expect(watcher.id).toBeTruthy();
    // Whoever holds webhook:manage reads the whole URL from the endpoint itself.
    const read = await t.rest("GET", `/v1/webhook-endpoints/${hook.id}`, { key });
    expect(read.body.url).toBe(receiver.url(second));
  });

  it("signs with the new and the old secret for 24 hours after a rotation", async () => {
    const hook = await endpoint("/rotate", { eventTypes: ["comment.created"] });
    const rotated = await t.rest("POST", `/v1/webhook-endpoints/${hook.id}/rotate-secret`, { key });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(hook.secret);
    receiver.secret("/rotate", rotated.body.secret, hook.secret);
    await comment("Rotated");
    const message = await until(() => receiver.at("/rotate")[0]);
    expect(String(message.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(message.verifiedWith).toEqual([rotated.body.secret, hook.secret]);
  });

  it("answers a test message (200) whatever the filter, and redelivers a delivery (202) with the same webhook-id", async () => {
    const hook = await endpoint("/test", { eventTypes: ["policy.version_approved"] });
    const sent = await t.rest("POST", `/v1/webhook-endpoints/${hook.id}/test`, { key });
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body).toMatchObject({ eventType: "webhook.test", status: "succeeded", attempts: 1, responseStatus: 200 });
    const [test] = receiver.at("/test");
    expect(test?.verified).toMatchObject({ type: "webhook.test" });
    // A test message is not redelivered: 409 pointing at sending a new one, on both transports.
    const testAgain = await t.rest("POST", `/v1/webhook-deliveries/${sent.body.id}/redeliver`, { key });
    expect(testAgain.status, testAgain.text).toBe(409);
    expect(testAgain.body.message).toContain(`/v1/webhook-endpoints/${hook.id}/test`);
    const testAgainGql = await t.gql(`mutation($id: ID!) { redeliverWebhook(id: $id) { id } }`, { id: sent.body.id }, { key });
    expect(testAgainGql.body.errors?.[0]?.extensions?.code).toBe("CONFLICT");

    const all = await endpoint("/redeliver", { eventTypes: ["comment.created"] });
    await comment("Again");
    const first = await until(() => receiver.at("/redeliver")[0]);
    const delivery = await until(() => t.db.webhookDelivery.findFirst({ where: { endpointId: all.id, status: "succeeded" } }));
    const again = await t.gql(`mutation($id: ID!) { redeliverWebhook(id: $id) { id status } }`, { id: delivery.id }, { key });
    expect(again.body.errors).toBeUndefined();
    expect(again.body.data.redeliverWebhook.status).toBe("pending");
    // Its attempt ends first: the worker may claim it at once, and a redeliver then is the 409 below.
    await until(() => t.db.webhookDelivery.findFirst({ where: { id: delivery.id, status: "succeeded", attempts: 2 } }));
    const rest = await t.rest("POST", `/v1/webhook-deliveries/${delivery.id}/redeliver`, { key });
    expect(rest.status, rest.text).toBe(202);
    await until(() => receiver.at("/redeliver").length >= 3, 10_000, "the redeliveries");
    expect(receiver.at("/redeliver").every((m) => m.id === first.id && m.verified !== null)).toBe(true);
    expect((await t.rest("POST", `/v1/webhook-deliveries/${delivery.id}/redeliver`, { key: other.apiKey })).status).toBe(404);
    // While a replica holds its claim (an attempt in flight), a redeliver would make a second attempt at once: 409.
    await until(() => t.db.webhookDelivery.findFirst({ where: { id: delivery.id, status: "succeeded" } }));
    await t.db.webhookDelivery.update({ where: { id: delivery.id }, data: { lockedUntil: new Date(Date.now() + 60_000) } });
    const busy = await t.rest("POST", `/v1/webhook-deliveries/${delivery.id}/redeliver`, { key });
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe("CONFLICT");

    const filtered = await t.gql(
      `query($id: ID!) { webhookDeliveries(id: $id, filter: { eventType: ["webhook.test"] }) { totalCount items { eventType } } }`,
      { id: hook.id },
      { key },
    );
    expect(filtered.body.data.webhookDeliveries).toEqual({ totalCount: 1, items: [{ eventType: "webhook.test" }] });
  });
});

describe("SSRF", () => {
  it("never contacts a private or metadata address a host name resolves to, at every attempt (DNS rebinding)", async () => {
    const path = "/rebind";
    // At the first attempt the name answers the receiver (allowed here); later a private and the metadata address.
    dns.set("hooks.rebind.test", [["127.0.0.1"], ["127.0.0.1", "10.1.2.3"], ["169.254.169.254"]]);
    receiver.on(path, (res) => res.writeHead(500).end("try again"));
    const res = await t.rest("POST", "/v1/webhook-endpoints", {
      key,
      body: { url: `http://hooks.rebind.test:${receiver.port}${path}`, eventTypes: ["comment.created"] },
    });
    expect(res.status, res.text).toBe(201);
    await comment("Rebind");
    const delivery = await until(
      async () => {
        const d = await t.db.webhookDelivery.findFirst({ where: { endpointId: res.body.id } });
        return d && d.attempts >= 3 && d;
      },
      10_000,
      "three attempts",
    );
    expect(receiver.at(path)).toHaveLength(1);
    // That an address was refused, never which one the name resolved to.
    expect(delivery.error).toBe(
      "not sent: the address of hooks.rebind.test is not allowed (loopback, private or reserved; WEBHOOK_ALLOWED_CIDRS)",
    );
    const listed = await t.rest("GET", `/v1/webhook-endpoints/${res.body.id}/deliveries`, { key });
    expect(listed.text).not.toMatch(/169\.254|10\.1\.2\.3/);
    expect(lookups.filter((h) => h === "hooks.rebind.test").length).toBeGreaterThanOrEqual(3);
  });

  it("refuses an address outside the allowed CIDRs although the receiver listens there", async () => {
    dns.set("hooks.private.test", [["127.0.0.1"]]);
    const sent = await attemptDelivery(`http://hooks.private.test:${receiver.port}/never`, {}, "{}", {
      allowedCidrs: [],
      httpsOnly: false,
      timeoutMs: 1_000,
      resolve,
    });
    expect(sent.status).toBeNull();
    expect(sent.error).toMatch(/^not sent: the address of hooks\.private\.test is not allowed \(loopback, private or reserved/);
    expect(sent.error).not.toContain("127.0.0.1");
    const mapped = await attemptDelivery(`http://[::ffff:7f00:1]:${receiver.port}/never`, {}, "{}", {
      allowedCidrs: [],
      httpsOnly: false,
      timeoutMs: 1_000,
      resolve,
    });
    expect(mapped.error).toMatch(/ipv4Mapped/);
    const https = await attemptDelivery(receiver.url("/never"), {}, "{}", {
      allowedCidrs: [],
      httpsOnly: true,
      timeoutMs: 1_000,
      resolve,
    });
    expect(https.error).toMatch(/not allowed/);
    expect(receiver.at("/never")).toHaveLength(0);
  });
});

describe("retention", () => {
  it("deletes finished deliveries older than WEBHOOK_DELIVERY_RETENTION_DAYS and keeps the rest", async () => {
    const hook = await endpoint("/retention");
    const old = new Date(Date.now() - 31 * 86_400_000);
    const row = (id: string, extra: object) => ({
      id: `whd_${id}${Date.now()}`,
      organizationId: org.organizationId,
      endpointId: hook.id,
      eventId: "aud_retention",
      eventType: "comment.created",
      ...extra,
    });
    const rows = [
      row("olddone", { status: "succeeded", nextAttemptAt: null, createdAt: old }),
      row("oldfailed", { status: "failed", nextAttemptAt: null, createdAt: old }),
      row("olddue", { status: "retrying", nextAttemptAt: new Date(Date.now() + 3_600_000), createdAt: old }),
      row("newdone", { status: "succeeded", nextAttemptAt: null }),
    ] as const;
    await t.db.webhookDelivery.createMany({ data: rows as never });
    await worker.sweep();
    const left = await t.db.webhookDelivery.findMany({
      where: { endpointId: hook.id, eventId: "aud_retention" },
      select: { id: true },
    });
    expect(left.map((d) => d.id).sort()).toEqual([rows[2].id, rows[3].id].sort());
  });
});

describe("/metrics", () => {
  it("shows deliveries by result, attempt duration, queue depth and the oldest pending age", async () => {
    const app = await appWith({ webhooks: { options: { ...config, resolve }, worker } });
    const hook = await endpoint("/metrics");
    // A delivery due a minute ago and claimed by a replica that died: waiting, and overdue.
    await t.db.webhookDelivery.create({
      data: {
        id: `whd_metrics${Date.now()}`,
        organizationId: org.organizationId,
        endpointId: hook.id,
        eventId: "aud_metrics",
        eventType: "comment.created",
        nextAttemptAt: new Date(Date.now() - 60_000),
        lockedUntil: new Date(Date.now() + 600_000),
      },
    });
    const res = await app.app.fetch(new Request("http://test/metrics"));
    expect(res.status).toBe(200);
    const text = await res.text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
    expect(value("webhook_deliveries_succeeded_total")).toBeGreaterThan(0);
    expect(value("webhook_deliveries_retried_total")).toBeGreaterThan(0);
    expect(value("webhook_deliveries_failed_total")).toBeGreaterThan(0);
    expect(value("webhook_attempt_duration_seconds_count")).toBeGreaterThan(0);
    expect(value("webhook_queue_depth")).toBeGreaterThanOrEqual(1);
    expect(value("webhook_oldest_pending_age_seconds")).toBeGreaterThanOrEqual(59);
  });
});

describe("the change's cost", () => {
  it("pays one statement for webhooks whether three endpoints are subscribed or none", async () => {
    // The worker's own statements would be counted with the request's: it rests for this test.
    await worker.stop();
    const fresh = await t.seedOrg();
    const create = () =>
      t.rest("POST", "/v1/comments", {
        key: fresh.apiKey,
        body: { content: "Counted", entityType: "task", entityId: fresh.taskIds[0], userId: fresh.userIds[0] },
      });
    await create();
    const none = await t.countQueries(create);
    for (const path of ["/cost-1", "/cost-2", "/cost-3"]) {
      const res = await t.rest("POST", "/v1/webhook-endpoints", { key: fresh.apiKey, body: { url: receiver.url(path) } });
      expect(res.status).toBe(201);
    }
    const three = await t.countQueries(create);
    expect(three.count).toBe(none.count);
    expect(three.statements.filter((s) => s.includes('"WebhookDelivery"'))).toHaveLength(1);
    expect(
      await t.db.webhookDelivery.count({ where: { organizationId: fresh.organizationId, eventType: "comment.created" } }),
    ).toBe(3);
  });
});
