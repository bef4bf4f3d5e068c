/**
 * Isolation matrix: organization B tries every id-taking operation on organization A's ids.
 *
 * Rows: every argument of type ID of every root Query, Mutation and Subscription field (found in
 * the schema, input objects included: createComment's attachments[].userId), called with each of
 * A's ids of that kind. Columns: both transports (the REST route of the field from the route table,
 * and GraphQL) times every credential kind of B (API key with every scope, JWT of B's owner,
 * session of B's owner as bearer token and as cookie).
 *
 * Expected: 404 NOT_FOUND, exactly like a missing record (400 only where an attempt says so),
 * never an answer carrying A's data; A's rows (every table with organizationId, A's organization,
 * its members' users and their sessions, read as PostgreSQL's own JSON of each row) byte-identical
 * after every attempt. With a user credential createComment ignores `userId` by design (the caller
 * is the author): that attempt may succeed, but then the author is B's owner, never A's member.
 *
 * A's ids of every other kind (a vendor's id as a taskId), with B's API key, are 404 or 400 as a
 * missing record is: the embedded run only (`npm test`), since no database has the id in the
 * argument's table; A's ids of the argument's kind, and A's entities named with their own
 * entityType (a policy's id as a task item's entityId), on both.
 *
 * Also: B's user credentials (and B's API key) naming A in X-Organization-Id are 403 on every
 * operation; an Idempotency-Key A used never replays A's answer to B; B's lists never show A's records,
 * nor B's audit export A's events.
 */

import { randomBytes } from "node:crypto";
import { type GraphQLArgument, type GraphQLField, type GraphQLInputType, getNamedType, isInputObjectType } from "graphql";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { newId } from "../../src/platform/ids.js";
import { REST_BASE, restRoutes } from "../../src/rest/routes.js";
import { schema } from "../../src/schema.js";
import { selectionOf } from "../fuzz/arbitraries.js";
import { adopt, makeFramework } from "../helpers/frameworks.js";
import { createTestApp, type TestApp, testJwtSecret, usePostgres } from "../helpers/test-app.js";

type Root = "Query" | "Mutation" | "Subscription";
type CredentialKind = "apiKey" | "jwt" | "session" | "sessionCookie";
const credentialKinds: CredentialKind[] = ["apiKey", "jwt", "session", "sessionCookie"];

type Attempt = {
  /**
   * A row of the wrong kind whose entityType names the id's own kind (A's policy's id as a task
   * item's entityId, with entityType policy): the tenancy filter of that kind decides, so it runs
   * on both databases, as the rows of the right kind do.
   */
  ofItsType?: boolean;
  /** e.g. Query.task */
  field: string;
  /** The ID argument aimed at A, e.g. taskId or attachments.userId */
  arg: string;
  /** A's id in that argument */
  aId: string;
  /** All arguments of the call */
  args: Record<string, unknown>;
  /** createComment's userId (author or an attachment's uploader) with a user credential: ignored by design, so it may succeed as B's owner. */
  authorIgnoredWithUser?: boolean;
  /** An id of the wrong kind for the argument: 400 BAD_USER_INPUT is as good as 404. */
  allow400?: boolean;
  /** node and nodes: another organization's id answers null with no error, as a missing one does. */
  nullWithoutError?: boolean;
  /** `userId` of a comment edit or delete: ignored with a user credential, which is then not the author of B's comment (403). */
  forbiddenWithUser?: boolean;
};

let t: TestApp;
type Webhooks = {
  webhookEndpointIds: string[];
  webhookDeliveryIds: string[];
  webhookSecrets: string[];
  checkpointIds: string[];
  evidenceRequestIds: string[];
  /** A custom framework of the organization's own (adopted), and its requirements (a group and one assessed). */
  frameworkIds: string[];
  requirementIds: string[];
};
let A: SeedResult & {
  versionIds: string[];
  attachmentIds: string[];
  uploadIds: string[];
  commentIds: string[];
  emails: string[];
} & Webhooks &
  Controls;
let B: SeedResult & { versionIds: string[]; draftVersionId: string; commentIds: string[] } & Webhooks & Controls;
type Controls = { controlIds: string[]; controlRequirementIds: string[]; evidenceIds: string[]; uploadIds: string[] };
const headersOfB = {} as Record<CredentialKind, Record<string, string>>;

async function enrich(org: SeedResult) {
  // A comment with an attachment (on a vendor) and a draft version: every kind of id exists.
  const comment = await t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: {
      content: `Confidential note of ${org.organizationId}`,
      entityId: org.vendorIds[0],
      entityType: "vendor",
      userId: org.userIds[1],
      attachments: [
        {
          fileName: "soc2.pdf",
          fileType: "application/pdf",
          fileData: Buffer.from(`%PDF-1.7 ${org.organizationId}`).toString("base64"),
        },
      ],
    },
  });
  expect(comment.status).toBe(201);
  const version = await t.rest("POST", `/v1/policies/${org.policyIds[0]}/versions`, {
    key: org.apiKey,
    body: { changelog: "Draft" },
  });
  expect(version.status).toBe(201);
  // A webhook endpoint (section 12) listening to every type, created before the policy change below,
  // so that the change leaves a delivery in its log; no worker runs here, nothing is sent.
  const endpoint = await t.rest("POST", "/v1/webhook-endpoints", {
    key: org.apiKey,
    body: { url: `https://hooks.example.com/${org.organizationId}`, description: "SIEM" },
  });
  expect(endpoint.status, endpoint.text).toBe(201);
  const updated = await t.rest("PATCH", `/v1/policies/${org.policyIds[0]}`, {
    key: org.apiKey,
    body: { description: `Policy of ${org.organizationId}` },
  });
  expect(updated.status, updated.text).toBe(200);
  // A direct upload not yet attached (section 15): its bytes are never sent, its id is enough.
  const upload = await t.rest("POST", "/v1/attachment-uploads", {
    key: org.apiKey,
    body: {
      fileName: "pentest.pdf",
      fileType: "application/pdf",
      size: 9,
      sha256: "Bxb5Jkyf4Z9ddFUnYQfz3cwdNJf2PWBomnNViuihv14=",
    },
  });
  expect(upload.status, upload.text).toBe(201);
  // A control mapped to a requirement of its own framework, with a policy and a task linked, and
  // evidence submitted by its owner (sections 16 and 17): its file is one of the attachments.
  const frameworkId = newId("fw");
  const requirementId = newId("req");
  await t.db.framework.create({
    data: {
      id: frameworkId,
      organizationId: org.organizationId,
      key: `own-${frameworkId}`,
      name: "Own framework",
      version: "1",
      requirements: { create: [{ id: requirementId, ref: "OWN-1", title: "Own", position: 0 }] },
    },
  });
  const control = await t.rest("POST", "/v1/controls", {
    key: org.apiKey,
    body: { code: "ISO-1", name: `Control of ${org.organizationId}`, ownerId: org.memberIds[3] },
  });
  expect(control.status, control.text).toBe(201);
  await t.rest("POST", `/v1/controls/${control.body.id}/requirements`, {
    key: org.apiKey,
    body: { requirementIds: [requirementId] },
  });
  await t.rest("POST", `/v1/controls/${control.body.id}/links`, {
    key: org.apiKey,
    body: { policyIds: [org.policyIds[0]], taskIds: [org.taskIds[0]] },
  });
  const evidenceFile = newId("att");
  const evidenceId = newId("evd");
  await t.db.attachment.create({
    data: {
      id: evidenceFile,
      organizationId: org.organizationId,
      name: "review.pdf",
      type: "application/pdf",
      size: 1,
      sha256: "0".repeat(64),
      store: "database",
      objectKey: randomBytes(16).toString("hex"),
    },
  });
  await t.db.evidence.create({
    data: {
      id: evidenceId,
      organizationId: org.organizationId,
      controlId: control.body.id,
      attachmentId: evidenceFile,
      collectedAt: new Date(),
      status: "submitted",
      submittedById: org.memberIds[3],
    },
  });
  // An evidence request for a vendor, with its link (section 17).
  const request = await t.rest("POST", "/v1/evidence-requests", {
    key: org.apiKey,
    body: {
      vendorId: org.vendorIds[0],
      title: `Evidence of ${org.organizationId}`,
      recipientEmail: `auditor@${org.organizationId.replace("_", "-")}.example`,
      dueAt: new Date(Date.now() + 5 * 86_400_000).toISOString(),
    },
  });
  expect(request.status, request.text).toBe(201);
  // And a signed checkpoint of its audit chain (section 14).
  const checkpoint = await t.rest("POST", "/v1/audit/checkpoints", { key: org.apiKey });
  expect(checkpoint.status, checkpoint.text).toBe(201);
  const framework = await makeFramework(t.db, { organizationId: org.organizationId, groups: 1, perGroup: 1 });
  await adopt(t.db, org.organizationId, framework.id);
  const where = { where: { organizationId: org.organizationId }, select: { id: true } };
  return {
    frameworkIds: [framework.id],
    requirementIds: [...framework.groups, ...framework.requirements],
    ...org,
    draftVersionId: version.body.versionId as string,
    versionIds: (await t.db.policyVersion.findMany(where)).map((r) => r.id),
    attachmentIds: (await t.db.attachment.findMany(where)).map((r) => r.id),
    uploadIds: [upload.body.id as string],
    commentIds: (await t.db.comment.findMany(where)).map((r) => r.id),
    webhookEndpointIds: [endpoint.body.id as string],
    webhookDeliveryIds: (await t.db.webhookDelivery.findMany(where)).map((r) => r.id),
    webhookSecrets: [endpoint.body.secret as string],
    checkpointIds: [checkpoint.body.id as string],
    controlIds: [control.body.id as string],
    // A requirement of a framework of its own that is not adopted, which its control maps to.
    controlRequirementIds: [requirementId],
    evidenceIds: [evidenceId],
    evidenceRequestIds: [request.body.id as string],
    emails: (
      await t.db.user.findMany({
        where: { memberships: { some: { organizationId: org.organizationId } } },
        select: { email: true },
      })
    ).map((u) => u.email),
  };
}

beforeAll(async () => {
  t = await createTestApp();
  A = await enrich(await t.seedOrg());
  B = await enrich(await t.seedOrg());
  const owner = B.userIds[0] as string;
  const jwt = await new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(owner)
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(testJwtSecret));
  const session = await createSession(t.db, owner, 3_600_000);
  headersOfB.apiKey = { "x-api-key": B.apiKey };
  headersOfB.jwt = { authorization: `Bearer ${jwt}`, "x-organization-id": B.organizationId };
  headersOfB.session = { authorization: `Bearer ${session.token}`, "x-organization-id": B.organizationId };
  headersOfB.sessionCookie = { cookie: `session_token=${session.token}`, "x-organization-id": B.organizationId };
});
afterAll(() => t?.close());

// ---------------------------------------------------------------------------------------------
// A's data, byte for byte

let tablesWithOrganization: string[] | undefined;

/** The tables of A's data, and the statement that selects all of its rows as (tbl, row) pairs. */
async function selectsOfA(): Promise<{ selects: [table: string, where: string][]; rowsOfA: string; versionsOfA: string }> {
  tablesWithOrganization ??= (
    await t.db.$queryRawUnsafe<{ table_name: string }[]>(
      `SELECT table_name FROM information_schema.columns
        WHERE table_schema = current_schema() AND column_name = 'organizationId' ORDER BY table_name`,
    )
  ).map((r) => r.table_name);
  const members = `SELECT "userId" FROM "Member" WHERE "organizationId" = $1`;
  const selects: [table: string, where: string][] = [
    ...tablesWithOrganization.map((table): [string, string] => [table, `x."organizationId" = $1`]),
    ["Organization", "x.id = $1"],
    ["User", `x.id IN (${members})`],
    ["Session", `x."userId" IN (${members})`],
  ];
  // One statement, not one per table: this runs after each of the matrix's calls that wrote something.
  const rowsOfA = selects
    .map(([table, where]) => `SELECT '${table}' AS tbl, to_jsonb(x)::text AS row FROM "${table}" x WHERE ${where}`)
    .join(" UNION ALL ");
  // Where each row version lies and the transaction that wrote it: a write to a row makes a new
  // version, written by a transaction that completed after the baseline, so the pair changes.
  const versionsOfA = selects
    .map(
      ([table, where]) => `SELECT '${table}' AS tbl, x.ctid::text || ' ' || x.xmin::text AS row FROM "${table}" x WHERE ${where}`,
    )
    .join(" UNION ALL ");
  return { selects, rowsOfA, versionsOfA };
}

/**
 * A digest of every row of A (those of `snapshotOf`): equal digests, the same rows; or, with
 * "versions", of where each row version lies and which transaction wrote it. After a call that
 * wrote something (`nextTransactionId`) the matrix compares the versions, then the rows only when
 * a version is new, and reads the rows themselves only when they differ, instead of carrying all
 * of A's rows through Prisma after every call.
 */
async function digestOf(organizationId: string, of: "rows" | "versions" = "rows"): Promise<string> {
  const { rowsOfA, versionsOfA } = await selectsOfA();
  const [result] = await t.db.$queryRawUnsafe<{ digest: string | null }[]>(
    `SELECT md5(string_agg(tbl || ':' || row, E'\n' ORDER BY tbl, row)) AS digest FROM (${of === "rows" ? rowsOfA : versionsOfA}) AS a`,
    organizationId,
  );
  return result?.digest ?? "";
}

/** Every row of A: tables with organizationId, the organization, its members' users and their sessions, as PostgreSQL's JSON. */
async function snapshotOf(organizationId: string): Promise<Record<string, string[]>> {
  const { selects, rowsOfA } = await selectsOfA();
  const rows = await t.db.$queryRawUnsafe<{ tbl: string; row: string }[]>(rowsOfA, organizationId);
  const snapshot: Record<string, string[]> = {};
  for (const [table] of selects) snapshot[table] = [];
  for (const { tbl, row } of rows) snapshot[tbl]?.push(row);
  for (const table of Object.keys(snapshot)) snapshot[table]?.sort();
  return snapshot;
}

/**
 * The first transaction id not yet completed (the current snapshot's xmax). A row is written only
 * by a transaction that took an id, and ids are never reused: while this stays the same, no
 * transaction has committed a write to any table since, so A's rows are as they were. A read (most
 * refused attempts) takes no id, so the digest is computed only after attempts that wrote something.
 */
async function nextTransactionId(): Promise<string> {
  const [result] = await t.db.$queryRawUnsafe<{ next: string }[]>(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next`);
  return result?.next ?? "";
}

let baseline: Record<string, string[]>;
let baselineDigest: string;
/** A's rows were the baseline's when no transaction at or past this id had completed. */
let unchangedBefore: string;
/** A's row versions when its rows were last found equal to the baseline's. */
let unchangedVersions: string;
let digestsCompared = 0;

/** A's rows as they are now become the baseline that later attempts are compared with. */
async function takeBaseline(): Promise<void> {
  unchangedBefore = await nextTransactionId();
  unchangedVersions = await digestOf(A.organizationId, "versions");
  baseline = await snapshotOf(A.organizationId);
  baselineDigest = await digestOf(A.organizationId);
}

/** Which of A's tables changed since the baseline, with the first differing rows. */
async function changesToA(): Promise<string[]> {
  const next = await nextTransactionId();
  if (next === unchangedBefore) return [];
  digestsCompared++;
  // A transaction wrote: none of A's row versions is new (the common case, a write of B's), or
  // they are and their content is still the baseline's (a write that changed nothing).
  const versions = await digestOf(A.organizationId, "versions");
  if (versions === unchangedVersions || (await digestOf(A.organizationId)) === baselineDigest) {
    unchangedBefore = next;
    unchangedVersions = versions;
    return [];
  }
  const now = await snapshotOf(A.organizationId);
  return Object.keys({ ...baseline, ...now }).flatMap((table) => {
    const before = baseline[table] ?? [];
    const after = now[table] ?? [];
    if (JSON.stringify(before) === JSON.stringify(after)) return [];
    const gone = before.filter((r) => !after.includes(r));
    const added = after.filter((r) => !before.includes(r));
    return [`${table}: -${gone.slice(0, 2).join(" ")} +${added.slice(0, 2).join(" ")}`];
  });
}

/** A's data an answer must never carry: every id of A but the one the request named, its e-mails, its comment. */
function leakedOfA(text: string, requested: string): string[] {
  const markers = [
    ...A.userIds,
    ...A.memberIds,
    ...A.taskIds,
    ...A.vendorIds,
    ...A.riskIds,
    ...A.policyIds,
    ...A.taskItemIds,
    ...A.versionIds,
    ...A.attachmentIds,
    ...A.commentIds,
    ...A.webhookEndpointIds,
    ...A.webhookDeliveryIds,
    ...A.webhookSecrets,
    ...A.checkpointIds,
    ...A.controlIds,
    ...A.requirementIds,
    ...A.controlRequirementIds,
    ...A.evidenceIds,
    ...A.emails,
    ...A.evidenceRequestIds,
    `Control of ${A.organizationId}`,
    `Confidential note of ${A.organizationId}`,
    `Evidence of ${A.organizationId}`,
    Buffer.from(`%PDF-1.7 ${A.organizationId}`).toString("base64"),
  ];
  return markers.filter((m) => text.includes(m) && !requested.includes(m));
}

// ---------------------------------------------------------------------------------------------
// The operations that take ids, from the schema

const roots: [Root, Record<string, GraphQLField<unknown, unknown>>][] = [
  ["Query", schema.getQueryType()?.getFields() ?? {}],
  ["Mutation", schema.getMutationType()?.getFields() ?? {}],
  ["Subscription", schema.getSubscriptionType()?.getFields() ?? {}],
];

/** Paths of ID arguments, into input objects and lists: id, entityId, attachments.userId, ... */
function idPaths(type: GraphQLInputType, prefix: string): string[] {
  const named = getNamedType(type);
  if (named.name === "ID") return [prefix];
  if (isInputObjectType(named)) return Object.values(named.getFields()).flatMap((f) => idPaths(f.type, `${prefix}.${f.name}`));
  return [];
}

const idTakingArguments = roots
  .flatMap(
    ([root, fields]) =>
      Object.values(fields).flatMap((field) =>
        field.args.flatMap((arg) => idPaths(arg.type, arg.name).map((path) => `${root}.${field.name}:${path}`)),
      ),
    // A list's filter matches ids rather than looking them up: another organization's id matches
    // nothing (test/integration/lists.test.ts checks that), so it has no 404 to expect here.
    // markNotificationsRead's ids likewise match only the caller's own notifications, and skip
    // the rest without an error (test/integration/notifications-inbox.test.ts checks that).
  )
  // submitEvidenceRequest takes an evidence request's link token as its only credential, which no
  // column of this matrix is: another link's (and organization's) uploads are refused with 404 in
  // test/integration/evidence-requests.test.ts.
  .filter(
    (path) =>
      !path.includes(":filter.") &&
      path !== "Mutation.markNotificationsRead:ids" &&
      path !== "Mutation.submitEvidenceRequest:uploadIds",
  );

function fieldOf(name: string): { root: Root; field: GraphQLField<unknown, unknown> } {
  const [root, fieldName] = name.split(".") as [Root, string];
  const field = roots.find(([r]) => r === root)?.[1][fieldName];
  if (!field) throw new Error(`no field ${name}`);
  return { root, field };
}

// ---------------------------------------------------------------------------------------------
// The attempts

const pdf = { fileName: "x.pdf", fileType: "application/pdf", fileData: "JVBERi0xLjcK" };

/**
 * The matrix rows: each ID argument with each of A's ids of its kind. `wrongKind` adds, per
 * argument, one of A's ids of every other kind (a vendor's id as a taskId...): 404 or 400.
 */
function attempts({ wrongKind = false } = {}): Attempt[] {
  const list: Attempt[] = [];
  const idsOfA: Record<string, string[]> = {
    user: A.userIds,
    member: A.memberIds,
    task: A.taskIds,
    vendor: A.vendorIds,
    risk: A.riskIds,
    policy: A.policyIds,
    policyVersion: A.versionIds,
    taskItem: A.taskItemIds,
    comment: A.commentIds,
    attachment: A.attachmentIds,
    webhookEndpoint: A.webhookEndpointIds,
    webhookDelivery: A.webhookDeliveryIds,
    control: A.controlIds,
    evidenceRequest: A.evidenceRequestIds,
    evidence: A.evidenceIds,
    framework: A.frameworkIds,
    requirement: A.requirementIds,
  };
  const add = (
    field: string,
    arg: string,
    ids: string[],
    args: (id: string) => Record<string, unknown>,
    extra: Partial<Attempt> = {},
  ) => {
    if (!wrongKind) {
      for (const aId of ids) list.push({ field, arg, aId, args: args(aId), ...extra });
      return;
    }
    for (const others of Object.values(idsOfA)) {
      const aId = others[0] as string;
      if (ids.includes(aId)) continue;
      const made = args(aId);
      const ofItsType = entities.some(([id, type]) => id === aId && made.entityType === type);
      list.push({ field, arg, aId, args: made, allow400: true, ...(ofItsType ? { ofItsType } : {}), ...extra });
    }
  };
  const entities = [
    ...A.taskIds.map((id) => [id, "task"] as const),
    ...A.vendorIds.map((id) => [id, "vendor"] as const),
    ...A.riskIds.map((id) => [id, "risk"] as const),
    ...A.policyIds.map((id) => [id, "policy"] as const),
  ];
  const typeOf = (id: string, otherwise: string) => entities.find(([e]) => e === id)?.[1] ?? otherwise;
  const itemEntities = [...A.vendorIds, ...A.riskIds];
  const ownerOfB = B.userIds[0] as string;

  // The five operations
  add("Query.task", "taskId", A.taskIds, (id) => ({ taskId: id }));
  add("Mutation.unlinkDevice", "id", A.memberIds, (id) => ({ id }));
  add("Mutation.createPolicyVersion", "id", A.policyIds, (id) => ({ id, changelog: "B was here" }));
  add("Mutation.createPolicyVersion", "sourceVersionId", A.versionIds, (id) => ({ id: B.policyIds[0], sourceVersionId: id }));
  add("Query.taskItemStats", "entityId", itemEntities, (id) => ({ entityId: id, entityType: typeOf(id, "vendor") }));
  add(
    "Mutation.createComment",
    "entityId",
    entities.map(([id]) => id),
    (id) => ({ content: "B was here", entityId: id, entityType: typeOf(id, "task"), userId: ownerOfB }),
  );
  // A's member as the author (by user id, and by member id), and as an attachment's uploader
  add(
    "Mutation.createComment",
    "userId",
    [...A.userIds, ...A.memberIds],
    (id) => ({ content: "B was here", entityId: B.taskIds[0], entityType: "task", userId: id }),
    { authorIgnoredWithUser: true },
  );
  // An attachment's userId is ignored with a user credential too: the caller uploads.
  add(
    "Mutation.createComment",
    "attachments.userId",
    A.userIds,
    (id) => ({
      content: "B was here",
      entityId: B.taskIds[0],
      entityType: "task",
      userId: ownerOfB,
      attachments: [{ ...pdf, userId: id }],
    }),
    { authorIgnoredWithUser: true },
  );
  // The supporting operations
  add("Query.member", "id", A.memberIds, (id) => ({ id }));
  add("Mutation.updateMember", "id", A.memberIds, (id) => ({ id, jobTitle: "B was here", role: "employee", isActive: false }));
  add("Query.policy", "id", A.policyIds, (id) => ({ id }));
  add("Query.policyVersions", "id", A.policyIds, (id) => ({ id }));
  add("Mutation.updateTask", "taskId", A.taskIds, (id) => ({ taskId: id, title: "B was here", description: null }));
  add("Mutation.updateTaskItem", "id", A.taskItemIds, (id) => ({ id, title: "B was here", status: "canceled" }));
  add("Query.taskItems", "entityId", itemEntities, (id) => ({ entityId: id, entityType: typeOf(id, "vendor") }));
  add("Mutation.createTaskItem", "entityId", itemEntities, (id) => ({
    title: "B was here",
    entityId: id,
    entityType: typeOf(id, "vendor"),
  }));
  add(
    "Query.comments",
    "entityId",
    entities.map(([id]) => id),
    (id) => ({ entityId: id, entityType: typeOf(id, "task") }),
  );
  add("Query.attachment", "id", A.attachmentIds, (id) => ({ id }));
  add("Query.attachmentDownloadUrl", "id", A.attachmentIds, (id) => ({ id }));
  add("Mutation.createComment", "attachments.uploadId", A.uploadIds, (id) => ({
    content: "B was here",
    entityId: B.taskIds[0],
    entityType: "task",
    userId: ownerOfB,
    attachments: [{ uploadId: id }],
  }));
  // One id of each kind: node and nodes read every kind through the same loaders.
  const everyIdOfA = Object.values(idsOfA).map((ids) => ids[0] as string);
  add("Query.node", "id", everyIdOfA, (id) => ({ id }), { nullWithoutError: true });
  add("Query.nodes", "ids", everyIdOfA, (id) => ({ ids: [id, B.taskIds[0]] }), { nullWithoutError: true });
  // The workspace operations (contract section 8)
  add("Query.vendor", "id", A.vendorIds, (id) => ({ id }));
  add("Mutation.updateVendor", "id", A.vendorIds, (id) => ({ id, name: "B was here", description: null }));
  add("Query.risk", "id", A.riskIds, (id) => ({ id }));
  add("Mutation.updateRisk", "id", A.riskIds, (id) => ({ id, title: "B was here", description: null }));
  add("Mutation.updatePolicy", "id", A.policyIds, (id) => ({ id, name: "B was here", description: null }));
  add("Mutation.updateComment", "id", A.commentIds, (id) => ({ id, content: "B was here", userId: ownerOfB }));
  add("Mutation.deleteComment", "id", A.commentIds, (id) => ({ id, userId: ownerOfB }));
  // B's comment is B's second user's: with A's user as the author it is 404, with B's owner's credential 403.
  add("Mutation.updateComment", "userId", A.userIds, (id) => ({ id: B.commentIds[0], content: "B was here", userId: id }), {
    forbiddenWithUser: true,
  });
  add("Mutation.deleteComment", "userId", A.userIds, (id) => ({ id: B.commentIds[0], userId: id }), { forbiddenWithUser: true });
  add("Mutation.deleteTaskItem", "id", A.taskItemIds, (id) => ({ id }));
  add("Mutation.submitPolicyVersion", "id", A.policyIds, (id) => ({
    id,
    versionId: B.draftVersionId,
    approverId: B.memberIds[0],
  }));
  add("Mutation.submitPolicyVersion", "versionId", A.versionIds, (id) => ({
    id: B.policyIds[0],
    versionId: id,
    approverId: B.memberIds[0],
  }));
  add("Mutation.submitPolicyVersion", "approverId", A.memberIds, (id) => ({
    id: B.policyIds[0],
    versionId: B.draftVersionId,
    approverId: id,
  }));
  for (const field of ["Mutation.approvePolicyVersion", "Mutation.rejectPolicyVersion"]) {
    const reason = field.includes("reject") ? { reason: "B was here" } : {};
    add(field, "id", A.policyIds, (id) => ({ id, versionId: B.draftVersionId, ...reason }));
    add(field, "versionId", A.versionIds, (id) => ({ id: B.policyIds[0], versionId: id, ...reason }));
  }
  add("Mutation.createTask", "assigneeId", A.memberIds, (id) => ({ title: "B was here", assigneeId: id }));
  add("Mutation.updateTask", "assigneeId", A.memberIds, (id) => ({ taskId: B.taskIds[0], assigneeId: id }));
  add("Mutation.createTaskItem", "assigneeId", A.memberIds, (id) => ({
    title: "B was here",
    entityId: B.vendorIds[0],
    entityType: "vendor",
    assigneeId: id,
  }));
  add("Mutation.updateTaskItem", "assigneeId", A.memberIds, (id) => ({ id: B.taskItemIds[0], assigneeId: id }));
  add("Mutation.createVendor", "assigneeId", A.memberIds, (id) => ({ name: "B was here", assigneeId: id }));
  add("Mutation.updateVendor", "assigneeId", A.memberIds, (id) => ({ id: B.vendorIds[0], assigneeId: id }));
  add("Mutation.createRisk", "assigneeId", A.memberIds, (id) => ({ title: "B was here", assigneeId: id }));
  add("Mutation.updateRisk", "assigneeId", A.memberIds, (id) => ({ id: B.riskIds[0], assigneeId: id }));
  for (const stream of ["Subscription.commentAdded", "Subscription.commentUpdated", "Subscription.commentDeleted"]) {
    add(
      stream,
      "entityId",
      entities.map(([id]) => id),
      (id) => ({ entityId: id, entityType: typeOf(id, "task") }),
    );
  }
  add("Subscription.policyChanged", "id", A.policyIds, (id) => ({ id }));
  // Webhooks (contract section 12): another organization's endpoint or delivery is 404, as a missing one.
  add("Query.webhookEndpoint", "id", A.webhookEndpointIds, (id) => ({ id }));
  add("Query.webhookDeliveries", "id", A.webhookEndpointIds, (id) => ({ id }));
  add("Mutation.updateWebhookEndpoint", "id", A.webhookEndpointIds, (id) => ({
    id,
    description: "B was here",
    eventTypes: ["comment.*"],
    enabled: false,
  }));
  add("Mutation.deleteWebhookEndpoint", "id", A.webhookEndpointIds, (id) => ({ id }));
  add("Mutation.rotateWebhookEndpointSecret", "id", A.webhookEndpointIds, (id) => ({ id }));
  add("Mutation.sendTestWebhook", "id", A.webhookEndpointIds, (id) => ({ id }));
  add("Mutation.replayWebhookEndpoint", "id", A.webhookEndpointIds, (id) => ({ id, since: "2000-01-01T00:00:00Z" }));
  add("Mutation.redeliverWebhook", "id", A.webhookDeliveryIds, (id) => ({ id }));
  // Evidence requests (contract section 17): another organization's request, control or vendor is 404.
  const due = new Date(Date.now() + 5 * 86_400_000).toISOString();
  const ask = { title: "B was here", recipientEmail: "b@example.com", dueAt: due };
  add("Mutation.createEvidenceRequest", "vendorId", A.vendorIds, (id) => ({ vendorId: id, ...ask }));
  add("Mutation.createEvidenceRequest", "controlId", A.controlIds, (id) => ({ controlId: id, ...ask }));
  add("Query.evidenceRequest", "id", A.evidenceRequestIds, (id) => ({ id }));
  for (const field of ["cancel", "resend", "accept"])
    add(`Mutation.${field}EvidenceRequest`, "id", A.evidenceRequestIds, (id) => ({ id }));
  add("Mutation.rejectEvidenceRequest", "id", A.evidenceRequestIds, (id) => ({ id, reason: "B was here" }));
  // Controls and evidence (contract section 16): A's control, requirement, policy, task, upload,
  // vendor and evidence are 404 to B, in the path and in the body alike.
  const controlOfB = B.controlIds[0] as string;
  add("Query.control", "id", A.controlIds, (id) => ({ id }));
  add("Query.controlEvidence", "controlId", A.controlIds, (id) => ({ controlId: id }));
  add("Mutation.updateControl", "id", A.controlIds, (id) => ({ id, name: "B was here" }));
  add("Mutation.deleteControl", "id", A.controlIds, (id) => ({ id }));
  add("Mutation.createControl", "ownerId", A.memberIds, (id) => ({ code: "B-1", name: "B was here", ownerId: id }));
  add("Mutation.updateControl", "ownerId", A.memberIds, (id) => ({ id: controlOfB, ownerId: id }));
  const controlRequirementsOfA = [...A.controlRequirementIds, ...A.requirementIds];
  add("Mutation.mapControl", "controlId", A.controlIds, (id) => ({ controlId: id, requirementIds: B.controlRequirementIds }));
  add("Mutation.mapControl", "requirementIds", controlRequirementsOfA, (id) => ({ controlId: controlOfB, requirementIds: [id] }));
  add("Mutation.unmapControl", "controlId", A.controlIds, (id) => ({ controlId: id, requirementId: A.controlRequirementIds[0] }));
  add("Mutation.unmapControl", "requirementId", controlRequirementsOfA, (id) => ({ controlId: controlOfB, requirementId: id }));
  for (const field of ["Mutation.linkControl", "Mutation.unlinkControl"]) {
    add(field, "controlId", A.controlIds, (id) => ({ controlId: id, taskIds: [B.taskIds[0]] }));
    add(field, "policyIds", A.policyIds, (id) => ({ controlId: controlOfB, policyIds: [id] }));
    add(field, "taskIds", A.taskIds, (id) => ({ controlId: controlOfB, taskIds: [id] }));
  }
  add("Mutation.addEvidence", "controlId", A.controlIds, (id) => ({ controlId: id, uploadId: B.uploadIds[0] }));
  add("Mutation.addEvidence", "uploadId", A.uploadIds, (id) => ({ controlId: controlOfB, uploadId: id }));
  add("Mutation.addVendorEvidence", "vendorId", A.vendorIds, (id) => ({ vendorId: id, uploadId: B.uploadIds[0] }));
  add("Mutation.addVendorEvidence", "uploadId", A.uploadIds, (id) => ({ vendorId: B.vendorIds[0], uploadId: id }));
  add("Query.vendorEvidence", "vendorId", A.vendorIds, (id) => ({ vendorId: id }));
  add("Query.evidence", "id", A.evidenceIds, (id) => ({ id }));
  add("Mutation.acceptEvidence", "id", A.evidenceIds, (id) => ({ id }));
  add("Mutation.rejectEvidence", "id", A.evidenceIds, (id) => ({ id, reason: "B was here" }));
  add("Mutation.deleteEvidence", "id", A.evidenceIds, (id) => ({ id }));
  // Frameworks (contract section 16): another organization's custom framework or requirement is 404, as a missing one.
  add("Query.framework", "id", A.frameworkIds, (id) => ({ id }));
  add("Query.frameworkRequirements", "id", A.frameworkIds, (id) => ({ id }));
  add("Mutation.adoptFramework", "frameworkId", A.frameworkIds, (id) => ({ frameworkId: id }));
  add("Mutation.withdrawFramework", "frameworkId", A.frameworkIds, (id) => ({ frameworkId: id }));
  add("Mutation.setRequirementApplicability", "requirementId", A.requirementIds, (id) => ({
    requirementId: id,
    applicable: false,
    justification: "B was here",
  }));
  return list;
}

// ---------------------------------------------------------------------------------------------
// Calling an operation on both transports

type Outcome = { status: number; code: string | undefined; text: string; body: unknown };

function argType(field: GraphQLField<unknown, unknown>, name: string): GraphQLArgument {
  const arg = field.args.find((a) => a.name === name);
  if (!arg) throw new Error(`${field.name} has no argument ${name}`);
  return arg;
}

function operation(name: string, args: Record<string, unknown>): string {
  const { root, field } = fieldOf(name);
  const names = Object.keys(args);
  const defs = names.map((n) => `$${n}: ${argType(field, n).type}`).join(", ");
  const call = names.map((n) => `${n}: $${n}`).join(", ");
  return `${root.toLowerCase()} Isolation(${defs}) { ${field.name}(${call}) ${selectionOf(field.type)} }`;
}

async function viaGraphql(name: string, args: Record<string, unknown>, headers: Record<string, string>): Promise<Outcome> {
  const response = await t.app.fetch(
    new Request("http://test/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ query: operation(name, args), variables: args }),
    }),
  );
  const text = await response.text();
  const body = JSON.parse(text);
  return { status: response.status, code: body.errors?.[0]?.extensions?.code, text, body };
}

/** The field's REST route from the route table: path parameters in the path, the rest in the query (GET) or the JSON body. */
function restRequest(name: string, args: Record<string, unknown>): { method: string; path: string; body?: string } {
  const route = restRoutes[name];
  if (!route) throw new Error(`${name} has no REST route`);
  const rest = { ...args };
  const path = route.path.replace(/:(\w+)/g, (_, param: string) => {
    const value = rest[param];
    delete rest[param];
    return encodeURIComponent(String(value));
  });
  if (route.method === "GET" || route.method === "DELETE") {
    const query = new URLSearchParams(Object.entries(rest).map(([k, v]) => [k, String(v)])).toString();
    return { method: route.method, path: `${REST_BASE}${path}${query ? `?${query}` : ""}` };
  }
  return { method: route.method, path: `${REST_BASE}${path}`, body: JSON.stringify(rest) };
}

async function viaRest(name: string, args: Record<string, unknown>, headers: Record<string, string>): Promise<Outcome> {
  const { method, path, body } = restRequest(name, args);
  const response = await t.app.fetch(
    new Request(`http://test${path}`, {
      method,
      headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      body,
    }),
  );
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, code: (parsed as { code?: string } | undefined)?.code, text, body: parsed };
}

/** A subscription over server-sent events: its first event (or none within the wait), then closed. */
async function viaSse(name: string, args: Record<string, unknown>, headers: Record<string, string>): Promise<Outcome> {
  const controller = new AbortController();
  const response = await t.app.fetch(
    new Request("http://test/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
      body: JSON.stringify({ query: operation(name, args), variables: args }),
      signal: controller.signal,
    }),
  );
  if (!response.headers.get("content-type")?.includes("text/event-stream")) {
    // Refused before the stream opened (a credential refused before the body is read): a JSON answer.
    const text = await response.text();
    const body = JSON.parse(text);
    return { status: response.status, code: body?.errors?.[0]?.extensions?.code, text, body };
  }
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + 2_000;
  try {
    while (reader && Date.now() < deadline && !/event: (next|complete)[\s\S]*\n\n/.test(text)) {
      const chunk = await Promise.race([
        reader.read(),
        new Promise<{ done: true; value: undefined }>((resolve) =>
          setTimeout(() => resolve({ done: true, value: undefined }), 250),
        ),
      ]);
      if (chunk.value) text += decoder.decode(chunk.value, { stream: true });
      else if (chunk.done && Date.now() >= deadline) break;
    }
  } finally {
    controller.abort();
    await reader?.cancel().catch(() => {});
  }
  const data = /event: next\ndata: (.*)\n/.exec(text)?.[1];
  const body = data ? JSON.parse(data) : undefined;
  return { status: response.status, code: body?.errors?.[0]?.extensions?.code ?? (data ? undefined : "NO_EVENT"), text, body };
}

type Transport = "REST" | "GraphQL";

async function call(transport: Transport, name: string, args: Record<string, unknown>, headers: Record<string, string>) {
  if (name.startsWith("Subscription.")) return viaSse(name, args, headers);
  return transport === "REST" ? viaRest(name, args, headers) : viaGraphql(name, args, headers);
}

const transportsOf = (name: string): Transport[] => (restRoutes[name] ? ["REST", "GraphQL"] : ["GraphQL"]);

/** What is wrong with B's answer to an attempt on A's id; empty when it is the 404 a missing record gets. */
function problemsWith(attempt: Attempt, transport: Transport, credential: CredentialKind, outcome: Outcome): string[] {
  const problems: string[] = [];
  const requested = JSON.stringify(attempt.args);
  const leaks = leakedOfA(outcome.text, requested);
  if (leaks.length) problems.push(`the answer carries A's ${leaks.join(", ")}`);
  if (attempt.authorIgnoredWithUser && credential !== "apiKey") {
    // userId is ignored with a user credential: the comment (on B's task) is B's owner's.
    const comment =
      transport === "REST" ? outcome.body : (outcome.body as { data?: { createComment?: unknown } })?.data?.createComment;
    const author = (comment as { author?: { id?: string } } | undefined)?.author?.id;
    if (outcome.code !== "NOT_FOUND" && author !== B.userIds[0]) problems.push(`the author is ${author}, not B's owner`);
    return problems;
  }
  if (attempt.nullWithoutError) {
    const data = (outcome.body as { data?: Record<string, unknown> | null } | undefined)?.data;
    const expected = attempt.field === "Query.node" ? { node: null } : { nodes: [null, { __typename: "Task" }] };
    if (outcome.status !== 200 || outcome.code !== undefined)
      problems.push(`${outcome.status} ${outcome.code}, not 200 and null`);
    if (JSON.stringify(data) !== JSON.stringify(expected)) problems.push(`data ${JSON.stringify(data).slice(0, 200)}`);
    return problems;
  }
  const rest = transport === "REST" && !attempt.field.startsWith("Subscription.");
  if (attempt.forbiddenWithUser && credential !== "apiKey") {
    if (outcome.code !== "FORBIDDEN") problems.push(`code ${outcome.code}, not FORBIDDEN (B's owner is not the author)`);
    return problems;
  }
  const badInput = attempt.allow400 && outcome.code === "BAD_USER_INPUT";
  if (rest && outcome.status !== 404 && !(badInput && outcome.status === 400)) problems.push(`status ${outcome.status}, not 404`);
  if (!rest && outcome.status !== 200 && !(badInput && outcome.status === 400))
    problems.push(`HTTP status ${outcome.status}, not 200`);
  if (outcome.code !== "NOT_FOUND" && !badInput) problems.push(`code ${outcome.code}, not NOT_FOUND`);
  if (!rest) {
    const data = (outcome.body as { data?: Record<string, unknown> | null } | undefined)?.data;
    if (data && Object.values(data).some((v) => v !== null)) problems.push(`data ${JSON.stringify(data).slice(0, 200)}`);
  }
  return problems;
}

/** Each row's attempt on each transport with each of its credentials: the problems found, and A's rows compared after each call. */
async function attemptEach(
  rows: { attempt: Attempt; credentials: CredentialKind[] }[],
): Promise<{ failures: string[]; calls: number }> {
  const failures: string[] = [];
  let calls = 0;
  const digestsBefore = digestsCompared;
  for (const { attempt, credentials } of rows) {
    for (const transport of transportsOf(attempt.field)) {
      for (const credential of credentials) {
        const outcome = await call(transport, attempt.field, attempt.args, headersOfB[credential]);
        calls++;
        const where = `${attempt.field}(${attempt.arg}: ${attempt.aId}) via ${attempt.field.startsWith("Subscription.") ? "GraphQL SSE" : transport} as B's ${credential}`;
        const problems = problemsWith(attempt, transport, credential, outcome);
        const changed = await changesToA();
        if (changed.length) {
          problems.push(`A's data changed: ${changed.join("; ")}`);
          // Compare later attempts against the changed state, so that each change is reported once.
          await takeBaseline();
        }
        if (problems.length)
          failures.push(`${where}: ${problems.join("; ")}\n    answer ${outcome.status} ${outcome.text.slice(0, 300)}`);
      }
    }
  }
  console.info(
    `[isolation] ${calls} calls with A's ids (${rows.length} operation and id pairs); ${digestsCompared - digestsBefore} of them wrote something, and A's digest was compared`,
  );
  return { failures, calls };
}

// ---------------------------------------------------------------------------------------------

describe("isolation matrix: organization B on organization A's ids", () => {
  it("the matrix covers every ID argument of every operation, and every REST route that takes an id", () => {
    const all = attempts();
    const covered = new Set(all.map((a) => `${a.field}:${a.arg}`));
    expect([...covered].sort()).toEqual([...new Set(idTakingArguments)].sort());
    // Every route with a path id takes an ID argument, so it is in the matrix; and so is every other route taking one.
    const idFields = new Set(idTakingArguments.map((k) => k.split(":")[0]));
    for (const [field, route] of Object.entries(restRoutes)) {
      if (route.path.includes(":")) expect(idFields.has(field), `${field} (${route.path})`).toBe(true);
      if (idFields.has(field)) expect(all.some((a) => a.field === field)).toBe(true);
    }
    // Each attempt names an id of A of the argument's kind, not a made-up one.
    for (const a of all) expect(JSON.stringify(A)).toContain(a.aId);
  });

  it("every attempt, on both transports, with every credential of B, is 404 and leaves A byte-identical", {
    timeout: 900_000,
  }, async () => {
    await takeBaseline();
    // The comparison sees a write to one of A's rows (it does not pass by never looking).
    await t.db.vendor.update({ where: { id: A.vendorIds[0] }, data: { description: "Changed by the test itself" } });
    expect(await changesToA()).toEqual([expect.stringMatching(/^Vendor: -\{.*\+\{.*Changed by the test itself/)]);
    await takeBaseline();
    // The snapshot sees A's data in every table that holds some.
    for (const table of ["Member", "Device", "ApiKey", "Task", "TaskItem", "Vendor", "Risk", "Policy", "PolicyVersion"]) {
      expect(baseline[table]?.length, table).toBeGreaterThan(0);
    }
    for (const table of [
      "Comment",
      "Attachment",
      "AuditEvent",
      "AuditCheckpoint",
      "WebhookEndpoint",
      "WebhookDelivery",
      "Organization",
      "User",
    ]) {
      expect(baseline[table]?.length, table).toBeGreaterThan(0);
    }
    // A's ids of the argument's kind with every credential; and with B's API key, A's entities named
    // with their own entityType where an argument of another kind takes them.
    const { failures, calls } = await attemptEach([
      ...attempts().map((attempt) => ({ attempt, credentials: credentialKinds })),
      ...attempts({ wrongKind: true })
        .filter((attempt) => attempt.ofItsType)
        .map((attempt) => ({ attempt, credentials: ["apiKey"] as CredentialKind[] })),
    ]);
    expect(calls).toBeGreaterThan(0);
    expect(failures).toEqual([]);
  });

  // A's ids of every other kind (a vendor's id as a taskId...), with B's API key: 404 or 400, as an
  // id that exists nowhere in the argument's table. The record is missing whichever database
  // answers, so these run in the embedded run only (`npm test`), as the files vitest.config.ts
  // calls the same on every database do; the rows above, where the tenancy filter of a statement
  // decides, run on both. About 60% of the calls.
  it.skipIf(usePostgres)(
    "A's ids of every other kind, on both transports, with B's API key, are 404 (or 400) and leave A byte-identical",
    {
      timeout: 900_000,
    },
    async () => {
      await takeBaseline();
      const rows = attempts({ wrongKind: true })
        .filter((attempt) => !attempt.ofItsType)
        .map((attempt) => ({ attempt, credentials: ["apiKey"] as CredentialKind[] }));
      const { failures, calls } = await attemptEach(rows);
      expect(calls).toBeGreaterThan(0);
      expect(failures).toEqual([]);
    },
  );

  it("B's user credentials naming A in X-Organization-Id are 403 on every operation, and so is B's API key", async () => {
    const before = JSON.stringify(await snapshotOf(A.organizationId));
    const failures: string[] = [];
    const seen = new Set<string>();
    for (const attempt of attempts()) {
      // One call per operation and argument is enough: authentication fails before the arguments matter.
      const key = `${attempt.field}:${attempt.arg}`;
      if (seen.has(key)) continue;
      seen.add(key);
      for (const transport of transportsOf(attempt.field)) {
        for (const credential of credentialKinds) {
          const headers = { ...headersOfB[credential], "x-organization-id": A.organizationId };
          const outcome = await call(transport, attempt.field, attempt.args, headers);
          const rest = transport === "REST" && !attempt.field.startsWith("Subscription.");
          const problems: string[] = [];
          if (rest && outcome.status !== 403) problems.push(`status ${outcome.status}, not 403`);
          if (outcome.code !== "FORBIDDEN") problems.push(`code ${outcome.code}, not FORBIDDEN`);
          const leaks = leakedOfA(outcome.text, JSON.stringify(attempt.args));
          if (leaks.length) problems.push(`the answer carries A's ${leaks.join(", ")}`);
          if (problems.length) {
            failures.push(
              `${attempt.field} via ${transport} as B's ${credential} naming A: ${problems.join("; ")}\n    answer ${outcome.text.slice(0, 300)}`,
            );
          }
        }
      }
    }
    expect(failures).toEqual([]);
    expect(JSON.stringify(await snapshotOf(A.organizationId))).toBe(before);
  });

  it("an Idempotency-Key that A used does not replay A's answer to B", async () => {
    for (const transport of ["REST", "GraphQL"] as const) {
      const key = `isolation-${transport}-${A.organizationId}`;
      const args = { title: "Quarterly access review", description: "Same request, same key, other organization" };
      const first = await call(transport, "Mutation.createTask", args, { "x-api-key": A.apiKey, "idempotency-key": key });
      const created = transport === "REST" ? first.body : (first.body as { data?: { createTask?: unknown } }).data?.createTask;
      const aTaskId = (created as { id?: string } | undefined)?.id;
      expect(aTaskId, first.text).toMatch(/^tsk_/);
      const before = JSON.stringify(await snapshotOf(A.organizationId));
      for (const credential of credentialKinds) {
        const again = await call(transport, "Mutation.createTask", args, { ...headersOfB[credential], "idempotency-key": key });
        expect(again.text, `${transport} as B's ${credential}`).not.toContain(aTaskId);
        expect(again.code, `${transport} as B's ${credential}: ${again.text}`).toBeUndefined();
      }
      expect(JSON.stringify(await snapshotOf(A.organizationId))).toBe(before);
    }
  });

  it("B's lists show none of A's records, on both transports, with every credential", async () => {
    const lists: [string, Record<string, unknown>][] = [
      ["Query.members", { limit: 100 }],
      ["Query.tasks", { limit: 100 }],
      ["Query.auditEvents", { limit: 100 }],
      ["Query.comments", { entityId: B.vendorIds[0], entityType: "vendor", limit: 100 }],
      ["Query.taskItems", { entityId: B.vendorIds[0], entityType: "vendor", limit: 100 }],
      ["Query.policyVersions", { id: B.policyIds[0], limit: 100 }],
      ["Query.vendors", { limit: 100 }],
      ["Query.risks", { limit: 100 }],
      ["Query.policies", { limit: 100 }],
      ["Query.webhookEndpoints", { limit: 100 }],
      ["Query.webhookDeliveries", { id: B.webhookEndpointIds[0], limit: 100 }],
      ["Query.auditCheckpoints", { limit: 100 }],
    ];
    const failures: string[] = [];
    for (const [name, args] of lists) {
      for (const transport of transportsOf(name)) {
        for (const credential of credentialKinds) {
          const outcome = await call(transport, name, args, headersOfB[credential]);
          if (outcome.status !== 200 || outcome.code !== undefined)
            failures.push(`${name} via ${transport} as ${credential}: ${outcome.status} ${outcome.code}`);
          const leaks = leakedOfA(outcome.text, "");
          if (leaks.length) failures.push(`${name} via ${transport} as ${credential} lists A's ${leaks.join(", ")}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it("B's audit export (the REST facade's own route) carries none of A's events, and naming A is 403", async () => {
    const failures: string[] = [];
    for (const format of ["jsonl", "csv", "ocsf"]) {
      for (const credential of credentialKinds) {
        const path = `${REST_BASE}/audit-events/export?format=${format}`;
        const own = await t.app.fetch(new Request(`http://test${path}`, { headers: headersOfB[credential] }));
        const text = await own.text();
        if (own.status !== 200) failures.push(`${format} as ${credential}: ${own.status} ${text.slice(0, 200)}`);
        if (!text.includes(B.organizationId)) failures.push(`${format} as ${credential}: not B's trail`);
        const leaks = leakedOfA(text, "");
        if (leaks.length) failures.push(`${format} as ${credential} exports A's ${leaks.join(", ")}`);
        const naming = await t.app.fetch(
          new Request(`http://test${path}`, { headers: { ...headersOfB[credential], "x-organization-id": A.organizationId } }),
        );
        const refused = await naming.text();
        if (naming.status !== 403) failures.push(`${format} as ${credential} naming A: ${naming.status}`);
        if (leakedOfA(refused, "").length) failures.push(`${format} as ${credential} naming A answers A's data`);
      }
    }
    expect(failures).toEqual([]);
  });
});
