// REST get task: the service's lightest read, against PostGraphile's taskByRowId and the framework ceiling.
import { peerTaskRequest } from "../peer.mjs";

/** @type {import("./index.mjs").Scenario} */
export default {
  id: "rest-task",
  order: 10,
  label: "REST get task",
  floor: '`SELECT` the task\'s 7 columns `WHERE id = $1 AND "organizationId" = $2` (primary key)',
  request: ({ seed }) => ({
    method: "GET",
    path: `/v1/tasks/${seed.taskIds[0]}`,
    headers: { "x-api-key": seed.apiKey },
    deterministic: true,
  }),
  peer: "task",
  peerRequest: ({ seed }, token) => peerTaskRequest(seed.taskIds[0], token),
  targets(t) {
    t.peer(20, "rest-task", "PostgreSQL, 32 conn: REST get task", "peerJwt", 1.5);
    t.peer(21, "rest-task", "PostgreSQL, 32 conn: REST get task", "peer", 0.75);
    const rest = t.cell("rest-task")?.serviceMedian;
    const graphql = t.cell("graphql-task")?.serviceMedian;
    t.add(
      40,
      "PostgreSQL, 32 conn: REST get task at most GraphQL's CPU per request",
      rest && graphql ? `${t.num(rest.cpuMsPerRequest, 2)} vs ${t.num(graphql.cpuMsPerRequest, 2)} ms` : "not run",
      rest && graphql ? rest.cpuMsPerRequest <= graphql.cpuMsPerRequest : null,
    );
    if (t.active) t.p99Below(50, this, 50);
  },
};
