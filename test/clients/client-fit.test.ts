import { firstValueFrom } from "rxjs";
import { filter } from "rxjs/operators";
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { openFixture } from "../helpers/fixtures.js";
import { type Clients, type Credential, connectClients, failOnLibraryWarnings } from "./harness.js";

/**
 * Apollo Client 4 and urql with graphcache, configured with their stock helpers only (harness.ts),
 * against the app: what a frontend team sees when it points either library at the graph.
 */
const { t, org, keyWith } = await openFixture({ organizations: 1 });
failOnLibraryWarnings();

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
    const merged = forward.getCurrentResult().data?.task.comments;
    expect(ids(merged)).toEqual(all.slice(0, 4));
    expect(merged).toMatchObject({ totalCount: 5, pageInfo: { hasNextPage: true } });

    // Backward from the end, on a cache of its own (the same list would share the cached field).
    const { apollo: other } = clients(as.admin);
    const tail = other.watchQuery<TaskCommentsData>({ query: TaskComments, variables: { id: taskId, last: 2 } });
    const last = await firstValueFrom(tail.pipe(filter((r) => r.dataState === "complete")));
    expect(ids(last.data?.task.comments)).toEqual(all.slice(3));
    await tail.fetchMore({ variables: { before: last.data?.task.comments.pageInfo.startCursor } });
    const before = tail.getCurrentResult().data?.task.comments;
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
    expect(cached()?.edges[0]?.node).toEqual({ __typename: "Comment", id: newId, content: "edited" });

    expect((await urql.mutation(DeleteCommentUrql, { id: newId, first: 10 }).toPromise()).error).toBeUndefined();
    expect(ids(cached())).toEqual(before);
    expect(cached()?.totalCount).toBe(2);
    expect(traffic.operations).toEqual(["CreateComment", "UpdateComment", "DeleteComment"]);
  });
});

describe("a review step updates the cached policy without a refetch", () => {
  const PolicyScreen = parse(`query Policy($id: ID!) {
    policy(id: $id) { id status currentVersionId currentVersion { id version status } }
  }`);
  const policyFields = "policy { id status currentVersionId currentVersion { id version status } }";
  const Submit = parse(`mutation Submit($id: ID!, $versionId: ID!, $approverId: ID!) {
    submitPolicyVersion(id: $id, versionId: $versionId, approverId: $approverId) { id status ${policyFields} }
  }`);
  const Approve = parse(`mutation Approve($id: ID!, $versionId: ID!) {
    approvePolicyVersion(id: $id, versionId: $versionId) { id status ${policyFields} }
  }`);
  type PolicyData = {
    policy: { status: string; currentVersionId: string; currentVersion: { id: string; version: number; status: string } };
  };

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
    const owner = clients(as.owner);
    const start = await owner.apollo.query<PolicyData>({ query: PolicyScreen, variables: { id } });
    const v1 = start.data?.policy.currentVersion;
    expect(start.data?.policy.status).toBe("published");
    await owner.apollo.mutate({ mutation: Submit, variables: { id, versionId, approverId: approverId() } });
    expect(owner.apollo.readQuery<PolicyData>({ query: PolicyScreen, variables: { id } })?.policy).toMatchObject({
      status: "needs_review",
      currentVersion: v1,
    });

    const admin = clients(as.admin);
    await admin.apollo.query<PolicyData>({ query: PolicyScreen, variables: { id } });
    admin.traffic.operations = [];
    await admin.apollo.mutate({ mutation: Approve, variables: { id, versionId } });
    expect(admin.apollo.readQuery<PolicyData>({ query: PolicyScreen, variables: { id } })?.policy).toMatchObject({
      status: "published",
      currentVersionId: versionId,
      currentVersion: { id: versionId, version: 2, status: "published" },
    });
    expect(admin.traffic.operations).toEqual(["Approve"]);
  });

  it("urql", async () => {
    const { id, versionId } = await policyWithDraft();
    const owner = clients(as.owner);
    const start = await owner.urql.query<PolicyData>(PolicyScreen, { id }).toPromise();
    const v1 = start.data?.policy.currentVersion;
    expect(start.data?.policy.status).toBe("published");
    expect((await owner.urql.mutation(Submit, { id, versionId, approverId: approverId() }).toPromise()).error).toBeUndefined();
    expect(owner.urql.readQuery<PolicyData>(PolicyScreen, { id })?.data?.policy).toMatchObject({
      status: "needs_review",
      currentVersion: v1,
    });

    const admin = clients(as.admin);
    await admin.urql.query(PolicyScreen, { id }).toPromise();
    admin.traffic.operations = [];
    expect((await admin.urql.mutation(Approve, { id, versionId }).toPromise()).error).toBeUndefined();
    expect(admin.urql.readQuery<PolicyData>(PolicyScreen, { id })?.data?.policy).toMatchObject({
      status: "published",
      currentVersionId: versionId,
      currentVersion: { id: versionId, version: 2, status: "published" },
    });
    expect(admin.traffic.operations).toEqual(["Approve"]);
  });
});

describe("a refused list leaves the rest of the screen", () => {
  const Screen = parse(`query Screen {
    viewer { permissions }
    members(first: 5) { totalCount edges { cursor node { id name } } }
  }`);
  type ScreenData = { viewer: { permissions: string[] }; members: null };

  it("Apollo Client, with errorPolicy: all", async () => {
    const { apollo } = clients({ "x-api-key": await keyWith(["task:read"]) });
    const result = await apollo.query<ScreenData>({ query: Screen, errorPolicy: "all" });
    expect(result.data).toEqual({ viewer: { __typename: "Viewer", permissions: ["task:read"] }, members: null });
    expect(result.error && "errors" in result.error ? result.error.errors : undefined).toMatchObject([
      { path: ["members"], extensions: { code: "FORBIDDEN" } },
    ]);
  });

  it("urql, by default", async () => {
    const { urql } = clients({ "x-api-key": await keyWith(["task:read"]) });
    const result = await urql.query<ScreenData>(Screen, {}).toPromise();
    expect(result.data).toEqual({ __typename: "Query", viewer: { __typename: "Viewer", permissions: ["task:read"] }, members: null });
    expect(result.error?.graphQLErrors).toMatchObject([{ path: ["members"], extensions: { code: "FORBIDDEN" } }]);
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

  it("Apollo Client, through graphql-sse's link", async () => {
    const { taskId } = await taskWithComments(0);
    const { apollo, streaming } = clients(as.admin);
    const open = streaming();
    const event = firstValueFrom(apollo.subscribe<Added>({ query: CommentAdded, variables: { id: taskId } }));
    await open;
    const id = await commentOn(taskId);
    const result = await event;
    expect(result.error).toBeUndefined();
    expect(result.data?.commentAdded).toMatchObject({ id, content: "live" });
  });

  it("urql, through graphql-sse's client in subscriptionExchange", async () => {
    const { taskId } = await taskWithComments(0);
    const { urql, streaming } = clients(as.admin);
    const open = streaming();
    const event = urql.subscription<Added>(CommentAdded, { id: taskId }).toPromise();
    await open;
    const id = await commentOn(taskId);
    const result = await event;
    expect(result.error).toBeUndefined();
    expect(result.data?.commentAdded).toMatchObject({ id, content: "live" });
  });
});
