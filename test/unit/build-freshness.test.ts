import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

// `npm start` builds only when dist/ is not the bundle of the current src/ (scripts/build.mjs
// --if-changed). The build script runs here on a small tree of its own, as `npm start` runs it.
const root = fileURLToPath(new URL("../..", import.meta.url));
const buildScript = path.join(root, "scripts", "build.mjs");
const work = mkdtempSync(path.join(tmpdir(), "build-freshness-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function build(): string {
  return execFileSync(process.execPath, [buildScript, "--if-changed"], { cwd: work, encoding: "utf8" });
}
const bundle = () => readFileSync(path.join(work, "dist", "service.js"), "utf8");
const bundleMtime = () => statSync(path.join(work, "dist", "service.js")).mtimeMs;

describe("npm start's build step", () => {
  it("is what npm start runs, in the server's own process", () => {
    const start = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).scripts.start as string;
    expect(start).toMatch(/^node (--\S+ )*scripts\/start\.mjs$/);
  });

  it("builds a tree once, skips an unchanged one and rebuilds after any change to src/", () => {
    mkdirSync(path.join(work, "src", "lib"), { recursive: true });
    writeFileSync(path.join(work, "package.json"), '{"type":"module"}\n');
    writeFileSync(path.join(work, "src", "server.ts"), 'import { word } from "./lib/word.js";\nconsole.log(word);\n');
    writeFileSync(path.join(work, "src", "lib", "word.ts"), 'export const word: string = "first";\n');

    expect(build()).toContain("built");
    expect(bundle()).toContain('"first"');
    const firstBuild = bundleMtime();

    // Unchanged: nothing written, nothing said.
    expect(build()).toBe("");
    expect(bundleMtime()).toBe(firstBuild);

    // A changed source file, even one the entry point imports indirectly.
    writeFileSync(path.join(work, "src", "lib", "word.ts"), 'export const word: string = "second";\n');
    expect(build()).toContain("built");
    expect(bundle()).toContain('"second"');
    expect(build()).toBe("");

    // A new file under src/ (e.g. the generated client) counts as a change too.
    writeFileSync(path.join(work, "src", "lib", "unused.ts"), "export const unused = 1;\n");
    expect(build()).toContain("built");
    expect(build()).toBe("");

    // A bundle changed or removed behind the build's back is rebuilt.
    writeFileSync(path.join(work, "dist", "service.js"), "tampered\n");
    expect(build()).toContain("built");
    expect(bundle()).toContain('"second"');
    rmSync(path.join(work, "dist", "server.js"));
    expect(build()).toContain("built");
    expect(build()).toBe("");
    rmSync(path.join(work, "dist", "service.js.map"));
    expect(build()).toContain("built");
    expect(build()).toBe("");
  });

  it("writes dist/server.js as a launcher that turns on the compile cache before the bundle loads", () => {
    writeFileSync(
      path.join(work, "src", "server.ts"),
      'import module from "node:module";\nimport { word } from "./lib/word.js";\nconsole.log(word, Boolean(module.getCompileCacheDir()));\n',
    );
    expect(build()).toContain("built");
    const run = (env: Record<string, string>) => {
      const base = { ...process.env };
      delete base.NODE_COMPILE_CACHE;
      delete base.NODE_DISABLE_COMPILE_CACHE;
      return execFileSync(process.execPath, ["dist/server.js"], { cwd: work, encoding: "utf8", env: { ...base, ...env } }).trim();
    };
    expect(run({})).toBe("second true");
    expect(run({ NODE_DISABLE_COMPILE_CACHE: "1" })).toBe("second false");
  });
  it("starts the built server after building it when src/ changed (scripts/start.mjs)", () => {
    writeFileSync(path.join(work, "src", "lib", "word.ts"), 'export const word: string = "third";\n');
    const start = () =>
      execFileSync(process.execPath, [path.join(root, "scripts", "start.mjs")], { cwd: work, encoding: "utf8" })
        .trim()
        .split("\n");
    expect(start()).toEqual(["built dist/service.js", "third true"]);
    expect(start()).toEqual(["third true"]);
  });

  it("trusts a file's size and time only when the file is older than the stamp by two seconds, as git does", () => {
    build();
    const stampFile = path.join(work, "dist", "build-inputs.json");
    const stampedAt = () => JSON.parse(readFileSync(stampFile, "utf8")).at as number;
    const word = path.join(work, "src", "lib", "word.ts");
    // Every file older than the stamp: nothing is read, the stamp is left as it is.
    const old = new Date(Date.now() - 60_000);
    const files = [
      "src/server.ts",
      "src/lib/word.ts",
      "src/lib/unused.ts",
      "package.json",
      "dist/service.js",
      "dist/service.js.map",
      "dist/server.js",
    ];
    for (const file of files) utimesSync(path.join(work, file), old, old);
    expect(build()).toBe(""); // contents the same, times changed: read, then the stamp records the new times
    const recorded = stampedAt();
    expect(build()).toBe("");
    expect(stampedAt()).toBe(recorded);

    // An edit that keeps the size, within the stamp's two seconds, with the time set back as it
    // was recorded (a coarse clock's same tick): read, seen, rebuilt.
    const before = statSync(word);
    writeFileSync(word, 'export const word: string = "forth";\n');
    const stamped = new Date(stampedAt() - 500);
    utimesSync(word, stamped, stamped);
    writeFileSync(stampFile, readFileSync(stampFile, "utf8").replace(String(before.mtimeMs), String(statSync(word).mtimeMs)));
    expect(build()).toContain("built");
    expect(bundle()).toContain('"forth"');
  });
});
