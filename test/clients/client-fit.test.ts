import type { OperationResult } from "@urql/core";
import { isObjectType, parse } from "graphql";
import { firstValueFrom } from "rxjs";
import { filter } from "rxjs/operators";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { schema } from "../../src/schema.js";
import { openFixture } from "../helpers/fixtures.js";
import {
  type Clients,
  type Credential,
  connectClients,
  failOnLibraryWarnings,
  relayStylePaginationKeepingNull,
  typesWithoutId,
} from "./harness.js";

/**
 * Apollo Client 4 and urql with graphcache, configured with their stock helpers (harness.ts),
 * against the app: what a frontend team sees when it points either library at the graph. Where a
 * library needs more, the test says what and docs/frontends.md explains it.
 */
const { t, org, keyWith } = await openFixture({ organizations: 1 });
const warnings = failOnLibraryWarnings();

/** Session headers: the owner (user 0) and the admin (user 1), who writes the comments below. */
const as: { owner: Credential; admin: Credential } = { owner: {}, admin: {} };
beforeAll(async () => {
  for (const [role, i] of [
    ["owner", 0],
    ["admin", 1],
  ] as const) {
    const session = await createSession(t.db, org.userIds[i] as string, 3_600_000);
    as[role] = { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
  }
});

const opened: Clients[] = [];
function clients(credential: Credential) {
  const c = connectClients(t, credential);
  opened.push(c);
  return c;
}
afterAll(() => {
  for (const c of opened) c.apollo.stop();
});

/** A new task with `count` comments by the admin, oldest first; answers the ids newest first (the list's order). */
async function taskWithComments(count: number) {
  const task = await t.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: "Review access" } });
  expect(task.status).toBe(201);
  const ids: string[] = [];
  for (let i = 1; i <= count; i++) {
    const comment = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: `comment ${i}`, entityId: task.body.id, entityType: "task", userId: org.userIds[1] },
    });
    expect(comment.status).toBe(201);
    ids.unshift(comment.body.id);
  }
  return { taskId: task.body.id as string, ids };
}

const page = `fragment CommentsPage on CommentConnection {
  totalCount
  edges { cursor node { id content } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
}`;

const TaskComments = parse(`query TaskComments($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
  task(taskId: $id) { id comments(first: $first, after: $after, last: $last, before: $before) { ...CommentsPage } }
}
${page}`);

const CreateComment = parse(`mutation CreateComment($id: ID!, $content: String!, $first: Int) {
  createComment(entityId: $id, entityType: task, content: $content) {
    id content
    entity { ... on Task { id comments(first: $first) { ...CommentsPage } } }
  }
}
${page}`);

const UpdateComment = parse(`mutation UpdateComment($id: ID!, $content: String!) {
  updateComment(id: $id, content: $content) { id content }
}`);

type Page = {
  totalCount: number;
  edges: { cursor: string; node: { id: string; content: string } }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
};
type TaskCommentsData = { task: { id: string; comments: Page } };
const ids = (p: Page | undefined) => p?.edges.map((edge) => edge.node.id);

describe("two pages merge into one cached list", () => {
  it("Apollo Client: fetchMore with after: endCursor appends; last/before prepends", async () => {
    const { taskId, ids: all } = await taskWithComments(5);
    const { apollo } = clients(as.admin);
    const forward = apollo.watchQuery<TaskCommentsData>({ query: TaskComments, variables: { id: taskId, first: 2 } });
    const first = await firstValueFrom(forward.pipe(filter((r) => r.dataState === "complete")));
    expect(ids(first.data?.task.comments)).toEqual(all.slice(0, 2));
    await forward.fetchMore({ variables: { after: first.data?.task.comments.pageInfo.endCursor } });
    const merged = forward.getCurrentResult().data?.task?.comments as Page | undefined;
    expect(ids(merged)).toEqual(all.slice(0, 4));
    expect(merged).toMatchObject({ totalCount: 5, pageInfo: { hasNextPage: true } });

    // Backward from the end, on a cache of its own (the same list would share the cached field).
    const { apollo: other } = clients(as.admin);
    const tail = other.watchQuery<TaskCommentsData>({ query: TaskComments, variables: { id: taskId, last: 2 } });
    const last = await firstValueFrom(tail.pipe(filter((r) => r.dataState === "complete")));
    expect(ids(last.data?.task.comments)).toEqual(all.slice(3));
    await tail.fetchMore({ variables: { before: last.data?.task.comments.pageInfo.startCursor } });
    const before = tail.getCurrentResult().data?.task?.comments as Page | undefined;
    expect(ids(before)).toEqual(all.slice(1));
    expect(before).toMatchObject({ totalCount: 5, pageInfo: { hasPreviousPage: true } });
  });

  it("urql: the next variables (after: endCursor) append; last/before prepends", async () => {
    const { taskId, ids: all } = await taskWithComments(5);
    const { urql } = clients(as.admin);
    const first = await urql.query<TaskCommentsData>(TaskComments, { id: taskId, first: 2 }).toPromise();
    expect(first.error).toBeUndefined();
    expect(ids(first.data?.task.comments)).toEqual(all.slice(0, 2));
    const endCursor = first.data?.task.comments.pageInfo.endCursor;
    const next = await urql.query<TaskCommentsData>(TaskComments, { id: taskId, first: 2, after: endCursor }).toPromise();
    expect(ids(next.data?.task.comments)).toEqual(all.slice(0, 4));
    expect(next.data?.task.comments).toMatchObject({ totalCount: 5, pageInfo: { hasNextPage: true } });

    const { urql: other } = clients(as.admin);
    const last = await other.query<TaskCommentsData>(TaskComments, { id: taskId, last: 2 }).toPromise();
    expect(ids(last.data?.task.comments)).toEqual(all.slice(3));
    const startCursor = last.data?.task.comments.pageInfo.startCursor;
    const before = await other.query<TaskCommentsData>(TaskComments, { id: taskId, last: 2, before: startCursor }).toPromise();
    expect(ids(before.data?.task.comments)).toEqual(all.slice(1));
    expect(before.data?.task.comments).toMatchObject({ totalCount: 5, pageInfo: { hasPreviousPage: true } });
  });
});

describe("a created, edited and deleted comment updates the cached page without a refetch", () => {
  // Apollo: cache.evict() of the payload's deletedId (stock API) takes the comment out of every
  // cached page; the payload's entity answers the new totalCount.
  const DeleteCommentApollo = parse(`mutation DeleteComment($id: ID!, $first: Int) {
    deleteComment(id: $id) { deletedId entity { ... on Task { id comments(first: $first) { totalCount } } } }
  }`);
  // urql: no updater at all: the payload's entity answers the page as it is after the delete.
  const DeleteCommentUrql = parse(`mutation DeleteComment($id: ID!, $first: Int) {
    deleteComment(id: $id) { deletedId entity { ... on Task { id comments(first: $first) { ...CommentsPage } } } }
  }
  ${page}`);

  it("Apollo Client", async () => {
    const { taskId, ids: before } = await taskWithComments(2);
    const { apollo, traffic } = clients(as.admin);
    const screen = { query: TaskComments, variables: { id: taskId, first: 10 } };
    await apollo.query<TaskCommentsData>(screen);
    const cached = () => apollo.readQuery<TaskCommentsData>(screen)?.task.comments;
    traffic.operations = [];

    const created = await apollo.mutate<{ createComment: { id: string } }>({
      mutation: CreateComment,
      variables: { id: taskId, content: "new", first: 10 },
    });
    const newId = created.data?.createComment.id as string;
    expect(ids(cached())).toEqual([newId, ...before]);
    expect(cached()?.totalCount).toBe(3);

    await apollo.mutate({ mutation: UpdateComment, variables: { id: newId, content: "edited" } });
    expect(cached()?.edges[0]?.node).toEqual({ __typename: "Comment", id: newId, content: "edited" });

    await apollo.mutate<{ deleteComment: { deletedId: string } }>({
      mutation: DeleteCommentApollo,
      variables: { id: newId, first: 10 },
      update(cache, { data }) {
        cache.evict({ id: cache.identify({ __typename: "Comment", id: data?.deleteComment.deletedId }) });
      },
    });
    expect(ids(cached())).toEqual(before);
    expect(cached()?.totalCount).toBe(2);
    expect(traffic.operations).toEqual(["CreateComment", "UpdateComment", "DeleteComment"]);
  });

  it("urql", async () => {
    const { taskId, ids: before } = await taskWithComments(2);
    const { urql, traffic } = clients(as.admin);
    const variables = { id: taskId, first: 10 };
    expect((await urql.query(TaskComments, variables).toPromise()).error).toBeUndefined();
    const cached = () => urql.readQuery<TaskCommentsData>(TaskComments, variables)?.data?.task.comments;
    traffic.operations = [];

    const created = await urql
      .mutation<{ createComment: { id: string } }>(CreateComment, { id: taskId, content: "new", first: 10 })
      .toPromise();
    expect(created.error).toBeUndefined();
    const newId = created.data?.createComment.id as string;
    expect(ids(cached())).toEqual([newId, ...before]);
    expect(cached()?.totalCount).toBe(3);

    expect((await urql.mutation(UpdateComment, { id: newId, content: "edited" }).toPromise()).error).toBeUndefined();
    expect(cached()?.edges[0]?.node).toMatchObject({ id: newId, content: "edited" });

    expect((await urql.mutation(DeleteCommentUrql, { id: newId, first: 10 }).toPromise()).error).toBeUndefined();
    expect(ids(cached())).toEqual(before);
    expect(cached()?.totalCount).toBe(2);
    expect(traffic.operations).toEqual(["CreateComment", "UpdateComment", "DeleteComment"]);
  });
});

describe("a review step updates the cached policy without a refetch", () => {
  // A policy screen: its state, the version in force and the versions list. The versions list
  // matters to urql: graphcache invalidates every cached record of a type when a mutation answers
  // a record of that type it has not seen (docs/frontends.md); here the version is already cached.
  const policyFields = `id status currentVersionId currentVersion { id version status }
    versions(first: 10) { edges { cursor node { id version status } } pageInfo { hasNextPage endCursor } }`;
  const PolicyScreen = parse(`query Policy($id: ID!) { policy(id: $id) { ${policyFields} } }`);
  const Submit = parse(`mutation Submit($id: ID!, $versionId: ID!, $approverId: ID!) {
    submitPolicyVersion(id: $id, versionId: $versionId, approverId: $approverId) { id status policy { ${policyFields} } }
  }`);
  const Approve = parse(`mutation Approve($id: ID!, $versionId: ID!) {
    approvePolicyVersion(id: $id, versionId: $versionId) { id status policy { ${policyFields} } }
  }`);
  type Version = { id: string; version: number; status: string };
  type PolicyData = {
    policy: {
      status: string;
      currentVersionId: string;
      currentVersion: Version;
      versions: { edges: { node: Version }[] };
    };
  };
  const statuses = (data: PolicyData | null | undefined) =>
    data?.policy.versions.edges.map(({ node }) => `${node.version}:${node.status}`);

  /** A published policy (version 1) with a draft version 2, made with the API key. */
  async function policyWithDraft() {
    const policy = await t.rest("POST", "/v1/policies", { key: org.apiKey, body: { name: "Access", content: [{ type: "p" }] } });
    expect(policy.status).toBe(201);
    const draft = await t.rest("POST", `/v1/policies/${policy.body.id}/versions`, { key: org.apiKey, body: { changelog: "v2" } });
    expect(draft.status).toBe(201);
    return { id: policy.body.id as string, versionId: draft.body.versionId as string };
  }
  const approverId = () => org.memberIds[1] as string;

  it("Apollo Client", async () => {
    const { id, versionId } = await policyWithDraft();
    const screen = { query: PolicyScreen, variables: { id } };
    // The owner submits, naming the admin; the admin approves (four eyes).
    const owner = clients(as.owner);
    const start = await owner.apollo.query<PolicyData>(screen);
    const v1 = start.data?.policy.currentVersion;
    expect(start.data?.policy.status).toBe("published");
    owner.traffic.operations = [];
    await owner.apollo.mutate({ mutation: Submit, variables: { id, versionId, approverId: approverId() } });
    const submitted = owner.apollo.readQuery<PolicyData>(screen);
    expect(submitted?.policy).toMatchObject({ status: "needs_review", currentVersion: v1 });
    expect(statuses(submitted)).toEqual(["2:in_review", "1:published"]);
    expect(owner.traffic.operations).toEqual(["Submit"]);

    const admin = clients(as.admin);
    await admin.apollo.query<PolicyData>(screen);
    admin.traffic.operations = [];
    await admin.apollo.mutate({ mutation: Approve, variables: { id, versionId } });
    const approved = admin.apollo.readQuery<PolicyData>(screen);
    expect(approved?.policy).toMatchObject({
      status: "published",
      currentVersionId: versionId,
      currentVersion: { id: versionId, version: 2, status: "published" },
    });
    expect(statuses(approved)).toEqual(["2:published", "1:published"]);
    expect(admin.traffic.operations).toEqual(["Approve"]);
  });

  it("urql", async () => {
    const { id, versionId } = await policyWithDraft();
    const owner = clients(as.owner);
    const start = await owner.urql.query<PolicyData>(PolicyScreen, { id }).toPromise();
    const v1 = start.data?.policy.currentVersion;
    expect(start.data?.policy.status).toBe("published");
    owner.traffic.operations = [];
    expect((await owner.urql.mutation(Submit, { id, versionId, approverId: approverId() }).toPromise()).error).toBeUndefined();
    const submitted = owner.urql.readQuery<PolicyData>(PolicyScreen, { id })?.data;
    expect(submitted?.policy).toMatchObject({ status: "needs_review", currentVersion: v1 });
    expect(statuses(submitted)).toEqual(["2:in_review", "1:published"]);
    expect(owner.traffic.operations).toEqual(["Submit"]);

    const admin = clients(as.admin);
    await admin.urql.query(PolicyScreen, { id }).toPromise();
    admin.traffic.operations = [];
    expect((await admin.urql.mutation(Approve, { id, versionId }).toPromise()).error).toBeUndefined();
    const approved = admin.urql.readQuery<PolicyData>(PolicyScreen, { id })?.data;
    expect(approved?.policy).toMatchObject({
      status: "published",
      currentVersionId: versionId,
      currentVersion: { id: versionId, version: 2, status: "published" },
    });
    expect(statuses(approved)).toEqual(["2:published", "1:published"]);
    expect(admin.traffic.operations).toEqual(["Approve"]);
  });
});

describe("a refused list leaves the rest of the screen", () => {
  const Screen = parse(`query Screen {
    viewer { permissions }
    members(first: 5) { totalCount edges { cursor node { id name } } pageInfo { hasNextPage endCursor } }
  }`);
  type ScreenData = { viewer: { permissions: string[] }; members: null };
  const refusal = [{ path: ["members"], extensions: { code: "FORBIDDEN" } }];
  const withoutMemberRead = async () => ({ "x-api-key": await keyWith(["task:read"]) });

  it("Apollo Client, with errorPolicy: all", async () => {
    // Stock relayStylePagination() stores the null list as an empty connection, which lacks
    // totalCount: Apollo warns that the cache cannot give the answer back and returns the network's.
    warnings.expectWarning(/reading it back returned a partial result/);
    const { apollo } = clients(await withoutMemberRead());
    const result = await apollo.query<ScreenData>({ query: Screen, errorPolicy: "all" });
    expect(result.data).toEqual({ viewer: { __typename: "Viewer", permissions: ["task:read"] }, members: null });
    expect(result.error && "errors" in result.error ? result.error.errors : undefined).toMatchObject(refusal);
  });

  it("Apollo Client, with a field policy that keeps a null list null", async () => {
    const c = connectClients(t, await withoutMemberRead(), { apolloPagination: relayStylePaginationKeepingNull });
    opened.push(c);
    const result = await c.apollo.query<ScreenData>({ query: Screen, errorPolicy: "all" });
    expect(result.data).toEqual({ viewer: { __typename: "Viewer", permissions: ["task:read"] }, members: null });
    expect(result.error && "errors" in result.error ? result.error.errors : undefined).toMatchObject(refusal);
    expect(c.apollo.readQuery<ScreenData>({ query: Screen })?.members).toBeNull();
  });

  it("urql, by default", async () => {
    const { urql } = clients(await withoutMemberRead());
    const result = await urql.query<ScreenData>(Screen, {}).toPromise();
    expect(result.data?.viewer).toMatchObject({ permissions: ["task:read"] });
    expect(result.data?.members).toBeNull();
    expect(result.error?.graphQLErrors).toMatchObject(refusal);
  });
});

describe("a subscription delivers over server-sent events", () => {
  const CommentAdded = parse(`subscription CommentAdded($id: ID!) {
    commentAdded(entityId: $id, entityType: task) { id content author { id name } }
  }`);
  type Added = { commentAdded: { id: string; content: string } };

  async function commentOn(taskId: string) {
    const res = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: "live", entityId: taskId, entityType: "task", userId: org.userIds[1] },
    });
    expect(res.status).toBe(201);
    return res.body.id as string;
  }

  it("Apollo Client, through graphql-sse's link", { timeout: 10_000 }, async () => {
    const { taskId } = await taskWithComments(0);
    const { apollo, streaming } = clients(as.admin);
    const open = streaming();
    const event = firstValueFrom(apollo.subscribe<Added>({ query: CommentAdded, variables: { id: taskId } }));
    await Promise.race([open, event]);
    const id = await commentOn(taskId);
    const result = await event;
    expect(result.error).toBeUndefined();
    expect(result.data?.commentAdded).toMatchObject({ id, content: "live" });
  });

  it("urql, through graphql-sse's client in subscriptionExchange", { timeout: 10_000 }, async () => {
    const { taskId } = await taskWithComments(0);
    const { urql, streaming } = clients(as.admin);
    const open = streaming();
    // Not toPromise(): urql marks every subscription result `hasNext`, and toPromise() waits for the last.
    const event = new Promise<OperationResult<Added>>((resolve) => {
      const subscription = urql.subscription<Added>(CommentAdded, { id: taskId }).subscribe((result) => {
        subscription.unsubscribe();
        resolve(result);
      });
    });
    await Promise.race([open, event]);
    const id = await commentOn(taskId);
    const result = await event;
    expect(result.error).toBeUndefined();
    expect(result.data?.commentAdded).toMatchObject({ id, content: "live" });
  });
});

describe("graphcache's keys", () => {
  it("name exactly the object types without id (it needs no other configuration of types)", () => {
    // graphcache exempts PageInfo, *Connection and *Edge itself; every other type is a record with an id.
    const exempt = /^__|PageInfo|(Connection|Edge)$/;
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].map((type) => type?.name);
    const withoutId = Object.values(schema.getTypeMap())
      .filter((type) => isObjectType(type) && !roots.includes(type.name) && !exempt.test(type.name))
      .filter((type) => isObjectType(type) && !type.getFields().id)
      .map((type) => type.name)
      .sort();
    expect(typesWithoutId).toEqual(withoutId);
  });
});
