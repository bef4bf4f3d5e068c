import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { errorStatus } from "../../src/platform/errors.js";

describe("docs/errors.md", () => {
  it("lists every error code in its table, with the REST status", () => {
    const table = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");
    const missing = Object.entries(errorStatus)
      .filter(([code, status]) => {
        const row = table.split("\n").find((line) => line.startsWith(`| \`${code}\``));
        return !row || (!code.startsWith("GRAPHQL_") && !row.includes(`| ${status} `));
      })
      .map(([code]) => code);
    expect(missing).toEqual([]);
  });
});
