import { createHash } from "node:crypto";
import {
  type GraphQLField,
  type GraphQLOutputType,
  getNamedType,
  isAbstractType,
  isInterfaceType,
  isNonNullType,
  isObjectType,
  isUnionType,
} from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { newId } from "../../src/platform/ids.js";
import { schema } from "../../src/schema.js";
import { openFixture } from "../helpers/fixtures.js";
import { startWebhookReceiver } from "../helpers/webhook-receiver.js";

// Webhook endpoints name a public-looking host that this file resolves itself to a local receiver
// (allowed by WEBHOOK_ALLOWED_CIDRS), so that sendTestWebhook gets a real answer at once.
const receiver = await startWebhookReceiver();
afterAll(() => receiver.stop());
const { t, org } = await openFixture({
  organizations: 1,
  webhooks: {
    options: { allowedCidrs: ["127.0.0.1/32"], httpsOnly: false, timeoutMs: 2_000, resolve: async () => ["127.0.0.1"] },
  },
});
let admin: Record<string, string> = {};
beforeAll(async () => {
  const session = await createSession(t.db, org.userIds[1] as string, 3_600_000);
  admin = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
});

/**
 * Every field of a type and of the records it links to, three levels down, relations and pages
 * included (the graph-only fields too: a stale relation is what a normalized cache would keep).
 */
function selectionOf(type: GraphQLOutputType, depth = 0, aliased = new Set<string>(), prefix = ""): string {
  const named = getNamedType(type);
  if (isUnionType(named)) {
    // Fields of one name and different types in two members (status) need an alias each.
    const typesOf = new Map<string, Set<string>>();
    for (const member of named.getTypes())
      for (const f of Object.values(member.getFields())) typesOf.set(f.name, (typesOf.get(f.name) ?? new Set()).add(`${f.type}`));
    const conflicting = new Set([...typesOf].filter(([, types]) => types.size > 1).map(([name]) => name));
    return `{ __typename ${named
      .getTypes()
      .map((member) => `... on ${member.name} ${selectionOf(member, depth, conflicting, member.name.toLowerCase())}`)
      .join(" ")} }`;
  }
  if (!isObjectType(named) && !isInterfaceType(named)) return "";
  const parts = ["__typename"];
  for (const field of Object.values(named.getFields())) {
    if (field.args.some((a) => isNonNullType(a.type) && a.defaultValue === undefined)) continue;
    const fieldType = getNamedType(field.type);
    const key = aliased.has(field.name) ? `${prefix}_${field.name}: ${field.name}` : field.name;
    if (isObjectType(fieldType) || isAbstractType(fieldType)) {
      if (depth < 3) parts.push(`${key} ${selectionOf(field.type, depth + 1)}`);
    } else parts.push(key);
  }
  return `{ ${parts.join(" ")} }`;
}

const mutations = schema.getMutationType()?.getFields() ?? {};

function mutationDocument(field: GraphQLField<unknown, unknown>, variables: Record<string, unknown>, selection: string) {
  const given = field.args.filter((a) => a.name in variables);
  const definitions = given.map((a) => `$${a.name}: ${a.type}`).join(", ");
  const call = given.map((a) => `${a.name}: $${a.name}`).join(", ");
  return `mutation${definitions ? `(${definitions})` : ""} { ${field.name}${call ? `(${call})` : ""} ${selection} }`;
}

/** The record as a fresh request reads it, with the same selection. */
async function freshRead(id: string, typeName: string, selection: string) {
  const res = await t.gql(`query($id: ID!) { node(id: $id) { ... on ${typeName} ${selection} } }`, { id }, { key: org.apiKey });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data.node;
}

/**
 * Two levels for a payload whose three cost past the query limit (an evidence request's control and
 * vendor each page their lists, whose records page theirs), three for the others.
 */
const payloadSelection = (field: GraphQLField<unknown, unknown>) =>
  selectionOf(field.type, getNamedType(field.type).name === "EvidenceRequest" ? 1 : 0);

async function run(name: string, variables: Record<string, unknown>, headers: Record<string, string> = {}) {
  const field = mutations[name];
  if (!field) throw new Error(`no mutation ${name}`);
  const selection = payloadSelection(field);
  // A session or an evidence request's link token is the call's only credential.
  const res = await t.gql(mutationDocument(field, variables, selection), variables, {
    key: headers.authorization || headers["x-evidence-request-token"] ? undefined : org.apiKey,
    headers,
  });
  expect(res.status).toBe(200);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return { answer: res.body.data[name], field };
}

const gqlId = async (query: string, variables: Record<string, unknown>) => {
  const res = await t.gql(query, variables, { key: org.apiKey });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return Object.values(res.body.data)[0] as Record<string, unknown>;
};
const newComment = async () =>
  (
    await gqlId(
      'mutation($e: ID!, $u: ID) { createComment(content: "first", entityId: $e, entityType: vendor, userId: $u) { id } }',
      { e: org.vendorIds[0], u: org.userIds[0] },
    )
  ).id as string;
const newPolicy = async () =>
  (await gqlId('mutation { createPolicy(name: "Payloads", content: [{ type: "p" }]) { id } }', {})).id as string;
const newDraft = async (id: string) =>
  (await gqlId("mutation($id: ID!) { createPolicyVersion(id: $id) { versionId } }", { id })).versionId as string;
async function inReview() {
  const id = await newPolicy();
  const versionId = await newDraft(id);
  await gqlId("mutation($id: ID!, $v: ID!, $a: ID!) { submitPolicyVersion(id: $id, versionId: $v, approverId: $a) { id } }", {
    id,
    v: versionId,
    a: org.memberIds[1],
  });
  return { id, versionId };
}
const unique = () => Math.random().toString(36).slice(2, 8);
/** A new endpoint of `org`, sent only the types given (so that the file's other writes add nothing to its log). */
const newEndpoint = async (eventTypes = ["risk.created"]) =>
  (
    await gqlId("mutation($url: String!, $types: [String!]) { createWebhookEndpoint(url: $url, eventTypes: $types) { id } }", {
      url: `http://hooks.payloads.example:${receiver.port}/${unique()}`,
      types: eventTypes,
    })
  ).id as string;
/** An endpoint with one delivery in its log (of a new comment), as the request left it: pending, no worker runs here. */
async function withDelivery() {
  const endpointId = await newEndpoint(["comment.created"]);
  await newComment();
  const [delivery] = await t.db.webhookDelivery.findMany({ where: { endpointId } });
  expect(delivery?.status).toBe("pending");
  return { endpointId, deliveryId: delivery?.id as string };
}

// Controls and evidence (contract section 16)
const newControl = async () =>
  (await gqlId('mutation($c: String!) { createControl(code: $c, name: "Payloads") { id } }', { c: `PL-${unique()}` }))
    .id as string;
let requirementId: string | undefined;
let frameworkOfRequirement: string | undefined;
/** The organization's own framework of one requirement. */
async function ownFramework() {
  await requirement();
  return frameworkOfRequirement as string;
}
async function requirement() {
  if (requirementId) return requirementId;
  const frameworkId = newId("fw");
  frameworkOfRequirement = frameworkId;
  requirementId = newId("req");
  await t.db.framework.create({
    data: {
      id: frameworkId,
      organizationId: org.organizationId,
      key: frameworkId,
      name: "Payloads",
      version: "1",
      requirements: { create: [{ id: requirementId, ref: "PL-1", title: "Payloads", position: 0 }] },
    },
  });
  return requirementId;
}
/** An upload of the org's key (or of another credential), its bytes sent. */
async function uploaded(credential: { key?: string; headers?: Record<string, string> } = { key: org.apiKey }) {
  const bytes = Buffer.from(`%PDF-1.7\n${unique()}\n`);
  const created = await t.rest("POST", "/v1/attachment-uploads", {
    ...credential,
    body: {
      fileName: "evidence.pdf",
      fileType: "application/pdf",
      size: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("base64"),
    },
  });
  const put = await t.app.fetch(
    new Request(created.body.uploadUrl, { method: "PUT", headers: created.body.headers, body: new Uint8Array(bytes) }),
  );
  expect(put.status).toBe(200);
  return created.body.id as string;
}
/** Evidence of a new control, set back to submitted so that it can be reviewed. */
async function submittedEvidence() {
  const evidence = await gqlId("mutation($c: ID!, $u: ID!) { addEvidence(controlId: $c, uploadId: $u) { id } }", {
    c: await newControl(),
    u: await uploaded(),
  });
  await t.db.evidence.update({ where: { id: evidence.id as string }, data: { status: "submitted" } });
  return evidence.id as string;
}
// Evidence requests (contract section 17)
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const withToken = (token: string) => ({ "x-evidence-request-token": token });
/** A new open request for the org's first vendor, and the token of its link. */
async function newEvidenceRequest() {
  const created = await gqlId(
    'mutation($v: ID!, $d: DateTime!) { createEvidenceRequest(vendorId: $v, title: "Payloads", recipientEmail: "security@vendor.example", dueAt: $d) { id url } }',
    { v: org.vendorIds[0], d: inDays(10) },
  );
  const url = created.url as string;
  return { id: created.id as string, token: url.slice(url.lastIndexOf("/") + 1) };
}
/** A request whose recipient sent one file through the link, awaiting review. */
async function submittedEvidenceRequest() {
  const { id, token } = await newEvidenceRequest();
  const uploadId = await uploaded({ headers: withToken(token) });
  const res = await t.gql(
    "mutation($u: [ID!]!) { submitEvidenceRequest(uploadIds: $u) { status } }",
    { u: [uploadId] },
    { headers: withToken(token) },
  );
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  expect(res.body.data.submitEvidenceRequest.status).toBe("submitted");
  return id;
}
/** A framework document of the organization's own (the plain JSON format): a group and two requirements. */
const frameworkDocument = (key: string) =>
  JSON.stringify({
    key,
    name: "Payloads",
    version: "2026",
    requirements: [
      { ref: "AC", title: "Access", assessable: false },
      { ref: "AC-1", title: "Access reviews", parent: "AC" },
      { ref: "AC-2", title: "Privileged access", parent: "AC" },
    ],
  });

/** A download URL is made anew at each read (its expiry moves): compared without it. */
function withoutUrls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutUrls);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => k !== "downloadUrl")
        .map(([k, v]) => [k, withoutUrls(v)]),
    );
  }
  return value;
}

type Case = () => Promise<{ variables: Record<string, unknown>; headers?: Record<string, string> }>;

/** How to call each mutation of the schema; a mutation missing here fails the coverage test. */
const cases: Record<string, Case> = {
  createComment: async () => ({
    variables: { content: "Looks fine", entityId: org.vendorIds[0], entityType: "vendor", userId: org.userIds[0] },
  }),
  updateComment: async () => ({ variables: { id: await newComment(), content: "Edited", userId: org.userIds[0] } }),
  // Contract section 15: the bytes of "hello".
  createAttachmentUpload: async () => ({
    variables: {
      fileName: "Bridge letter.pdf",
      fileType: "application/pdf",
      size: 5,
      sha256: createHash("sha256").update("hello").digest("base64"),
    },
  }),
  deleteComment: async () => ({ variables: { id: await newComment(), userId: org.userIds[0] } }),
  createMember: async () => ({ variables: { email: `new.${unique()}@example.com`, name: "New Person", role: "employee" } }),
  updateMember: async () => ({ variables: { id: org.memberIds[3], jobTitle: `Engineer ${unique()}` } }),
  unlinkDevice: async () => ({ variables: { id: org.memberIds[3] } }),
  createPolicy: async () => ({ variables: { name: "Backups", content: [{ type: "p" }] } }),
  updatePolicy: async () => ({ variables: { id: await newPolicy(), name: "Renamed" } }),
  createPolicyVersion: async () => ({ variables: { id: await newPolicy(), changelog: "Tighten" } }),
  submitPolicyVersion: async () => {
    const id = await newPolicy();
    return { variables: { id, versionId: await newDraft(id), approverId: org.memberIds[1] } };
  },
  approvePolicyVersion: async () => ({ variables: await inReview(), headers: admin }),
  rejectPolicyVersion: async () => ({ variables: { ...(await inReview()), reason: "Too vague" }, headers: admin }),
  createTask: async () => ({ variables: { title: "Rotate keys", assigneeId: org.memberIds[3] } }),
  updateTask: async () => ({ variables: { taskId: org.taskIds[0], status: "in_progress", assigneeId: org.memberIds[2] } }),
  createTaskItem: async () => ({ variables: { title: "Ask for SOC 2", entityId: org.vendorIds[0], entityType: "vendor" } }),
  updateTaskItem: async () => ({ variables: { id: org.taskItemIds[0], status: "done" } }),
  deleteTaskItem: async () => ({
    variables: {
      id: (
        await gqlId('mutation($e: ID!) { createTaskItem(title: "Temporary", entityId: $e, entityType: vendor) { id } }', {
          e: org.vendorIds[0],
        })
      ).id,
    },
  }),
  createVendor: async () => ({ variables: { name: "Acme Cloud" } }),
  updateVendor: async () => ({ variables: { id: org.vendorIds[1] ?? org.vendorIds[0], name: `Acme ${unique()}` } }),
  createRisk: async () => ({ variables: { title: "Key leak" } }),
  updateRisk: async () => ({ variables: { id: org.riskIds[0], title: `Key leak ${unique()}` } }),
  // The inbox is personal: the admin's own, which the review steps above write to.
  markNotificationsRead: async () => ({ variables: { all: true }, headers: admin }),
  updateNotificationPreferences: async () => ({ variables: { email: { assigned: Math.random() < 0.5 } }, headers: admin }),
  // Webhooks (contract section 12)
  createWebhookEndpoint: async () => ({
    variables: {
      url: `http://hooks.payloads.example:${receiver.port}/created`,
      description: "SIEM",
      eventTypes: ["policy.*", "comment.created"],
    },
  }),
  updateWebhookEndpoint: async () => ({
    variables: { id: await newEndpoint(), description: `Chat ${unique()}`, eventTypes: ["task.*"], enabled: false },
  }),
  deleteWebhookEndpoint: async () => ({ variables: { id: await newEndpoint() } }),
  rotateWebhookEndpointSecret: async () => ({ variables: { id: await newEndpoint() } }),
  sendTestWebhook: async () => ({ variables: { id: await newEndpoint() } }),
  createControl: async () => ({
    variables: { code: `PL-${unique()}`, name: "Backups", ownerId: org.memberIds[3], evidenceEveryDays: 90 },
  }),
  updateControl: async () => ({ variables: { id: await newControl(), name: "Renamed", evidenceEveryDays: 30 } }),
  deleteControl: async () => ({ variables: { id: await newControl() } }),
  mapControl: async () => ({ variables: { controlId: await newControl(), requirementIds: [await requirement()] } }),
  unmapControl: async () => {
    const controlId = await newControl();
    await gqlId("mutation($c: ID!, $r: [ID!]!) { mapControl(controlId: $c, requirementIds: $r) { id } }", {
      c: controlId,
      r: [await requirement()],
    });
    return { variables: { controlId, requirementId: await requirement() } };
  },
  linkControl: async () => ({
    variables: { controlId: await newControl(), policyIds: [org.policyIds[0]], taskIds: [org.taskIds[0]] },
  }),
  unlinkControl: async () => {
    const controlId = await newControl();
    await gqlId("mutation($c: ID!, $t: [ID!]) { linkControl(controlId: $c, taskIds: $t) { id } }", {
      c: controlId,
      t: org.taskIds,
    });
    return { variables: { controlId, taskIds: [org.taskIds[0]] } };
  },
  addEvidence: async () => ({
    variables: { controlId: await newControl(), uploadId: await uploaded(), description: "Restore test" },
  }),
  addVendorEvidence: async () => ({
    variables: { vendorId: org.vendorIds[0], uploadId: await uploaded(), validUntil: "2030-01-01T00:00:00.000Z" },
  }),
  acceptEvidence: async () => ({ variables: { id: await submittedEvidence() } }),
  rejectEvidence: async () => ({ variables: { id: await submittedEvidence(), reason: "Blurry" } }),
  deleteEvidence: async () => ({ variables: { id: await submittedEvidence() } }),
  adoptFramework: async () => ({ variables: { frameworkId: await ownFramework() } }),
  withdrawFramework: async () => {
    const frameworkId = await ownFramework();
    await gqlId("mutation($f: ID!) { adoptFramework(frameworkId: $f) { id } }", { f: frameworkId });
    return { variables: { frameworkId } };
  },
  setRequirementApplicability: async () => {
    await gqlId("mutation($f: ID!) { adoptFramework(frameworkId: $f) { id } }", { f: await ownFramework() });
    return { variables: { requirementId: await requirement(), applicable: false, justification: "No card data" } };
  },
  importFramework: async () => ({ variables: { format: "json", document: frameworkDocument(`payloads-${unique()}`) } }),
  importRequirementMapping: async () => {
    const key = `payloads-${unique()}`;
    await gqlId("mutation($d: String!) { importFramework(format: json, document: $d) { id } }", { d: frameworkDocument(key) });
    const document = JSON.stringify({
      source: key,
      target: "soc2-tsc-2017",
      mappings: [
        { sourceRef: "AC-1", targetRef: "CC6.2", relationship: "subset" },
        { sourceRef: "AC-2", targetRef: "CC6.3", relationship: "equal" },
      ],
    });
    return { variables: { document } };
  },
  createEvidenceRequest: async () => ({
    variables: {
      controlId: await newControl(),
      title: "Quarterly access review",
      instructions: "The export of the review and its sign-off.",
      recipientEmail: "auditor@firm.example",
      recipientName: "The Auditor",
      dueAt: inDays(5),
      expiresAt: inDays(20),
    },
  }),
  cancelEvidenceRequest: async () => ({ variables: { id: (await newEvidenceRequest()).id } }),
  resendEvidenceRequest: async () => ({ variables: { id: (await newEvidenceRequest()).id } }),
  acceptEvidenceRequest: async () => ({ variables: { id: await submittedEvidenceRequest() } }),
  rejectEvidenceRequest: async () => ({ variables: { id: await submittedEvidenceRequest(), reason: "Last year's report" } }),
  // The recipient's call: the link token is its only credential.
  submitEvidenceRequest: async () => {
    const { token } = await newEvidenceRequest();
    return {
      variables: { uploadIds: [await uploaded({ headers: withToken(token) })], note: "The 2026 report" },
      headers: withToken(token),
    };
  },
  redeliverWebhook: async () => {
    const { deliveryId } = await withDelivery();
    // As the worker leaves a delivery it gave up on.
    await t.db.webhookDelivery.update({
      where: { id: deliveryId },
      data: { status: "failed", attempts: 1, responseStatus: 500, nextAttemptAt: null, lastAttemptAt: new Date() },
    });
    return { variables: { id: deliveryId } };
  },
  replayWebhookEndpoint: async () => {
    const { endpointId, deliveryId } = await withDelivery();
    await t.db.webhookDelivery.update({ where: { id: deliveryId }, data: { status: "failed", nextAttemptAt: null } });
    return { variables: { id: endpointId, since: new Date(Date.now() - 60_000).toISOString() } };
  },
  // The audit chain (contract section 14)
  createAuditCheckpoint: async () => ({ variables: {} }),
};

/** A query's one field as a fresh request reads it, with `org`'s key. */
async function freshField(query: string, variables: Record<string, unknown>) {
  const res = await t.gql(query, variables, { key: org.apiKey });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return Object.values(res.body.data)[0] as Record<string, unknown>;
}

/** The caller's inbox as a fresh request reads it: the records without an id of their own. */
async function freshPersonal(query: string, headers: Record<string, string>) {
  const res = await t.gql(query, {}, { headers });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data;
}

describe("mutation payloads", () => {
  it("covers every mutation of the schema", () => {
    expect(Object.keys(cases).sort()).toEqual(Object.keys(mutations).sort());
  });

  for (const name of Object.keys(mutations)) {
    it(`${name} answers the state after its write, equal to a fresh read`, async () => {
      const setup = cases[name];
      if (!setup) throw new Error(`no case for ${name}: add one`);
      const { variables, headers } = await setup();
      const { answer, field } = await run(name, variables, headers);
      const typeName = getNamedType(field.type).name;
      if (typeName === "PolicyVersionCreated") {
        const selection = selectionOf(schema.getType("PolicyVersion") as GraphQLOutputType, 1);
        expect(answer.policyVersion).toEqual(await freshRead(answer.versionId, "PolicyVersion", selection));
        expect(answer.policyVersion.status).toBe("draft");
      } else if (typeName === "WebhookEndpoint" || typeName === "WebhookEndpointWithSecret") {
        // No read shows the secret: the payload is the endpoint as webhookEndpoint(id) reads it, and the secret.
        const selection = selectionOf(schema.getType("WebhookEndpoint") as GraphQLOutputType);
        const { secret, ...endpoint } = answer;
        const fresh = await freshField(`query($id: ID!) { webhookEndpoint(id: $id) ${selection} }`, { id: answer.id });
        expect({ ...endpoint, __typename: "WebhookEndpoint" }).toEqual(fresh);
        expect(answer.id).toMatch(/^whe_/);
        const stored = await t.db.webhookEndpoint.findUniqueOrThrow({ where: { id: answer.id } });
        if (typeName === "WebhookEndpointWithSecret") {
          // The secret answered is the one that signs from now on.
          expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
          expect(stored.secret).toBe(secret);
          if (name === "rotateWebhookEndpointSecret") expect(stored.previousSecret).toMatch(/^whsec_/);
        } else expect(answer).toMatchObject({ enabled: false, disabledReason: "manual", eventTypes: ["task.*"] });
      } else if (typeName === "AttachmentUpload") {
        // No query reads an upload back: the answer is the stored upload, and what its URL admits.
        const stored = await t.db.attachmentUpload.findUniqueOrThrow({ where: { id: answer.id } });
        expect(answer.id).toMatch(/^upl_/);
        expect(stored).toMatchObject({
          organizationId: org.organizationId,
          fileName: "Bridge letter.pdf",
          size: 5,
          attachmentId: null,
        });
        expect(stored.sha256).toBe(createHash("sha256").update("hello").digest("hex"));
        expect(new Date(answer.expiresAt).getTime()).toBe(stored.expiresAt.getTime());
        expect(answer).toMatchObject({ method: "PUT", headers: { "Content-Type": "application/pdf", "Content-Length": "5" } });
        const put = await t.app.yoga.fetch(
          new Request(answer.uploadUrl, { method: "PUT", headers: answer.headers, body: "hello" }),
        );
        expect(put.status).toBe(200);
      } else if (typeName === "WebhookDelivery") {
        const selection = selectionOf(field.type);
        const log = await freshField(`query($id: ID!) { webhookDeliveries(id: $id, limit: 100) { items ${selection} } }`, {
          id: answer.endpointId,
        });
        expect((log.items as { id: string }[]).find((d) => d.id === answer.id)).toEqual(answer);
        if (name === "sendTestWebhook") {
          expect(answer).toMatchObject({ eventType: "webhook.test", status: "succeeded", attempts: 1, responseStatus: 200 });
        } else expect(answer).toMatchObject({ status: "pending", nextAttemptAt: expect.any(String) });
      } else if (typeName === "WebhookReplay") {
        const count = async (status: string) =>
          (
            await freshField(
              "query($id: ID!, $s: [WebhookDeliveryStatus!]) { webhookDeliveries(id: $id, filter: { status: $s }) { totalCount } }",
              {
                id: variables.id,
                s: [status],
              },
            )
          ).totalCount;
        expect(answer.queued).toBe(1);
        expect(await count("pending")).toBe(answer.queued);
        expect(await count("failed")).toBe(0);
      } else if (typeName === "DeletedWebhookEndpoint") {
        const res = await t.gql("query($id: ID!) { webhookEndpoint(id: $id) { id } }", { id: answer.id }, { key: org.apiKey });
        expect(res.body.data.webhookEndpoint).toBeNull();
        expect(res.body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
        expect(answer.id).toBe(variables.id);
      } else if (typeName === "AuditCheckpoint") {
        const selection = selectionOf(field.type);
        const list = await freshField(
          `{ auditCheckpoints(limit: 100, orderBy: { field: createdAt, direction: desc }) { items ${selection} } }`,
          {},
        );
        expect((list.items as { id: string }[]).find((c) => c.id === answer.id)).toEqual(answer);
        // It states the chain as it is now: its last event's sequence and hash.
        const head = await t.db.auditEvent.findFirstOrThrow({
          where: { organizationId: org.organizationId },
          orderBy: { sequence: "desc" },
        });
        expect(answer).toMatchObject({ organizationId: org.organizationId, sequence: head.sequence, hash: head.hash });
      } else if (typeName === "Control" || typeName === "Evidence" || typeName === "Framework") {
        const root = typeName.toLowerCase();
        const selection = selectionOf(field.type);
        const fresh = await freshField(`query($id: ID!) { ${root}(id: $id) ${selection} }`, { id: answer.id });
        expect(withoutUrls(answer)).toEqual(withoutUrls(fresh));
      } else if (typeName === "EvidenceRequest") {
        const selection = payloadSelection(field);
        const { url: freshUrl, ...fresh } = await freshField(`query($id: ID!) { evidenceRequest(id: $id) ${selection} }`, {
          id: answer.id,
        });
        // The link is answered once, by the write that makes it: no read shows it.
        const { url, ...request } = answer;
        expect(freshUrl).toBeNull();
        if (name === "createEvidenceRequest" || name === "resendEvidenceRequest") {
          expect(url).toMatch(/^http:\/\/test\/requests\/[A-Za-z0-9_-]{43}$/);
        } else expect(url).toBeNull();
        expect(withoutUrls(request)).toEqual(withoutUrls(fresh));
        const status = {
          createEvidenceRequest: "open",
          resendEvidenceRequest: "open",
          cancelEvidenceRequest: "cancelled",
          acceptEvidenceRequest: "accepted",
          rejectEvidenceRequest: "rejected",
        }[name];
        expect(answer.status).toBe(status);
      } else if (typeName === "CurrentEvidenceRequest") {
        // The recipient's page, read again with the same link token.
        const res = await t.gql(`{ currentEvidenceRequest ${selectionOf(field.type)} }`, {}, { headers });
        expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
        expect(answer).toEqual(res.body.data.currentEvidenceRequest);
        expect(answer).toMatchObject({ status: "submitted", files: [{ status: "submitted" }] });
      } else if (typeName === "RequirementMappingSet") {
        // No query reads a mapping set back: the answer names the frameworks as read, and counts the mappings stored between them.
        const framework = (id: string) => freshField("query($id: ID!) { framework(id: $id) { key } }", { id });
        expect(answer.sourceKey).toBe((await framework(answer.sourceFrameworkId)).key);
        expect(answer.targetKey).toBe((await framework(answer.targetFrameworkId)).key);
        const stored = await t.db.requirementMapping.count({
          where: {
            organizationId: org.organizationId,
            source: { frameworkId: answer.sourceFrameworkId },
            target: { frameworkId: answer.targetFrameworkId },
          },
        });
        expect(stored).toBe(JSON.parse(variables.document as string).mappings.length);
        expect(answer).toMatchObject({ targetKey: "soc2-tsc-2017", mappingCount: stored });
      } else if (typeName === "Requirement") {
        // A requirement is read under its framework, whose one requirement it is (a page of one: its full selection is dear).
        const selection = selectionOf(field.type);
        const page = await freshField(`query($id: ID!) { frameworkRequirements(id: $id, limit: 1) { items ${selection} } }`, {
          id: answer.frameworkId,
        });
        expect((page.items as { id: string }[]).find((r) => r.id === answer.id)).toEqual(answer);
      } else if (typeName === "DeleteControlPayload" || typeName === "DeleteEvidencePayload") {
        const root = typeName === "DeleteControlPayload" ? "control" : "evidence";
        const res = await t.gql(`query($id: ID!) { ${root}(id: $id) { id } }`, { id: answer.deletedId }, { key: org.apiKey });
        expect(res.body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
        expect(answer.deletedId).toBe(variables.id);
      } else if (typeName.startsWith("Delete")) {
        expect(await freshRead(answer.deletedId, "Node", "{ id }")).toBeNull();
        const entityType = answer.entity.__typename;
        const entitySelection = selectionOf(schema.getType(entityType) as GraphQLOutputType, 1);
        // Fields of one name and different types in two union members are aliased `<member>_<field>`.
        const entity = Object.fromEntries(Object.entries(answer.entity).map(([k, v]) => [k.replace(/^[a-z]+_/, ""), v]));
        expect(entity).toEqual(await freshRead(answer.entity.id, entityType, entitySelection));
      } else if (typeName === "MarkNotificationsReadPayload") {
        const fresh = await freshPersonal("{ notifications(filter: { unread: true }) { totalCount } }", headers ?? {});
        expect(answer.unreadCount).toBe(fresh.notifications.totalCount);
      } else if (typeName === "NotificationPreferences") {
        const selection = selectionOf(field.type);
        expect(answer).toEqual(
          (await freshPersonal(`{ notificationPreferences ${selection} }`, headers ?? {})).notificationPreferences,
        );
      } else {
        expect(answer.id).toEqual(expect.any(String));
        expect(answer).toEqual(await freshRead(answer.id, typeName, selectionOf(field.type)));
      }
    });
  }
});

describe("what a cache learns from a payload", () => {
  it("a review step answers the policy's new status and current version", async () => {
    const select = "{ id status policy { id status currentVersion { id status } } }";
    const { id, versionId } = await inReview();
    const rejected = await t.gql(
      `mutation($id: ID!, $v: ID!) { rejectPolicyVersion(id: $id, versionId: $v, reason: "Vague") ${select} }`,
      { id, v: versionId },
      { headers: admin },
    );
    expect(rejected.body.data.rejectPolicyVersion).toMatchObject({ status: "draft", policy: { status: "published" } });
    const submitted = await t.gql(
      `mutation($id: ID!, $v: ID!, $a: ID!) { submitPolicyVersion(id: $id, versionId: $v, approverId: $a) ${select} }`,
      { id, v: versionId, a: org.memberIds[1] },
      { key: org.apiKey },
    );
    expect(submitted.body.data.submitPolicyVersion).toMatchObject({ status: "in_review", policy: { status: "needs_review" } });
    const approved = await t.gql(
      `mutation($id: ID!, $v: ID!) { approvePolicyVersion(id: $id, versionId: $v) ${select} }`,
      { id, v: versionId },
      { headers: admin },
    );
    expect(approved.body.data.approvePolicyVersion).toEqual({
      id: versionId,
      status: "published",
      policy: { id, status: "published", currentVersion: { id: versionId, status: "published" } },
    });
  });

  it("createComment answers the comment with its entity, whose page shows it; deleteComment answers the page without it", async () => {
    const select = "entity { ... on Vendor { id comments(limit: 1) { totalCount items { id } } } }";
    const created = await t.gql(
      `mutation($e: ID!, $u: ID) { createComment(content: "New", entityId: $e, entityType: vendor, userId: $u) { id ${select} } }`,
      { e: org.vendorIds[0], u: org.userIds[0] },
      { key: org.apiKey },
    );
    const comment = created.body.data.createComment;
    expect(comment.entity.comments.items).toEqual([{ id: comment.id }]);
    const deleted = await t.gql(
      `mutation($id: ID!, $u: ID) { deleteComment(id: $id, userId: $u) { deletedId ${select} } }`,
      { id: comment.id, u: org.userIds[0] },
      { key: org.apiKey },
    );
    const payload = deleted.body.data.deleteComment;
    expect(payload.deletedId).toBe(comment.id);
    expect(payload.entity.comments.totalCount).toBe(comment.entity.comments.totalCount - 1);
    expect(payload.entity.comments.items).not.toContainEqual({ id: comment.id });
  });
});

describe("several mutations in one document", () => {
  it("each reads the records as the mutations before it left them, never from their loaders' cache", async () => {
    const page = "entity { ... on Vendor { comments(limit: 5) { totalCount items { id } } taskItemStats { total } } }";
    const res = await t.gql(
      `mutation($e: ID!, $u: ID) {
        a: createComment(content: "First", entityId: $e, entityType: vendor, userId: $u) { id ${page} }
        b: createComment(content: "Second", entityId: $e, entityType: vendor, userId: $u) { id ${page} }
      }`,
      { e: org.vendorIds[1], u: org.userIds[0] },
      { key: org.apiKey },
    );
    expect(res.body.errors).toBeUndefined();
    const { a, b } = res.body.data;
    // b's vendor page was loaded (and cached) under a: b must show its own comment too.
    expect(b.entity.comments.totalCount).toBe(a.entity.comments.totalCount + 1);
    expect(b.entity.comments.items[0]).toEqual({ id: b.id });
    expect(b.entity.comments.items[1]).toEqual({ id: a.id });
  });
});
