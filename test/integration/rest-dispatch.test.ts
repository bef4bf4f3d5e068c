import { beforeAll, describe, expect, it } from "vitest";
import { compileRoutes } from "../../src/rest/request-validation.js";
import { createRestDispatch } from "../../src/rest/rest-dispatch.js";
import { withoutOmitted } from "../../src/rest/rest-plugin.js";
import { restSchemaOf } from "../../src/rest/rest-schema.js";
import { restRoutes } from "../../src/rest/routes.js";
import { schema } from "../../src/schema.js";
import { openFixture } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/test-app.js";

/**
 * The REST reads by id and the writes are answered by rest-dispatch.ts, past Sofa's second
 * routing (issues 46 and 47): the same request to an app that leaves every route to Sofa
 * (`restDispatch: false`) must answer the same status, headers and body. Writes that create
 * something differ only in what is generated (ids, times, a version's number), which is masked.
 */
const { t, org, appWith } = await openFixture();
let sofa: TestApp;
beforeAll(async () => {
  sofa = await appWith({ restDispatch: false });
});

const restSchema = restSchemaOf(schema);
const routes = compileRoutes(restSchema, restRoutes);
const dispatch = createRestDispatch(restSchema, routes, (document, omit) => withoutOmitted(restSchema, document, new Set(omit)));
const dispatched = (method: string, path: string) =>
  routes.some((route) => route.method === method && route.pattern.test(path) && dispatch.handles(route));

const GENERATED = new Set(["id", "versionId", "createdAt", "updatedAt", "version", "secret"]);
const masked = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(masked)
    : value && typeof value === "object"
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, GENERATED.has(k) ? typeof v : masked(v)]))
      : value;
// Each request's own id, and times: the rate limit window's reset counts seconds from each app's first request.
const UNEQUAL_HEADERS = new Set(["x-request-id", "date", "ratelimit-reset"]);
const headersOf = (headers: Headers) => Object.fromEntries([...headers].filter(([name]) => !UNEQUAL_HEADERS.has(name)));

type Case = { name: string; method: string; path: () => string; body?: () => unknown; mask?: boolean; raw?: string };
const key = () => org.apiKey;

async function both({ method, path, body, mask, raw }: Case) {
  const url = path();
  const options = { key: key(), ...(raw !== undefined ? { rawBody: raw, headers: { "content-type": "application/json" } } : {}) };
  const a = await t.rest(method, url, { ...options, ...(body ? { body: body() } : {}) });
  const b = await sofa.rest(method, url, { ...options, ...(body ? { body: body() } : {}) });
  const view = (r: typeof a) => ({
    status: r.status,
    headers: headersOf(r.headers),
    body: mask ? masked(r.body) : r.text,
  });
  return { dispatched: view(a), sofa: view(b) };
}

describe("REST answers past Sofa's second routing are Sofa's", () => {
  const cases: Case[] = [
    { name: "a task by id (ETag)", method: "GET", path: () => `/v1/tasks/${org.taskIds[0]}` },
    {
      name: "a task by a percent-encoded id",
      method: "GET",
      path: () => `/v1/tasks/${encodeURIComponent(org.taskIds[0] as string).replace("_", "%5F")}`,
    },
    { name: "a member by id", method: "GET", path: () => `/v1/people/${org.memberIds[0]}` },
    { name: "a policy by id", method: "GET", path: () => `/v1/policies/${org.policyIds[0]}` },
    { name: "a missing vendor (404)", method: "GET", path: () => "/v1/vendors/vnd_missing" },
    {
      name: "create a comment (strings, an explicit null)",
      method: "POST",
      path: () => "/v1/comments",
      body: () => ({
        content: "Same words",
        entityId: org.taskIds[0],
        entityType: "task",
        userId: org.userIds[0],
        contextUrl: null,
      }),
      mask: true,
    },
    {
      name: "create a comment on a missing record (404)",
      method: "POST",
      path: () => "/v1/comments",
      body: () => ({ content: "x", entityId: "tsk_missing", entityType: "task", userId: org.userIds[0] }),
    },
    {
      name: "create a comment without userId under an API key (the service's 400)",
      method: "POST",
      path: () => "/v1/comments",
      body: () => ({ content: "x", entityId: org.taskIds[0], entityType: "task" }),
    },
    {
      name: "update a task (an enum, a Date, null clears); the second answer changes nothing",
      method: "PATCH",
      path: () => `/v1/tasks/${org.taskIds[1]}`,
      body: () => ({ title: "Renamed alike", status: "in_progress", dueDate: "2027-03-01", assigneeId: null }),
    },
    {
      name: "create a task item (enums)",
      method: "POST",
      path: () => "/v1/task-management",
      body: () => ({ title: "Item", entityId: org.vendorIds[0], entityType: "vendor", priority: "high", status: "todo" }),
      mask: true,
    },
    {
      name: "create a policy version (an empty body)",
      method: "POST",
      path: () => `/v1/policies/${org.policyIds[0]}/versions`,
      raw: "{}",
      mask: true,
    },
    {
      name: "create a webhook endpoint (a list)",
      method: "POST",
      path: () => "/v1/webhook-endpoints",
      body: () => ({ url: "https://hooks.example.com/dispatch", eventTypes: ["comment.created", "policy.*"], description: null }),
      mask: true,
    },
  ];

  it("answers every case of the dispatch, not Sofa, in the app that dispatches", () => {
    for (const c of cases) expect(dispatched(c.method, c.path().replace(/^\/v1/, "")), c.name).toBe(true);
  });

  for (const c of cases) {
    it(c.name, async () => {
      const [before, sofaBefore] = [t.app.restDispatch.answered(), sofa.app.restDispatch.answered()];
      const { dispatched: a, sofa: b } = await both(c);
      // The dispatching app answered it past Sofa; the other left it to Sofa.
      expect([t.app.restDispatch.answered() - before, sofa.app.restDispatch.answered() - sofaBefore]).toEqual([1, 0]);
      expect(a.status, JSON.stringify(a.body)).toBeLessThan(500);
      expect(a).toEqual(b);
    });
  }

  it("deletes a task item: 204 without a body on both", async () => {
    const create = async (app: TestApp) =>
      (
        await app.rest("POST", "/v1/task-management", {
          key: key(),
          body: { title: "To delete", entityId: org.vendorIds[0], entityType: "vendor" },
        })
      ).body.id as string;
    const [mine, theirs] = [await create(t), await create(sofa)];
    expect(dispatched("DELETE", `/task-management/${mine}`)).toBe(true);
    const before = t.app.restDispatch.answered();
    const a = await t.rest("DELETE", `/v1/task-management/${mine}`, { key: key() });
    const b = await sofa.rest("DELETE", `/v1/task-management/${theirs}`, { key: key() });
    expect(a.status).toBe(204);
    expect(t.app.restDispatch.answered() - before).toBe(1);
    expect({ status: a.status, headers: headersOf(a.headers), text: a.text }).toEqual({
      status: b.status,
      headers: headersOf(b.headers),
      text: b.text,
    });
  });
});
