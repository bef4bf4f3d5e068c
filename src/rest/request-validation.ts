import {
  coerceInputValue,
  type GraphQLArgument,
  type GraphQLInputType,
  type GraphQLSchema,
  getNamedType,
  isListType,
  isNonNullType,
  isScalarType,
} from "graphql";
import { longListPath, MAX_LIST_ITEMS, malformedTextPath } from "../http/input-hygiene.js";
import { AppError, BadUserInputError, type ErrorDetail } from "../platform/errors.js";
import type { RestRoute } from "./routes.js";

export type CompiledRoute = RestRoute & {
  field: string;
  pattern: RegExp;
  pathParams: string[];
  args: readonly GraphQLArgument[];
};

export function compileRoutes(schema: GraphQLSchema, routes: Record<string, RestRoute>): CompiledRoute[] {
  return Object.entries(routes).map(([field, route]) => {
    const [typeName, fieldName] = field.split(".") as [string, string];
    const type = typeName === "Query" ? schema.getQueryType() : schema.getMutationType();
    const gqlField = type?.getFields()[fieldName];
    if (!gqlField) throw new Error(`REST route for unknown field ${field}`);
    const pathParams = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1] as string);
    for (const name of pathParams) {
      if (!gqlField.args.some((a) => a.name === name)) throw new Error(`${field} has no argument ${name} for its path`);
    }
    const pattern = new RegExp(`^${route.path.replace(/:(\w+)/g, "([^/]+)")}$`);
    return { ...route, field, pattern, pathParams, args: gqlField.args };
  });
}

export type RouteMatch = { route: CompiledRoute; params: Record<string, string> } | { allowed: string[] } | null;

/** The route for a method and a path below /v1; `allowed` when only the method is wrong. */
export function matchRoute(routes: CompiledRoute[], method: string, path: string): RouteMatch {
  const allowed: string[] = [];
  for (const route of routes) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    if (route.method !== method && !(method === "HEAD" && route.method === "GET")) {
      allowed.push(route.method);
      continue;
    }
    const params: Record<string, string> = {};
    route.pathParams.forEach((name, i) => {
      params[name] = m[i + 1] as string;
    });
    return { route, params };
  }
  return allowed.length ? { allowed } : null;
}

function fromQueryString(raw: string, type: GraphQLInputType): unknown {
  const named = getNamedType(type);
  if (isScalarType(named)) {
    if (named.name === "Int") return /^-?\d{1,10}$/.test(raw) ? Number(raw) : raw;
    if (named.name === "Float") return raw.trim() !== "" && Number.isFinite(Number(raw)) ? Number(raw) : raw;
    if (named.name === "Boolean") return raw === "true" ? true : raw === "false" ? false : raw;
  }
  return raw;
}

function coerce(name: string, value: unknown, type: GraphQLInputType, details: ErrorDetail[]): void {
  coerceInputValue(value, type, (path, _invalid, error) => {
    details.push({ path: [name, ...path].join("."), message: error.message });
  });
}

/**
 * Checks a REST request against the GraphQL arguments of its field before Sofa sees it: Sofa would
 * turn 123 into "123", anything but "true" into false and ignore unknown fields; we answer 400.
 * Returns the arguments the body sets to null, which Sofa would drop as if absent.
 */
export function validateRestRequest(
  route: CompiledRoute,
  params: Record<string, string>,
  url: URL,
  body: string,
  contentType: string | null,
): string[] {
  const details: ErrorDetail[] = [];
  const nulls: string[] = [];
  const args = new Map(route.args.map((a) => [a.name, a]));
  const provided = new Set<string>();

  for (const [name, raw] of Object.entries(params)) {
    let value: string;
    try {
      value = decodeURIComponent(raw);
    } catch {
      throw new BadUserInputError(`The path parameter ${name} is not valid percent-encoding`, [
        { path: name, message: "is not valid percent-encoding" },
      ]);
    }
    if (value === "") details.push({ path: name, message: "must not be empty" });
    if (malformedTextPath(value) !== null) details.push({ path: name, message: "must be well-formed Unicode" });
    provided.add(name);
  }

  const queryNames = new Set(url.searchParams.keys());
  for (const name of queryNames) {
    const arg = args.get(name);
    if ((route.method !== "GET" && route.method !== "DELETE") || !arg || provided.has(name)) {
      details.push({ path: name, message: "is not a known query parameter of this operation" });
      continue;
    }
    const values = url.searchParams.getAll(name);
    if (malformedTextPath(values) !== null) {
      details.push({ path: name, message: "must be well-formed Unicode" });
      continue;
    }
    if (values.length > 1 && !isListType(isNonNullType(arg.type) ? arg.type.ofType : arg.type)) {
      details.push({ path: name, message: "must be given once" });
      continue;
    }
    coerce(
      name,
      isListType(isNonNullType(arg.type) ? arg.type.ofType : arg.type)
        ? values.map((v) => fromQueryString(v, arg.type))
        : fromQueryString(values[0] as string, arg.type),
      arg.type,
      details,
    );
    provided.add(name);
  }

  if (body.trim() !== "") {
    if (route.method === "GET" || route.method === "DELETE") {
      details.push({ path: "", message: `a ${route.method} request takes no body` });
    } else {
      const mediaType = contentType?.split(";")[0]?.trim().toLowerCase();
      if (mediaType !== "application/json" && !mediaType?.endsWith("+json")) {
        throw new AppError("UNSUPPORTED_MEDIA_TYPE", "The request body must be JSON, sent with Content-Type: application/json");
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch (error) {
        throw new AppError("MALFORMED_JSON", `The request body is not valid JSON: ${(error as Error).message}`);
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        throw new BadUserInputError("The request body must be a JSON object", [{ path: "", message: "must be a JSON object" }]);
      }
      const malformed = malformedTextPath(parsed);
      if (malformed !== null)
        details.push({ path: malformed, message: "must be well-formed Unicode (a lone surrogate is not a character)" });
      const long = longListPath(parsed);
      if (long !== null) details.push({ path: long, message: `must have at most ${MAX_LIST_ITEMS} items` });
      for (const [name, value] of Object.entries(parsed)) {
        const arg = args.get(name);
        if (!arg || route.pathParams.includes(name)) {
          details.push({ path: name, message: "is not a known field of this operation" });
          continue;
        }
        if (provided.has(name)) {
          details.push({ path: name, message: "is given twice" });
          continue;
        }
        coerce(name, value, arg.type, details);
        provided.add(name);
        if (value === null) nulls.push(name);
      }
    }
  }

  for (const arg of route.args) {
    if (isNonNullType(arg.type) && arg.defaultValue === undefined && !provided.has(arg.name)) {
      details.push({ path: arg.name, message: "is required" });
    }
  }
  if (details.length) {
    throw new BadUserInputError(details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join("; "), details);
  }
  return nulls;
}
