import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
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
  });

  it("bundles graphql and every package that uses it, so that one copy of graphql is loaded", async () => {
    const result = await build({
      ...bundleOptions("dist-test"),
      absWorkingDir: root,
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const output = Object.values(result.metafile?.outputs ?? {}).find((o) => o.entryPoint === "src/server.ts");
    const imported = new Set(
      output?.imports
        .filter((i) => i.external)
        .map((i) =>
          i.path
            .split("/")
            .slice(0, i.path.startsWith("@") ? 2 : 1)
            .join("/"),
        ),
    );
    const bundled = new Set(
      Object.keys(output?.inputs ?? {}).flatMap((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.slice(1) ?? []),
    );
    for (const name of ["graphql", "graphql-yoga", "sofa-api", "@pothos/core", "@envelop/core", "@graphql-tools/utils", "zod"]) {
      expect(bundled, name).toContain(name);
      expect(imported, name).not.toContain(name);
    }
    // What stays outside (scripts/build.mjs's KEPT_EXTERNAL) imports no graphql of its own.
    for (const name of imported) {
      if (name.startsWith("node:") || !existsSync(path.join(root, "node_modules", name, "package.json"))) continue;
      const manifest = JSON.parse(readFileSync(path.join(root, "node_modules", name, "package.json"), "utf8"));
      expect(Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }), name).not.toContain("graphql");
    }
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
