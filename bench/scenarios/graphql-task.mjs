// GraphQL get task: the same seven fields as REST get task, against the same peers.
import { peerTaskRequest } from "../peer.mjs";

export const GRAPHQL_TASK =
  "query($id: ID!) { task(taskId: $id) { id title status description taskTemplateId createdAt updatedAt } }";

/** @type {import("./index.mjs").Scenario} */
export default {
  id: "graphql-task",
  order: 20,
  label: "GraphQL get task",
  floor: 'reads the JSON body, the same `SELECT`; answers `{"data":{"task":{...}}}`',
  request: ({ seed }) => ({
    method: "POST",
    path: "/graphql",
    headers: { "x-api-key": seed.apiKey, "content-type": "application/json" },
    body: JSON.stringify({ query: GRAPHQL_TASK, variables: { id: seed.taskIds[0] } }),
    deterministic: true,
  }),
  peer: "task",
  peerRequest: ({ seed }, token) => peerTaskRequest(seed.taskIds[0], token),
  targets(t) {
    t.peer(10, "graphql-task", "PostgreSQL, 32 conn: GraphQL get task", "peerJwt", 1.5);
    t.peer(11, "graphql-task", "PostgreSQL, 32 conn: GraphQL get task", "peer", 0.75);
    if (t.active) t.p99Below(51, this, 50);
  },
};
