import { graphql } from "relay-runtime";

// The documents relay-fit.test.ts runs, compiled by relay-compiler (relay.config.json) into
// __generated__/, which is committed; a test fails when it is stale. Relay names documents after
// their module, hence `operations...`. A delete's payload page and the screen's share the
// connection key, so Relay's connection handler replaces the cached page with the payload's.

graphql`
  query operationsTaskCommentsQuery($id: ID!, $first: Int, $after: String) {
    task(taskId: $id) {
      id
      comments(first: $first, after: $after) @connection(key: "operations_comments") {
        totalCount
        edges { node { id content } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
`;

graphql`
  query operationsTaskCommentsBackwardQuery($id: ID!, $last: Int, $before: String) {
    task(taskId: $id) {
      id
      comments(last: $last, before: $before) @connection(key: "operationsBackward_comments") {
        totalCount
        edges { node { id content } }
        pageInfo { hasPreviousPage startCursor }
      }
    }
  }
`;

graphql`
  mutation operationsCreateCommentMutation($id: ID!, $content: String!, $first: Int) {
    createComment(entityId: $id, entityType: task, content: $content) {
      id
      content
      entity {
        ... on Task {
          id
          comments(first: $first) @connection(key: "operations_comments") {
            totalCount
            edges { node { id content } }
          }
        }
      }
    }
  }
`;

graphql`
  mutation operationsUpdateCommentMutation($id: ID!, $content: String!) {
    updateComment(id: $id, content: $content) { id content }
  }
`;

graphql`
  mutation operationsDeleteCommentMutation($id: ID!, $first: Int) {
    deleteComment(id: $id) {
      deletedId @deleteRecord
      entity {
        ... on Task {
          id
          comments(first: $first) @connection(key: "operations_comments") {
            totalCount
            edges { node { id content } }
          }
        }
      }
    }
  }
`;

graphql`
  query operationsScreenQuery {
    viewer { permissions }
    members(first: 5) @connection(key: "operations_members") @catch(to: RESULT) {
      totalCount
      edges { node { id name } }
    }
  }
`;

graphql`
  subscription operationsCommentAddedSubscription($id: ID!) {
    commentAdded(entityId: $id, entityType: task) { id content }
  }
`;

graphql`
  query operationsPolicyQuery($id: ID!) {
    policy(id: $id) { id status currentVersionId currentVersion { id version status } }
  }
`;

graphql`
  mutation operationsSubmitMutation($id: ID!, $versionId: ID!, $approverId: ID!) {
    submitPolicyVersion(id: $id, versionId: $versionId, approverId: $approverId) {
      id
      status
      policy { id status currentVersionId currentVersion { id version status } }
    }
  }
`;

graphql`
  mutation operationsApproveMutation($id: ID!, $versionId: ID!) {
    approvePolicyVersion(id: $id, versionId: $versionId) {
      id
      status
      policy { id status currentVersionId currentVersion { id version status } }
    }
  }
`;
