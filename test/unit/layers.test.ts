import { fileURLToPath } from "node:url";
import madge from "madge";
import { beforeAll, describe, expect, it } from "vitest";

const src = fileURLToPath(new URL("../../src", import.meta.url));

// Each layer imports only from the layers listed for it (and from itself): imports point down.
const allowed: Record<string, string[]> = {
  platform: ["generated"],
  auth: ["platform", "generated"],
  http: ["auth", "platform", "generated", "rest"],
  graphql: ["auth", "platform", "generated", "rest", "modules"],
  modules: ["graphql", "auth", "platform", "generated", "rest"],
  rest: ["http", "auth", "platform", "generated"],
  admin: ["modules", "graphql", "auth", "platform", "generated", "rest"],
  cli: ["admin", "modules", "graphql", "auth", "platform", "generated", "rest"],
};

describe("src layers", () => {
  let graph: Record<string, string[]>;
  let circular: string[][];
  beforeAll(async () => {
    const result = await madge(src, {
      fileExtensions: ["ts"],
      tsConfig: fileURLToPath(new URL("../../tsconfig.json", import.meta.url)),
      excludeRegExp: [/^generated[\\/]/],
      // Type-only imports count: a reader cannot tell them from the others.
      detectiveOptions: { ts: { skipTypeImports: false }, tsx: { skipTypeImports: false } },
    });
    graph = result.obj();
    circular = result.circular();
  }, 60_000);

  it("reads every source file", () => {
    expect(Object.keys(graph)).toContain("app.ts");
    expect(Object.keys(graph)).toContain("modules/tasks/tasks.service.ts");
    expect(graph["graphql/context.ts"]).toContain("modules/services.ts");
  });

  it("has no import circle, type-only imports included", () => {
    expect(circular).toEqual([]);
  });

  it("imports point down: no layer imports one above it", () => {
    const offenders = Object.entries(graph).flatMap(([file, imports]) => {
      const layer = file.split("/")[0]!;
      const may = allowed[layer];
      if (!may || !file.includes("/")) return [];
      return imports
        .filter((target) => target.includes("/") && target.split("/")[0] !== layer && !may.includes(target.split("/")[0]!))
        .map((target) => `${file} -> ${target}`);
    });
    expect(offenders).toEqual([]);
  });
});
