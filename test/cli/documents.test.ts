import path from "node:path";
import { describe, expect, it } from "vitest";
import { documentIdOf } from "../../src/platform/document-ids.js";
import { cliTestFiles } from "../helpers/cli-process.js";

/** `documents publish` and `documents list` as an operator runs them, on the embedded database or PostgreSQL. */

const { dir, run, file, jsonOf } = cliTestFiles("documents-cli-");

const getTask = "query GetTask($id: ID!) { task(taskId: $id) { id title } }";
const viewer = "query Viewer { viewer { credential } }";
const vendors = "query Vendors { vendors(limit: 5) { items { id name } } }";

describe("documents publish", () => {
  it("publishes codegen's file (sha256: ids) and Relay's query map (bare ids); publishing again changes nothing", async () => {
    const codegen = file("persisted-documents.json", {
      [`sha256:${documentIdOf(getTask)}`]: getTask,
      [`sha256:${documentIdOf(viewer)}`]: viewer,
    });
    expect(jsonOf(await run("documents", "publish", "--app", "web", "--version", "1.0.0", codegen, "--json"))).toEqual({
      app: "web",
      version: "1.0.0",
      published: 2,
      alreadyKnown: 0,
    });
    expect(jsonOf(await run("documents", "publish", "--app", "web", "--version", "1.0.0", codegen, "--json"))).toEqual({
      app: "web",
      version: "1.0.0",
      published: 0,
      alreadyKnown: 2,
    });
    const relay = file("queryMap.json", { [documentIdOf(viewer)]: viewer, [documentIdOf(vendors)]: vendors });
    expect(jsonOf(await run("documents", "publish", "--app", "relay-app", "--version", "7", relay, "--json"))).toEqual({
      app: "relay-app",
      version: "7",
      published: 1,
      alreadyKnown: 1,
    });

    const listed = jsonOf(await run("documents", "list", "--json")).documents;
    expect(listed).toHaveLength(3);
    expect(listed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          id: `sha256:${documentIdOf(getTask)}`,
          app: "web",
          version: "1.0.0",
          operationName: "GetTask",
        }),
        expect.objectContaining({ id: `sha256:${documentIdOf(viewer)}`, app: "web", version: "1.0.0", operationName: "Viewer" }),
        expect.objectContaining({
          id: `sha256:${documentIdOf(vendors)}`,
          app: "relay-app",
          version: "7",
          operationName: "Vendors",
        }),
      ]),
    );
    const text = await run("documents", "list", "--app", "relay-app");
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(documentIdOf(vendors));
    expect(text.stdout).not.toContain(documentIdOf(getTask));
  });

  it("publishes Apollo's persisted query manifest", async () => {
    const body = "query Member($id: ID!) { member(id: $id) { id name } }";
    const manifest = file("manifest.json", {
      format: "apollo-persisted-query-manifest",
      version: 1,
      operations: [{ id: documentIdOf(body), name: "Member", type: "query", body }],
    });
    expect(jsonOf(await run("documents", "publish", "--app", "apollo", "--version", "3", manifest, "--json"))).toMatchObject({
      published: 1,
      alreadyKnown: 0,
    });
  });

  it("stores none when any document is bad, names every bad one and exits 1", async () => {
    const good = "query Good { viewer { credential member { id } } }";
    const unknownField = "query Unknown { viewer { nonsense } }";
    const broken = "query Broken { viewer { ";
    const mislabelled = "query Mislabelled { viewer { credential } __typename }";
    const bad = file("bad.json", {
      [`sha256:${documentIdOf(good)}`]: good,
      [`sha256:${documentIdOf(unknownField)}`]: unknownField,
      [`sha256:${documentIdOf(broken)}`]: broken,
      [`sha256:${documentIdOf("something else")}`]: mislabelled,
      "not-a-hash": good,
    });
    const result = await run("documents", "publish", "--app", "web", "--version", "1.1.0", bad, "--json");
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/4 of 5 documents cannot be published; none was stored/);
    expect(result.stderr).toContain(`${documentIdOf(unknownField)} (Unknown): Cannot query field "nonsense"`);
    expect(result.stderr).toContain(`${documentIdOf(broken)}: syntax:`);
    expect(result.stderr).toContain(`${documentIdOf("something else")} (Mislabelled): the id is not the SHA-256`);
    expect(result.stderr).toContain("not-a-hash (Good): the id is not a SHA-256");
    const listed = jsonOf(await run("documents", "list", "--json")).documents;
    expect(listed.map((d: { id: string }) => d.id)).not.toContain(`sha256:${documentIdOf(good)}`);
  });

  it("exits 2 for a missing file argument or a bad app name, and 1 for a file it cannot read or parse", async () => {
    // One at a time: a command holds the embedded database while it runs.
    const missing = await run("documents", "publish", "--app", "web", "--version", "1", "--json");
    const badApp = await run("documents", "publish", "--app", "web app", "--version", "1", path.join(dir, "x.json"), "--json");
    const unreadable = await run("documents", "publish", "--app", "web", "--version", "1", path.join(dir, "absent.json"));
    const notJson = await run("documents", "publish", "--app", "web", "--version", "1", file("text.json", "query { x }"));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/Missing FILE/);
    expect(badApp.code).toBe(2);
    expect(badApp.stderr).toMatch(/--app must be/);
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toMatch(/Cannot read .*absent\.json/);
    expect(notJson.code).toBe(1);
    expect(notJson.stderr).toMatch(/not JSON/);
  });
});
