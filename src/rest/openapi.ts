import { STATUS_CODES } from "node:http";
import {
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLList,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isInputType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from "graphql";
import { errorStatus } from "../platform/errors.js";
import { commonLimits, inputLimit, type Limit, limitKeywords } from "../platform/limits.js";
import type { CompiledRoute, RestQueryParam } from "./request-validation.js";
import { type OwnRestRoute, ownRestRoutes, REST_BASE } from "./routes.js";

type Schema = Record<string, unknown>;

const scalars: Record<string, Schema> = {
  ID: { type: "string" },
  String: { type: "string" },
  Boolean: { type: "boolean" },
  Int: { type: "integer", format: "int32" },
  Float: { type: "number", format: "double" },
  DateTime: { type: "string", format: "date-time" },
  Date: { type: "string", format: "date" },
  // Any JSON value, null included.
  JSON: {},
  HttpHeaders: { type: "object", additionalProperties: { type: "string", maxLength: 1024 }, maxProperties: 16 },
};

/** Statuses every operation can answer; the others depend on the route. */
const commonErrors = [400, 401, 403, 429, 500, 503];
const conflicts = new Set([
  "createMember",
  "updateMember",
  "redeliverWebhook",
  "replayWebhookEndpoint",
  "setRequirementApplicability",
]);
const gateways = new Set(["unlinkDevice"]);
/** Arguments naming a record that must exist in the caller's organization. */
const referenceArgs = new Set(["entityId", "userId", "sourceVersionId", "approverId", "assigneeId"]);

/** The reusable error responses, by status. */
const errorResponses: Record<number, { name: string; description: string }> = {
  400: {
    name: "BadRequest",
    description:
      "Invalid input: a value of the wrong type or out of range, an unknown field or query parameter, a missing required field, malformed JSON, or no X-Organization-Id with a user credential",
  },
  401: { name: "Unauthenticated", description: "No credential, or an invalid, expired or revoked one" },
  403: { name: "Forbidden", description: "The credential lacks the permission, or X-Organization-Id names another organization" },
  404: { name: "NotFound", description: "No such record in the caller's organization" },
  409: {
    name: "Conflict",
    description:
      "A unique value is taken, the change would leave the organization without an active owner, an upload is already attached (to a comment or as evidence), the caller already holds 100 uploads not yet attached, or a request with the same Idempotency-Key is still running",
  },
  413: { name: "PayloadTooLarge", description: "The request body is larger than the configured limit" },
  415: { name: "UnsupportedMediaType", description: "The request body is not application/json" },
  422: { name: "IdempotencyKeyReused", description: "The Idempotency-Key was used for another request" },
  429: { name: "TooManyRequests", description: "Too many requests; retry after the seconds given in Retry-After" },
  500: { name: "InternalError", description: "Unexpected failure; the details are logged with the request id" },
  502: {
    name: "BadGateway",
    description: "The device-management system failed; nothing was changed, so the call can be retried",
  },
  503: {
    name: "ServiceUnavailable",
    description:
      "The database, or for a change that needs it the attachment store, is unavailable or overloaded: nothing was written; retry after the seconds given in Retry-After",
  },
};

const tagDescriptions: Record<string, string> = {
  Audit: "The audit trail: every create and change, newest first",
  Frameworks:
    "Frameworks (catalogs of requirements), shipped and the organization's own, mapping sets between them, adoption, the statement of applicability and readiness computed from the organization's controls",
  Comments: "Comments on tasks, vendors, risks and policies, and their attachments",
  "Evidence requests":
    "Links that let someone outside the organization upload evidence for a control or a vendor; the link's page calls the three operations that take X-Evidence-Request-Token",
  Controls: "The organization's controls, their maps to framework requirements and their links to policies and tasks",
  Evidence: "Files that show a control works or document a vendor, and their review",
  People: "Members of the organization and their managed devices",
  Policies: "Policies and their numbered versions",
  Risks: "Risks the organization tracks",
  "Task management": "Task items of vendors and risks, and their statistics",
  Notifications: "The caller's own inbox and e-mail preferences: a user's credential only (an API key gets 403)",
  Tasks: "The organization's tasks",
  Vendors: "Third parties the organization depends on",
  Webhooks: "Endpoints that receive the organization's events, signed per Standard Webhooks, and their delivery log",
};

const errorSchema: Schema = {
  type: "object",
  description: "The envelope of every REST error, 4xx and 5xx.",
  required: ["statusCode", "error", "message", "code"],
  properties: {
    statusCode: { type: "integer", format: "int32", description: "The HTTP status" },
    error: { type: "string", description: "The HTTP reason phrase" },
    message: { type: "string", description: "What went wrong, for people" },
    code: {
      type: "string",
      enum: Object.keys(errorStatus).filter((code) => !code.startsWith("GRAPHQL_") && !code.startsWith("PERSISTED_QUERY_")),
      description: "Stable machine-readable code",
    },
    details: {
      type: "array",
      description: "One entry per invalid field",
      items: {
        type: "object",
        required: ["path", "message"],
        properties: {
          path: { type: "string", description: "The field, dotted for nested values; empty for the whole body" },
          message: { type: "string" },
        },
      },
    },
  },
};

const securitySchemes = {
  ApiKey: {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description: "An API key of the organization (`cwk_...`), created with the operator CLI.",
  },
  BearerJwt: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "A JWT whose `sub` is a user id, or a session token (`cws_...`); send `X-Organization-Id` to choose the organization. JWTs are verified as RFC8725 (JSON Web Token Best Current Practices) asks: only the configured algorithms (HS256 with AUTH_JWT_SECRET, the key set's own with AUTH_JWKS_URL; never `none`), `exp` required, and `iss` and `aud` checked when configured.",
  },
  SessionCookie: {
    type: "apiKey",
    in: "cookie",
    name: "session_token",
    description: "A session token (`cws_...`); send `X-Organization-Id` to choose the organization.",
  },
};

/** An evidence request's link token: the credential of the link's page, for its three operations alone. */
const linkTokenScheme = {
  EvidenceRequestToken: {
    type: "apiKey",
    in: "header",
    name: "X-Evidence-Request-Token",
    description:
      "The token of an evidence request's link (the last segment of `/requests/<token>`): accepted by `GET /evidence-requests/current`, `POST /attachment-uploads` and `POST /evidence-requests/current/submission` only; any other operation answers 401 with it.",
  },
};

const anyCredential = Object.keys(securitySchemes).map((name) => ({ [name]: [] }));
const linkToken = [{ EvidenceRequestToken: [] }];
/** The operations the link token runs (and only these), by GraphQL field. */
const linkTokenFields: Record<string, "only" | "also"> = {
  "Query.currentEvidenceRequest": "only",
  "Mutation.submitEvidenceRequest": "only",
  "Mutation.createAttachmentUpload": "also",
};

const ref = (name: string, kind = "schemas") => ({ $ref: `#/components/${kind}/${name}` });

/** Longest If-None-Match the service reads; a longer one is ignored (rest-plugin.ts). */
export const IF_NONE_MATCH_MAX_LENGTH = 1024;

/** Headers on every REST answer: its id, its caching and type rules, the rate limit's state, and the CORS headers (when the origin is listed). */
const everyAnswerHeaders = {
  "X-Request-Id": ref("RequestId", "headers"),
  "X-Content-Type-Options": ref("X-Content-Type-Options", "headers"),
  "Cache-Control": ref("Cache-Control", "headers"),
  "RateLimit-Limit": ref("RateLimit-Limit", "headers"),
  "RateLimit-Remaining": ref("RateLimit-Remaining", "headers"),
  "RateLimit-Reset": ref("RateLimit-Reset", "headers"),
  "RateLimit-Policy": ref("RateLimit-Policy", "headers"),
  "Access-Control-Allow-Origin": ref("Access-Control-Allow-Origin", "headers"),
  "Access-Control-Allow-Credentials": ref("Access-Control-Allow-Credentials", "headers"),
  Vary: ref("Vary", "headers"),
};

/** The first sentence of a description, for an operation's summary. */
function firstSentence(text: string): string {
  const end = text.search(/\.(\s|$)/);
  return end === -1 ? text : text.slice(0, end);
}

/**
 * The component name of a type: its GraphQL name, unless it declares another for REST (the
 * `<Type>Connection` types are `<Type>Page` there, the name REST clients were generated with).
 */
function restNameOf(type: GraphQLNamedType): string {
  const name = type.extensions?.restName;
  return typeof name === "string" ? name : type.name;
}

/** JSON Schema (OpenAPI 3.1) for GraphQL types, collecting the named types it refers to. */
class SchemaCollector {
  readonly components: Record<string, Schema> = {};

  private named(type: GraphQLNamedType): Schema {
    if (isScalarType(type)) {
      const schema = scalars[type.name];
      if (!schema) throw new Error(`No OpenAPI schema for the scalar ${type.name}`);
      return { ...schema };
    }
    const name = restNameOf(type);
    if (!(name in this.components)) {
      this.components[name] = {};
      this.components[name] = this.define(type);
    }
    return ref(name);
  }

  private define(type: GraphQLNamedType): Schema {
    const description = type.description ? { description: type.description } : {};
    if (isEnumType(type)) {
      // JSON Schema has no place for a description per enum value: list them in the type's.
      const values = type.getValues();
      const meanings = values.filter((v) => v.description).map((v) => `- \`${v.name}\`: ${v.description}`);
      const text = [type.description, meanings.join("\n")].filter(Boolean).join("\n\n");
      return { type: "string", enum: values.map((v) => v.name), ...(text ? { description: text } : {}) };
    }
    if (isObjectType(type)) {
      // Sofa selects every field and GraphQL sends every selected field: all are present, some null.
      const fields = Object.values(type.getFields());
      return {
        type: "object",
        ...description,
        required: fields.map((f) => f.name),
        properties: Object.fromEntries(fields.map((f) => [f.name, this.output(f)])),
      };
    }
    if (isInputObjectType(type)) {
      const fields = Object.values(type.getFields());
      const required = fields.filter((f) => isNonNullType(f.type) && f.defaultValue === undefined).map((f) => f.name);
      return {
        type: "object",
        ...description,
        additionalProperties: false,
        ...(required.length ? { required } : {}),
        properties: Object.fromEntries(
          fields.map((f) => [f.name, this.type(f.type, !isNonNullType(f.type), f.description, f.defaultValue, inputLimit(f))]),
        ),
      };
    }
    throw new Error(`No OpenAPI schema for ${type.name}`);
  }

  /** The schema of a type; `nullable` says whether null is a valid value here. */
  type(
    type: GraphQLInputType | GraphQLOutputType,
    nullable: boolean,
    description?: string | null,
    defaultValue?: unknown,
    limit?: Limit,
  ): Schema {
    const inner = getNullableType(type);
    let schema: Schema = isListType(inner)
      ? {
          type: "array",
          // An input's item has its scalar's bound (an ID's length), as a query parameter's items do.
          items: this.type(
            inner.ofType,
            !isNonNullType(inner.ofType),
            undefined,
            undefined,
            limit && isInputType(inner.ofType) ? inputLimit({ type: inner.ofType }) : undefined,
          ),
        }
      : this.named(inner);
    // The same declaration the service validates with (src/platform/limits.ts).
    if (limit) schema = { ...schema, ...limitKeywords(limit) };
    if (nullable) {
      if (schema.$ref) schema = { anyOf: [schema, { type: "null" }] };
      else if (typeof schema.type === "string") schema = { ...schema, type: [schema.type, "null"] };
    }
    if (description) schema.description = description;
    if (defaultValue !== undefined && defaultValue !== null) schema.default = defaultValue;
    return schema;
  }

  output(field: GraphQLField<unknown, unknown>): Schema {
    return this.type(field.type, !isNonNullType(field.type), field.description);
  }

  /** An argument as a REST caller sends it: null only where the operation gives null a meaning. */
  argument(arg: GraphQLArgument, clearable: (name: string) => boolean): Schema {
    return this.type(
      arg.type,
      !isNonNullType(arg.type) && clearable(arg.name),
      arg.description,
      arg.defaultValue,
      inputLimit(arg),
    );
  }
}

/** The answer's schema without the fields the route omits (inline, since the named type keeps them elsewhere). */
function omitting(collector: SchemaCollector, schema: Schema, route: CompiledRoute): Schema {
  const name = typeof schema.$ref === "string" ? schema.$ref.split("/").pop() : undefined;
  const omitted = (route.omit ?? []).filter((f) => f.startsWith(`${name}.`)).map((f) => f.slice(`${name}.`.length));
  const named = name ? collector.components[name] : undefined;
  if (!named || !omitted.length) return schema;
  const properties = { ...(named.properties as Record<string, Schema>) };
  for (const f of omitted) delete properties[f];
  return { ...named, required: (named.required as string[]).filter((f) => !omitted.includes(f)), properties };
}

const describedBy = (arg: Pick<GraphQLArgument, "description">) => (arg.description ? { description: arg.description } : {});

/** A query parameter: a list's values comma-separated (`none` for "unassigned"), `sort` one of its values. */
function queryParameter(collector: SchemaCollector, param: RestQueryParam) {
  const base = { name: param.name, in: "query", ...describedBy(param) };
  if (param.sort) return { ...base, required: false, schema: { type: "string", enum: param.sort } };
  const limit = inputLimit(param);
  if (param.list) {
    const itemType = (getNullableType(param.type) as GraphQLList<GraphQLInputType>).ofType;
    const item = collector.type(itemType, false, undefined, undefined, inputLimit({ type: itemType }));
    const items = param.list.nullableItems
      ? { anyOf: [item, { type: "string", const: "none", description: "unassigned" }] }
      : item;
    return {
      ...base,
      required: false,
      style: "form",
      explode: false,
      schema: { type: "array", items, ...(limit ? limitKeywords(limit) : {}) },
    };
  }
  return {
    ...base,
    required: isNonNullType(param.type) && param.defaultValue === undefined,
    schema: collector.type(param.type, false, undefined, param.defaultValue, limit),
  };
}

function fieldOf(schema: GraphQLSchema, route: CompiledRoute): GraphQLField<unknown, unknown> {
  const [typeName, fieldName] = route.field.split(".") as [string, string];
  const type = typeName === "Query" ? schema.getQueryType() : schema.getMutationType();
  const field = type?.getFields()[fieldName];
  if (!field) throw new Error(`REST route for unknown field ${route.field}`);
  return field;
}

/**
 * The operationId of a route, by rule so that new routes need no entry: a mutation's name already
 * is a verb; a query becomes `list<Field>` when it answers a page or a list, `get<Field>` otherwise
 * (`comments` → `listComments`, `task` → `getTask`, `taskItemStats` → `getTaskItemStats`).
 */
export function operationIdOf(route: Pick<CompiledRoute, "field">, field: GraphQLField<unknown, unknown>): string {
  if (!route.field.startsWith("Query.")) return field.name;
  const returned = getNullableType(field.type);
  const isPage = isObjectType(returned) && "items" in returned.getFields() && "nextCursor" in returned.getFields();
  const verb = isListType(returned) || isPage ? "list" : "get";
  return `${verb}${field.name.charAt(0).toUpperCase()}${field.name.slice(1)}`;
}

function errorStatuses(route: CompiledRoute, fieldName: string, hasBody: boolean): number[] {
  const statuses = new Set(commonErrors);
  if (route.pathParams.length || route.args.some((a) => referenceArgs.has(a.name))) statuses.add(404);
  if (conflicts.has(fieldName)) statuses.add(409);
  if (route.method === "POST") {
    // Idempotency-Key: reused for another request, or its first request still running.
    statuses.add(409);
    statuses.add(422);
  }
  if (hasBody) {
    statuses.add(413);
    statuses.add(415);
  }
  if (gateways.has(fieldName)) statuses.add(502);
  return [...statuses].sort((a, b) => a - b);
}

function errorResponse(status: number) {
  const { description } = errorResponses[status] as { description: string };
  return {
    description,
    headers: {
      ...everyAnswerHeaders,
      ...(status === 429 || status === 503 ? { "Retry-After": ref("RetryAfter", "headers") } : {}),
    },
    content: { "application/json": { schema: ref("Error") } },
  };
}

/**
 * The OpenAPI 3.1 document of the REST routes, built from the GraphQL fields they serve: the same
 * descriptions, types and nullability, with the error envelope and the three credentials.
 */
export function buildOpenApiDocument(schema: GraphQLSchema, compiled: CompiledRoute[]) {
  const collector = new SchemaCollector();
  const paths: Record<string, Record<string, Schema>> = {};
  const usedErrors = new Set<number>();

  for (const route of compiled) {
    const field = fieldOf(schema, route);
    const description = field.description ?? "";
    // GET and DELETE take their arguments in the query string; a DELETE marked bodyOnDelete takes
    // them in a JSON body, its query form documented as deprecated.
    const inQuery = route.method === "GET" || route.method === "DELETE";
    const bodyArgs = inQuery && !route.bodyOnDelete ? [] : route.args.filter((a) => !route.pathParams.includes(a.name));
    const queryParams = inQuery ? route.queryParams : [];
    const returned = getNamedType(field.type);
    // On an update, null clears a field that may be null and is refused for the others; elsewhere null means "not given".
    const clearable = (name: string) => {
      if (route.method !== "PATCH") return true;
      const target = isObjectType(returned) ? returned.getFields()[name] : undefined;
      return !!target && !isNonNullType(target.type);
    };

    const parameters = [
      ...route.pathParams.map((name) => {
        const arg = route.args.find((a) => a.name === name) as GraphQLArgument;
        const schema = collector.type(arg.type, false, undefined, undefined, inputLimit(arg));
        return { name, in: "path", required: true, ...describedBy(arg), schema };
      }),
      ...queryParams.map((param) => ({
        ...queryParameter(collector, param),
        ...(route.bodyOnDelete ? { deprecated: true } : {}),
      })),
      ref("OrganizationId", "parameters"),
      ...(route.method === "POST" ? [ref("IdempotencyKey", "parameters")] : []),
      ...(route.method === "GET" ? [ref("IfNoneMatch", "parameters")] : []),
    ];

    const requiredBody =
      route.method === "DELETE"
        ? []
        : bodyArgs.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined).map((a) => a.name);
    // An update needs at least one field; elsewhere the body may be left out when every argument is optional.
    const update = route.method === "PATCH";
    const requestBody = bodyArgs.length
      ? {
          required: update || requiredBody.length > 0,
          content: {
            "application/json": {
              schema: {
                type: "object",
                additionalProperties: false,
                ...(requiredBody.length ? { required: requiredBody } : {}),
                ...(update && !requiredBody.length ? { minProperties: 1 } : {}),
                properties: Object.fromEntries(bodyArgs.map((a) => [a.name, collector.argument(a, clearable)])),
              },
            },
          },
        }
      : undefined;

    const success = route.download
      ? {
          description:
            "The stored bytes, streamed from the attachment store, with the media type given on upload; the ETag is the bytes' SHA-256",
          headers: {
            ...everyAnswerHeaders,
            ETag: ref("ETag", "headers"),
            "Content-Disposition": {
              description: "`attachment`, with the file name (at most 255 characters, also percent-encoded as `filename*`)",
              schema: { type: "string", maxLength: 1024 },
            },
          },
          content: { "*/*": { schema: { type: "string", format: "binary" } } },
        }
      : route.responseStatus === 204
        ? { description: "Done; no body", headers: everyAnswerHeaders }
        : {
            description: STATUS_CODES[route.responseStatus] ?? "Success",
            headers: {
              ...everyAnswerHeaders,
              ...(route.method === "POST" ? { "Idempotent-Replayed": ref("IdempotentReplayed", "headers") } : {}),
              ...(route.method === "GET" ? { ETag: ref("ETag", "headers") } : {}),
            },
            // Never null over REST: a missing record is a 404, even where GraphQL answers null.
            content: { "application/json": { schema: omitting(collector, collector.type(field.type, false), route) } },
          };

    const responses: Record<string, unknown> = { [String(route.responseStatus)]: success };
    if (route.method === "GET") {
      responses["304"] = {
        description: "Not Modified: If-None-Match names the current ETag; no body",
        headers: { ...everyAnswerHeaders, ETag: ref("ETag", "headers") },
      };
    }
    for (const status of errorStatuses(route, field.name, !!requestBody)) {
      usedErrors.add(status);
      responses[String(status)] = ref((errorResponses[status] as { name: string }).name, "responses");
    }

    const openApiPath = route.path.replace(/:(\w+)/g, "{$1}");
    paths[openApiPath] = {
      ...paths[openApiPath],
      [route.method.toLowerCase()]: {
        operationId: operationIdOf(route, field),
        summary: firstSentence(description) || field.name,
        description: `${description}\n\nOver GraphQL: the \`${field.name}\` ${route.field.startsWith("Query.") ? "query" : "mutation"}.`,
        tags: route.tags,
        ...(field.deprecationReason ? { deprecated: true } : {}),
        security:
          linkTokenFields[route.field] === "only"
            ? linkToken
            : linkTokenFields[route.field] === "also"
              ? [...anyCredential, ...linkToken]
              : anyCredential,
        parameters,
        ...(requestBody ? { requestBody } : {}),
        responses,
      },
    };
  }

  // The facade's own routes (a stream, a PEM text): no GraphQL field, no ETag, the same envelope.
  for (const [name, route] of Object.entries(ownRestRoutes) as [string, OwnRestRoute][]) {
    const statuses = [...(route.credential ? commonErrors : [429, 500, 503]), ...(route.errors ?? [])].sort((a, b) => a - b);
    for (const status of statuses) usedErrors.add(status);
    const pathParams = [...route.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1] as string);
    paths[route.path.replace(/:([A-Za-z]+)/g, "{$1}")] = {
      [route.method.toLowerCase()]: {
        operationId: name,
        summary: route.summary,
        description: route.description,
        tags: route.tags,
        security: route.credential ? anyCredential : [],
        parameters: [
          ...pathParams.map((name) => ({
            name,
            in: "path",
            required: true,
            description: `The ${name}`,
            schema: { type: "string", minLength: 1, maxLength: 64 },
          })),
          ...route.query.map((param) => ({
            name: param.name,
            in: "query",
            required: false,
            description: param.description,
            schema: param.schema,
          })),
          ...(route.credential ? [ref("OrganizationId", "parameters")] : []),
        ],
        responses: {
          "200": {
            description: route.summary,
            headers: {
              ...everyAnswerHeaders,
              ...(route.credential
                ? {
                    "Content-Disposition": {
                      description: "`attachment`, with a file name",
                      schema: { type: "string", maxLength: 1024 },
                    },
                  }
                : {}),
            },
            content: Object.fromEntries(route.contentTypes.map((type) => [type, { schema: { type: "string" } }])),
          },
          ...Object.fromEntries(
            statuses.map((status) => [String(status), ref((errorResponses[status] as { name: string }).name, "responses")]),
          ),
        },
      },
    };
  }

  const tags = [...new Set(compiled.flatMap((r) => r.tags))]
    .sort()
    .map((name) => ({ name, ...(tagDescriptions[name] ? { description: tagDescriptions[name] } : {}) }));
  return {
    openapi: "3.1.0",
    info: {
      title: "Compliance Workspace Gateway",
      version: "1.0.0",
      description:
        "REST facade of the GraphQL API at /graphql: every operation is also a GraphQL field, with the same rules, permissions and error codes.",
    },
    // Public: the API is meant for the organization's own integrations and its web app.
    servers: [{ url: REST_BASE, "x-internal": false }],
    security: anyCredential,
    tags,
    paths,
    components: {
      schemas: { ...sortKeys(collector.components), Error: errorSchema },
      parameters: {
        OrganizationId: {
          name: "X-Organization-Id",
          in: "header",
          required: false,
          description:
            "The organization to act in. Required with a JWT or session; with an API key it may be sent and must be the key's organization (403 otherwise).",
          schema: { type: "string", minLength: 1, maxLength: commonLimits.id.maxLength },
        },
        IfNoneMatch: {
          name: "If-None-Match",
          in: "header",
          required: false,
          description: `The ETag of the copy you have (or several, comma-separated, or \`*\`): when it is still current the answer is 304 with no body. A value longer than ${IF_NONE_MATCH_MAX_LENGTH} characters is ignored.`,
          schema: { type: "string", maxLength: IF_NONE_MATCH_MAX_LENGTH },
        },
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description:
            "Makes retries safe: a retry with the same key within 24 hours gets the first answer without writing again. 1 to 255 visible ASCII characters; a UUID is ideal.",
          schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" },
        },
      },
      responses: Object.fromEntries(
        [...usedErrors]
          .sort((a, b) => a - b)
          .map((status) => [(errorResponses[status] as { name: string }).name, errorResponse(status)]),
      ),
      headers: {
        RequestId: {
          description: "The request id (the caller's X-Request-Id when it is sane), also in the server's logs",
          schema: { type: "string", maxLength: 128 },
        },
        "X-Content-Type-Options": {
          description: "Always nosniff: no browser reads the answer as another type than its Content-Type",
          schema: { type: "string", enum: ["nosniff"] },
        },
        "Cache-Control": {
          description:
            "To a credential: no-store, except a GET answered with an ETag, which says private, no-cache (revalidate with If-None-Match); the public key without a credential: public, max-age=300",
          schema: { type: "string", enum: ["no-store", "private, no-cache", "public, max-age=300"] },
        },
        ETag: {
          description: "Tag of this answer's bytes; send it as If-None-Match to revalidate",
          schema: { type: "string", maxLength: 64 },
        },
        "RateLimit-Limit": {
          description: "Requests this credential (or client address, without one) may make per window (RATE_LIMIT_PER_MINUTE)",
          schema: { type: "integer", format: "int32", minimum: 1, maximum: 2_147_483_647 },
        },
        "RateLimit-Remaining": {
          description: "Requests left in the current window",
          schema: { type: "integer", format: "int32", minimum: 0, maximum: 2_147_483_647 },
        },
        "RateLimit-Reset": {
          description: "Seconds until the current window ends",
          schema: { type: "integer", format: "int32", minimum: 0, maximum: 60 },
        },
        "RateLimit-Policy": {
          description: "The policy: `<limit>;w=<window seconds>`",
          schema: { type: "string", maxLength: 64, pattern: "^\\d+;w=\\d+$" },
        },
        "Access-Control-Allow-Origin": {
          description:
            "Only when CORS_ORIGINS lists the request's Origin: that origin, exactly (never `*`); absent for any other origin and without one",
          schema: { type: "string", format: "uri", maxLength: 2048 },
        },
        "Access-Control-Allow-Credentials": {
          description: "`true` beside Access-Control-Allow-Origin: a listed origin's page may send cookies",
          schema: { type: "string", enum: ["true"] },
        },
        Vary: {
          description:
            "Includes `Origin` whenever CORS_ORIGINS lists any origin: the CORS headers depend on the caller's Origin, so a shared cache must not hand one origin's answer to another",
          schema: { type: "string", maxLength: 256 },
        },
        RetryAfter: {
          description: "Seconds to wait before retrying",
          schema: { type: "integer", format: "int32", minimum: 1, maximum: 3600 },
        },
        IdempotentReplayed: {
          description: "`true` when this is the stored answer to an earlier request with the same Idempotency-Key",
          schema: { type: "string", enum: ["true"] },
        },
      },
      securitySchemes: { ...securitySchemes, ...linkTokenScheme },
    },
  };
}

function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}
