import { describe, expect, it } from "vitest";
import { openEventStream } from "../helpers/event-stream.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();

const subscription = `subscription($id: ID!, $type: CommentEntityType!) {
  commentAdded(entityId: $id, entityType: $type) { id content author { id } }
}`;

/** Opens an SSE subscription and collects its `next` events. */
const subscribe = (key: string, variables: Record<string, unknown>) =>
  openEventStream(t, { query: subscription, variables }, { "x-api-key": key });

async function eventually(check: () => boolean) {
  const deadline = Date.now() + 5000;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

describe("commentAdded subscription", () => {
  it("delivers new comments on the entity, and nothing from other entities or organizations", async () => {
    const sub = await subscribe(org.apiKey, { id: org.taskIds[0], type: "task" });
    expect(sub.response.status).toBe(200);
    expect(sub.response.headers.get("content-type")).toContain("text/event-stream");
    await new Promise((r) => setTimeout(r, 50));
    const post = (key: string, entityId: string, userId: string, content: string) =>
      t.rest("POST", "/v1/comments", { key, body: { content, entityId, entityType: "task", userId } });
    await post(other.apiKey, other.taskIds[0] as string, other.userIds[0] as string, "other org");
    await post(org.apiKey, org.taskIds[1] as string, org.userIds[0] as string, "other task");
    const created = await post(org.apiKey, org.taskIds[0] as string, org.userIds[1] as string, "live!");
    await eventually(() => sub.events.length > 0);
    await new Promise((r) => setTimeout(r, 100));
    expect(sub.events).toEqual([
      { data: { commentAdded: { id: created.body.id, content: "live!", author: { id: org.userIds[1] } } } },
    ]);
    await sub.close();
  });

  it("refuses another organization's entity and callers without comment:read", async () => {
    const codes = async (key: string, id: unknown) => {
      const sub = await subscribe(key, { id, type: "task" });
      await eventually(() => sub.events.length > 0);
      await sub.close();
      return sub.events
        .flatMap((e) => (e as { errors?: { extensions: { code: string } }[] }).errors ?? [])
        .map((e) => e.extensions.code);
    };
    expect(await codes(org.apiKey, other.taskIds[0])).toEqual(["NOT_FOUND"]);
    const limited = await t.keyWith(org.organizationId, ["task:read"]);
    expect(await codes(limited.key, org.taskIds[0])).toEqual(["FORBIDDEN"]);
  });
});
