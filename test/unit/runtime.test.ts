import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));

describe("runtime", () => {
  it("runs the tests on the Node that package.json pins, a 24 LTS release", () => {
    const pinned: string = pkg.devDependencies.node;
    expect(pinned).toMatch(/^24\.\d+\.\d+$/);
    expect(process.version).toBe(`v${pinned}`);
  });

  it("gives a child started with `node` from npm's PATH the same Node as the tests", () => {
    // npm scripts put node_modules/.bin first on PATH; tools with a `#!/usr/bin/env node` line
    // (tsx, the CLI) therefore run on the pinned Node too.
    const version = execFileSync("node", ["--version"], { encoding: "utf8" }).trim();
    expect(version).toBe(process.version);
  });

  it("declares the oldest Node its dependencies accept", () => {
    expect(pkg.engines.node).toBe(">=22.15");
  });
});
