/**
 * Property-based fuzzing of every /v1 operation, derived from the served OpenAPI document: path,
 * query and header parameters and the JSON body, plausible values (real ids of a seeded
 * organization, so handlers go deep) mixed with wrong types, missing and extra fields, nulls,
 * huge and odd Unicode strings, deep nesting, malformed JSON and odd content types, under every
 * kind of credential (mostly an API key with every scope).
 *
 * Properties: no answer is a 5xx; every non-2xx answer (but 304) under /v1 is JSON in exactly our
 * envelope; 2xx answers are JSON (but the download route's bytes); no answer carries an id or
 * e-mail address of another organization that the request did not name.
 *
 * The operations are fuzzed by two files, so that each alone stays short: rest-reads.fuzz.test.ts
 * (every GET, the document's check and any method on any path) and rest-writes.fuzz.test.ts (every
 * other method), each with an app and a fuzz world of its own.
 *
 * Replay a failure: FUZZ_SEED=<seed printed at the start> npx vitest run test/fuzz/rest-reads.fuzz.test.ts -t '<test name>'
 * (or rest-writes.fuzz.test.ts)
 * (fast-check's report adds the path of the shrunk counterexample: FUZZ_PATH=<path>). FUZZ_RUNS=<n> scales;
 * FUZZ_SKIP=<regex> looks past a known bug (see arbitraries.ts).
 */
import fc from "fast-check";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { ownRestRoutes, REST_BASE, restRoutes } from "../../src/rest/routes.js";
import { createTestApp } from "../helpers/test-app.js";
import {
  announceSeed,
  type Credential,
  createFuzzWorld,
  credentialArb,
  envelopeProblems,
  fuzzParameters,
  fuzzValue,
  headerValueArb,
  idArb,
  leakedMarkers,
  type Mode,
  malformedJsonArb,
  objectArb,
  oddContentTypeArb,
  oddStringArb,
  RequestTally,
  type Shape,
  type ShapeContext,
  skipped,
  snippet,
  swapScalarTypes,
  validCredentialArb,
  wrongValueArb,
} from "./arbitraries.js";

type Parameter = { name: string; in: "path" | "query" | "header" | "cookie"; required?: boolean; schema?: Shape };
type Operation = {
  method: string;
  /** OpenAPI path below /v1, e.g. /tasks/{taskId} */
  path: string;
  operationId?: string;
  parameters: Parameter[];
  body?: { required: boolean; schema: Shape };
  /** The 2xx answer is not JSON (the attachment download). */
  binary: boolean;
};

type RestCase = {
  mode: Mode;
  credential: Credential;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
};

/**
 * Runs per property in `npm test`: a quick pass over every property (about 15 s for the file on the
 * quiet 2-core machine; the 1 s budget per property bounds a loaded one). Quiet, every property
 * reaches its 100 runs (250 took 30 to 40 s). Each run of the suite takes a new seed, so coverage
 * accumulates from run to run; `FUZZ_RUNS=2000` (no time budget) is the soak.
 */
const RUNS_PER_OPERATION = 100;
const TIME_PER_OPERATION_MS = 1_000;

/**
 * The fuzzing of the reads (GET) or the writes (every other method), with an app, a fuzz world and a
 * tally of its own: call it at the top of a test file (its hooks and tests belong to that file).
 */
export async function fuzzRest(part: "reads" | "writes"): Promise<void> {
  const t = await createTestApp();
  const world = await createFuzzWorld(t);
  // biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is walked as plain JSON
  const document: any = await (await t.app.fetch(new Request(`http://test${REST_BASE}/openapi.json`))).json();
  const resolve = (ref: string): Shape => {
    // biome-ignore lint/suspicious/noExplicitAny: JSON pointer walk
    let node: any = document;
    for (const part of ref.replace(/^#\//, "").split("/")) node = node?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    if (!node) throw new Error(`unresolved $ref ${ref}`);
    return node as Shape;
  };
  const deref = <T>(node: T | { $ref: string }): T =>
    node && typeof node === "object" && "$ref" in node ? (resolve(node.$ref) as T) : (node as T);

  const operations: Operation[] = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    // biome-ignore lint/suspicious/noExplicitAny: path item of the OpenAPI document
    Object.entries(item as Record<string, any>)
      .filter(([method]) => ["get", "post", "put", "patch", "delete"].includes(method))
      .map(([method, op]) => {
        const shared = ((item as Record<string, unknown>).parameters as unknown[]) ?? [];
        const parameters = [...shared, ...(op.parameters ?? [])].map((p) => deref<Parameter>(p as Parameter));
        const content = op.requestBody
          ? deref<{ required?: boolean; content?: Record<string, { schema?: Shape }> }>(op.requestBody)
          : undefined;
        const jsonBody = content?.content?.["application/json"]?.schema;
        const success = Object.entries(op.responses ?? {}).find(([status]) => /^2/.test(status))?.[1];
        const successContent = success
          ? Object.keys(deref<{ content?: object }>(success as { content?: object }).content ?? {})
          : [];
        return {
          method: method.toUpperCase(),
          path,
          operationId: op.operationId,
          parameters,
          body: jsonBody ? { required: content?.required ?? false, schema: jsonBody } : undefined,
          binary: successContent.length > 0 && !successContent.includes("application/json"),
        } satisfies Operation;
      }),
  );

  announceSeed("REST");
  const tally = new RequestTally();
  /** Answers by status, to see that the fuzzing reaches the handlers (2xx, 404) and not only the guard (400, 401). */
  const statuses = new Map<number, number>();
  // Fuzzed updates may demote or deactivate the owner; each property starts with the organization usable.
  beforeEach(() => world.restore());
  afterAll(async () => {
    const byStatus = [...statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`);
    console.info(`[fuzz] REST: ${tally.summary()}; answers ${byStatus.join(" ")}`);
    await t.close();
  });

  const safeEncode = (value: string) =>
    encodeURIComponent(value.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd"));
  const asText = (value: unknown) => (typeof value === "string" ? value : (JSON.stringify(value) ?? "undefined"));

  /** Path segments as a client might send them, already percent-encoded (or not quite). */
  const rawSegmentArb = fc.constantFrom(
    "%",
    "%zz",
    "%00",
    "%ED%A0%80",
    "%C0%AF",
    "%E0%A4%A",
    "%FF%FE",
    "%2F",
    "..%2F..%2Fopenapi.json",
    "%2e%2e",
    "a%20b",
    "%F0%9F%98%80",
    "~",
    ";x=1",
    "*",
    "null",
    "%20",
    "+",
  );

  function pathParamArb(op: Operation, p: Parameter, ctx: ShapeContext): fc.Arbitrary<string> {
    const value = fuzzValue(p.schema ?? { type: "string" }, p.name, ctx).map((v) => safeEncode(asText(v)));
    if (ctx.mode === "plausible") return value;
    return fc.oneof(
      { weight: 6, arbitrary: value },
      { weight: 2, arbitrary: idArb(world, p.name, op.path).map(safeEncode) },
      { weight: 1, arbitrary: rawSegmentArb },
    );
  }

  const ABSENT = "\u0000absent";

  function queryArb(op: Operation, ctx: ShapeContext): fc.Arbitrary<string> {
    const wild = ctx.mode === "wild";
    const params = op.parameters.filter((p) => p.in === "query");
    const each = params.map((p) => {
      const one = fuzzValue(p.schema ?? { type: "string" }, p.name, ctx).map(asText);
      const values = wild
        ? fc.oneof(
            { weight: 12, arbitrary: one.map((v) => [v]) },
            { weight: 1, arbitrary: fc.array(one, { minLength: 2, maxLength: 3 }) },
          )
        : one.map((v) => [v]);
      if (p.required && !wild) return values;
      return fc.option(values, { freq: p.required ? 15 : 2, nil: null });
    });
    const extras = wild
      ? fc.option(
          fc.array(
            fc.tuple(
              fc.oneof(fc.constantFrom("organizationId", "id", "__proto__", "limit[]", ""), fc.string({ maxLength: 8 })),
              oddStringArb,
            ),
            { minLength: 1, maxLength: 2 },
          ),
          { freq: 10, nil: [] as [string, string][] },
        )
      : fc.constant([] as [string, string][]);
    const rawSuffix = wild
      ? fc.option(
          fc.constantFrom(
            "&",
            "&&",
            "&=",
            "&%zz=%zz",
            "&limit",
            "&cursor=%E0%A4",
            "&entityId=%00",
            "&%00=1",
            "&a[b]=1",
            "&__proto__[x]=1",
            "#frag",
          ),
          { freq: 12, nil: "" },
        )
      : fc.constant("");
    return fc.tuple(fc.tuple(...each), extras, rawSuffix).map(([values, extra, suffix]) => {
      const search = new URLSearchParams();
      params.forEach((p, i) => {
        for (const v of values[i] ?? []) search.append(p.name, v);
      });
      for (const [k, v] of extra) search.append(k, v);
      const text = search.toString() + suffix;
      return text ? `?${text}` : "";
    });
  }

  function headerParamsArb(op: Operation, mode: Mode): fc.Arbitrary<Record<string, string>> {
    const params = op.parameters.filter((p) => p.in === "header");
    return fc
      .tuple(
        ...params.map((p) => {
          const valid = p.name.toLowerCase() === "x-organization-id" ? world.organizationId : undefined;
          // Other header parameters (Idempotency-Key, If-None-Match): a fresh value, or in `wild` mode one that may repeat.
          // Every property runs from one seed, so values are tagged with the operation to stay apart between properties.
          const fresh = fc.noBias(fc.uuid()).map((uuid) => `${op.method}${op.path}-${uuid}`.replace(/[^\x21-\x7e]/g, ""));
          if (mode !== "wild") return valid ? fc.constant(valid) : fc.oneof(fc.constant(ABSENT), fresh);
          return fc.oneof(
            ...(valid
              ? [{ weight: 6, arbitrary: fc.constant(valid) }]
              : [
                  { weight: 3, arbitrary: fresh },
                  { weight: 1, arbitrary: fc.constant("fuzz-repeated-key") },
                ]),
            { weight: 3, arbitrary: fc.constant(ABSENT) },
            { weight: 1, arbitrary: headerValueArb },
            { weight: 1, arbitrary: fc.constant(world.otherOrganizationId) },
          );
        }),
      )
      .map((values) => {
        const headers: Record<string, string> = {};
        params.forEach((p, i) => {
          const value = values[i] as string;
          if (value !== ABSENT) headers[p.name] = value.replace(/[^\x20-\x7e]/g, "");
        });
        return headers;
      });
  }

  function bodyArb(op: Operation, ctx: ShapeContext): fc.Arbitrary<string | undefined> {
    if (op.method === "GET" || op.method === "HEAD") return fc.constant(undefined);
    const json = (v: unknown) => JSON.stringify(v) ?? "null";
    if (!op.body) {
      if (ctx.mode !== "wild") return fc.constant(undefined);
      return fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constant("{}") },
        { weight: 1, arbitrary: wrongValueArb.map(json) },
        { weight: 1, arbitrary: malformedJsonArb },
      );
    }
    const object = objectArb(op.body.schema.$ref ? resolve(op.body.schema.$ref) : op.body.schema, ctx);
    if (ctx.mode !== "wild") return object.map(json);
    return fc.oneof(
      { weight: 10, arbitrary: object.map(json) },
      { weight: 1, arbitrary: object.map((o) => json(swapScalarTypes(o))) },
      { weight: 1, arbitrary: fc.array(object, { maxLength: 3 }).map(json) },
      { weight: 1, arbitrary: wrongValueArb.map(json) },
      { weight: 1, arbitrary: malformedJsonArb },
      { weight: 1, arbitrary: fc.constantFrom(undefined, "", "{}", "null") },
    );
  }

  function caseArbIn(op: Operation, mode: Mode): fc.Arbitrary<RestCase> {
    const ctx: ShapeContext = { world, operation: op.path, resolve, mode };
    const wild = mode === "wild";
    const pathParams = op.parameters.filter((p) => p.in === "path");
    return fc
      .record({
        credential: wild ? credentialArb : validCredentialArb,
        segments: fc.tuple(...pathParams.map((p) => pathParamArb(op, p, ctx))),
        query: queryArb(op, ctx),
        headerParams: headerParamsArb(op, mode),
        body: bodyArb(op, ctx),
        contentType: wild
          ? fc.oneof(
              { weight: 10, arbitrary: fc.constant("application/json") },
              { weight: 2, arbitrary: oddContentTypeArb },
              { weight: 1, arbitrary: fc.constant(ABSENT) },
            )
          : fc.constant("application/json"),
        accept: wild
          ? fc.option(fc.constantFrom("application/json", "*/*", "text/html", "application/xml", "text/event-stream"), {
              freq: 4,
              nil: ABSENT,
            })
          : fc.constant(ABSENT),
        requestId: wild
          ? fc.option(fc.oneof(headerValueArb, fc.constant("x".repeat(2000))), { freq: 6, nil: ABSENT })
          : fc.constant(ABSENT),
      })
      .map(({ credential, segments, query, headerParams, body, contentType, accept, requestId }) => {
        let i = 0;
        const path = `${REST_BASE}${op.path.replace(/\{[^}]+\}/g, () => segments[i++] as string)}${query}`;
        const headers: Record<string, string> = { ...headerParams };
        if (body !== undefined && contentType !== ABSENT) headers["content-type"] = contentType;
        if (accept !== ABSENT) headers.accept = accept;
        if (requestId !== ABSENT) headers["x-request-id"] = requestId;
        return { mode, credential, method: op.method, path, headers, ...(body !== undefined ? { body } : {}) };
      });
  }

  /** Requests for one operation: a third plausible, a third with odd values of the right types, the rest anything. */
  function caseArb(op: Operation): fc.Arbitrary<RestCase> {
    return fc.oneof(
      { weight: 3, arbitrary: caseArbIn(op, "plausible") },
      { weight: 3, arbitrary: caseArbIn(op, "typed") },
      { weight: 4, arbitrary: caseArbIn(op, "wild") },
    );
  }

  async function send(c: RestCase): Promise<{ status: number; contentType: string; text: string }> {
    tally.count(expect.getState().currentTestName);
    const headers = { ...c.headers, ...world.credentialHeaders(c.credential) };
    const response = await t.app.fetch(new Request(`http://test${c.path}`, { method: c.method, headers, body: c.body }));
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    return { status: response.status, contentType: response.headers.get("content-type") ?? "", text: await response.text() };
  }

  /**
   * Every problem with one answer; an empty list when it keeps the contract. `binary`: a 2xx answer
   * need not be JSON (the download route, and pages such as the API docs outside the operations).
   */
  function problemsOf(c: RestCase, res: { status: number; contentType: string; text: string }, binary: boolean): string[] {
    const problems: string[] = [];
    if (res.status >= 500) problems.push(`status ${res.status}`);
    const underV1 = /^\/v1(\/|$)/.test(new URL(`http://test${c.path}`).pathname);
    if (c.method !== "HEAD" && underV1) {
      if (res.status >= 200 && res.status < 300) {
        if (!binary && res.status !== 204) {
          try {
            JSON.parse(res.text);
          } catch {
            problems.push("a 2xx answer that is not JSON");
          }
        }
      } else if (res.status !== 304) {
        if (!/^application\/json\b/i.test(res.contentType))
          problems.push(`content-type ${JSON.stringify(res.contentType)} is not JSON`);
        let body: unknown;
        try {
          body = JSON.parse(res.text);
          problems.push(...envelopeProblems(body, res.status));
        } catch {
          problems.push("the error body is not JSON");
        }
      }
    }
    const leaks = leakedMarkers(world, res.text, `${c.path}\n${c.body ?? ""}`);
    if (leaks.length) problems.push(`the answer names another organization's ${leaks.join(", ")}`);
    return problems;
  }

  async function check(c: RestCase, binary: boolean) {
    const res = await send(c);
    const problems = problemsOf(c, res, binary);
    if (problems.length) {
      throw new Error(
        `${c.method} ${snippet(c.path, 300)} (${c.mode}, credential ${c.credential}) → ${res.status}: ${problems.join("; ")}\n` +
          `response: ${snippet(res.text)}`,
      );
    }
  }

  describe("REST fuzzing from the served OpenAPI document", () => {
    if (part === "reads")
      it("the document lists exactly the routes of the route table", () => {
        const documented = operations.map((o) => `${o.method} ${o.path.replace(/\{(\w+)\}/g, ":$1")}`).sort();
        const routed = [...Object.values(restRoutes), ...Object.values(ownRestRoutes)].map((r) => `${r.method} ${r.path}`).sort();
        expect(documented).toEqual(routed);
        expect(operations.length).toBeGreaterThan(0);
      });

    it.each(
      operations
        .filter((op) => (op.method === "GET") === (part === "reads"))
        .map((op) => [`${op.method} ${op.path}`, op] as const),
    )("%s: never a 5xx, errors in our envelope, nothing of another organization", async (_name, op) => {
      await fc.assert(
        fc.asyncProperty(caseArb(op), async (c) => {
          fc.pre(!skipped(c));
          await check(c, op.binary);
        }),
        fuzzParameters(RUNS_PER_OPERATION, TIME_PER_OPERATION_MS),
      );
    });

    if (part === "reads")
      it("any method on any path under /v1: 404/405 and the like in our envelope, never a 5xx", async () => {
        const templates = operations.map((o) => o.path);
        const filled = fc
          .tuple(
            fc.constantFrom(...templates),
            fc.array(fc.oneof(idArb(world, "id", "any"), rawSegmentArb, oddStringArb.map(safeEncode)), {
              minLength: 3,
              maxLength: 3,
            }),
          )
          .map(([template, values]) => {
            let i = 0;
            return `${REST_BASE}${template.replace(/\{[^}]+\}/g, () => values[i++ % values.length] as string)}`;
          });
        const random = fc
          .array(
            fc.oneof(
              fc.constantFrom(
                "tasks",
                "people",
                "policies",
                "versions",
                "v1",
                "openapi.json",
                "docs",
                "webhook",
                "graphql",
                "",
                "..",
                "%2e%2e",
              ),
              fc.string({ unit: "grapheme-ascii", maxLength: 10 }).map(safeEncode),
            ),
            { maxLength: 4 },
          )
          .map((segments) => `${REST_BASE}/${segments.join("/")}`);
        const odd = fc.constantFrom(
          "/v1",
          "/v1/",
          "/v1x",
          "/v1-internal/tasks",
          "/v1//tasks",
          "/v1/tasks/",
          "/v1/webhook",
          "/v1/webhook/Query.tasks",
          "/v1/%",
          "/v1/openapi.json/x",
          "/v1/tasks/x/y/z",
          "/v1/people/x/unlink-device/x",
        );
        const methods = fc.constantFrom(
          "GET",
          "POST",
          "PUT",
          "PATCH",
          "DELETE",
          "OPTIONS",
          "HEAD",
          "PROPFIND",
          "patch",
          "get",
          "FOO",
        );
        const arb = fc.record({
          credential: credentialArb,
          method: methods,
          path: fc.oneof(filled, random, odd),
          body: fc.option(malformedJsonArb, { freq: 3, nil: undefined }),
        });
        await fc.assert(
          fc.asyncProperty(arb, async ({ credential, method, path, body }) => {
            fc.pre(!skipped({ method, path, body }));
            const withBody = !["GET", "HEAD", "get"].includes(method) && body !== undefined;
            await check(
              {
                mode: "wild",
                credential,
                method,
                path,
                headers: withBody ? { "content-type": "application/json" } : {},
                ...(withBody ? { body } : {}),
              },
              true,
            );
          }),
          fuzzParameters(200, 2_000),
        );
      });
  });
}
