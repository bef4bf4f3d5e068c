import { parse, print, validate } from "graphql";
import { describe, expect, it } from "vitest";
import { graphiqlExamples } from "../../src/graphiql.js";
import { schema } from "../../src/schema.js";

describe("GraphiQL examples", () => {
  it("are valid against the schema and cover the five operations", () => {
    const document = parse(graphiqlExamples);
    expect(validate(schema, document)).toEqual([]);
    const text = graphiqlExamples;
    for (const field of ["task(", "taskItemStats(", "createComment(", "unlinkDevice(", "createPolicyVersion("]) {
      expect(text).toContain(field);
    }
  });

  it("are formatted one field per line, as graphql-js prints them, so none runs past the editor", () => {
    const operations = graphiqlExamples.replace(/^#.*\n/gm, "").trim();
    expect(operations).toBe(print(parse(operations)));
    const longest = Math.max(...graphiqlExamples.split("\n").map((line) => line.length));
    expect(longest).toBeLessThanOrEqual(100);
    expect(graphiqlExamples.split("\n").length).toBeGreaterThan(40);
  });
});
