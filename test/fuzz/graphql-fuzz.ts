/**
 * Property-based fuzzing of every root Query and Mutation field over GraphQL: an operation per
 * field, selecting every scalar of its result (two levels deep), with fuzzed variables derived
 * from the schema's argument types: plausible values (real ids of a seeded organization), odd,
 * huge and boundary values of the right type, wrong types, missing and extra variables, wrongly
 * declared variable types, non-object variables, under every kind of credential (mostly an API
 * key with every scope). One more property sends what goes wrong before the variables matter:
 * GET requests with junk parameters, odd content types, malformed bodies, batches, documents
 * with thousands of aliases, directives or tokens, deep nesting and long literals.
 *
 * Properties: the HTTP status is never 5xx; every answer is JSON (but GraphiQL's page); a non-2xx
 * answer carries errors; every error has `extensions.code` matching /^[A-Z_]+$/ and none is
 * INTERNAL_SERVER_ERROR; no answer carries an id or e-mail address of another organization that
 * no request named.
 *
 * The fields are fuzzed by two files, so that each alone stays short: graphql-queries.fuzz.test.ts
 * (every Query field, the transport cases and the coverage check) and graphql-mutations.fuzz.test.ts
 * (every Mutation field), each with an app and a fuzz world of its own.
 *
 * Replay a failure: FUZZ_SEED=<seed printed at the start> npx vitest run test/fuzz/graphql-queries.fuzz.test.ts -t '<test name>'
 * (or graphql-mutations.fuzz.test.ts)
 * (fast-check's report adds the path of the shrunk counterexample: FUZZ_PATH=<path>). FUZZ_RUNS=<n> scales;
 * FUZZ_SKIP=<regex> looks past a known bug (see arbitraries.ts).
 */
import fc from "fast-check";
import {
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
} from "graphql";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { schema } from "../../src/schema.js";
import { createTestApp } from "../helpers/test-app.js";
import {
  announceSeed,
  type Credential,
  createFuzzWorld,
  credentialArb,
  errorCodePattern,
  fuzzParameters,
  headerValueArb,
  leakedMarkers,
  type Mode,
  malformedJsonArb,
  objectArb,
  oddContentTypeArb,
  oddStringArb,
  RequestTally,
  type Shape,
  type ShapeContext,
  selectionOf,
  skipped,
  snippet,
  validCredentialArb,
  wrongValueArb,
} from "./arbitraries.js";

type Root = "query" | "mutation";
type GqlCase = {
  mode: Mode;
  credential: Credential;
  /** X-Organization-Id, when sent. */
  organization?: string;
  /** Idempotency-Key, when sent (mutations accept one; a repeated key with another body is 422). */
  idempotencyKey?: string;
  method: "POST" | "GET";
  /** The JSON body (POST) or the query string parameters (GET). */
  request?: { query: unknown; variables?: unknown; operationName?: unknown };
  /** A body sent as it is, instead of `request`. */
  rawBody?: string;
  /** GET parameters sent as they are, instead of `request`. */
  params?: Record<string, string>;
  contentType?: string;
};

/**
 * Runs per property in `npm test`: a quick pass over every property (about 15 s for the file on the
 * quiet 2-core machine; the 2 s budget per property bounds a loaded one). Quiet, every property
 * reaches its 100 runs (250 took 30 to 40 s). The budget was 1 s: in a whole `npm test`, three
 * workers on two cores, the slowest mutation (submitPolicyVersion, about 12 ms a run there) was cut
 * to 85 runs; 2 s cuts a property only below 50 runs a second. Each run of the suite takes a new
 * seed, so coverage accumulates from run to run; `FUZZ_RUNS=2000` (no time budget) is the soak.
 */
const RUNS_PER_FIELD = 100;
const TIME_PER_FIELD_MS = 2_000;

/**
 * The fuzzing of one root's fields, with an app, a fuzz world and a tally of its own: call it at the
 * top of a test file (its hooks and tests belong to that file).
 */
export async function fuzzGraphQL(part: Root): Promise<void> {
  const t = await createTestApp();
  const world = await createFuzzWorld(t);
  announceSeed("GraphQL");
  const tally = new RequestTally();
  const outcomes = new Map<string, number>();
  // Fuzzed updates may demote or deactivate the owner; each property starts with the organization usable.
  beforeEach(() => world.restore());
  afterAll(async () => {
    const summary = [...outcomes].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}×${n}`);
    console.info(`[fuzz] GraphQL: ${tally.summary()}; outcomes ${summary.join(" ")}`);
    await t.close();
  });

  const fields: { root: Root; field: GraphQLField<unknown, unknown> }[] = [
    ...Object.values(schema.getQueryType()?.getFields() ?? {}).map((field) => ({ root: "query" as const, field })),
    ...Object.values(schema.getMutationType()?.getFields() ?? {}).map((field) => ({ root: "mutation" as const, field })),
  ];

  // ---------------------------------------------------------------------------------------------
  // From the schema

  /** The argument's GraphQL type as the JSON-schema-like shape the shared arbitraries read. */
  function shapeOf(type: GraphQLInputType): Shape {
    const nullable = !isNonNullType(type);
    const inner = isNonNullType(type) ? type.ofType : type;
    const orNull = (shape: Shape): Shape => (nullable ? { anyOf: [shape, { type: "null" }] } : shape);
    if (isListType(inner)) return orNull({ type: "array", items: shapeOf(inner.ofType) });
    if (isEnumType(inner)) return orNull({ enum: inner.getValues().map((v) => v.name) });
    if (isInputObjectType(inner)) {
      const fieldsOf = Object.values(inner.getFields());
      return orNull({
        type: "object",
        properties: Object.fromEntries(fieldsOf.map((f) => [f.name, shapeOf(f.type)])),
        required: fieldsOf.filter((f) => isNonNullType(f.type) && f.defaultValue === undefined).map((f) => f.name),
      });
    }
    if (isScalarType(inner)) {
      const byScalar: Record<string, Shape> = {
        ID: { type: "string" },
        String: { type: "string" },
        Int: { type: "integer" },
        Float: { type: "number" },
        Boolean: { type: "boolean" },
        DateTime: { type: "string", format: "date-time" },
      };
      // JSON (and any other custom scalar): any value, null included.
      return byScalar[inner.name] ? orNull(byScalar[inner.name] as Shape) : {};
    }
    return {};
  }

  const declaredTypeArb = (arg: GraphQLArgument, mode: Mode): fc.Arbitrary<string> => {
    const exact = String(arg.type);
    if (mode !== "wild") return fc.constant(exact);
    return fc.oneof(
      { weight: 12, arbitrary: fc.constant(exact) },
      { weight: 1, arbitrary: fc.constant(exact.replace(/!$/, "")) },
      {
        weight: 1,
        arbitrary: fc.constantFrom("String", "Int", "ID!", "[String]", "JSON", "Boolean!", "NoSuchType", "[ID!]!", "Float"),
      },
    );
  };

  function operationText(root: Root, field: GraphQLField<unknown, unknown>, declared: string[]): string {
    const defs = field.args.map((a, i) => `$${a.name}: ${declared[i]}`);
    const call = field.args.length ? `(${field.args.map((a) => `${a.name}: $${a.name}`).join(", ")})` : "";
    return `${root} Fuzz${defs.length ? `(${defs.join(", ")})` : ""} { ${field.name}${call} ${selectionOf(field.type)} }`;
  }

  function caseArbIn(root: Root, field: GraphQLField<unknown, unknown>, mode: Mode): fc.Arbitrary<GqlCase> {
    const ctx: ShapeContext = { world, operation: field.name, resolve: () => ({}), mode };
    const variablesShape: Shape = {
      type: "object",
      properties: Object.fromEntries(field.args.map((a) => [a.name, shapeOf(a.type)])),
      required: field.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined).map((a) => a.name),
    };
    const wild = mode === "wild";
    const request = fc
      .record({
        declared: fc.tuple(...field.args.map((a) => declaredTypeArb(a, mode))),
        variables: wild
          ? fc.oneof({ weight: 12, arbitrary: objectArb(variablesShape, ctx) }, { weight: 1, arbitrary: wrongValueArb })
          : objectArb(variablesShape, ctx),
        operationName: wild
          ? fc.option(fc.oneof(fc.constant("Fuzz"), fc.constant("Other"), wrongValueArb), { freq: 8, nil: undefined })
          : fc.constant(undefined),
      })
      .map(({ declared, variables, operationName }) => ({
        query: operationText(root, field, declared),
        variables,
        ...(operationName !== undefined ? { operationName } : {}),
      }));
    const organization = wild
      ? fc.oneof(
          { weight: 6, arbitrary: fc.constant<string | undefined>(world.organizationId) },
          { weight: 2, arbitrary: fc.constant<string | undefined>(undefined) },
          { weight: 1, arbitrary: headerValueArb },
          { weight: 1, arbitrary: fc.constant<string | undefined>(world.otherOrganizationId) },
        )
      : fc.constant<string | undefined>(world.organizationId);
    const fresh = fc.noBias(fc.uuid()).map((uuid) => `${field.name}-${uuid}`);
    const base = fc.record({
      credential: wild ? credentialArb : validCredentialArb,
      organization,
      // A fresh key now and then; in `wild` mode also a key that repeats (with another body: 422).
      // Every property runs from one seed, so keys are tagged with the field to stay apart between properties.
      idempotencyKey: fc.option(
        wild ? fc.oneof({ weight: 4, arbitrary: fresh }, { weight: 1, arbitrary: fc.constant("fuzz-repeated-key") }) : fresh,
        { freq: wild ? 4 : 8, nil: undefined },
      ),
    });
    return fc.tuple(base, request).map(([b, r]) => ({ mode, ...b, method: "POST" as const, request: r }));
  }

  /** A third plausible, a third odd values of the right types, the rest anything. */
  function caseArb(root: Root, field: GraphQLField<unknown, unknown>): fc.Arbitrary<GqlCase> {
    return fc.oneof(
      { weight: 3, arbitrary: caseArbIn(root, field, "plausible") },
      { weight: 3, arbitrary: caseArbIn(root, field, "typed") },
      { weight: 4, arbitrary: caseArbIn(root, field, "wild") },
    );
  }

  /** Documents that strain the parser and the limits: many aliases, directives or tokens, deep nesting, cycles, long literals. */
  const documentBombArb: fc.Arbitrary<string> = fc.oneof(
    fc
      .integer({ min: 1, max: 5_000 })
      .map((n) => `query { ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(" ")} }`),
    fc.integer({ min: 1, max: 2_000 }).map((n) => `query { __typename ${"@include(if: true) ".repeat(n)}}`),
    fc.integer({ min: 1, max: 20_000 }).map((n) => `query { ${"__typename ".repeat(n)}}`),
    fc.integer({ min: 1, max: 5_000 }).map((n) => `query { ${"tasks { items { ".repeat(n)}id${" } }".repeat(n)} }`),
    fc.integer({ min: 1, max: 10_000 }).map((n) => `${"{".repeat(n)}${"}".repeat(n)}`),
    fc.integer({ min: 1, max: 100_000 }).map((n) => `query { task(taskId: "${"a".repeat(n)}") { id } }`),
    fc.constantFrom(
      "fragment A on Query { ...B } fragment B on Query { ...A } query { ...A }",
      "query A { __typename } query B { __typename }",
      "query { __schema { types { name fields { name args { name } } } } }",
      'subscription { commentAdded(entityId: "x", entityType: task) { id } }',
      "query { __typename } mutation { __typename }",
      'query ($a: Int = "x") { __typename }',
      "{ tasks(limit: 101) { items { id } } }",
      "",
      "#",
      "query {",
    ),
    oddStringArb,
  );

  const junkJsonTextArb = fc.oneof(
    fc.constantFrom("x", "{", "Infinity", "NaN", "[1]", "null", "", "1", '"x"', "{}"),
    oddStringArb,
    malformedJsonArb,
  );

  /** Requests that go wrong before any variable matters, by kind. */
  function transportCaseArb(kind: "get" | "body" | "document"): fc.Arbitrary<GqlCase> {
    const plausible = fc.constantFrom(...fields).chain(({ root, field }) => caseArbIn(root, field, "plausible"));
    const base = fc.record({ credential: credentialArb, organization: fc.constant<string | undefined>(world.organizationId) });
    const mode = "wild" as const;
    if (kind === "get") {
      // GET: queries run, mutations are 405; variables and extensions may be JSON or junk text.
      return fc
        .tuple(
          plausible,
          fc.option(junkJsonTextArb, { freq: 2, nil: undefined }),
          fc.option(junkJsonTextArb, { freq: 4, nil: undefined }),
        )
        .map(([c, variables, extensions]) => {
          const params: Record<string, string> = { query: String(c.request?.query) };
          params.variables = variables ?? JSON.stringify(c.request?.variables ?? {});
          if (extensions !== undefined) params.extensions = extensions;
          return { ...c, mode, method: "GET" as const, request: undefined, params };
        });
    }
    if (kind === "document") {
      return fc.tuple(base, documentBombArb).map(([b, query]) => ({ ...b, mode, method: "POST" as const, request: { query } }));
    }
    return fc.oneof(
      fc.tuple(plausible, oddContentTypeArb).map(([c, contentType]) => ({ ...c, mode, contentType })),
      fc.tuple(base, malformedJsonArb).map(([b, rawBody]) => ({ ...b, mode, method: "POST" as const, rawBody })),
      fc
        .tuple(base, fc.array(plausible, { minLength: 0, maxLength: 30 }))
        .map(([b, batch]) => ({ ...b, mode, method: "POST" as const, rawBody: JSON.stringify(batch.map((c) => c.request)) })),
      fc
        .tuple(
          base,
          fc.oneof(
            wrongValueArb,
            fc.dictionary(fc.constantFrom("query", "variables", "operationName", "extensions"), wrongValueArb),
          ),
        )
        .map(([b, body]) => ({ ...b, mode, method: "POST" as const, rawBody: JSON.stringify(body) ?? "null" })),
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Sending and checking

  async function send(c: GqlCase): Promise<{ status: number; contentType: string; text: string; requestText: string }> {
    tally.count(expect.getState().currentTestName);
    const headers: Record<string, string> = { ...world.credentialHeaders(c.credential) };
    if (c.organization !== undefined) headers["x-organization-id"] = c.organization.replace(/[^\x20-\x7e]/g, "");
    if (c.idempotencyKey !== undefined) headers["idempotency-key"] = c.idempotencyKey;
    let url = "http://test/graphql";
    let body: string | undefined;
    if (c.method === "GET") {
      const search = new URLSearchParams(c.params);
      for (const [k, v] of Object.entries(c.request ?? {})) {
        if (v !== undefined) search.set(k, typeof v === "string" ? v : (JSON.stringify(v) ?? ""));
      }
      url += `?${search}`;
      headers.accept = "application/json";
    } else {
      body = c.rawBody ?? JSON.stringify(c.request);
      headers["content-type"] = c.contentType ?? "application/json";
    }
    const response = await t.app.fetch(new Request(url, { method: c.method, headers, body }));
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? "",
      text: await response.text(),
      requestText: `${url}\n${body ?? ""}`,
    };
  }

  function problemsOf(res: { status: number; contentType: string; text: string; requestText: string }): string[] {
    const problems: string[] = [];
    if (res.status >= 500) problems.push(`status ${res.status}`);
    let body: { errors?: unknown; data?: unknown } | undefined;
    try {
      body = JSON.parse(res.text);
    } catch {
      problems.push(`the answer is not JSON (content-type ${JSON.stringify(res.contentType)})`);
    }
    const errors =
      body && Array.isArray(body.errors) ? (body.errors as { message?: unknown; extensions?: { code?: unknown } }[]) : [];
    if (body && (res.status < 200 || res.status >= 300) && errors.length === 0) problems.push("a non-2xx answer without errors");
    for (const error of errors) {
      const code = error?.extensions?.code;
      if (typeof code !== "string" || !errorCodePattern.test(code)) {
        problems.push(`an error without a proper extensions.code: ${snippet(JSON.stringify(error), 300)}`);
      } else if (code === "INTERNAL_SERVER_ERROR") {
        problems.push(`INTERNAL_SERVER_ERROR: ${snippet(JSON.stringify(error), 300)}`);
      }
      const key = `${res.status}:${code}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    if (body && errors.length === 0) outcomes.set(`${res.status}:data`, (outcomes.get(`${res.status}:data`) ?? 0) + 1);
    const leaks = leakedMarkers(world, res.text, res.requestText);
    if (leaks.length) problems.push(`the answer names another organization's ${leaks.join(", ")}`);
    return problems;
  }

  async function check(c: GqlCase) {
    const res = await send(c);
    const problems = problemsOf(res);
    if (problems.length) {
      throw new Error(
        `${c.method} /graphql (${c.mode}, credential ${c.credential}) → ${res.status}: ${problems.join("; ")}\n` +
          `response: ${snippet(res.text)}`,
      );
    }
  }

  describe("GraphQL fuzzing from the schema", () => {
    if (part === "query")
      it("covers every root Query and Mutation field", () => {
        expect(fields.length).toBe(
          Object.keys(schema.getQueryType()?.getFields() ?? {}).length +
            Object.keys(schema.getMutationType()?.getFields() ?? {}).length,
        );
        expect(fields.length).toBeGreaterThan(0);
      });

    it.each(
      fields
        .filter(({ root }) => root === part)
        .map(({ root, field }) => [`${root === "query" ? "Query" : "Mutation"}.${field.name}`, root, field] as const),
    )(
      "%s: never a 5xx, every error coded, never INTERNAL_SERVER_ERROR, nothing of another organization",
      async (_name, root, field) => {
        await fc.assert(
          fc.asyncProperty(caseArb(root, field), async (c) => {
            fc.pre(!skipped(c));
            await check(c);
          }),
          fuzzParameters(RUNS_PER_FIELD, TIME_PER_FIELD_MS),
        );
      },
    );

    if (part === "query")
      it.each([
        ["GET with JSON or junk variables and extensions", "get"],
        ["POST with odd content types, malformed bodies, batches, non-object bodies", "body"],
        ["documents with thousands of aliases, directives or tokens, deep nesting, cycles, long literals", "document"],
      ] as const)("%s: never a 5xx, every refusal a coded error", async (_name, kind) => {
        await fc.assert(
          fc.asyncProperty(transportCaseArb(kind), async (c) => {
            fc.pre(!skipped(c));
            await check(c);
          }),
          fuzzParameters(150, 1_500),
        );
      });
  });
}
