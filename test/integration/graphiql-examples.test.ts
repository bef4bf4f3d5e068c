import { parse, validate } from "graphql";
import { describe, expect, it } from "vitest";
import { graphiqlExamples } from "../../src/graphiql.js";
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
});
