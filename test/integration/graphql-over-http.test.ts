import { serverAudits } from "graphql-http";
import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org } = await openFixture({ organizations: 1 });

/** The app in process, every request carrying the organization's key, as a client of the service would send it. */
const fetchWithKey = (input: RequestInfo | URL, init?: RequestInit) => {
  const request = new Request(input, init);
  request.headers.set("x-api-key", org.apiKey);
  return t.app.fetch(request);
};

describe("GraphQL over HTTP conformance (graphql-http's server audits)", () => {
  const audits = serverAudits({ url: "http://test/graphql", fetchFn: fetchWithKey });

  it("runs the whole audit list", () => {
    expect(audits.length).toBeGreaterThanOrEqual(61);
  });

  for (const audit of audits) {
    it(audit.name, async () => {
      const result = await audit.fn();
      // Warnings (SHOULD, MAY) count as failures: the service follows the recommendations too.
      expect(result.status, "reason" in result ? result.reason : undefined).toBe("ok");
    });
  }
});

describe("refusals before execution", () => {
  const deep = (() => {
    let selection = "id";
    for (let i = 0; i < 11; i++) selection = `level${i} { ${selection} }`;
    return `{ ${selection} }`;
  })();
  const refusals: Record<string, [query: string, code: string]> = {
    syntax: ["{ tasks { ", "GRAPHQL_PARSE_FAILED"],
    validation: ["{ noSuchField }", "GRAPHQL_VALIDATION_FAILED"],
    tokens: [`{ ${"__typename ".repeat(2001)}}`, "GRAPHQL_PARSE_FAILED"],
    depth: [deep, "GRAPHQL_VALIDATION_FAILED"],
    aliases: [
      `{ ${Array.from({ length: 16 }, (_, i) => `a${i}: viewer { credential }`).join(" ")} }`,
      "GRAPHQL_VALIDATION_FAILED",
    ],
    directives: [`{ __typename ${"@skip(if: false) ".repeat(21)}}`, "GRAPHQL_VALIDATION_FAILED"],
    cost: ["{ tasks(limit: 100) { items { comments(limit: 100) { items { id } } } } }", "QUERY_TOO_COMPLEX"],
  };

  async function send(query: string, accept?: string) {
    const headers: Record<string, string> = { "content-type": "application/json", "x-api-key": org.apiKey };
    if (accept) headers.accept = accept;
    const response = await t.app.fetch(
      new Request("http://test/graphql", { method: "POST", headers, body: JSON.stringify({ query }) }),
    );
    return { status: response.status, type: response.headers.get("content-type"), body: await response.json() };
  }

  for (const [kind, [query, code]] of Object.entries(refusals)) {
    it(`answers a ${kind} refusal 400 to application/graphql-response+json and 200 to application/json, with ${code}`, async () => {
      const strict = await send(query, "application/graphql-response+json");
      expect(strict.status).toBe(400);
      expect(strict.type).toMatch(/^application\/graphql-response\+json/);
      expect(strict.body.data).toBeUndefined();
      expect(strict.body.errors[0].extensions.code).toBe(code);

      for (const accept of ["application/json", undefined, "*/*"]) {
        const legacy = await send(query, accept);
        expect(legacy.status, `Accept: ${accept}`).toBe(200);
        expect(legacy.type).toMatch(/^application\/json/);
        expect(legacy.body.data).toBeUndefined();
        expect(legacy.body.errors[0].extensions.code).toBe(code);
      }
    });
  }
});

describe("document limits count fields, never fragments", () => {
  /** The same fields written inline and with fragments: the same refusal, or the same data. */
  async function alike(inline: string, withFragments: string) {
    const a = await t.gql(inline, {}, { key: org.apiKey });
    const b = await t.gql(withFragments, {}, { key: org.apiKey });
    const codeOf = (r: typeof a) => r.body.errors?.map((e: { extensions: { code: string } }) => e.extensions.code) ?? [];
    expect(codeOf(b)).toEqual(codeOf(a));
    expect(b.body.data ?? null).toEqual(a.body.data ?? null);
    return a;
  }

  // vendors > items > comments > items > entity > comments > items > author > member > (leaf): 10 levels of fields.
  const levels = (leaf: string) =>
    `{ vendors(limit: 5) { items { comments(limit: 5) { items { entity { ... on Vendor { comments(limit: 5) { items { author { member { ${leaf} } } } } } } } } } } }`;
  const withFragments = (leaf: string) => `{ vendors(limit: 5) { ...VendorPageFields } }
      fragment VendorPageFields on VendorConnection { items { ...VendorFields } }
      fragment VendorFields on Vendor { comments(limit: 5) { ...CommentPageFields } }
      fragment CommentPageFields on CommentConnection { items { ...CommentFields } }
      fragment CommentFields on Comment { entity { ... on Vendor { ...VendorCommentsFields } } }
      fragment VendorCommentsFields on Vendor { comments(limit: 5) { items { ...AuthorFields } } }
      fragment AuthorFields on Comment { author { member { ${leaf} } } }`;

  it("accepts a list ten levels deep written with fragments, as inlined", async () => {
    const answer = await alike(levels("id"), withFragments("id"));
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data.vendors.items.length).toBeGreaterThan(0);
  });

  it("refuses a list eleven levels deep alike, inlined or with fragments", async () => {
    const answer = await alike(levels("user { id }"), withFragments("user { id }"));
    expect(answer.body.errors[0].extensions).toMatchObject({ code: "GRAPHQL_VALIDATION_FAILED", limit: { name: "depth" } });
    expect(answer.body.errors[0].message).toMatch(/11 levels deep/);
  });

  it("counts the aliases of a fragment at every spread, as if inlined", async () => {
    const aliases = (n: number) => Array.from({ length: n }, (_, i) => `a${i}: id`).join(" ");
    // 4 aliases spread 4 times: 16 inlined, refused either way; spread 3 times: 12, accepted either way.
    for (const [spreads, refused] of [
      [4, true],
      [3, false],
    ] as const) {
      // Roots without aliases (the same field repeated merges), so that only the fragment's aliases count.
      const inlined = `{ ${Array.from({ length: spreads }, () => `vendors(limit: 1) { items { ${aliases(4)} } }`).join(" ")} }`;
      const withFragments = `{ ${Array.from({ length: spreads }, () => "vendors(limit: 1) { items { ...A } }").join(" ")} } fragment A on Vendor { ${aliases(4)} }`;
      const answer = await alike(inlined, withFragments);
      expect(answer.body.errors?.[0]?.extensions.limit?.name).toBe(refused ? "aliases" : undefined);
    }
  });

  it("estimates the cost of a fragment where it is spread, as if inlined", async () => {
    const inline = "{ tasks(limit: 100) { items { comments(limit: 100) { items { id } } } } }";
    const fragments =
      "{ tasks(limit: 100) { ...T } } fragment T on TaskConnection { items { comments(limit: 100) { ...C } } } fragment C on CommentConnection { items { id } }";
    const answer = await alike(inline, fragments);
    expect(answer.body.errors[0].extensions.code).toBe("QUERY_TOO_COMPLEX");
    const small = "{ tasks(limit: 5) { items { comments(limit: 5) { items { id } } } } }";
    const smallFragments =
      "{ tasks(limit: 5) { ...T } } fragment T on TaskConnection { items { comments(limit: 5) { ...C } } } fragment C on CommentConnection { items { id } }";
    expect((await alike(small, smallFragments)).body.errors).toBeUndefined();
  });
});
