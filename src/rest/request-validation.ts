import {
  coerceInputValue,
  type GraphQLArgument,
  type GraphQLInputType,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
} from "graphql";
import { longListPath, MAX_LIST_ITEMS, malformedTextPath } from "../http/input-hygiene.js";
import { AppError, BadUserInputError, type ErrorDetail } from "../platform/errors.js";
import { listLimits } from "../platform/limits.js";
import type { RestRoute } from "./routes.js";

/**
 * A query parameter of a REST route. Most are the field's arguments; a list's `filter` becomes one
 * parameter per filter field (`search` is `q`), comma-separated for lists (`none` for a null id),
 * and its `orderBy` becomes `sort=field` or `sort=-field`.
 */
export type RestQueryParam = Pick<GraphQLArgument, "name" | "type" | "description" | "defaultValue" | "extensions"> & {
  /** The argument (and the field of an input argument) the parameter sets. */
  target: { arg: string; field?: string };
  /** Comma-separated values of a list. */
  list?: { nullableItems: boolean };
  /** `sort`: the fields, each also with a leading `-`. */
  sort?: string[];
};

export type CompiledRoute = RestRoute & {
  field: string;
  pattern: RegExp;
  pathParams: string[];
  args: readonly GraphQLArgument[];
  queryParams: RestQueryParam[];
};

function queryParamsOf(args: readonly GraphQLArgument[], pathParams: string[]): RestQueryParam[] {
  const params: RestQueryParam[] = [];
  for (const arg of args) {
    if (pathParams.includes(arg.name)) continue;
    const named = getNullableType(arg.type);
    if (arg.name === "filter" && isInputObjectType(named)) {
      for (const field of Object.values(named.getFields())) {
        const inner = getNullableType(field.type);
        params.push({
          name: field.name === "search" ? "q" : field.name,
          type: field.type,
          description: field.description,
          defaultValue: undefined,
          extensions: field.extensions,
          target: { arg: arg.name, field: field.name },
          ...(isListType(inner) ? { list: { nullableItems: !isNonNullType(inner.ofType) } } : {}),
        });
      }
      continue;
    }
    if (arg.name === "orderBy" && isInputObjectType(named)) {
      const fieldType = getNullableType(named.getFields().field?.type as GraphQLInputType);
      const fields = isEnumType(fieldType) ? fieldType.getValues().map((v) => v.name) : [];
      params.push({
        name: "sort",
        type: arg.type,
        description: `${arg.description ?? "The order"}: one of ${fields.join(", ")}; a leading - sorts descending (e.g. sort=-${fields[0]})`,
        defaultValue: undefined,
        extensions: {},
        target: { arg: arg.name },
        sort: fields.flatMap((f) => [f, `-${f}`]),
      });
      continue;
    }
    params.push({ ...arg, target: { arg: arg.name } });
  }
  const names = new Set<string>();
  for (const param of params) {
    if (names.has(param.name)) throw new Error(`Two query parameters named ${param.name}`);
    names.add(param.name);
  }
  return params;
}

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
    return { ...route, field, pattern, pathParams, args: gqlField.args, queryParams: queryParamsOf(gqlField.args, pathParams) };
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
      // HEAD is answered wherever GET is (src/http/head.ts), so a 405's Allow names it too.
      allowed.push(...(route.method === "GET" ? ["GET", "HEAD"] : [route.method]));
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

/** Checks a value against its GraphQL type; false (with the details) when it does not fit. */
function coerce(name: string, value: unknown, type: GraphQLInputType, details: ErrorDetail[]): boolean {
  const before = details.length;
  coerceInputValue(value, type, (path, _invalid, error) => {
    details.push({ path: [name, ...path].join("."), message: error.message });
  });
  return details.length === before;
}

/** The value of a parameter that Sofa cannot pass by name (a filter field, the sort) as the variable it belongs to. */
function setVariable(variables: Record<string, unknown>, param: RestQueryParam, value: unknown): void {
  if (!param.target.field) {
    variables[param.target.arg] = value;
    return;
  }
  const input = (variables[param.target.arg] ?? {}) as Record<string, unknown>;
  input[param.target.field] = value;
  variables[param.target.arg] = input;
}

/**
 * Checks a REST request against the GraphQL arguments of its field before Sofa sees it: Sofa would
 * turn 123 into "123", anything but "true" into false and ignore unknown fields; we answer 400.
 * Returns the arguments the body sets to null, which Sofa would drop as if absent, and the variables
 * made from query parameters that are not arguments themselves (filter fields, sort).
 */
export function validateRestRequest(
  route: CompiledRoute,
  params: Record<string, string>,
  url: URL,
  body: string,
  contentType: string | null,
): { nulls: string[]; variables: Record<string, unknown>; body?: Record<string, unknown> } {
  const details: ErrorDetail[] = [];
  let checkedBody: Record<string, unknown> | undefined;
  const nulls: string[] = [];
  const variables: Record<string, unknown> = {};
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

  const queryParams = new Map(route.queryParams.map((p) => [p.name, p]));
  for (const name of new Set(url.searchParams.keys())) {
    const param = queryParams.get(name);
    if ((route.method !== "GET" && route.method !== "DELETE") || !param || provided.has(name)) {
      details.push({ path: name, message: "is not a known query parameter of this operation" });
      continue;
    }
    const values = url.searchParams.getAll(name);
    if (malformedTextPath(values) !== null) {
      details.push({ path: name, message: "must be well-formed Unicode" });
      continue;
    }
    provided.add(name);
    if (param.list) {
      const items = values.flatMap((v) => v.split(","));
      if (items.length > (listLimits.values.maxItems as number)) {
        details.push({ path: name, message: `must have at most ${listLimits.values.maxItems} values` });
        continue;
      }
      const value = items.map((v) => (param.list?.nullableItems && v === "none" ? null : fromQueryString(v, param.type)));
      if (coerce(name, value, param.type, details)) setVariable(variables, param, value);
      continue;
    }
    if (values.length > 1) {
      details.push({ path: name, message: "must be given once" });
      continue;
    }
    const raw = values[0] as string;
    if (param.sort) {
      if (!param.sort.includes(raw)) {
        details.push({ path: name, message: `must be one of ${param.sort.join(", ")}` });
        continue;
      }
      const descending = raw.startsWith("-");
      setVariable(variables, param, { field: descending ? raw.slice(1) : raw, direction: descending ? "desc" : "asc" });
      continue;
    }
    const value = fromQueryString(raw, param.type);
    if (coerce(name, value, param.type, details)) {
      if (param.target.field) setVariable(variables, param, value);
    }
  }

  if (body.trim() !== "") {
    if (route.method === "GET" || (route.method === "DELETE" && !route.bodyOnDelete)) {
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
      checkedBody = parsed as Record<string, unknown>;
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
  return { nulls, variables, body: checkedBody };
}
