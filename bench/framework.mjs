// The framework's own ceiling: graphql-yoga with plugin-sofa, as the service uses them, answering
// GET /v1/tasks/{taskId} and the GraphQL task query with a constant task. No database, no
// authentication, no other plugin. Whatever this reaches, the service cannot pass.
import { createServer } from "node:http";
import { useSofa } from "@graphql-yoga/plugin-sofa";
import { createSchema, createYoga, useReadinessCheck } from "graphql-yoga";

const task = JSON.parse(process.env.FRAMEWORK_TASK ?? "{}");
const fields = Object.keys(task)
  .map((name) => `${name}: ${name === "id" ? "ID!" : "String"}`)
  .join(" ");
const schema = createSchema({
  typeDefs: `type Task { ${fields} } type Query { task(taskId: ID!): Task }`,
  resolvers: { Query: { task: () => task } },
});
const yoga = createYoga({
  schema,
  logging: false,
  landingPage: false,
  graphiql: false,
  plugins: [
    useReadinessCheck({ endpoint: "/ready", check: () => true }),
    useSofa({
      basePath: "/v1",
      routes: { "Query.task": { method: "GET", path: "/tasks/:taskId" } },
      openAPI: { endpoint: false },
      swaggerUI: { endpoint: false },
    }),
  ],
});
createServer(yoga).listen(Number(process.env.PORT), process.env.HOST ?? "127.0.0.1");
process.on("SIGTERM", () => process.exit(0));
