import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { remark } from "remark";
import remarkValidateLinks from "remark-validate-links";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The Markdown files whose relative links and anchors must resolve. */
function docsFiles(): string[] {
  const inDir = (dir: string, recursive = false): string[] =>
    readdirSync(path.join(root, dir), { recursive, withFileTypes: false, encoding: "utf8" })
      .filter((name) => name.endsWith(".md"))
      .map((name) => path.join(dir, name));
  return [
    "README.md",
    "CHANGELOG.md",
    ...inDir("docs", true),
    "bench/README.md",
    ...inDir("bench/results"),
    "test/TIMINGS.md",
    ...inDir("test/results"),
  ];
}

/**
 * remark-validate-links checks links to files and to headings in other files only when it runs
 * over a set of files (as its CLI does): it registers a completer on the set and may add the files
 * that links point to. This is that set, without unified-engine. `repository: false`: no `git
 * remote` and no hosted-URL resolution, so only local files and headings are checked, offline.
 */
async function brokenLinks(files: string[]): Promise<string[]> {
  const processor = remark().use(remarkValidateLinks as never, { repository: false }, fileSet());
  type File = Awaited<ReturnType<typeof processor.process>>;
  const completers = new Set<(set: unknown) => Promise<void>>();
  const queue = [...files];
  const done: File[] = [];
  function fileSet() {
    return {
      use: (completer: (set: unknown) => Promise<void>) => completers.add(completer),
      // A file a link points to, read for its headings.
      add: (file: { path: string }) => {
        const relative = path.relative(root, path.resolve(root, file.path));
        if (!queue.includes(relative) && !done.some((known) => known.path === relative)) queue.push(relative);
      },
      valueOf: () => done,
    };
  }
  for (let file = queue.shift(); file; file = queue.shift()) {
    done.push(await processor.process({ cwd: root, path: file, value: readFileSync(path.join(root, file), "utf8") }));
  }
  for (const complete of completers) await complete(fileSet());
  const messages = done.flatMap((file) =>
    file.messages.map((message) => `${file.path}:${message.line ?? "?"}:${message.column ?? "?"} ${message.reason}`),
  );
  return [...new Set(messages)];
}

describe("documentation links", () => {
  it("resolves every relative link and anchor of the README, the change log, docs/, bench/ and test/", async () => {
    const files = docsFiles();
    expect(files).toContain("docs/errors.md");
    expect(await brokenLinks(files)).toEqual([]);
  });
});
