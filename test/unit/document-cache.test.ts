import { envelop, type Plugin, useEngine, useSchema } from "@envelop/core";
import { buildSchema, NoSchemaIntrospectionCustomRule, parse, specifiedRules, validate } from "graphql";
import { describe, expect, it } from "vitest";
import { documentCaches, useValidationCache } from "../../src/graphql/document-cache.js";
import { costOf, estimateCost } from "../../src/graphql/query-cost.js";
import { graphqlParams } from "../../src/http/body-admission.js";
import { schema } from "../../src/schema.js";

// Yoga's own POST JSON parser, which graphqlParams stands in for (the package does not export it).
const yogaParser = "../../node_modules/graphql-yoga/esm/plugins/request-parser/post-json.js";
const { parsePOSTJsonRequest } = (await import(yogaParser)) as { parsePOSTJsonRequest: (request: Request) => Promise<unknown> };

describe("the cost rule's kept verdicts", () => {
  const pageOfComments = parse("query($limit: Int) { tasks(limit: 100) { items { comments(limit: $limit) { items { id } } } } }");

  it("estimates again whenever a variable sets a page size: under, over, under the limit in turn", () => {
    // 1 page + 100 tasks + 100 × (1 page + limit comments)
    expect(costOf(schema, pageOfComments, { limit: 97 })).toBe(9_901);
    expect(costOf(schema, pageOfComments, { limit: 100 })).toBe(10_201);
    expect(costOf(schema, pageOfComments, { limit: 97 })).toBe(9_901);
    expect(costOf(schema, pageOfComments, {})).toBe(1 + 100 + 100 * (1 + 20));
  });

  it("estimates again whenever variables give the ids", () => {
    const byIds = parse("query($ids: [ID!]!) { nodes(ids: $ids) { id } }");
    const one = costOf(schema, byIds, { ids: ["a"] });
    expect(one).toBeGreaterThan(0);
    expect(costOf(schema, byIds, { ids: ["a", "b", "c"] })).toBe(one * 3);
  });

  it("keeps a verdict per schema: the same document costs what each schema says", () => {
    const lists = buildSchema("type Query { items: [Item] } type Item { id: ID, parts: [Item] }");
    const single = buildSchema("type Query { items: Item } type Item { id: ID, parts: Item }");
    const document = parse("{ items { parts { id } } }");
    const listed = costOf(lists, document, {});
    expect(listed).toBe(estimateCost(lists, document, {}));
    expect(listed).toBeGreaterThan(2);
    expect(costOf(single, document, {})).toBe(2);
    expect(costOf(lists, document, {})).toBe(listed);
  });

  it("keeps a verdict per operation of the document", () => {
    const document = parse(
      'query Small { task(taskId: "t") { id } } query Big { tasks(limit: 100) { items { comments(limit: 100) { items { id } } } } }',
    );
    expect(costOf(schema, document, {}, "Big")).toBe(10_201);
    expect(costOf(schema, document, {}, "Small")).toBe(1);
    expect(costOf(schema, document, {}, "Big")).toBe(10_201);
    // A name the document does not define costs nothing (the executor refuses it) and is not kept.
    expect(costOf(schema, document, {}, "Other")).toBe(0);
  });
});

describe("the document cache's bounds", () => {
  it("keeps at most its number of entries, the least recently used going first", () => {
    const { documentCache } = documentCaches({ entries: 3, bytes: 1_000_000 });
    for (const text of ["{ a }", "{ b }", "{ c }"]) documentCache.set(text, parse(text));
    documentCache.get("{ a }");
    documentCache.set("{ d }", parse("{ d }"));
    expect([...documentCache.keys()].sort()).toEqual(["{ a }", "{ c }", "{ d }"]);
  });

  it("keeps at most its bytes of document text, and no text larger than that", () => {
    const { documentCache, errorCache } = documentCaches({ entries: 1_000, bytes: 100 });
    const text = (i: number) => `{ field${i}: __typename }`.padEnd(40, " ");
    for (let i = 0; i < 10; i++) documentCache.set(text(i), parse(text(i)));
    expect(documentCache.calculatedSize).toBeLessThanOrEqual(100);
    expect(documentCache.size).toBe(2);
    const large = `{ ${"__typename ".repeat(20)}}`;
    documentCache.set(large, parse(large));
    expect(documentCache.has(large)).toBe(false);
    // Refusals have a tenth of the room.
    errorCache.set("{", new Error("refused"));
    expect(errorCache.max).toBe(100);
    expect(errorCache.maxSize).toBe(10);
  });
});

describe("validation's kept verdicts", () => {
  const first = buildSchema("type Query { task: Task } type Task { id: ID }");
  const second = buildSchema("type Query { task: Task } type Task { id: ID, title: String }");
  /** Yoga's engine, a plugin that adds a rule to some requests only (as disabling introspection does), then the cache. */
  const validator = (schema: typeof first) => {
    const getEnveloped = envelop({
      plugins: [
        useEngine({ parse, validate, specifiedRules }),
        useSchema(schema),
        {
          onValidate({ addValidationRule, context }) {
            if ((context as { strict?: boolean }).strict) addValidationRule(NoSchemaIntrospectionCustomRule);
          },
        } satisfies Plugin,
        useValidationCache(),
      ],
    });
    return (document: ReturnType<typeof parse>, strict: boolean) => {
      const { validate: run, schema: own } = getEnveloped({ strict });
      return (run(own, document) as readonly Error[]).map((error) => error.message);
    };
  };

  it("keeps a verdict per set of rules: a rule added to one request only is not skipped, nor kept for the others", () => {
    const check = validator(first);
    const introspection = parse("{ __schema { queryType { name } } }");
    expect(check(introspection, false)).toEqual([]);
    expect(check(introspection, true).join(" ")).toMatch(/introspection/);
    expect(check(introspection, false)).toEqual([]);
    expect(check(introspection, true).join(" ")).toMatch(/introspection/);
  });

  it("keeps a verdict per schema: one document, valid for one schema and not for the other", () => {
    const document = parse("{ task { id title } }");
    const shared = useValidationCache();
    const run = (schema: typeof first) =>
      envelop({ plugins: [useEngine({ parse, validate, specifiedRules }), useSchema(schema), shared] })({}).validate(
        schema,
        document,
      );
    expect(run(second)).toEqual([]);
    expect(run(first)).toHaveLength(1);
    expect(run(second)).toEqual([]);
  });
});

describe("a POST body's parameters", () => {
  const yoga = async (text: string) => {
    try {
      return { params: await parsePOSTJsonRequest(new Request("http://x/graphql", { method: "POST", body: text })) };
    } catch (error) {
      return { error: { message: (error as Error).message, extensions: (error as { extensions: unknown }).extensions } };
    }
  };
  const ours = (text: string) => {
    try {
      return { params: graphqlParams(text) };
    } catch (error) {
      return { error: { message: (error as Error).message, extensions: (error as { extensions: unknown }).extensions } };
    }
  };

  it("are what Yoga's own parser gives, refusals included", async () => {
    for (const text of ['{"query":"{ __typename }","variables":{"a":[1]}}', "[]", "null", "42", '"text"', "true", "{", ""]) {
      const expected = await yoga(text);
      const got = ours(text);
      if ("params" in expected) expect(got, text).toEqual(expected);
      else {
        expect(got.error?.message, text).toBe(expected.error.message);
        const { originalError: theirs, ...rest } = expected.error.extensions as { originalError?: { name: string } };
        const { originalError: mine, ...ownRest } = (got.error?.extensions ?? {}) as { originalError?: { name: string } };
        expect(ownRest, text).toEqual(rest);
        expect(mine?.name, text).toBe(theirs?.name);
      }
    }
  });
});
