import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { errorStatus } from "../../src/platform/errors.js";

describe("README", () => {
  it("lists every error code in its Errors table, with the REST status", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const table = readme.slice(readme.indexOf("## Errors"), readme.indexOf("\n## ", readme.indexOf("## Errors") + 1));
    const missing = Object.entries(errorStatus)
      .filter(([code, status]) => {
        const row = table.split("\n").find((line) => line.startsWith(`| \`${code}\``));
        return !row || (!code.startsWith("GRAPHQL_") && !row.includes(`| ${status} `));
      })
      .map(([code]) => code);
    expect(missing).toEqual([]);
  });
});
