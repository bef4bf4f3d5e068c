import { parse, print, validate } from "graphql";
import { describe, expect, it } from "vitest";
import { graphiqlExamples, graphiqlLineWidth } from "../../src/http/graphiql.js";
import { schema } from "../../src/schema.js";

describe("GraphiQL examples", () => {
  it("are valid against the schema and cover the five operations and the policy review", () => {
    const document = parse(graphiqlExamples);
    expect(validate(schema, document)).toEqual([]);
    const text = graphiqlExamples;
    for (const field of [
      "task(",
      "taskItemStats(",
      "createComment(",
      "unlinkDevice(",
      "createPolicyVersion(",
      "submitPolicyVersion(",
      "approvePolicyVersion(",
      "rejectPolicyVersion(",
    ]) {
      expect(text).toContain(field);
    }
  });

  it("include the screens of the graph, one request each, over several lines", () => {
    const operations = parse(graphiqlExamples).definitions.map((d) => ("name" in d ? d.name?.value : undefined));
    expect(operations).toEqual(expect.arrayContaining(["TaskPage", "VendorPage", "PolicyPage", "FrameworkPage"]));
    for (const name of ["TaskPage", "VendorPage", "PolicyPage", "FrameworkPage"]) {
      const body = graphiqlExamples.slice(graphiqlExamples.indexOf(`query ${name}`)).split("\n}\n")[0] as string;
      expect(body.split("\n").length).toBeGreaterThan(10);
    }
  });

  it("are formatted one field per line, none wider than the editor", () => {
    const lines = graphiqlExamples.split("\n");
    expect(lines.filter((line) => line.length > graphiqlLineWidth)).toEqual([]);
    // One selection per line, as graphql-js prints them: no line holds two fields.
    const operations = graphiqlExamples.replace(/^#.*\n/gm, "").trim();
    const printed = print(parse(operations)).split("\n");
    for (const line of printed.filter((l) => l.length <= graphiqlLineWidth)) expect(lines).toContain(line);
    expect(lines.length).toBeGreaterThan(60);
  });
});
