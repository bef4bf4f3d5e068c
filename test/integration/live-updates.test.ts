import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { createEvents, createRedisEventTarget } from "../../src/platform/events.js";
import { connectRedis, type RedisConnection } from "../../src/platform/redis.js";
import { openEventStream } from "../helpers/event-stream.js";
import { openFixture } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/test-app.js";

const { t, org, appWith, keyWith } = await openFixture({ organizations: 1 });
const logger = pino({ level: "silent" });

/**
 * Two replicas of the service on one database, each with its own Redis connections, as two
 * processes would have: a subscriber on one hears the writes made on the other.
 */
const connections: RedisConnection[] = [];
const replicas: TestApp[] = [];
let admin: Record<string, string> = {};
beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    const redis = await connectRedis("redis://127.0.0.1:6379", { timeoutMs: 1_000, logger });
    connections.push(redis);
    const events = createEvents(createRedisEventTarget({ publisher: redis.client, subscriber: redis.subscriber, logger }));
    replicas.push(await appWith({ events }));
  }
  const session = await createSession(t.db, org.userIds[1] as string, 3_600_000);
  admin = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
});
afterAll(async () => {
  for (const redis of connections) await redis.close();
});

const [subscriberApp, writerApp] = [() => replicas[0] as TestApp, () => replicas[1] as TestApp];

/** Opens an SSE subscription on `app` and collects its `next` payloads. */
async function subscribe(app: TestApp, query: string, variables: Record<string, unknown>) {
  const stream = await openEventStream(app, { query, variables }, { "x-api-key": org.apiKey });
  expect(stream.response.status).toBe(200);
  // Redis confirms the SUBSCRIBE asynchronously: give it a moment before the first write.
  await new Promise((r) => setTimeout(r, 300));
  const { events } = stream;
  return {
    events,
    async next(count: number) {
      const deadline = Date.now() + 10_000;
      while (events.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(events.length, JSON.stringify(events)).toBeGreaterThanOrEqual(count);
      return events[count - 1];
    },
    close: stream.close,
  };
}

async function gql(app: TestApp, query: string, variables: Record<string, unknown>, headers?: Record<string, string>) {
  const res = await app.gql(query, variables, headers ? { headers } : { key: org.apiKey });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data;
}

describe("comment streams across replicas", () => {
  it("deliver creates, edits and deletes of the entity's comments, each entity page read afresh", async () => {
    const vendorId = org.vendorIds[0] as string;
    const page = "entity { ... on Vendor { comments(limit: 1) { totalCount items { id content } } } }";
    const variables = { id: vendorId };
    const added = await subscribe(
      subscriberApp(),
      `subscription($id: ID!) { commentAdded(entityId: $id, entityType: vendor) { id content ${page} } }`,
      variables,
    );
    const updated = await subscribe(
      subscriberApp(),
      `subscription($id: ID!) { commentUpdated(entityId: $id, entityType: vendor) { id content ${page} } }`,
      variables,
    );
    const deleted = await subscribe(
      subscriberApp(),
      `subscription($id: ID!) { commentDeleted(entityId: $id, entityType: vendor) { deletedId ${page} } }`,
      variables,
    );
    try {
      const create = (content: string) =>
        gql(
          writerApp(),
          "mutation($id: ID!, $u: ID, $c: String!) { createComment(content: $c, entityId: $id, entityType: vendor, userId: $u) { id } }",
          { id: vendorId, u: org.userIds[0], c: content },
        );
      const first = (await create("first")).createComment.id;
      const one = await added.next(1);
      const second = (await create("second")).createComment.id;
      const two = await added.next(2);
      expect(one.data.commentAdded).toMatchObject({ id: first, content: "first" });
      // The second event's page is read again, not served from the first event's cache.
      expect(two.data.commentAdded).toMatchObject({ id: second, content: "second" });
      expect(two.data.commentAdded.entity.comments.totalCount).toBe(one.data.commentAdded.entity.comments.totalCount + 1);
      expect(two.data.commentAdded.entity.comments.items).toEqual([{ id: second, content: "second" }]);

      await gql(writerApp(), 'mutation($id: ID!, $u: ID) { updateComment(id: $id, content: "edited", userId: $u) { id } }', {
        id: second,
        u: org.userIds[0],
      });
      const edit = await updated.next(1);
      expect(edit.data.commentUpdated).toMatchObject({ id: second, content: "edited" });
      expect(edit.data.commentUpdated.entity.comments.items).toEqual([{ id: second, content: "edited" }]);

      await gql(writerApp(), "mutation($id: ID!, $u: ID) { deleteComment(id: $id, userId: $u) { deletedId } }", {
        id: second,
        u: org.userIds[0],
      });
      const gone = await deleted.next(1);
      expect(gone.data.commentDeleted.deletedId).toBe(second);
      expect(gone.data.commentDeleted.entity.comments.totalCount).toBe(two.data.commentAdded.entity.comments.totalCount - 1);
      expect(gone.data.commentDeleted.entity.comments.items).toEqual([{ id: first, content: "first" }]);

      // Each stream carries its own kind only.
      expect([added.events.length, updated.events.length, deleted.events.length]).toEqual([2, 1, 1]);
    } finally {
      await Promise.all([added.close(), updated.close(), deleted.close()]);
    }
  });
});

describe("policyChanged across replicas", () => {
  it("delivers the policy as it is after an update, a new version and every review step", async () => {
    const policyId = (await gql(writerApp(), 'mutation { createPolicy(name: "Live", content: [{ type: "p" }]) { id } }', {}))
      .createPolicy.id as string;
    const other = (await gql(writerApp(), 'mutation { createPolicy(name: "Other", content: [] ) { id } }', {})).createPolicy
      .id as string;
    const changes = await subscribe(
      subscriberApp(),
      "subscription($id: ID!) { policyChanged(id: $id) { id name status currentVersion { id } versions { totalCount } } }",
      { id: policyId },
    );
    try {
      await gql(writerApp(), 'mutation($id: ID!) { updatePolicy(id: $id, name: "Live policy") { id } }', { id: policyId });
      expect((await changes.next(1)).data.policyChanged).toMatchObject({ name: "Live policy", status: "published" });

      // Another policy's change is not on this stream.
      await gql(writerApp(), 'mutation($id: ID!) { updatePolicy(id: $id, name: "Other policy") { id } }', { id: other });

      const { versionId } = (
        await gql(writerApp(), "mutation($id: ID!) { createPolicyVersion(id: $id) { versionId } }", { id: policyId })
      ).createPolicyVersion;
      expect((await changes.next(2)).data.policyChanged.versions.totalCount).toBe(2);

      const step = (name: string, extra: string) =>
        `mutation($id: ID!, $v: ID!) { ${name}(id: $id, versionId: $v${extra}) { id } }`;
      const submit = step("submitPolicyVersion", `, approverId: "${org.memberIds[1]}"`);
      await gql(writerApp(), submit, { id: policyId, v: versionId });
      expect((await changes.next(3)).data.policyChanged.status).toBe("needs_review");

      await gql(writerApp(), step("rejectPolicyVersion", ', reason: "Vague"'), { id: policyId, v: versionId }, admin);
      expect((await changes.next(4)).data.policyChanged.status).toBe("published");

      await gql(writerApp(), submit, { id: policyId, v: versionId });
      expect((await changes.next(5)).data.policyChanged.status).toBe("needs_review");
      await gql(writerApp(), step("approvePolicyVersion", ""), { id: policyId, v: versionId }, admin);
      expect((await changes.next(6)).data.policyChanged).toMatchObject({
        status: "published",
        currentVersion: { id: versionId },
      });

      // A no-op update changes nothing and says nothing.
      await gql(writerApp(), 'mutation($id: ID!) { updatePolicy(id: $id, name: "Live policy") { id } }', { id: policyId });
      await new Promise((r) => setTimeout(r, 300));
      expect(changes.events).toHaveLength(6);
    } finally {
      await changes.close();
    }
  });

  it("refuses a policy of another organization or a caller without policy:read", async () => {
    const res = await subscriberApp().gql('subscription { policyChanged(id: "pol_missing") { id } }', {}, { key: org.apiKey });
    expect(res.body.errors[0].extensions.code).toBe("NOT_FOUND");
    const key = await keyWith(["task:read"]);
    const policyId = org.policyIds[0] as string;
    const refused = await subscriberApp().gql(
      "subscription($id: ID!) { policyChanged(id: $id) { id } }",
      { id: policyId },
      { key },
    );
    expect(refused.body.errors[0].extensions.code).toBe("FORBIDDEN");
  });
});
