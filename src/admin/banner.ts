import type { SeedResult } from "./seed.js";
import type { FrameworkDemo } from "./seed-frameworks.js";

/**
 * What the first start of an empty embedded database prints for a person: the demo organization's
 * key and ids of that same organization to try it with (a user id too: a write by an API key names
 * the person it acts for), and what is served at which URL (GraphiQL only when it is on: in
 * production it is off unless GRAPHIQL=true).
 */
export function startBanner(options: {
  base: string;
  graphiql: boolean;
  demo: SeedResult;
  frameworks?: FrameworkDemo | null;
}): string {
  const { base, graphiql, demo, frameworks } = options;
  return [
    "",
    "  Demo data created (first start on an empty embedded database).",
    `  Organization: ${demo.organizationId}`,
    `  API key:      ${demo.apiKey}   (shown once; it holds every scope)`,
    `  Ids to try:   task ${demo.taskIds[0]}, vendor ${demo.vendorIds[0]}, policy ${demo.policyIds[0]}, member ${demo.memberIds[1]}`,
    `  User id:      ${demo.userIds[0]}   (the person an API key's writes act for: a comment's userId)`,
    ...(frameworks
      ? [
          `  SOC 2:        framework ${frameworks.frameworkId}, adopted, ${frameworks.controlIds.length} controls behind it`,
          `                (its readiness: ${base}/v1/frameworks/${frameworks.frameworkId})`,
        ]
      : []),
    graphiql
      ? `  GraphiQL:     ${base}/graphql   (put the key in the X-API-Key header)`
      : `  GraphQL:      ${base}/graphql   (POST; GraphiQL is off, GRAPHIQL=true turns it on)`,
    `  REST:         ${base}/v1/...   (docs at ${base}/v1/docs)`,
    `  Try:          curl -H 'X-API-Key: ${demo.apiKey}' ${base}/v1/tasks/${demo.taskIds[0]}`,
    "",
    "",
  ].join("\n");
}
