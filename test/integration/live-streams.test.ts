import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { queryObjects } from "node:v8";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CREDENTIAL_CACHE_MS } from "../../src/auth/authenticate.js";
import { createSession } from "../../src/auth/sessions.js";
import { openEventStream } from "../helpers/event-stream.js";
import { openFixture } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/test-app.js";

const { t, org, appWith, keyWith } = await openFixture({ organizations: 1 });

const commentAdded = `subscription($id: ID!) { commentAdded(entityId: $id, entityType: task) { id content } }`;
const withAuthor = `subscription($id: ID!) { commentAdded(entityId: $id, entityType: task) { id author { id } } }`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually(check: () => boolean, ms = 5_000) {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await sleep(20);
}

const streams: { close(): Promise<void> }[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  // All at once: a close ends once the app's next heartbeat (250 ms here) finds its stream gone, so
  // one after the other the 20 streams of a test took 5 s, and the file's closes 7.5 s.
  await Promise.all(streams.splice(0).map((s) => s.close()));
});

async function subscribe(
  app: Pick<TestApp, "app">,
  headers: Record<string, string>,
  query = commentAdded,
  taskId = org.taskIds[0],
) {
  const stream = await openEventStream(app, { query, variables: { id: taskId } }, headers);
  expect(stream.response.status).toBe(200);
  streams.push(stream);
  return stream;
}

/** A comment on the task through REST, by the organization's key (all scopes). */
async function comment(app: TestApp, content: string, taskId = org.taskIds[0]) {
  const res = await app.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: { content, entityId: taskId, entityType: "task", userId: org.userIds[0] },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** A stream's raw bytes as text, read as they come, for the lines that are not events. */
async function rawStream(app: TestApp, headers: Record<string, string>) {
  const controller = new AbortController();
  const response = await app.app.fetch(
    new Request("http://test/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
      body: JSON.stringify({ query: commentAdded, variables: { id: org.taskIds[0] } }),
      signal: controller.signal,
    }),
  );
  const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
  const decoder = new TextDecoder();
  const state = { text: "", ended: false, failed: false };
  const pump = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => {
        state.failed = true;
        return { done: true as const, value: undefined };
      });
      if (chunk.done) break;
      state.text += decoder.decode(chunk.value, { stream: true });
    }
    state.ended = true;
  })();
  const stream = {
    response,
    state,
    async close() {
      controller.abort();
      await reader.cancel().catch(() => {});
      await pump;
    },
  };
  streams.push(stream);
  return stream;
}

async function metric(app: TestApp, name: string): Promise<number> {
  const text = await (await app.app.fetch(new Request("http://test/metrics"))).text();
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
}

describe("an event is resolved once per selection and permission set", () => {
  it("reads a comment once for every stream that shares its selection and permissions, once more for another selection", async () => {
    const app = await appWith({});
    const byId = vi.spyOn(app.app.services.comments, "byId");
    const key = await keyWith(["comment:read", "task:read"]);
    const sameKey = await Promise.all(Array.from({ length: 4 }, () => subscribe(app, { "x-api-key": key })));
    // Another key with the same permissions shares the result too.
    const twin = await subscribe(app, { "x-api-key": await keyWith(["task:read", "comment:read"]) });
    const other = await subscribe(app, { "x-api-key": key }, withAuthor);
    await sleep(50);
    const id = await comment(app, "once for all");
    const all = [...sameKey, twin, other];
    await eventually(() => all.every((s) => s.events.length > 0));
    for (const s of [...sameKey, twin]) expect(s.events).toEqual([{ data: { commentAdded: { id, content: "once for all" } } }]);
    expect(other.events).toEqual([{ data: { commentAdded: { id, author: { id: org.userIds[0] } } } }]);
    expect(byId).toHaveBeenCalledTimes(2);
  });

  it("reads it again for another permission set, and gives each set its own result", async () => {
    const app = await appWith({});
    const byId = vi.spyOn(app.app.services.comments, "byId");
    const narrow = await subscribe(app, { "x-api-key": await keyWith(["comment:read"]) });
    const wide = await subscribe(app, { "x-api-key": await keyWith(["comment:read", "member:read"]) });
    await sleep(50);
    const id = await comment(app, "per permission set");
    await eventually(() => narrow.events.length > 0 && wide.events.length > 0);
    for (const s of [narrow, wide]) expect(s.events).toEqual([{ data: { commentAdded: { id, content: "per permission set" } } }]);
    expect(byId).toHaveBeenCalledTimes(2);
    expect(new Set(byId.mock.contexts).size).toBe(1);
    const results = await Promise.all(byId.mock.results.map((r) => r.value));
    expect(results[0]).not.toBe(results[1]);
  });

  it("stops delivering to a subscriber who lost access, and keeps delivering to the others", async () => {
    const app = await appWith({});
    const member = { userId: org.userIds[2] as string, memberId: org.memberIds[2] as string };
    const session = await createSession(t.db, member.userId, 60_000);
    const losing = await subscribe(app, { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId });
    const keeping = await subscribe(app, { "x-api-key": await keyWith(["comment:read"]) });
    await sleep(50);
    await t.db.member.update({ where: { id: member.memberId }, data: { isActive: false } });
    try {
      // Past the credential cache: the next check sees the deactivated member.
      await sleep(CREDENTIAL_CACHE_MS + 100);
      const id = await comment(app, "not for the departed");
      await eventually(() => keeping.events.length > 0);
      await sleep(200);
      expect(keeping.events).toEqual([{ data: { commentAdded: { id, content: "not for the departed" } } }]);
      expect(JSON.stringify(losing.events)).not.toContain(id);
      expect(losing.events.at(-1)?.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    } finally {
      await t.db.member.update({ where: { id: member.memberId }, data: { isActive: true } });
    }
  });
});

describe("slow readers", () => {
  it("drops a stream whose reader stopped reading once its unread bytes pass the bound, counts it, and does not hold the others", async () => {
    const app = await appWith({ liveStreams: { maxBufferedBytes: 4_096 } });
    const key = await keyWith(["comment:read"]);
    // Read once, then never again: its bytes pile up on the server.
    const stalled = await app.app.fetch(
      new Request("http://test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", "x-api-key": key },
        body: JSON.stringify({ query: commentAdded, variables: { id: org.taskIds[0] } }),
      }),
    );
    expect(stalled.status).toBe(200);
    const reader = stalled.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    await reader.read();
    const reading = await subscribe(app, { "x-api-key": key });
    await sleep(50);
    const long = "x".repeat(1_900);
    const ids: string[] = [];
    // Past what the body's own stream holds (64 KiB on Node 24) and then past the bound.
    for (let i = 0; i < 40; i++) ids.push(await comment(app, `${long} ${i}`));
    await eventually(() => reading.events.length >= ids.length);
    expect(reading.events.map((e) => e.data.commentAdded.id)).toEqual(ids);
    await eventually(() => false, 200);
    expect(await metric(app, "live_streams_dropped_total")).toBe(1);
    expect(await metric(app, "live_streams_open")).toBe(1);
    // The dropped stream's reader finds it broken off, not waiting for more.
    const outcome = await (async () => {
      for (;;) {
        const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined, failed: true }));
        if (chunk.done) return chunk;
      }
    })();
    expect(outcome.done).toBe(true);
  });
});

describe("keep-alives and caps", () => {
  it("sends an SSE comment line at the heartbeat interval on an idle stream", async () => {
    const app = await appWith({ liveStreams: { heartbeatMs: 100 } });
    const stream = await rawStream(app, { "x-api-key": await keyWith(["comment:read"]) });
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get("content-type")).toBe("text/event-stream");
    expect(stream.response.headers.get("x-accel-buffering")).toBe("no");
    await sleep(550);
    // The first comment line at once, then one per interval.
    expect(stream.state.text.split(":\n\n").length - 1).toBeGreaterThanOrEqual(4);
    expect(stream.state.text.replaceAll(":\n\n", "")).toBe("");
  });

  it("refuses a stream past the cap per credential, then past the cap per organization, with TOO_MANY_STREAMS", async () => {
    const app = await appWith({ liveStreams: { perCredential: 2, perOrganization: 3 } });
    const [first, second] = [await keyWith(["comment:read"]), await keyWith(["comment:read"])];
    const held = [await subscribe(app, { "x-api-key": first }), await subscribe(app, { "x-api-key": first })];
    const overCredential = await subscribe(app, { "x-api-key": first });
    await eventually(() => overCredential.events.length > 0);
    expect(overCredential.events[0].errors[0].extensions.code).toBe("TOO_MANY_STREAMS");
    expect(overCredential.events[0].errors[0].message).toContain("credential");

    await subscribe(app, { "x-api-key": second });
    const overOrganization = await subscribe(app, { "x-api-key": second });
    await eventually(() => overOrganization.events.length > 0);
    expect(overOrganization.events[0].errors[0].extensions.code).toBe("TOO_MANY_STREAMS");
    expect(overOrganization.events[0].errors[0].message).toContain("organization");
    expect(await metric(app, "live_streams_refused_credential_total")).toBe(1);
    expect(await metric(app, "live_streams_refused_organization_total")).toBe(1);
    expect(await metric(app, "live_streams_open")).toBe(3);

    // A closed stream frees its place.
    await held[0]?.close();
    await eventually(() => false, 100);
    const again = await subscribe(app, { "x-api-key": first });
    await sleep(50);
    const id = await comment(app, "room again");
    await eventually(() => again.events.length > 0);
    expect(again.events).toEqual([{ data: { commentAdded: { id, content: "room again" } } }]);
  });

  it("completes every open stream when the app closes its streams (shutdown)", async () => {
    const app = await appWith({ liveStreams: { heartbeatMs: 60_000 } });
    const key = await keyWith(["comment:read"]);
    const open = [await rawStream(app, { "x-api-key": key }), await rawStream(app, { "x-api-key": key })];
    await sleep(50);
    app.app.closeStreams();
    await eventually(() => open.every((s) => s.state.ended), 2_000);
    for (const s of open) {
      expect(s.state.ended).toBe(true);
      expect(s.state.text).toContain("event: complete");
    }
    expect(await metric(app, "live_streams_open")).toBe(0);
  });
});

describe("what an open stream holds", () => {
  it("keeps no request of its own once set up: twenty streams of one key hold one copy of its credential headers", async () => {
    const app = await appWith({});
    const key = await keyWith(["comment:read"]);
    // The class of the requests Yoga hands to the GraphQL context; queryObjects collects garbage
    // first, then counts those still reachable.
    const requests = () =>
      queryObjects(app.app.yoga.fetchAPI.Request, { format: "count" }) + queryObjects(Request, { format: "count" });
    const before = requests();
    const open: Awaited<ReturnType<typeof subscribe>>[] = [];
    for (let i = 0; i < 20; i++) open.push(await subscribe(app, { "x-api-key": key }));
    await sleep(50);
    expect(requests() - before).toBeLessThanOrEqual(2);
    // And they still deliver, each event executed with fresh loaders from the kept credential.
    const id = await comment(app, "held lightly");
    await eventually(() => open.every((s) => s.events.length > 0));
    for (const s of open) expect(s.events).toEqual([{ data: { commentAdded: { id, content: "held lightly" } } }]);
  });

  it("writes to a real socket, completes it at shutdown, and frees its place when the client leaves", async () => {
    const app = await appWith({ liveStreams: { heartbeatMs: 60_000 } });
    const key = await keyWith(["comment:read"]);
    const server = createServer((req, res) => app.app.yoga(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const open = () =>
        new Promise<{ text: () => string; ended: Promise<void>; headers: Record<string, unknown>; destroy(): void }>(
          (resolve, reject) => {
            const req = httpRequest(
              {
                host: "127.0.0.1",
                port,
                path: "/graphql",
                method: "POST",
                agent: false,
                headers: { "content-type": "application/json", accept: "text/event-stream", "x-api-key": key },
              },
              (res) => {
                let text = "";
                const ended = new Promise<void>((done) => res.on("end", done));
                res.on("data", (chunk) => {
                  text += chunk;
                });
                resolve({ text: () => text, ended, headers: res.headers, destroy: () => req.destroy() });
              },
            );
            req.on("error", reject);
            req.end(JSON.stringify({ query: commentAdded, variables: { id: org.taskIds[0] } }));
          },
        );
      const [completed, left] = [await open(), await open()];
      expect(completed.headers["content-type"]).toBe("text/event-stream");
      await eventually(() => completed.text().startsWith(":\n\n") && left.text().startsWith(":\n\n"));
      const id = await comment(app, "over a socket");
      await eventually(() => completed.text().includes(id) && left.text().includes(id));
      expect(completed.text()).toContain(`event: next\ndata: {"data":{"commentAdded":{"id":"${id}","content":"over a socket"}}}`);

      left.destroy();
      await eventually(() => false, 200);
      expect(await metric(app, "live_streams_open")).toBe(1);
      app.app.closeStreams();
      await completed.ended;
      expect(completed.text()).toMatch(/event: complete\ndata:\n\n$/);
      expect(await metric(app, "live_streams_open")).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
