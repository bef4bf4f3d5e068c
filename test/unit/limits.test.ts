import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import {
  type GraphQLArgument,
  type GraphQLInputField,
  getNamedType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
} from "graphql";
import { describe, expect, it } from "vitest";
import { declaredLimits, describeLimit, type Limit, limitKeywords, limitOf, text } from "../../src/platform/limits.js";
import { buildOpenApiDocument } from "../../src/rest/openapi.js";
import { compileRoutes } from "../../src/rest/request-validation.js";
import { restSchemaOf } from "../../src/rest/rest-schema.js";
import { restRoutes } from "../../src/rest/routes.js";
import { schema } from "../../src/schema.js";

type Schema = Record<string, unknown> & { properties?: Record<string, Schema>; $ref?: string; anyOf?: Schema[]; items?: Schema };
type Operation = {
  parameters: ({ name: string; in: string; schema: Schema } | { $ref: string })[];
  requestBody?: { content: Record<string, { schema: Schema }> };
};

// REST and its OpenAPI document are generated from the schema without its graph-only fields.
const restSchema = restSchemaOf(schema);
const routes = compileRoutes(restSchema, restRoutes);
const doc = buildOpenApiDocument(restSchema, routes) as unknown as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

/** Every argument and input field of the schema that carries a limit, by coordinate. */
function limitedInputs(): Map<string, { input: GraphQLArgument | GraphQLInputField; limit: Limit }> {
  const found = new Map<string, { input: GraphQLArgument | GraphQLInputField; limit: Limit }>();
  const add = (coordinate: string, input: GraphQLArgument | GraphQLInputField) => {
    const limit = limitOf(input.extensions);
    if (limit) found.set(coordinate, { input, limit });
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith("__")) continue;
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        for (const arg of field.args) add(`${type.name}.${field.name}(${arg.name}:)`, arg);
      }
    }
    if (isInputObjectType(type)) for (const field of Object.values(type.getFields())) add(`${type.name}.${field.name}`, field);
  }
  return found;
}

/** The schema with $ref and nullable anyOf resolved. */
function resolve(schema: Schema | undefined): Schema | undefined {
  if (!schema) return undefined;
  if (schema.$ref) return resolve(doc.components.schemas[schema.$ref.split("/").pop() as string]);
  if (schema.anyOf) return resolve(schema.anyOf.find((s) => s.type !== "null"));
  return schema;
}

describe("limits: declared once, read by validation, OpenAPI and GraphQL", () => {
  it("puts every declared limit on at least one GraphQL argument or input field", () => {
    const used = new Set([...limitedInputs().values()].map((v) => v.limit));
    expect(declaredLimits().length).toBeGreaterThan(5);
    const unused = declaredLimits().filter((l) => !used.has(l));
    expect(unused.map((l) => describeLimit(l))).toEqual([]);
  });

  it("says every limit in the GraphQL description of its argument or input field", () => {
    for (const [coordinate, { input, limit }] of limitedInputs()) {
      expect(input.description, coordinate).toContain(describeLimit(limit));
    }
  });

  it("gives every limit of every REST operation's input to the OpenAPI schema, as JSON Schema keywords", () => {
    let checked = 0;
    const expectKeywords = (where: string, schema: Schema | undefined, limit: Limit) => {
      expect(schema, where).toMatchObject(limitKeywords(limit));
      checked++;
    };
    /** The limits inside an input object type, wherever an argument of that type appears. */
    const expectNested = (where: string, schema: Schema | undefined, arg: GraphQLArgument | GraphQLInputField) => {
      const named = getNamedType(arg.type);
      if (!isInputObjectType(named)) return;
      const resolved = resolve(schema);
      const isArray = resolved?.type === "array" || (Array.isArray(resolved?.type) && resolved.type.includes("array"));
      const object = resolve(isArray ? resolved?.items : resolved);
      for (const field of Object.values(named.getFields())) {
        const limit = limitOf(field.extensions);
        const property = object?.properties?.[field.name];
        if (limit) expectKeywords(`${where}.${field.name}`, property, limit);
        expectNested(`${where}.${field.name}`, property, field);
      }
    };
    for (const route of routes) {
      const operation = doc.paths[route.path.replace(/:(\w+)/g, "{$1}")]?.[route.method.toLowerCase()] as Operation;
      // A GET takes a list's filter as one query parameter per filter field (see request-validation.ts).
      const inputs =
        route.method === "GET" || route.method === "DELETE"
          ? [...route.args.filter((a) => route.pathParams.includes(a.name)), ...route.queryParams]
          : route.args;
      for (const arg of inputs) {
        const parameter = operation.parameters.find((p) => "name" in p && p.name === arg.name) as { schema: Schema } | undefined;
        const schema = parameter?.schema ?? operation.requestBody?.content["application/json"]?.schema.properties?.[arg.name];
        const where = `${route.method} ${route.path} ${arg.name}`;
        expect(schema, where).toBeDefined();
        const limit = limitOf(arg.extensions);
        if (limit) expectKeywords(where, schema, limit);
        expectNested(where, schema, arg as Parameters<typeof expectNested>[2]);
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it("makes the JSON Schema keywords and the service's validation agree on the same values", () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const samples = (l: Limit): string[] => {
      const out = ["", " ", "a", "  a", "é", "😀😀", "soc2.pdf", "../etc/passwd", 'a"b', "a\u0000b", "..", " x.pdf"];
      out.push("application/pdf", "text/plain", "not a type", "https://app.example.com/x", "ftp://example.com", "x@example.com");
      for (const n of [l.minLength, l.maxLength]) {
        if (n === undefined || n > 20_000) continue;
        for (const m of [n - 1, n, n + 1]) if (m >= 0) out.push("a".repeat(m), "😀".repeat(m));
      }
      return out;
    };
    for (const l of declaredLimits()) {
      if (l.minimum !== undefined || l.maximum !== undefined || l.maxItems !== undefined) continue;
      const validate = ajv.compile({ type: "string", ...limitKeywords(l) });
      for (const sample of samples(l)) {
        // Formats are for generators and forms; the service checks them itself.
        if (l.format) continue;
        // A pattern of whole base64 quads would overflow a regex engine's stack on a 13 MB value,
        // so the schema checks the alphabet only and leaves the length's multiple of 4 to the service.
        if (l.base64 && sample.length % 4 !== 0) continue;
        expect(validate(sample), `${describeLimit(l)}: ${JSON.stringify(sample).slice(0, 40)}`).toBe(
          text(l).safeParse(sample).success,
        );
      }
    }
  });

  it("leaves no limit outside the declarations: services validate with text(), integer() and list()", () => {
    const root = fileURLToPath(new URL("../../src", import.meta.url));
    const files = [
      join(root, "graphql", "pagination.ts"),
      ...readdirSync(join(root, "modules"), { recursive: true, encoding: "utf8" })
        .filter((f) => f.endsWith(".ts"))
        .map((f) => join(root, "modules", f)),
    ];
    const adHoc = /(?<!Math)\.(min|max|length|gt|gte|lt|lte|regex|startsWith|endsWith)\(|codePointLength\(|nameText\(|freeText\(/;
    const offenders = files.flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .map((line, i) => ({ line, at: `${file.slice(root.length + 1)}:${i + 1}` }))
        .filter(({ line }) => adHoc.test(line) && !line.trim().startsWith("//") && !line.trim().startsWith("*"))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    expect(offenders).toEqual([]);
  });
});
