import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

let t: TestApp;
let org: SeedResult;
let token: string;

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
  ({ token } = await createSession(t.db, org.userIds[0] as string, 60_000));
});
afterAll(() => t.close());

const subscription = (taskId: string) => `subscription { commentAdded(entityId: "${taskId}", entityType: task) { id content } }`;

/** The request a browser's `new EventSource(url, { withCredentials: true })` sends: GET, a cookie, no other header of ours. */
function eventSource(params: Record<string, string>, fetchSite: string | null, signal?: AbortSignal, origin?: string) {
  const url = new URL("http://test/graphql");
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  const headers: Record<string, string> = { accept: "text/event-stream", cookie: `session_token=${token}` };
  if (fetchSite) headers["sec-fetch-site"] = fetchSite;
  if (origin) headers.origin = origin;
  return t.app.fetch(new Request(url, { headers, signal }));
}

describe("EventSource from a page of the same origin, with the session cookie", () => {
  it("streams commentAdded, the organization given in the URL", async () => {
    const taskId = org.taskIds[0] as string;
    const controller = new AbortController();
    const response = await eventSource(
      { query: subscription(taskId), organizationId: org.organizationId },
      "same-origin",
      controller.signal,
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    let text = "";
    const received = (async () => {
      const decoder = new TextDecoder();
      while (!text.includes("event: next")) {
        const chunk = await reader.read();
        if (chunk.done) return;
        text += decoder.decode(chunk.value, { stream: true });
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const created = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: "Seen in the browser", entityId: taskId, entityType: "task", userId: org.userIds[0] },
    });
    expect(created.status).toBe(201);
    await Promise.race([received, new Promise((resolve) => setTimeout(resolve, 5000))]);
    controller.abort();
    await reader.cancel().catch(() => {});
    expect(text).toContain("event: next");
    expect(text).toContain("Seen in the browser");
  });

  it("still refuses the same request from another site, or from a client that does not say where it comes from", async () => {
    const params = { query: subscription(org.taskIds[0] as string), organizationId: org.organizationId };
    for (const site of ["cross-site", "same-site", "none", null]) {
      const response = await eventSource(params, site);
      // The credential is checked first: the URL's organization counts for same-origin streams
      // only, so another site's request lacks its organization (400) before CSRF prevention (403)
      // would refuse it. Either way no stream opens.
      const body = await response.text();
      expect(response.headers.get("content-type"), String(site)).not.toContain("text/event-stream");
      if (response.status === 400) expect(body, String(site)).toContain("X-Organization-Id");
      else {
        expect(response.status, String(site)).toBe(403);
        expect(body, String(site)).toContain("CSRF");
      }
    }
  });

  it("refuses another site's EventSource with 403: a browser sends its Origin, which CORS_ORIGINS does not list", async () => {
    const params = { query: subscription(org.taskIds[0] as string), organizationId: org.organizationId };
    const response = await eventSource(params, "cross-site", undefined, "http://evil.example");
    expect(response.status).toBe(403);
    const body = await response.json();
    expect(body.errors[0]).toMatchObject({ extensions: { code: "FORBIDDEN" }, message: expect.stringContaining("CORS_ORIGINS") });
  });

  it("runs no mutation over such a GET", async () => {
    const response = await eventSource(
      { query: 'mutation { createTask(title: "x") { id } }', organizationId: org.organizationId },
      "same-origin",
    );
    expect(response.status).toBe(405);
  });

  it("takes the organization from the URL for such a stream only: elsewhere X-Organization-Id is required", async () => {
    const response = await t.app.fetch(
      new Request(`http://test/graphql?organizationId=${org.organizationId}`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie: `session_token=${token}` },
        body: JSON.stringify({ query: `{ task(taskId: "${org.taskIds[0]}") { id } }` }),
      }),
    );
    const body = await response.json();
    expect(body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect(body.errors[0].message).toMatch(/X-Organization-Id/);
  });
});
