import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a script of the build, without types
import { bundleOptions } from "../../scripts/build.mjs";
import { restSchemaOf } from "../../src/rest/rest-schema.js";
import { schema } from "../../src/schema.js";

// What the server does before it listens (docs/performance.md, Start-up).
const root = fileURLToPath(new URL("../..", import.meta.url));

describe("start-up", () => {
  it("loads the e-mail queue, the mailer, the embedded database and the S3 SDK only when they are used", async () => {
    // Bundled as scripts/build.mjs bundles it.
    const result = await build({
      ...bundleOptions("dist-test"),
      absWorkingDir: root,
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const imports = Object.values(result.metafile?.outputs ?? {}).flatMap((output) => output.imports);
    const kinds = (name: string) => imports.filter((i) => i.path === name).map((i) => i.kind);
    // The AWS SDK too: a service whose objects are not in S3 never needs it.
    const lazy = [
      "pg-boss",
      "nodemailer",
      "@electric-sql/pglite",
      "pglite-prisma-adapter",
      "@aws-sdk/client-s3",
      "@aws-sdk/s3-request-presigner",
    ];
    for (const name of lazy) {
      expect(kinds(name), name).toContain("dynamic-import");
      expect(kinds(name), name).not.toContain("import-statement");
    }
    // GraphiQL's 9 MB of scripts too, read when the playground is first asked for.
    expect(kinds("@graphql-yoga/render-graphiql/graphiql")).toEqual(["dynamic-import"]);
    // What every start needs stays a static import.
    expect(kinds("graphql-yoga")).toContain("import-statement");
  });

  it("gives the REST view's root types the definition Sofa reads its argument descriptions from", () => {
    const view = restSchemaOf(schema);
    for (const type of [view.getQueryType(), view.getMutationType()]) {
      const definition = type?.astNode;
      expect(definition, type?.name).toBeDefined();
      const fields = type?.getFields() ?? {};
      // Every field and argument of the type, with the same descriptions.
      expect(definition?.fields?.map((f) => f.name.value).sort()).toEqual(Object.keys(fields).sort());
      for (const node of definition?.fields ?? []) {
        const field = fields[node.name.value];
        expect(node.description?.value ?? undefined).toBe(field?.description ?? undefined);
        for (const arg of node.arguments ?? []) {
          expect(arg.description?.value ?? undefined).toBe(
            field?.args.find((a) => a.name === arg.name.value)?.description ?? undefined,
          );
        }
      }
    }
  });
});
