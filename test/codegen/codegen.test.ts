import { execFile } from "node:child_process";
import { copyFile, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));
const fixtures = join(root, "test/codegen/fixtures");

async function binOf(pkg: string, name: string): Promise<string> {
  const manifest = JSON.parse(await readFile(join(root, "node_modules", pkg, "package.json"), "utf8"));
  return join(root, "node_modules", pkg, typeof manifest.bin === "string" ? manifest.bin : manifest.bin[name]);
}

async function node(script: string, args: string[], cwd: string) {
  return run(process.execPath, [script, ...args], { cwd, timeout: 60_000 });
}

/** A temporary project seeing this one's node_modules, as a frontend that installed the same packages. */
async function tempProject(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "gateway-codegen-"));
  await symlink(join(root, "node_modules"), join(dir, "node_modules"), "dir");
  await writeFile(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "ESNext",
        moduleResolution: "Bundler",
        lib: ["ES2023", "DOM"],
        types: [],
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        verbatimModuleSyntax: true,
      },
      files: ["client.ts"],
    }),
  );
  return dir;
}

/** Runs tsc on the temporary project; `@ts-expect-error` lines in the client fail it if the types are too loose. */
async function typecheck(dir: string) {
  const tsc = await binOf("typescript", "tsc");
  const result = await node(tsc, ["--noEmit", "-p", join(dir, "tsconfig.json")], dir).catch((error) => error);
  expect(`${result.stdout ?? ""}${result.stderr ?? ""}`).toBe("");
}

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("GraphQL codegen (client preset)", () => {
  it("generates typed documents for the five operations from schema.graphql, and a client type-checks with them", async () => {
    const dir = await tempProject();
    dirs.push(dir);
    await writeFile(
      join(dir, "codegen.json"),
      JSON.stringify({
        schema: join(root, "schema.graphql"),
        documents: [join(fixtures, "graphql/operations.graphql")],
        generates: {
          [join(dir, "gql/")]: {
            preset: "client",
            config: { useTypeImports: true, scalars: { DateTime: "string", JSON: "unknown" } },
          },
        },
        silent: true,
      }),
    );
    await node(await binOf("@graphql-codegen/cli", "graphql-codegen"), ["--config", join(dir, "codegen.json")], dir);
    const generated = await readFile(join(dir, "gql/graphql.ts"), "utf8");
    for (const name of [
      "GetTaskDocument",
      "TaskItemStatsDocument",
      "CreateCommentDocument",
      "UnlinkDeviceDocument",
      "CreatePolicyVersionDocument",
      "TaskPageDocument",
    ]) {
      expect(generated).toContain(`export const ${name} =`);
    }
    await copyFile(join(fixtures, "graphql/client.ts"), join(dir, "client.ts"));
    await typecheck(dir);
  });
});

describe("REST codegen (openapi-typescript and openapi-fetch)", () => {
  // The document is the schema's and the route table's: the worker's database serves it as any other.
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it("generates types from the served OpenAPI document, and an openapi-fetch call of every operation type-checks", async () => {
    const res = await t.app.fetch(new Request("http://test/v1/openapi.json"));
    expect(res.status).toBe(200);
    const document = await res.text();

    const dir = await tempProject();
    dirs.push(dir);
    await writeFile(join(dir, "openapi.json"), document);
    await node(await binOf("openapi-typescript", "openapi-typescript"), ["openapi.json", "-o", "schema.d.ts"], dir);
    const generated = await readFile(join(dir, "schema.d.ts"), "utf8");
    const operationIds = Object.values(
      JSON.parse(document).paths as Record<string, Record<string, { operationId: string }>>,
    ).flatMap((methods) => Object.values(methods).map((op) => op.operationId));
    const client = await readFile(join(fixtures, "rest/client.ts"), "utf8");
    for (const id of operationIds) expect(generated).toContain(`    ${id}: {`);
    // The client calls every path and method the document has.
    for (const [path, methods] of Object.entries(JSON.parse(document).paths as Record<string, object>)) {
      for (const method of Object.keys(methods)) expect(client).toContain(`client.${method.toUpperCase()}("${path}"`);
    }
    await writeFile(join(dir, "client.ts"), client);
    await typecheck(dir);
  });
});
