import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Ajv2020 } from "ajv/dist/2020.js";
import { getNullableType, isEnumType, isInputObjectType, isNonNullType, isObjectType } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { operationIdOf } from "../../src/rest/openapi.js";
import { restSchemaOf } from "../../src/rest/rest-schema.js";
import { ownRestRoutes, restRoutes } from "../../src/rest/routes.js";
import { schema as graphSchema } from "../../src/schema.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

// REST is generated from the schema without its graph-only fields.
const schema = restSchemaOf(graphSchema);

type Parameter = {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
  $ref?: string;
  deprecated?: boolean;
};
type Schema = Record<string, unknown> & { properties?: Record<string, Schema>; required?: string[] };
type Operation = {
  operationId: string;
  summary: string;
  description: string;
  security: Record<string, string[]>[];
  parameters: Parameter[];
  requestBody?: { required: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { $ref?: string; content?: Record<string, { schema: Schema }> }>;
};
type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, Schema>;
    responses: Record<string, { content: Record<string, { schema: Schema }> }>;
    parameters: Record<string, Parameter>;
    securitySchemes: Record<string, Record<string, string>>;
  };
};

let t: TestApp;
let org: SeedResult;
let doc: Document;

/** The operations of GraphQL fields; the facade's own routes (ownRestRoutes) have a test of their own. */
const operations = () =>
  Object.entries(doc.paths)
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method: method.toUpperCase(), op })))
    .filter(({ op }) => !(op.operationId in ownRestRoutes));
const operation = (id: string) => {
  const found = operations().find((o) => o.op.operationId === id);
  if (!found) throw new Error(`no operation ${id}`);
  return found;
};
const field = (id: string) => {
  const key = Object.keys(restRoutes).find((k) => {
    const [type, name] = k.split(".") as [string, string];
    const gqlField = (type === "Query" ? schema.getQueryType() : schema.getMutationType())?.getFields()[name];
    return gqlField && operationIdOf({ field: k }, gqlField) === id;
  }) as string;
  const [type, name] = key.split(".") as [string, string];
  return (type === "Query" ? schema.getQueryType() : schema.getMutationType())?.getFields()[name];
};
const objectType = (name: string) => {
  const type = schema.getType(name);
  if (!isObjectType(type)) throw new Error(`${name} is not an object type`);
  return type;
};
const bodySchema = (op: Operation) => op.requestBody?.content["application/json"]?.schema;
const statuses = (op: Operation) => Object.keys(op.responses).map(Number);

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
  const res = await t.rest("GET", "/v1/openapi.json");
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(() => t.close());

describe("GET /v1/openapi.json", () => {
  it("needs no credential and answers JSON", async () => {
    const res = await t.app.fetch(new Request("http://test/v1/openapi.json"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("passes Redocly's strictest built-in ruleset with no error and no warning", async () => {
    // A private service: there is no license to state.
    const config = await createConfig({ extends: ["recommended-strict"], rules: { "info-license": "off" } });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: "/v1/openapi.json", config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it("is OpenAPI 3.1 with one operation per route, named by a verb: reads get/list, writes their mutation", () => {
    expect(doc.openapi).toBe("3.1.0");
    const ids = operations().map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { op } of operations()) {
      expect(field(op.operationId), op.operationId).toBeDefined();
      expect(op.description, op.operationId).toContain(`the \`${field(op.operationId)?.name}\``);
    }
    for (const [key, r] of Object.entries(restRoutes)) {
      const id = operations().find((o) => o.method === r.method && o.path === r.path.replace(/:(\w+)/g, "{$1}"))?.op.operationId;
      if (key.startsWith("Query.")) expect(id, key).toMatch(/^(get|list)[A-Z]/);
      else expect(id, key).toBe(key.split(".")[1]);
    }
    expect(ids).toEqual(
      expect.arrayContaining([
        "getTask",
        "listTasks",
        "listComments",
        "listTaskItems",
        "getTaskItemStats",
        "listMembers",
        "getMember",
        "getPolicy",
        "listPolicyVersions",
        "listAuditEvents",
        "getAttachment",
        "createComment",
        "unlinkDevice",
        "createPolicyVersion",
      ]),
    );
  });

  it("documents every argument once: path, query (GET, DELETE) or body, never two of them", () => {
    for (const { method, op } of operations()) {
      const path = op.parameters.filter((p) => p.in === "path").map((p) => p.name);
      const query = op.parameters.filter((p) => p.in === "query").map((p) => p.name);
      const body = Object.keys(bodySchema(op)?.properties ?? {});
      if (op.operationId === "unlinkControl") {
        // Its arguments in a body, as linkControl's (contract section 16); the query form it took first, deprecated.
        expect(body.sort()).toEqual(["policyIds", "taskIds"]);
        expect(op.parameters.filter((p) => p.in === "query").map((p) => [p.name, p.deprecated])).toEqual([
          ["policyIds", true],
          ["taskIds", true],
        ]);
        continue;
      }
      if (method === "GET" || method === "DELETE") expect(op.requestBody, op.operationId).toBeUndefined();
      else expect(query, op.operationId).toEqual([]);
      for (const name of path) expect(body, `${op.operationId} ${name}`).not.toContain(name);
      // A list's filter is one query parameter per filter field (search is q), its orderBy is sort.
      const args = (field(op.operationId)?.args ?? []).flatMap((a) => {
        const type = getNullableType(a.type);
        if (a.name === "orderBy") return ["sort"];
        if (a.name !== "filter" || !isInputObjectType(type)) return [a.name];
        return Object.keys(type.getFields()).map((f) => (f === "search" ? "q" : f));
      });
      expect([...path, ...query, ...body].sort(), op.operationId).toEqual(args.sort());
    }
    expect(bodySchema(operation("updateTask").op)?.properties).not.toHaveProperty("taskId");
    expect(bodySchema(operation("createPolicyVersion").op)?.properties).not.toHaveProperty("id");
    expect(operation("unlinkDevice").op.requestBody).toBeUndefined();
    expect(
      operation("deleteComment")
        .op.parameters.filter((p) => p.in === "query")
        .map((p) => p.name),
    ).toEqual(["userId"]);
  });

  it("marks what is required: path parameters, non-null arguments, and at least one field of an update", () => {
    const comments = operation("listComments").op.parameters;
    expect(comments.find((p) => p.name === "entityId")?.required).toBe(true);
    expect(comments.find((p) => p.name === "limit")?.required).toBe(false);
    const create = operation("createComment").op;
    expect(create.requestBody?.required).toBe(true);
    expect(bodySchema(create)?.required?.sort()).toEqual(["content", "entityId", "entityType"]);
    expect(operation("createPolicyVersion").op.requestBody?.required).toBe(false);
    expect(operation("updateTask").op.requestBody?.required).toBe(true);
    expect(bodySchema(operation("updateTask").op)).toMatchObject({ minProperties: 1, additionalProperties: false });
  });

  it("documents the errors each route can answer, all with the Error envelope", () => {
    for (const { op } of operations()) {
      const errors = statuses(op).filter((s) => s >= 400);
      expect(errors, op.operationId).toEqual(expect.arrayContaining([400, 401, 403, 429, 500, 503]));
      const hasBody = !!op.requestBody;
      expect(errors.includes(413), op.operationId).toBe(hasBody);
      expect(errors.includes(415), op.operationId).toBe(hasBody);
      for (const status of errors) {
        const ref = op.responses[String(status)]?.$ref as string;
        const response = doc.components.responses[ref.replace("#/components/responses/", "")];
        expect(response?.content["application/json"]?.schema, `${op.operationId} ${status}`).toEqual({
          $ref: "#/components/schemas/Error",
        });
      }
    }
    expect(statuses(operation("createMember").op)).toContain(409);
    expect(statuses(operation("updateMember").op)).toContain(409);
    expect(statuses(operation("getMember").op)).not.toContain(409);
    expect(statuses(operation("unlinkDevice").op)).not.toContain(409);
    expect(statuses(operation("unlinkDevice").op)).toContain(502);
    expect(statuses(operation("getTask").op)).toContain(404);
    expect(statuses(operation("getTaskItemStats").op)).toContain(404);
    expect(statuses(operation("listTasks").op)).not.toContain(404);
    expect(doc.components.schemas.Error?.required).toEqual(["statusCode", "error", "message", "code"]);
  });

  it("takes an Idempotency-Key on every POST, with its 409 and 422", () => {
    for (const { method, op } of operations()) {
      const idempotent = op.parameters.some((p) => p.$ref === "#/components/parameters/IdempotencyKey");
      expect(idempotent, op.operationId).toBe(method === "POST");
      if (method === "POST") expect(statuses(op), op.operationId).toEqual(expect.arrayContaining([409, 422]));
      else expect(statuses(op), op.operationId).not.toContain(422);
    }
    expect(doc.components.parameters.IdempotencyKey).toMatchObject({ name: "Idempotency-Key", in: "header", required: false });
  });

  it("offers the three credentials as alternatives on every operation, and the link token on the link page's three alone", () => {
    expect(doc.components.securitySchemes).toEqual({
      ApiKey: expect.objectContaining({ type: "apiKey", in: "header", name: "X-API-Key" }),
      BearerJwt: expect.objectContaining({ type: "http", scheme: "bearer", bearerFormat: "JWT" }),
      SessionCookie: expect.objectContaining({ type: "apiKey", in: "cookie", name: "session_token" }),
      EvidenceRequestToken: expect.objectContaining({ type: "apiKey", in: "header", name: "X-Evidence-Request-Token" }),
    });
    const members = [{ ApiKey: [] }, { BearerJwt: [] }, { SessionCookie: [] }];
    const linkOnly = new Set(["/evidence-requests/current", "/evidence-requests/current/submission"]);
    for (const { path, op } of operations()) {
      const expected = linkOnly.has(path)
        ? [{ EvidenceRequestToken: [] }]
        : path === "/attachment-uploads"
          ? [...members, { EvidenceRequestToken: [] }]
          : members;
      expect(op.security, op.operationId).toEqual(expected);
      if (linkOnly.has(path)) continue;
      expect(op.parameters, op.operationId).toContainEqual({ $ref: "#/components/parameters/OrganizationId" });
    }
  });

  it("takes descriptions from the schema", () => {
    for (const { op } of operations()) {
      const gqlField = field(op.operationId);
      expect(gqlField?.description, op.operationId).toBeTruthy();
      expect(op.description, op.operationId).toContain(gqlField?.description);
      expect(op.summary.length, op.operationId).toBeGreaterThan(0);
      for (const p of op.parameters.filter((p) => p.in === "path" || p.in === "query")) {
        const arg = gqlField?.args.find((a) => a.name === p.name);
        if (arg?.description) expect(p.description, `${op.operationId} ${p.name}`).toBe(arg.description);
      }
    }
    expect(doc.components.schemas.Task?.properties?.title?.description).toBe(objectType("Task").getFields().title?.description);
  });

  it("gives dates, integers and enums their formats, and marks nullable fields", () => {
    const { schemas } = doc.components;
    expect(schemas.Task?.properties?.createdAt).toMatchObject({ type: "string", format: "date-time" });
    expect(schemas.PolicyVersionCreated?.properties?.version).toMatchObject({ type: "integer", format: "int32" });
    expect(operation("listTasks").op.parameters.find((p) => p.name === "limit")?.schema).toEqual({
      type: "integer",
      format: "int32",
      minimum: 1,
      maximum: 100,
    });
    for (const name of ["TaskStatus", "TaskItemStatus", "CommentEntityType", "MemberRole"]) {
      const type = schema.getType(name);
      if (!isEnumType(type)) throw new Error(name);
      expect(schemas[name], name).toMatchObject({ type: "string", enum: type.getValues().map((v) => v.name) });
    }
    // Every field is present in a response (graph-only relations aside); nullable ones may be null.
    const taskType = objectType("Task");
    const restFields = Object.entries(taskType.getFields());
    const graphTask = graphSchema.getType("Task");
    if (!isObjectType(graphTask)) throw new Error("Task");
    expect(restFields.length).toBeLessThan(Object.keys(graphTask.getFields()).length);
    for (const [name, f] of restFields) {
      const property = schemas.Task?.properties?.[name] as Schema;
      const nullable = Array.isArray(property.type) && property.type.includes("null");
      expect(nullable, name).toBe(!isNonNullType(f.type));
    }
    expect(schemas.Task?.required?.sort()).toEqual(restFields.map(([name]) => name).sort());
    expect(schemas.Task?.properties).not.toHaveProperty("assignee");
    // GET /v1/tasks/{taskId} keeps the spec's exact shape: no assigneeId there.
    const getTask = operation("getTask").op.responses["200"]?.content?.["application/json"]?.schema as Schema;
    expect(getTask.required?.sort()).toEqual([
      "createdAt",
      "description",
      "id",
      "status",
      "taskTemplateId",
      "title",
      "updatedAt",
    ]);
    expect(getTask.properties).not.toHaveProperty("assigneeId");
    expect(schemas.Member?.properties?.deviceLabelId).toMatchObject({ type: ["integer", "null"], format: "int32" });
    // An update clears a nullable field with null and refuses null for the others.
    const update = bodySchema(operation("updateTask").op)?.properties;
    expect(update?.description?.type).toEqual(["string", "null"]);
    expect(update?.title?.type).toBe("string");
    expect(update?.status).toMatchObject({ $ref: "#/components/schemas/TaskStatus" });
  });

  it("documents the attachment download as bytes, not JSON", () => {
    const { op } = operation("getAttachment");
    const content = op.responses["200"]?.content ?? {};
    expect(Object.keys(content)).toEqual(["*/*"]);
    expect(content["*/*"]?.schema).toEqual({ type: "string", format: "binary" });
  });
});

describe("the facade's own routes in the OpenAPI document", () => {
  it("describes the audit export (a credential, its query, a file) and the public key (no credential)", () => {
    const exported = doc.paths["/audit-events/export"]?.get as Operation;
    // Named by the verb rule of every other read (generated clients: exportAuditEvents() beside listAuditEvents()).
    expect(exported.operationId).toBe("exportAuditEvents");
    expect(exported.security).toEqual([{ ApiKey: [] }, { BearerJwt: [] }, { SessionCookie: [] }]);
    expect(exported.parameters.filter((p) => p.in === "query").map((p) => p.name)).toEqual(["from", "to", "format"]);
    expect(Object.keys(exported.responses["200"]?.content ?? {})).toEqual(["application/jsonl", "text/csv"]);
    expect(statuses(exported)).toEqual(expect.arrayContaining([200, 400, 401, 403, 429]));
    const key = doc.paths["/audit/public-key"]?.get as Operation;
    expect(key.operationId).toBe("getAuditPublicKey");
    expect(key.security).toEqual([]);
    const reads = Object.values(doc.paths).flatMap((item) => (item.get ? [(item.get as Operation).operationId] : []));
    expect(reads.filter((id) => !/^(get|list|export)[A-Z]/.test(id))).toEqual([]);
    expect(Object.keys(key.responses["200"]?.content ?? {})).toEqual(["application/x-pem-file"]);
    expect(statuses(key)).not.toContain(401);
  });
});

describe("REST responses match the OpenAPI document", () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat("int32", { type: "number", validate: (n: number) => Number.isInteger(n) && Math.abs(n) <= 2 ** 31 });
  ajv.addFormat("double", { type: "number", validate: () => true });
  ajv.addFormat("date-time", (s: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(s));

  function check(id: string, status: number, body: unknown) {
    if (!ajv.getSchema("openapi")) ajv.addSchema({ $id: "openapi", components: doc.components }, "openapi");
    const response = operation(id).op.responses[String(status)] as {
      $ref?: string;
      content?: Record<string, { schema: Schema }>;
    };
    const resolved = response.$ref ? doc.components.responses[response.$ref.replace("#/components/responses/", "")] : response;
    const schemaOf = resolved?.content?.["application/json"]?.schema as Schema;
    const validate = ajv.compile({ ...JSON.parse(JSON.stringify(schemaOf).replaceAll('"#/', '"openapi#/')) });
    expect(validate(body) ? [] : validate.errors, `${id} ${status}`).toEqual([]);
  }

  it("for the five operations and an error", async () => {
    const key = org.apiKey;
    const task = await t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key });
    expect(task.status).toBe(200);
    check("getTask", 200, task.body);

    const stats = await t.rest("GET", `/v1/task-management/stats?entityId=${org.vendorIds[0]}&entityType=vendor`, { key });
    expect(stats.status).toBe(200);
    check("getTaskItemStats", 200, stats.body);

    const comment = await t.rest("POST", "/v1/comments", {
      key,
      body: {
        content: "Evidence",
        entityId: org.vendorIds[0],
        entityType: "vendor",
        userId: org.userIds[0],
        attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: Buffer.from("hello").toString("base64") }],
      },
    });
    expect(comment.status).toBe(201);
    check("createComment", 201, comment.body);

    const unlinked = await t.rest("PATCH", `/v1/people/${org.memberIds[1]}/unlink-device`, { key });
    expect(unlinked.status).toBe(200);
    check("unlinkDevice", 200, unlinked.body);

    const version = await t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions`, { key, body: { changelog: null } });
    expect(version.status).toBe(201);
    check("createPolicyVersion", 201, version.body);

    const missing = await t.rest("GET", "/v1/tasks/tsk_missing", { key });
    expect(missing.status).toBe(404);
    check("getTask", 404, missing.body);
  });

  it("for lists, whose items carry nullable fields", async () => {
    const key = org.apiKey;
    for (const [id, path] of [
      ["listMembers", "/v1/people"],
      ["listTasks", "/v1/tasks"],
      ["listAuditEvents", "/v1/audit-events"],
      ["listPolicyVersions", `/v1/policies/${org.policyIds[0]}/versions`],
      ["listTaskItems", `/v1/task-management?entityId=${org.vendorIds[0]}&entityType=vendor`],
      ["listVendors", "/v1/vendors"],
      ["listRisks", "/v1/risks"],
      ["listPolicies", "/v1/policies"],
      ["getVendor", `/v1/vendors/${org.vendorIds[0]}`],
      ["getRisk", `/v1/risks/${org.riskIds[0]}`],
    ] as const) {
      const res = await t.rest("GET", path, { key });
      expect(res.status, path).toBe(200);
      check(id, 200, res.body);
    }
  });

  it("for the workspace operations: updates, the review, deletes (204 with no body)", async () => {
    const key = org.apiKey;
    const vendor = await t.rest("PATCH", `/v1/vendors/${org.vendorIds[1]}`, { key, body: { description: null } });
    expect(vendor.status).toBe(200);
    check("updateVendor", 200, vendor.body);
    const policy = await t.rest("PATCH", `/v1/policies/${org.policyIds[0]}`, { key, body: { name: "Renamed" } });
    expect(policy.status).toBe(200);
    check("updatePolicy", 200, policy.body);
    const draft = await t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions`, { key, body: {} });
    const submitted = await t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions/${draft.body.versionId}/submit`, {
      key,
      body: { approverId: org.memberIds[0] },
    });
    expect(submitted.status).toBe(200);
    check("submitPolicyVersion", 200, submitted.body);
    const forbidden = await t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions/${draft.body.versionId}/approve`, { key });
    expect(forbidden.status).toBe(403);
    check("approvePolicyVersion", 403, forbidden.body);
    const deleted = await t.rest("DELETE", `/v1/task-management/${org.taskItemIds[1]}`, { key });
    expect(deleted.status).toBe(204);
    expect(operation("deleteTaskItem").op.responses["204"]?.content).toBeUndefined();
  });
});
