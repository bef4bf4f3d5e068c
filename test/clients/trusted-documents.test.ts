import "./dev-mode.js";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ApolloClient, ApolloLink, CombinedGraphQLErrors, HttpLink } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { fetchExchange, Client as UrqlClient } from "@urql/core";
import { persistedExchange } from "@urql/exchange-persisted";
import { type DocumentNode, parse, print } from "graphql";
import { SignJWT } from "jose";
import {
  commitMutation,
  Environment,
  fetchQuery,
  type GraphQLResponse,
  type GraphQLTaggedNode,
  Network,
  RecordSource,
  type RequestParameters,
  Store,
  type Variables,
} from "relay-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { documentIdOf } from "../../src/platform/document-ids.js";
import { cliInProcess, sharedWithCli } from "../helpers/cli-process.js";
import { createTestApp, type TestApp, testJwtSecret } from "../helpers/test-app.js";
import { apolloCache, failOnLibraryWarnings, urqlCache } from "./harness.js";

/**
 * Trusted documents end to end with the real tools: graphql-codegen's client preset and
 * relay-compiler's persistConfig write the documents from the committed schema.graphql, the
 * operator CLI publishes them, and Apollo Client (its persisted query link), urql (its persisted
 * exchange) and Relay run them as a user (a JWT) under TRUSTED_DOCUMENTS=sessions, queries over GET.
 */

const exec = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));

const codegenOperations = `
query GetTask($id: ID!) { task(taskId: $id) { id title status } }
mutation AddComment($id: ID!) { createComment(entityType: task, entityId: $id, content: "from codegen") { id content } }
`;

const relayOperations = `import { graphql } from "relay-runtime";
graphql\`
  query documentsTaskQuery($id: ID!) {
    task(taskId: $id) { id title status }
  }
\`;
graphql\`
  mutation documentsAddCommentMutation($id: ID!) {
    createComment(entityType: task, entityId: $id, content: "from relay") { id content }
  }
\`;
`;

async function binOf(pkg: string, name: string): Promise<string> {
  const manifest = JSON.parse(await readFile(join(root, "node_modules", pkg, "package.json"), "utf8"));
  return join(root, "node_modules", pkg, typeof manifest.bin === "string" ? manifest.bin : manifest.bin[name]);
}

let dir: string;
let shared: Awaited<ReturnType<typeof sharedWithCli>>;
let t: TestApp;
let org: SeedResult;
let bearer: Record<string, string>;
const published: Record<string, unknown>[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gateway-documents-"));
  await symlink(join(root, "node_modules"), join(dir, "node_modules"), "dir");

  // graphql-codegen's client preset, with __typename added as normalized caches expect.
  await writeFile(join(dir, "operations.graphql"), codegenOperations);
  await writeFile(
    join(dir, "codegen.cjs"),
    `const { addTypenameSelectionDocumentTransform } = require("@graphql-codegen/client-preset");
module.exports = {
  schema: ${JSON.stringify(join(root, "schema.graphql"))},
  documents: ["operations.graphql"],
  silent: true,
  generates: {
    "gql/": {
      preset: "client",
      config: { useTypeImports: true },
      presetConfig: { persistedDocuments: { hashAlgorithm: "sha256" } },
      documentTransforms: [addTypenameSelectionDocumentTransform],
    },
  },
};
`,
  );
  // relay-compiler's persistConfig: the query map file, SHA-256 ids.
  await mkdir(join(dir, "relay/__generated__"), { recursive: true });
  await writeFile(join(dir, "relay/documents.ts"), relayOperations);
  await writeFile(join(dir, "queryMap.json"), "{}");
  await writeFile(
    join(dir, "relay.config.json"),
    JSON.stringify({
      src: "./relay",
      schema: join(root, "schema.graphql"),
      language: "typescript",
      artifactDirectory: "./relay/__generated__",
      customScalarTypes: { DateTime: "string", Date: "string", JSON: "unknown" },
      eagerEsModules: true,
      persistConfig: { file: "./queryMap.json", algorithm: "SHA256" },
    }),
  );
  const options = { cwd: dir, timeout: 60_000 };
  await Promise.all([
    exec(process.execPath, [await binOf("@graphql-codegen/cli", "graphql-codegen"), "--config", "codegen.cjs"], options),
    exec(process.execPath, [await binOf("relay-compiler", "relay-compiler")], options),
  ]);

  // Published as a deployment pipeline does, before the app ships.
  shared = await sharedWithCli();
  for (const [app, file] of [
    ["web", "gql/persisted-documents.json"],
    ["relay-web", "queryMap.json"],
  ] as const) {
    const result = await cliInProcess(
      ["documents", "publish", "--app", app, "--version", "2026.11.26", join(dir, file), "--json"],
      shared.env,
    );
    expect(result.stderr).toBe("");
    published.push(JSON.parse(result.stdout));
  }

  t = await createTestApp({ database: await shared.open(), trustedDocuments: "sessions" });
  org = await t.seedOrg();
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(org.userIds[0] as string)
    .setIssuedAt()
    .setExpirationTime("10m")
    .sign(new TextEncoder().encode(testJwtSecret));
  bearer = { authorization: `Bearer ${token}`, "x-organization-id": org.organizationId };
}, 120_000);

afterAll(async () => {
  await t?.close();
  await shared?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

failOnLibraryWarnings();

/** One entry per HTTP request: its method, and whether it carried GraphQL text. */
type Sent = { method: string; text: boolean };

function fetchThrough(sent: Sent[]) {
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const text =
      request.method === "GET"
        ? new URL(request.url).searchParams.has("query")
        : "query" in ((await request.clone().json()) as object);
    sent.push({ method: request.method, text });
    return t.app.fetch(request);
  };
}

const metaHash = (document: DocumentNode) => (document as { __meta__?: { hash?: string } }).__meta__?.hash;

describe("the generated files", () => {
  it("are published by the CLI, each id the SHA-256 of its document", async () => {
    expect(published).toEqual([
      { app: "web", version: "2026.11.26", published: 2, alreadyKnown: 0 },
      { app: "relay-web", version: "2026.11.26", published: 2, alreadyKnown: 0 },
    ]);
    const codegen = JSON.parse(await readFile(join(dir, "gql/persisted-documents.json"), "utf8"));
    for (const [id, text] of Object.entries(codegen)) expect(id).toBe(`sha256:${documentIdOf(text as string)}`);
  });
});

describe("Apollo Client with its persisted query link", () => {
  function apollo(sent: Sent[]) {
    return new ApolloClient({
      cache: apolloCache(),
      link: ApolloLink.from([
        new PersistedQueryLink({
          // codegen's documents carry their id ("sha256:<hex>"); Apollo sends the bare hex as sha256Hash.
          // Others (none shipped) get Apollo's own hash of their printed text.
          generateHash: (document) => metaHash(document)?.slice("sha256:".length) ?? documentIdOf(print(document)),
          useGETForHashedQueries: true,
        }),
        new HttpLink({ uri: "http://test/graphql", fetch: fetchThrough(sent), headers: bearer }),
      ]),
    });
  }

  it("runs codegen's query over GET and its mutation over POST, by hash only", async () => {
    const { GetTaskDocument, AddCommentDocument } = await import(join(dir, "gql/graphql.ts"));
    const sent: Sent[] = [];
    const client = apollo(sent);
    const { data } = await client.query({ query: GetTaskDocument, variables: { id: org.taskIds[0] } });
    expect((data as { task: { id: string } }).task.id).toBe(org.taskIds[0]);
    const created = await client.mutate({ mutation: AddCommentDocument, variables: { id: org.taskIds[0] } });
    expect((created.data as { createComment: { content: string } }).createComment.content).toBe("from codegen");
    expect(sent).toEqual([
      { method: "GET", text: false },
      { method: "POST", text: false },
    ]);
  });

  it("sends the text after PersistedQueryNotFound, which the policy refuses for a user", async () => {
    const sent: Sent[] = [];
    const query = parse("query NotShipped { viewer { credential } }");
    const error = await apollo(sent)
      .query({ query })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(CombinedGraphQLErrors.is(error)).toBe(true);
    expect((error as CombinedGraphQLErrors).errors[0]?.extensions?.code).toBe("PERSISTED_QUERY_REQUIRED");
    expect(sent).toEqual([
      { method: "GET", text: false },
      { method: "POST", text: true },
    ]);
  });
});

describe("urql with its persisted exchange", () => {
  it("runs codegen's query over GET and its mutation over POST, by hash only", async () => {
    const { GetTaskDocument, AddCommentDocument } = await import(join(dir, "gql/graphql.ts"));
    const sent: Sent[] = [];
    const client = new UrqlClient({
      url: "http://test/graphql",
      fetch: fetchThrough(sent),
      fetchOptions: { headers: bearer },
      exchanges: [
        urqlCache(),
        persistedExchange({
          enforcePersistedQueries: true,
          enableForMutation: true,
          preferGetForPersistedQueries: true,
          generateHash: async (_query, document) => metaHash(document) as string,
        }),
        fetchExchange,
      ],
    });
    const result = await client.query(GetTaskDocument, { id: org.taskIds[0] }).toPromise();
    expect(result.error).toBeUndefined();
    expect(result.data.task.id).toBe(org.taskIds[0]);
    const created = await client.mutation(AddCommentDocument, { id: org.taskIds[0] }).toPromise();
    expect(created.error).toBeUndefined();
    expect(created.data.createComment.content).toBe("from codegen");
    expect(sent).toEqual([
      { method: "GET", text: false },
      { method: "POST", text: false },
    ]);
  });
});

describe("Relay with persisted queries", () => {
  it("runs the compiler's persisted query over GET and its mutation over POST, by id only", async () => {
    const sent: Sent[] = [];
    const fetch = fetchThrough(sent);
    // Relay's documented network for persisted queries: the id instead of the text.
    const fetchFn = async (params: RequestParameters, variables: Variables): Promise<GraphQLResponse> => {
      const response =
        params.operationKind === "query"
          ? await fetch(
              `http://test/graphql?${new URLSearchParams({ documentId: params.id as string, variables: JSON.stringify(variables) })}`,
              { headers: bearer },
            )
          : await fetch("http://test/graphql", {
              method: "POST",
              headers: { ...bearer, "content-type": "application/json" },
              body: JSON.stringify({ documentId: params.id, variables }),
            });
      return (await response.json()) as GraphQLResponse;
    };
    const environment = new Environment({ network: Network.create(fetchFn), store: new Store(new RecordSource()) });
    const query = (await import(join(dir, "relay/__generated__/documentsTaskQuery.graphql.ts"))).default as GraphQLTaggedNode;
    const mutation = (await import(join(dir, "relay/__generated__/documentsAddCommentMutation.graphql.ts")))
      .default as GraphQLTaggedNode;
    expect((query as { params: { text: unknown } }).params.text).toBeNull();

    const data = (await fetchQuery(environment, query, { id: org.taskIds[0] }).toPromise()) as { task: { id: string } };
    expect(data.task.id).toBe(org.taskIds[0]);
    const created = await new Promise<{ createComment: { content: string } }>((resolve, reject) =>
      commitMutation(environment, {
        mutation,
        variables: { id: org.taskIds[0] },
        onCompleted: (response) => resolve(response as { createComment: { content: string } }),
        onError: reject,
      }),
    );
    expect(created.createComment.content).toBe("from relay");
    expect(sent).toEqual([
      { method: "GET", text: false },
      { method: "POST", text: false },
    ]);
  });
});
