import { randomBytes } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import type { Prisma } from "../../src/generated/prisma/client.js";
import { createEvents, createRedisEventTarget } from "../../src/platform/events.js";
import { connectRedis, type RedisConnection } from "../../src/platform/redis.js";
import { openEventStream } from "../helpers/event-stream.js";
import { openFixture } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/test-app.js";

// The inbox on both transports: list, filter, count, mark read, preferences, live delivery; personal to a user's credential.
const { t, org, other, appWith } = await openFixture();

const [owner, admin, auditor] = org.memberIds as [string, string, string, string];
const headers = {} as Record<"owner" | "admin" | "auditor" | "otherOwner", Record<string, string>>;

async function sessionOf(userId: string, organizationId = org.organizationId) {
  const session = await createSession(t.db, userId, 3_600_000);
  return { authorization: `Bearer ${session.token}`, "x-organization-id": organizationId };
}

beforeAll(async () => {
  headers.owner = await sessionOf(org.userIds[0] as string);
  headers.admin = await sessionOf(org.userIds[1] as string);
  headers.auditor = await sessionOf(org.userIds[2] as string);
  headers.otherOwner = await sessionOf(other.userIds[0] as string, other.organizationId);
});

async function newTask(assigneeId?: string, by = headers.owner) {
  const res = await t.rest("POST", "/v1/tasks", {
    headers: by,
    body: { title: `Task ${randomBytes(3).toString("hex")}`, assigneeId },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function mention(taskId: string, memberId: string, by = headers.owner) {
  const res = await t.rest("POST", "/v1/comments", {
    headers: by,
    body: { content: `look @[someone](${memberId})`, entityId: taskId, entityType: "task" },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** The auditor's inbox starts empty in every test: everything before is read and left out by createdAfter. */
async function freshInbox() {
  await t.db.notification.updateMany({ where: { recipientId: auditor, readAt: null }, data: { readAt: new Date() } });
  // createdAfter is strict and createdAt has a millisecond's resolution (timestamp(3), the time
  // its transaction began): a notification whose transaction began in the bound's millisecond is
  // left out. So the bound is taken first and the pause comes after it, before any write. Before
  // 90c8b97 the pause came first and the bound was taken just before the first request (2 of 3
  // listed once). The bound is the clock that stamps createdAt; PGlite's is this process's
  // Date.now() (its CLOCK_REALTIME is Date.now()), PostgreSQL's the machine's.
  const [row] = await t.db.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS "now"`;
  await new Promise((r) => setTimeout(r, 5));
  return (row as { now: Date }).now.toISOString();
}

const inboxQuery = `query($filter: NotificationFilter, $orderBy: NotificationOrderBy, $limit: Int, $cursor: String) {
  notifications(filter: $filter, orderBy: $orderBy, limit: $limit, cursor: $cursor) {
    totalCount nextCursor
    items {
      id reason entityType entityId url createdAt readAt
      actor { id name }
      comment { id content }
      entity { __typename ... on Task { id title } ... on TaskItem { id title } ... on Vendor { id name } ... on Policy { id name } }
    }
  }
  viewer { notifications(filter: $filter, orderBy: $orderBy, limit: $limit, cursor: $cursor) { totalCount items { id } } }
}`;

describe("the inbox", () => {
  it("GraphQL, root and viewer: the caller's notifications newest first, with entity, actor and comment, filtered and counted", async () => {
    const since = await freshInbox();
    const assignedTask = await newTask(auditor);
    const mentionTask = await newTask();
    const commentId = await mention(mentionTask, auditor, headers.admin);
    await newTask(admin); // someone else's notification

    const all = await t.gql(inboxQuery, { filter: { createdAfter: since } }, { headers: headers.auditor });
    expect(all.body.errors).toBeUndefined();
    const page = all.body.data.notifications;
    expect(page.totalCount).toBe(2);
    expect(page.items.map((n: { reason: string }) => n.reason)).toEqual(["mention", "assigned"]);
    expect(page.items[0]).toMatchObject({
      entityType: "task",
      entityId: mentionTask,
      actor: { id: admin, name: "Grace Admin" },
      comment: { id: commentId, content: `look @[someone](${auditor})` },
      entity: { __typename: "Task", id: mentionTask },
      url: null,
      readAt: null,
    });
    expect(page.items[1]).toMatchObject({
      entity: { __typename: "Task", id: assignedTask },
      actor: { id: owner },
      comment: null,
    });
    expect(all.body.data.viewer.notifications).toEqual({
      totalCount: 2,
      items: page.items.map((n: { id: string }) => ({ id: n.id })),
    });

    const mentions = await t.gql(
      inboxQuery,
      { filter: { createdAfter: since, reason: ["mention"] } },
      { headers: headers.auditor },
    );
    expect(mentions.body.data.notifications.items.map((n: { id: string }) => n.id)).toEqual([page.items[0].id]);

    const first = await t.gql(
      inboxQuery,
      { filter: { createdAfter: since }, orderBy: { field: "createdAt", direction: "asc" }, limit: 1 },
      { headers: headers.auditor },
    );
    expect(first.body.data.notifications.items[0].id).toBe(page.items[1].id);
    const second = await t.gql(
      inboxQuery,
      {
        filter: { createdAfter: since },
        orderBy: { field: "createdAt", direction: "asc" },
        limit: 1,
        cursor: first.body.data.notifications.nextCursor,
      },
      { headers: headers.auditor },
    );
    expect(second.body.data.notifications.items[0].id).toBe(page.items[0].id);
    expect(second.body.data.notifications.nextCursor).toBeNull();

    // A Relay connection like every list: edges and pageInfo, first/after and last/before.
    const relay = `query($f: NotificationFilter, $first: Int, $after: String, $last: Int) {
      viewer { notifications(filter: $f, first: $first, after: $after, last: $last) { edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage endCursor } } }
    }`;
    const head = await t.gql(relay, { f: { createdAfter: since }, first: 1 }, { headers: headers.auditor });
    const headConnection = head.body.data.viewer.notifications;
    expect(headConnection.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([page.items[0].id]);
    expect(headConnection.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const tail = await t.gql(relay, { f: { createdAfter: since }, last: 1 }, { headers: headers.auditor });
    expect(tail.body.data.viewer.notifications.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([page.items[1].id]);
  });

  it("REST: GET /v1/notifications?unread=true&reason=mention, the answer's exact keys, and its 400s", async () => {
    const since = await freshInbox();
    const taskId = await newTask(auditor);
    await mention(taskId, auditor);
    const res = await t.rest("GET", `/v1/notifications?unread=true&reason=mention&createdAfter=${since}`, {
      headers: headers.auditor,
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["items", "nextCursor"]);
    expect(res.body.items).toHaveLength(1);
    expect(Object.keys(res.body.items[0]).sort()).toEqual(
      ["actorId", "commentId", "createdAt", "entityId", "entityType", "id", "outcome", "readAt", "reason", "url"].sort(),
    );
    expect(res.body.items[0]).toMatchObject({ reason: "mention", entityId: taskId, actorId: owner, readAt: null });
    const both = await t.rest("GET", `/v1/notifications?reason=mention,assigned&createdAfter=${since}&sort=createdAt`, {
      headers: headers.auditor,
    });
    expect(both.body.items.map((n: { reason: string }) => n.reason)).toEqual(["assigned", "mention"]);

    for (const query of ["reason=shouting", "unread=maybe", "colour=blue", "createdAfter=yesterday", "sort=-readAt"]) {
      const bad = await t.rest("GET", `/v1/notifications?${query}`, { headers: headers.auditor });
      expect(bad.status, query).toBe(400);
      expect(bad.body.code, query).toBe("BAD_USER_INPUT");
    }
  });

  it("marks read by ids (another member's ids are skipped, no error) or all; the unread count is totalCount of unread: true", async () => {
    const since = await freshInbox();
    const tasks = [await newTask(auditor), await newTask(auditor), await newTask(auditor)];
    await newTask(admin);
    const unread = async () =>
      (await t.gql(inboxQuery, { filter: { createdAfter: since, unread: true } }, { headers: headers.auditor })).body.data
        .notifications;
    const mine = (await unread()).items.map((n: { id: string }) => n.id) as string[];
    expect(mine).toHaveLength(tasks.length);
    const theirs = await t.db.notification.findFirstOrThrow({ where: { recipientId: admin }, orderBy: { createdAt: "desc" } });

    const rest = await t.rest("POST", "/v1/notifications/read", {
      headers: headers.auditor,
      body: { ids: [mine[0], theirs.id, "ntf_nothing"] },
    });
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual({ markedCount: 1, unreadCount: 2 });
    expect((await t.db.notification.findUniqueOrThrow({ where: { id: theirs.id } })).readAt).toBeNull();
    expect((await unread()).totalCount).toBe(2);
    // Nor can another organization's member mark them.
    const foreign = await t.rest("POST", "/v1/notifications/read", { headers: headers.otherOwner, body: { ids: mine } });
    expect(foreign.status).toBe(200);
    expect(foreign.body.markedCount).toBe(0);
    expect((await unread()).totalCount).toBe(2);

    const again = await t.rest("POST", "/v1/notifications/read", { headers: headers.auditor, body: { ids: [mine[0]] } });
    expect(again.body).toEqual({ markedCount: 0, unreadCount: 2 });

    const all = await t.gql(
      `mutation { markNotificationsRead(all: true) { markedCount unreadCount } }`,
      {},
      { headers: headers.auditor },
    );
    expect(all.body.data.markNotificationsRead).toEqual({ markedCount: 2, unreadCount: 0 });
    expect((await unread()).totalCount).toBe(0);
    const read = await t.rest("GET", `/v1/notifications?unread=false&createdAfter=${since}`, { headers: headers.auditor });
    expect(read.body.items).toHaveLength(3);
    expect(read.body.items.every((n: { readAt: string | null }) => n.readAt !== null)).toBe(true);
  });

  it("mark read with neither or both of ids and all, or all: false, is a 400 on both transports", async () => {
    for (const body of [
      {},
      { ids: ["ntf_x"], all: true },
      { all: false },
      { ids: { id: "ntf_x" } },
      { ids: [null] },
      { ids: [""] },
    ]) {
      const res = await t.rest("POST", "/v1/notifications/read", { headers: headers.auditor, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe("BAD_USER_INPUT");
    }
    for (const args of ["", "(ids: [], all: true)", "(all: false)"]) {
      const res = await t.gql(`mutation { markNotificationsRead${args} { markedCount } }`, {}, { headers: headers.auditor });
      expect(res.body.errors?.[0]?.extensions?.code, args).toBe("BAD_USER_INPUT");
    }
  });
});

describe("preferences", () => {
  it("all on by default; a change answers the preferences after it, audited once per change, on both transports", async () => {
    const headersOf = await sessionOf(org.userIds[3] as string);
    const defaults = {
      mention: true,
      assigned: true,
      review_requested: true,
      review_completed: true,
      webhook_disabled: true,
      control_not_ready: true,
      evidence_due: true,
      evidence_submitted: true,
    };
    const got = await t.rest("GET", "/v1/notifications/preferences", { headers: headersOf });
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ email: defaults });

    const patched = await t.rest("PATCH", "/v1/notifications/preferences", {
      headers: headersOf,
      body: { email: { mention: false, assigned: true } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ email: { ...defaults, mention: false } });

    const gql = await t.gql(
      `mutation { updateNotificationPreferences(email: { review_completed: false, mention: false }) { email { mention review_completed } } }
       `,
      {},
      { headers: headersOf },
    );
    expect(gql.body.data.updateNotificationPreferences.email).toEqual({ mention: false, review_completed: false });
    const read = await t.gql(
      `{ notificationPreferences { email { mention assigned review_requested review_completed webhook_disabled control_not_ready evidence_due evidence_submitted } } viewer { notificationPreferences { email { review_completed } } } }`,
      {},
      { headers: headersOf },
    );
    expect(read.body.data).toEqual({
      notificationPreferences: { email: { ...defaults, mention: false, review_completed: false } },
      viewer: { notificationPreferences: { email: { review_completed: false } } },
    });
    // Every reason of the input can be switched (webhook_disabled and evidence_submitted were once refused as unknown).
    const every = await t.rest("PATCH", "/v1/notifications/preferences", {
      headers: headersOf,
      body: { email: { webhook_disabled: false, evidence_submitted: false } },
    });
    expect(every.status, every.text).toBe(200);
    expect(every.body.email).toMatchObject({ webhook_disabled: false, evidence_submitted: false });
    const back = await t.rest("PATCH", "/v1/notifications/preferences", {
      headers: headersOf,
      body: { email: { webhook_disabled: true, evidence_submitted: true } },
    });
    expect(back.status, back.text).toBe(200);
    // A write that changes nothing is answered and not audited.
    const same = await t.rest("PATCH", "/v1/notifications/preferences", {
      headers: headersOf,
      body: { email: { mention: false } },
    });
    expect(same.status).toBe(200);

    const events = await t.db.auditEvent.findMany({
      where: { organizationId: org.organizationId, action: "notification_preferences.updated", entityId: org.memberIds[3] },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    });
    expect(events.map((e) => [e.actorUserId, e.entityType, e.data])).toEqual([
      [org.userIds[3], "notification_preferences", { changes: { mention: { from: true, to: false } } }],
      [org.userIds[3], "notification_preferences", { changes: { review_completed: { from: true, to: false } } }],
      [
        org.userIds[3],
        "notification_preferences",
        { changes: { webhook_disabled: { from: true, to: false }, evidence_submitted: { from: true, to: false } } },
      ],
      [
        org.userIds[3],
        "notification_preferences",
        { changes: { webhook_disabled: { from: false, to: true }, evidence_submitted: { from: false, to: true } } },
      ],
    ]);
  });

  it("an unknown reason, an empty change, a null or a non-boolean is a 400 on both transports", async () => {
    for (const body of [
      { email: { shouting: false } },
      { email: {} },
      { email: { mention: null } },
      { email: { mention: "no" } },
      {},
    ]) {
      const res = await t.rest("PATCH", "/v1/notifications/preferences", { headers: headers.admin, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe("BAD_USER_INPUT");
    }
    const mutation = `mutation($email: NotificationEmailPreferencesInput!) { updateNotificationPreferences(email: $email) { email { mention } } }`;
    // An unknown reason is refused before execution: 400, as REST answers.
    const unknown = await t.gql(mutation, { email: { shouting: false } }, { headers: headers.admin });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    const inline = await t.gql(
      `mutation { updateNotificationPreferences(email: { shouting: false }) { email { mention } } }`,
      {},
      {
        headers: headers.admin,
      },
    );
    // Written into the document, it fails validation (the status follows the Accept header, as for every document).
    expect(inline.status).toBeLessThan(500);
    expect(inline.body.errors[0].extensions.code).toBe("GRAPHQL_VALIDATION_FAILED");
    // The service's own refusals: GraphQL answers them with the error, as every execution error.
    for (const email of [{}, { mention: null }]) {
      const res = await t.gql(mutation, { email }, { headers: headers.admin });
      expect(res.body.data, JSON.stringify(email)).toBeNull();
      expect(res.body.errors?.[0]?.extensions?.code, JSON.stringify(email)).toBe("BAD_USER_INPUT");
    }
  });
});

describe("e-mail jobs", () => {
  it("enqueues, in the change's transaction, the notifications whose reason the recipient has not switched off", async () => {
    const enqueued: { ids: string[]; visible: string[] }[] = [];
    const app = await appWith({
      mail: {
        async enqueue(tx: Prisma.TransactionClient, ids: readonly string[]) {
          // The transaction's own client sees the rows it has not committed yet.
          const visible = await tx.notification.findMany({ where: { id: { in: [...ids] } }, select: { recipientId: true } });
          enqueued.push({ ids: [...ids], visible: visible.map((n) => n.recipientId) });
        },
      },
    });
    await t.rest("PATCH", "/v1/notifications/preferences", { headers: headers.admin, body: { email: { mention: false } } });
    const task = await app.rest("POST", "/v1/tasks", { headers: headers.owner, body: { title: "Mail me" } });
    const comment = await app.rest("POST", "/v1/comments", {
      headers: headers.owner,
      body: { content: `@[Grace](${admin}) @[Alan](${auditor})`, entityId: task.body.id, entityType: "task" },
    });
    expect(comment.status).toBe(201);
    const rows = await t.db.notification.findMany({
      where: { commentId: comment.body.id },
      select: { id: true, recipientId: true },
    });
    expect(rows.map((r) => r.recipientId).sort()).toEqual([admin, auditor].sort());
    expect(enqueued).toEqual([{ ids: [rows.find((r) => r.recipientId === auditor)?.id], visible: [auditor] }]);
    await t.rest("PATCH", "/v1/notifications/preferences", { headers: headers.admin, body: { email: { mention: true } } });
  });

  it("a failure to enqueue rolls the whole change back: no comment, no notification", async () => {
    const app = await appWith({
      mail: {
        async enqueue() {
          throw new Error("queue unavailable");
        },
      },
    });
    const taskId = await newTask();
    const res = await app.rest("POST", "/v1/comments", {
      headers: headers.owner,
      body: { content: `@[Alan](${auditor})`, entityId: taskId, entityType: "task" },
    });
    expect(res.status).toBe(500);
    expect(await t.db.comment.count({ where: { entityId: taskId } })).toBe(0);
    expect(await t.db.notification.count({ where: { entityId: taskId } })).toBe(0);
  });
});

describe("personal", () => {
  it("an API key gets 403 on every REST route and FORBIDDEN (null) over GraphQL", async () => {
    for (const [method, path, body] of [
      ["GET", "/v1/notifications", undefined],
      ["POST", "/v1/notifications/read", { all: true }],
      ["GET", "/v1/notifications/preferences", undefined],
      ["PATCH", "/v1/notifications/preferences", { email: { mention: false } }],
    ] as const) {
      const res = await t.rest(method, path, { key: org.apiKey, body });
      expect(res.status, path).toBe(403);
      expect(res.body.code).toBe("FORBIDDEN");
    }
    const res = await t.gql(
      `{ notifications { totalCount } notificationPreferences { email { mention } } viewer { credential notifications { totalCount } notificationPreferences { email { mention } } } }`,
      {},
      { key: org.apiKey },
    );
    expect(res.body.data).toEqual({
      notifications: null,
      notificationPreferences: null,
      viewer: { credential: "apiKey", notifications: null, notificationPreferences: null },
    });
    expect(res.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual([
      "FORBIDDEN",
      "FORBIDDEN",
      "FORBIDDEN",
      "FORBIDDEN",
    ]);
    const mutation = await t.gql(`mutation { markNotificationsRead(all: true) { markedCount } }`, {}, { key: org.apiKey });
    expect(mutation.body.errors[0].extensions.code).toBe("FORBIDDEN");
  });

  it("a member never reads another's notifications, nor another organization's", async () => {
    await newTask(auditor);
    const ids = async (h: Record<string, string>) =>
      (await t.rest("GET", "/v1/notifications?limit=100", { headers: h })).body.items.map(
        (n: { id: string }) => n.id,
      ) as string[];
    const auditorIds = await ids(headers.auditor);
    expect(auditorIds.length).toBeGreaterThan(0);
    const rows = await t.db.notification.findMany({ where: { id: { in: auditorIds } }, select: { recipientId: true } });
    expect(new Set(rows.map((r) => r.recipientId))).toEqual(new Set([auditor]));
    const otherIds = await ids(headers.otherOwner);
    expect(otherIds.filter((id) => auditorIds.includes(id))).toEqual([]);
  });
});

describe("notificationAdded", () => {
  const logger = pino({ level: "silent" });
  const connections: RedisConnection[] = [];
  const replicas: TestApp[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const redis = await connectRedis("redis://127.0.0.1:6379", { timeoutMs: 1_000, logger });
      connections.push(redis);
      const events = createEvents(createRedisEventTarget({ publisher: redis.client, subscriber: redis.subscriber, logger }));
      replicas.push(await appWith({ events }));
    }
  });
  afterAll(async () => {
    for (const redis of connections) await redis.close();
  });

  async function subscribe(app: TestApp, h: Record<string, string>) {
    const stream = await openEventStream(
      app,
      { query: "subscription { notificationAdded { id reason entityId actor { id } } }" },
      h,
    );
    expect(stream.response.status).toBe(200);
    // Redis confirms the SUBSCRIBE asynchronously: give it a moment before the first write.
    await new Promise((r) => setTimeout(r, 300));
    return stream;
  }

  it("delivers to the recipient only, across replicas", async () => {
    const [subscriberApp, writerApp] = replicas as [TestApp, TestApp];
    const mine = await subscribe(subscriberApp, headers.auditor);
    const theirs = await subscribe(subscriberApp, headers.admin);
    const foreign = await subscribe(subscriberApp, headers.otherOwner);
    const res = await writerApp.rest("POST", "/v1/tasks", {
      headers: headers.owner,
      body: { title: "Live", assigneeId: auditor },
    });
    expect(res.status).toBe(201);
    const deadline = Date.now() + 10_000;
    while (mine.events.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // A moment more, for anything that should not arrive.
    await new Promise((r) => setTimeout(r, 200));
    const written = await t.db.notification.findFirstOrThrow({ where: { entityId: res.body.id } });
    expect(mine.events).toEqual([
      { data: { notificationAdded: { id: written.id, reason: "assigned", entityId: res.body.id, actor: { id: owner } } } },
    ]);
    expect(theirs.events).toEqual([]);
    expect(foreign.events).toEqual([]);
    for (const sub of [mine, theirs, foreign]) await sub.close();
  });

  it("an API key's subscription is refused with FORBIDDEN", async () => {
    const sub = await subscribe(t, { "x-api-key": org.apiKey });
    const deadline = Date.now() + 5_000;
    while (sub.events.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await sub.close();
    expect(sub.events.flatMap((e) => e.errors ?? []).map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual([
      "FORBIDDEN",
    ]);
  });
});

describe("deep links", () => {
  it("the trusted contextUrl, else the record's page; never another origin or another organization's path", async () => {
    const app = await appWith({ appUrl: "https://app.example.com", corsOrigins: ["https://staging.example.com"] });
    const orgPath = `/${org.organizationId}`;
    const linkOf = async (contextUrl: string | undefined) => {
      const taskId = await newTask();
      const res = await app.rest("POST", "/v1/comments", {
        headers: headers.owner,
        body: { content: `@[Alan](${auditor})`, entityId: taskId, entityType: "task", contextUrl },
      });
      expect(res.status, contextUrl).toBe(201);
      const row = await t.db.notification.findFirstOrThrow({ where: { commentId: res.body.id } });
      return { url: row.url, fallback: `https://app.example.com${orgPath}/tasks/${taskId}` };
    };
    const trusted = `https://app.example.com${orgPath}/tasks/x?tab=comments#c1`;
    expect((await linkOf(trusted)).url).toBe(trusted);
    const cors = `https://staging.example.com${orgPath}/vendors/y`;
    expect((await linkOf(cors)).url).toBe(cors);
    for (const untrusted of [
      `https://evil.example.com${orgPath}/tasks/x`,
      `http://app.example.com${orgPath}/tasks/x`,
      `https://app.example.com:8443${orgPath}/tasks/x`,
      `https://app.example.com/${other.organizationId}/tasks/x`,
      `https://app.example.com${orgPath}/../${other.organizationId}/tasks/x`,
      `https://app.example.com${orgPath}/%2e%2e/${other.organizationId}/x`,
      `https://app.example.com${orgPath}`,
      `https://user:pw@app.example.com${orgPath}/tasks/x`,
      undefined,
    ]) {
      const { url, fallback } = await linkOf(untrusted);
      expect(url, untrusted).toBe(fallback);
    }
  });

  it("the fallback of each record: tasks, vendors, risk, policies, and a task item on its parent's page", async () => {
    const app = await appWith({ appUrl: "https://app.example.com/" });
    const base = `https://app.example.com/${org.organizationId}`;
    const vendor = await app.rest("POST", "/v1/vendors", { headers: headers.owner, body: { name: "Acme", assigneeId: auditor } });
    const risk = await app.rest("POST", "/v1/risks", { headers: headers.owner, body: { title: "Flood", assigneeId: auditor } });
    const item = await app.rest("POST", "/v1/task-management", {
      headers: headers.owner,
      body: { title: "Check", entityId: risk.body.id, entityType: "risk", assigneeId: auditor },
    });
    const task = await app.rest("POST", "/v1/tasks", { headers: headers.owner, body: { title: "Do", assigneeId: auditor } });
    const policy = await app.rest("POST", "/v1/policies", { key: org.apiKey, body: { name: "P", content: [{ type: "p" }] } });
    const version = await app.rest("POST", `/v1/policies/${policy.body.id}/versions`, { key: org.apiKey, body: {} });
    const submit = await app.rest("POST", `/v1/policies/${policy.body.id}/versions/${version.body.versionId}/submit`, {
      headers: headers.admin,
      body: { approverId: owner },
    });
    expect(submit.status).toBe(200);
    const url = async (entityId: string) => (await t.db.notification.findFirstOrThrow({ where: { entityId } })).url;
    expect(await url(vendor.body.id)).toBe(`${base}/vendors/${vendor.body.id}`);
    expect(await url(risk.body.id)).toBe(`${base}/risk/${risk.body.id}`);
    expect(await url(item.body.id)).toBe(`${base}/risk/${risk.body.id}?taskItemId=${item.body.id}`);
    expect(await url(task.body.id)).toBe(`${base}/tasks/${task.body.id}`);
    expect(await url(policy.body.id)).toBe(`${base}/policies/${policy.body.id}`);
  });
});
