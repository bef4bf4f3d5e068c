import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import {
  commitMutation,
  createOperationDescriptor,
  type Environment,
  fetchQuery,
  type MutationParameters,
  type OperationType,
  requestSubscription,
} from "relay-runtime";
import { beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/auth/sessions.js";
import { openFixture } from "../helpers/fixtures.js";
import { type Credential, connectRelay, failOnLibraryWarnings } from "./harness.js";
import Approve, { type operationsApproveMutation } from "./relay/__generated__/operationsApproveMutation.graphql.js";
import CommentAdded, {
  type operationsCommentAddedSubscription,
} from "./relay/__generated__/operationsCommentAddedSubscription.graphql.js";
import CreateComment, {
  type operationsCreateCommentMutation,
} from "./relay/__generated__/operationsCreateCommentMutation.graphql.js";
import DeleteComment, {
  type operationsDeleteCommentMutation,
} from "./relay/__generated__/operationsDeleteCommentMutation.graphql.js";
import PolicyScreen, { type operationsPolicyQuery } from "./relay/__generated__/operationsPolicyQuery.graphql.js";
import Screen, { type operationsScreenQuery } from "./relay/__generated__/operationsScreenQuery.graphql.js";
import Submit, { type operationsSubmitMutation } from "./relay/__generated__/operationsSubmitMutation.graphql.js";
import TaskCommentsBackward, {
  type operationsTaskCommentsBackwardQuery,
} from "./relay/__generated__/operationsTaskCommentsBackwardQuery.graphql.js";
import TaskComments, { type operationsTaskCommentsQuery } from "./relay/__generated__/operationsTaskCommentsQuery.graphql.js";
import UpdateComment, {
  type operationsUpdateCommentMutation,
} from "./relay/__generated__/operationsUpdateCommentMutation.graphql.js";

/**
 * Relay (relay-runtime, with documents compiled by relay-compiler from relay/operations.ts)
 * against the app, through graphql-sse's Relay network: `@connection` pages both ways, a comment
 * created, edited and deleted (`deletedId @deleteRecord`), review steps, a refused list (`@catch`),
 * a subscription.
 */
const { t, org, keyWith } = await openFixture({ organizations: 1 });
failOnLibraryWarnings();

/** Session headers: the owner (user 0) and the admin (user 1), who writes the comments below. */
let owner: Credential = {};
let admin: Credential = {};
beforeAll(async () => {
  const headers = async (i: number) => {
    const session = await createSession(t.db, org.userIds[i] as string, 3_600_000);
    return { authorization: `Bearer ${session.token}`, "x-organization-id": org.organizationId };
  };
  owner = await headers(0);
  admin = await headers(1);
});

/** A new task with `count` comments by the admin; answers their ids newest first (the list's order). */
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

/** Fetches `query` and keeps its records in the store, as a mounted screen does; answers its data. */
async function load<Q extends OperationType>(
  environment: Environment,
  query: Parameters<typeof fetchQuery<Q>>[1],
  variables: Q["variables"],
) {
  await fetchQuery<Q>(environment, query, variables).toPromise();
  const operation = createOperationDescriptor(query as never, variables);
  environment.retain(operation);
  return () => environment.lookup(operation.fragment).data as Q["response"];
}

function mutate<M extends MutationParameters>(
  environment: Environment,
  mutation: Parameters<typeof commitMutation<M>>[1]["mutation"],
  variables: M["variables"],
) {
  return new Promise<M["response"]>((resolve, reject) => {
    commitMutation<M>(environment, {
      mutation,
      variables,
      onCompleted: (response, errors) => (errors ? reject(new Error(JSON.stringify(errors))) : resolve(response)),
      onError: reject,
    });
  });
}

const ids = (page: { edges: readonly { node: { id: string } }[] } | null | undefined) => page?.edges.map((edge) => edge.node.id);

it("the committed artifacts are what relay-compiler makes of relay/operations.ts and schema.graphql", () => {
  // The package's index answers the path of the compiler binary it ships for this platform.
  const compiler = createRequire(import.meta.url)("relay-compiler") as string;
  execFileSync(compiler, ["--validate", "relay.config.json"], { stdio: "pipe" });
});

describe("Relay", () => {
  it("merges a next page (after: endCursor) and a page before (last, before: startCursor) into the @connection", async () => {
    const { taskId, ids: all } = await taskWithComments(5);
    const { environment } = connectRelay(t, admin);
    const screen = await load<operationsTaskCommentsQuery>(environment, TaskComments, { id: taskId, first: 2 });
    expect(ids(screen().task?.comments)).toEqual(all.slice(0, 2));
    const after = screen().task?.comments?.pageInfo.endCursor;
    await fetchQuery<operationsTaskCommentsQuery>(environment, TaskComments, { id: taskId, first: 2, after }).toPromise();
    expect(ids(screen().task?.comments)).toEqual(all.slice(0, 4));
    expect(screen().task?.comments).toMatchObject({ totalCount: 5, pageInfo: { hasNextPage: true } });

    const tail = await load<operationsTaskCommentsBackwardQuery>(environment, TaskCommentsBackward, { id: taskId, last: 2 });
    expect(ids(tail().task?.comments)).toEqual(all.slice(3));
    const before = tail().task?.comments?.pageInfo.startCursor;
    await fetchQuery<operationsTaskCommentsBackwardQuery>(environment, TaskCommentsBackward, {
      id: taskId,
      last: 2,
      before,
    }).toPromise();
    expect(ids(tail().task?.comments)).toEqual(all.slice(1));
    expect(tail().task?.comments).toMatchObject({ totalCount: 5, pageInfo: { hasPreviousPage: true } });
  });

  it("shows a created, edited and deleted comment in the cached page and its totalCount without a refetch", async () => {
    const { taskId, ids: before } = await taskWithComments(2);
    const { environment, traffic } = connectRelay(t, admin);
    const screen = await load<operationsTaskCommentsQuery>(environment, TaskComments, { id: taskId, first: 10 });
    traffic.operations = [];

    const created = await mutate<operationsCreateCommentMutation>(environment, CreateComment, {
      id: taskId,
      content: "new",
      first: 10,
    });
    const newId = created.createComment.id;
    expect(ids(screen().task?.comments)).toEqual([newId, ...before]);
    expect(screen().task?.comments?.totalCount).toBe(3);

    await mutate<operationsUpdateCommentMutation>(environment, UpdateComment, { id: newId, content: "edited" });
    expect(screen().task?.comments?.edges[0]?.node).toMatchObject({ id: newId, content: "edited" });

    // `deletedId @deleteRecord` removes the comment from the store; the payload's page replaces the cached one.
    await mutate<operationsDeleteCommentMutation>(environment, DeleteComment, { id: newId, first: 10 });
    expect(ids(screen().task?.comments)).toEqual(before);
    expect(screen().task?.comments?.totalCount).toBe(2);
    expect(environment.getStore().getSource().get(newId)).toBeNull();
    expect(traffic.operations).toEqual([
      "operationsCreateCommentMutation",
      "operationsUpdateCommentMutation",
      "operationsDeleteCommentMutation",
    ]);
  });

  it("updates the cached policy on each review step without a refetch", async () => {
    const policy = await t.rest("POST", "/v1/policies", { key: org.apiKey, body: { name: "Access", content: [{ type: "p" }] } });
    expect(policy.status).toBe(201);
    const id = policy.body.id as string;
    const draft = await t.rest("POST", `/v1/policies/${id}/versions`, { key: org.apiKey, body: { changelog: "v2" } });
    expect(draft.status).toBe(201);
    const versionId = draft.body.versionId as string;

    // The owner submits, naming the admin; the admin approves (four eyes).
    const asOwner = connectRelay(t, owner);
    const ownerScreen = await load<operationsPolicyQuery>(asOwner.environment, PolicyScreen, { id });
    const v1 = ownerScreen().policy?.currentVersion;
    expect(ownerScreen().policy?.status).toBe("published");
    asOwner.traffic.operations = [];
    await mutate<operationsSubmitMutation>(asOwner.environment, Submit, {
      id,
      versionId,
      approverId: org.memberIds[1] as string,
    });
    expect(ownerScreen().policy).toMatchObject({ status: "needs_review", currentVersion: v1 });
    expect(asOwner.traffic.operations).toEqual(["operationsSubmitMutation"]);

    const asAdmin = connectRelay(t, admin);
    const adminScreen = await load<operationsPolicyQuery>(asAdmin.environment, PolicyScreen, { id });
    asAdmin.traffic.operations = [];
    await mutate<operationsApproveMutation>(asAdmin.environment, Approve, { id, versionId });
    expect(adminScreen().policy).toMatchObject({
      status: "published",
      currentVersionId: versionId,
      currentVersion: { id: versionId, version: 2, status: "published" },
    });
    expect(asAdmin.traffic.operations).toEqual(["operationsApproveMutation"]);
  });

  it("keeps the rest of the screen when a list is refused", async () => {
    const { environment } = connectRelay(t, { "x-api-key": await keyWith(["task:read"]) });
    const screen = await load<operationsScreenQuery>(environment, Screen, {});
    // `@catch` (stock Relay) hands the field's error to the screen instead of a bare null.
    expect(screen().viewer).toEqual({ permissions: ["task:read"] });
    expect(screen().members).toEqual({ ok: false, errors: [{ extensions: { code: "FORBIDDEN" } }] });
  });

  it("delivers commentAdded over server-sent events", { timeout: 10_000 }, async () => {
    const { taskId } = await taskWithComments(0);
    const { environment, streaming } = connectRelay(t, admin);
    const open = streaming();
    const event = new Promise<operationsCommentAddedSubscription["response"]>((resolve, reject) => {
      const subscription = requestSubscription<operationsCommentAddedSubscription>(environment, {
        subscription: CommentAdded,
        variables: { id: taskId },
        onNext: (response) => {
          subscription.dispose();
          if (response) resolve(response);
        },
        onError: reject,
      });
    });
    await Promise.race([open, event]);
    const comment = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: "live", entityId: taskId, entityType: "task", userId: org.userIds[1] },
    });
    expect(comment.status).toBe(201);
    expect((await event).commentAdded).toEqual({ id: comment.body.id, content: "live" });
  });
});
