import pino from "pino";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { openFixture } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/test-app.js";

const { t, org } = await openFixture({ organizations: 1 });

type Refusal = { message: string; extensions: { code: string; limit?: { name: string; max: number } } };

/** Sends the document and checks it was refused before any resolver ran. */
async function refused(query: string): Promise<string[]> {
  return (await refusals(query)).map((e) => e.message);
}

/**
 * Authentication comes first (no body is read for an unknown caller): the credential is warmed
 * into its cache so that the refused request itself costs no query.
 */
async function refusals(query: string): Promise<Refusal[]> {
  let body: { data?: unknown; errors: Refusal[] } | undefined;
  await t.gql("{ __typename }", {}, { key: org.apiKey });
  const { count } = await t.countQueries(async () => {
    body = (await t.gql(query, {}, { key: org.apiKey })).body;
  });
  expect(body?.data ?? null, JSON.stringify(body).slice(0, 300)).toBeNull();
  for (const error of body?.errors ?? [])
    expect(error.extensions.code).toMatch(/^(BAD_USER_INPUT|GRAPHQL_VALIDATION_FAILED|GRAPHQL_PARSE_FAILED)$/);
  expect(count).toBe(0);
  return body?.errors ?? [];
}

/** A limit's refusal says which limit, by how much, and how to stay under it; it is no syntax error. */
async function expectExplained(query: string, name: string, max: number, code = "GRAPHQL_VALIDATION_FAILED") {
  const errors = await refusals(query);
  expect(errors).toHaveLength(1);
  const [error] = errors as [Refusal];
  expect(error.message).not.toMatch(/syntax/i);
  expect(error.message).toContain(`${max}`);
  expect(error.message).toMatch(/at most|limit/);
  expect(error.extensions).toEqual({ code, limit: { name, max } });
  return error.message;
}

describe("GraphQL operation limits", () => {
  it("refuses documents nested deeper than 10", async () => {
    let selection = "leaf";
    for (let i = 0; i < 11; i++) selection = `level${i} { ${selection} }`;
    const messages = await refused(`{ ${selection} }`);
    expect(messages.join(" ")).toMatch(/levels deep/i);
  });

  it("refuses more than 15 aliases", async () => {
    const aliases = Array.from({ length: 16 }, (_, i) => `t${i}: task(taskId: "${org.taskIds[0]}") { id }`).join(" ");
    const message = await expectExplained(`{ ${aliases} }`, "aliases", 15);
    expect(message).toMatch(/^The operation uses 16 aliases; at most 15 are allowed per operation/);
    expect(message).toMatch(/send several requests/);
    const fifteen = Array.from({ length: 15 }, (_, i) => `t${i}: task(taskId: "${org.taskIds[0]}") { id }`).join(" ");
    expect((await t.gql(`{ ${fifteen} }`, {}, { key: org.apiKey })).body.errors).toBeUndefined();
  });

  it("refuses documents of more than 2000 tokens", async () => {
    const message = await expectExplained(
      `{ ${Array.from({ length: 2100 }, () => "__typename").join(" ")} }`,
      "tokens",
      2000,
      "GRAPHQL_PARSE_FAILED",
    );
    expect(message).toMatch(/tokens/);
  });

  it("counts __typename aliases too: 200 of them are refused, 15 answer", async () => {
    const typenames = (n: number) => Array.from({ length: n }, (_, i) => `t${i}: __typename`).join(" ");
    expect(await expectExplained(`{ ${typenames(200)} }`, "aliases", 15)).toMatch(/^The operation uses 200 aliases/);
    expect(await expectExplained(`{ ${typenames(16)} }`, "aliases", 15)).toMatch(/^The operation uses 16 aliases/);
    const fifteen = await t.gql(`{ ${typenames(15)} }`, {}, { key: org.apiKey });
    expect(fifteen.body.errors).toBeUndefined();
    expect(Object.keys(fifteen.body.data)).toHaveLength(15);
  });

  it("refuses more than 20 directives", async () => {
    // On distinct fields (11 aliases, under their limit), so that no other rule objects.
    const fields = Array.from({ length: 11 }, (_, i) => `t${i}: __typename @include(if: true) @skip(if: false)`).join(" ");
    expect(await expectExplained(`{ ${fields} }`, "directives", 20)).toMatch(/uses 22 directives/);
  });

  it("explains the depth limit too", async () => {
    let selection = "id";
    for (let i = 0; i < 11; i++) selection = `level${i} { ${selection} }`;
    const depth = (await refusals(`{ ${selection} }`)).find((e) => e.extensions.limit?.name === "depth");
    expect(depth?.message).toMatch(/^The operation nests fields 1[12] levels deep; at most 10 levels are allowed/);
    expect(depth?.extensions.code).toBe("GRAPHQL_VALIDATION_FAILED");
    // The cost rule is the worst case through nested lists: QUERY_TOO_COMPLEX, tested below.
  });

  it("suggests field names in development, where introspection shows them anyway", async () => {
    const messages = await refused(`{ taks(taskId: "x") { id } }`);
    expect(messages.join(" ")).toMatch(/Did you mean "task"/);
  });

  it("refuses batched requests", async () => {
    const response = await t.app.fetch(
      new Request("http://test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": org.apiKey },
        body: JSON.stringify([{ query: "{ __typename }" }, { query: "{ __typename }" }]),
      }),
    );
    expect(response.status).toBe(400);
  });
});

describe("cross-site request forgery", () => {
  it("refuses a GET or a form POST carrying no custom header, as a browser would send cross-site", async () => {
    // Without a credential it is refused before anything else; with only a cookie, CSRF prevention refuses it.
    const get = await t.app.fetch(new Request(`http://test/graphql?query=${encodeURIComponent("{ __typename }")}`));
    expect(get.status).toBe(401);
    expect((await get.json()).errors[0].extensions.code).toBe("UNAUTHENTICATED");
    const { createSession } = await import("../../src/auth/sessions.js");
    const { token } = await createSession(t.db, org.userIds[0] as string, 60_000);
    const withCookie = await t.app.fetch(
      new Request(`http://test/graphql?query=${encodeURIComponent("{ __typename }")}`, {
        headers: { cookie: `session_token=${token}`, "x-organization-id": org.organizationId },
      }),
    );
    expect(withCookie.status).toBe(403);
    expect((await withCookie.json()).errors[0].extensions.code).toBe("FORBIDDEN");
    const form = await t.app.fetch(
      new Request("http://test/graphql", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: "session_token=cws_x" },
        body: "query=%7B__typename%7D",
      }),
    );
    // Refused before CSRF prevention even looks: GraphQL requests must be JSON.
    expect(form.status).toBe(415);
    expect((await form.json()).errors[0].extensions.code).toBe("UNSUPPORTED_MEDIA_TYPE");
  });

  it("lets API clients through", async () => {
    const get = await t.app.fetch(
      new Request(`http://test/graphql?query=${encodeURIComponent("{ __typename }")}`, { headers: { "x-api-key": org.apiKey } }),
    );
    expect(get.status).toBe(200);
  });
});

describe("production mode", () => {
  function productionApp(extra: { introspection?: boolean; graphiql?: boolean } = {}) {
    return createApp({
      database: t.database,
      config: { production: true, bodyLimitBytes: 1 << 20, ...extra },
      logger: pino({ level: "silent" }),
    });
  }
  const introspect = (app: ReturnType<typeof productionApp>) =>
    app
      .fetch(
        new Request("http://test/graphql", {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": org.apiKey },
          body: JSON.stringify({ query: "{ __schema { queryType { name } } }" }),
        }),
      )
      .then((r) => r.json());
  const graphiql = (app: ReturnType<typeof productionApp>) =>
    app
      .fetch(new Request("http://test/graphql", { headers: { accept: "text/html" } }))
      .then((r) => r.headers.get("content-type") ?? "");

  it("turns introspection and GraphiQL off", async () => {
    const app = productionApp();
    const result = await introspect(app);
    expect(result.data ?? null).toBeNull();
    expect(result.errors[0].extensions.code).toMatch(/BAD_USER_INPUT|GRAPHQL_VALIDATION_FAILED/);
    expect(await graphiql(app)).not.toContain("text/html");
  });

  it("does not suggest field names", async () => {
    const result = await productionApp()
      .fetch(
        new Request("http://test/graphql", {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": org.apiKey },
          body: JSON.stringify({ query: '{ taks(taskId: "x") { id } }' }),
        }),
      )
      .then((r) => r.json());
    expect(result.errors[0].message).toMatch(/Cannot query field "taks"/);
    expect(JSON.stringify(result)).not.toMatch(/did you mean|"task"/i);
  });

  it("turns them on when configured", async () => {
    const app = productionApp({ introspection: true, graphiql: true });
    expect((await introspect(app)).data.__schema.queryType.name).toBe("Query");
    expect(await graphiql(app)).toContain("text/html");
  });
});

describe("query cost", () => {
  const tooBig = "query($limit: Int) { tasks(limit: 100) { items { comments(limit: $limit) { items { id } } } } }";

  it("refuses a query whose worst case is over 10,000 objects with QUERY_TOO_COMPLEX before any resolver runs, answering as for a validation error", async () => {
    await t.gql("{ __typename }", {}, { key: org.apiKey }); // the API key's lookup is cached from here on
    let res: Awaited<ReturnType<TestApp["gql"]>> | undefined;
    const { count } = await t.countQueries(async () => {
      // 1 page + 100 tasks + 100 × (1 page + 100 comments) = 10,201
      res = await t.gql(tooBig, { limit: 100 }, { key: org.apiKey });
    });
    // application/json (the default of t.gql): 200 with errors, as the GraphQL-over-HTTP specification says.
    expect(res?.status).toBe(200);
    expect(res?.body.data ?? null).toBeNull();
    expect(res?.body.errors[0].extensions.code).toBe("QUERY_TOO_COMPLEX");
    expect(res?.body.errors[0].extensions.http).toBeUndefined();
    expect(count).toBe(0);
  });

  it("counts a limit given as a variable, 20 when absent, and an unbounded list as its maximum", async () => {
    // 1 + 100 + 100 × (1 + 97) = 9,901
    expect((await t.gql(tooBig, { limit: 97 }, { key: org.apiKey })).status).toBe(200);
    expect((await t.gql(tooBig, {}, { key: org.apiKey })).status).toBe(200);
    // 100 tasks × 20 comments × 10 attachments each = 20,000 attachments at worst.
    const attachments = "{ tasks(limit: 100) { items { comments { items { attachments { id } } } } } }";
    const res = await t.gql(attachments, {}, { key: org.apiKey, headers: { accept: "application/graphql-response+json" } });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe("QUERY_TOO_COMPLEX");
    // The same through a fragment and an alias.
    const fragment =
      "query { a: tasks(limit: 100) { ...T } } fragment T on TaskConnection { items { comments { items { attachments { id } } } } }";
    expect((await t.gql(fragment, {}, { key: org.apiKey })).body.errors[0].extensions.code).toBe("QUERY_TOO_COMPLEX");
  });

  it("judges the same document by each request's page size: accepted, refused, accepted again (no verdict kept from variables)", async () => {
    const codes: string[] = [];
    for (const limit of [97, 100, 97, 100]) {
      const res = await t.gql(tooBig, { limit }, { key: org.apiKey });
      codes.push(res.body.errors?.[0]?.extensions.code ?? "answered");
    }
    expect(codes).toEqual(["answered", "QUERY_TOO_COMPLEX", "answered", "QUERY_TOO_COMPLEX"]);
  });

  it("refuses a document over the limit by itself every time it is sent, and the same text with another operation name by that operation", async () => {
    const document =
      "query Big { tasks(limit: 100) { items { comments(limit: 100) { items { id } } } } } query Small { tasks(limit: 1) { items { id } } }";
    const run = async (operationName: string) => {
      const response = await t.app.fetch(
        new Request("http://test/graphql", {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": org.apiKey },
          body: JSON.stringify({ query: document, operationName }),
        }),
      );
      return (await response.json()) as { errors?: { extensions: { code: string } }[] };
    };
    for (let i = 0; i < 2; i++) {
      expect((await run("Big")).errors?.[0]?.extensions.code).toBe("QUERY_TOO_COMPLEX");
      expect((await run("Small")).errors).toBeUndefined();
    }
  });
});
