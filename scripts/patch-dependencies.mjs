// Small, exact patches to installed packages, applied after every install (package.json's
// postinstall, before `prisma generate`). Each patch names the package's files and the exact text
// it replaces; a file is patched only when every text it expects is there exactly once, so a new
// version of the package is never half-patched: it is left as installed, with a warning here, and
// `test/unit/dependency-patches.test.ts` fails until the patch is updated or removed. Running this
// again changes nothing. Why each patch exists: docs/performance.md, "Patched packages".
//   node scripts/patch-dependencies.mjs          # apply
//   node scripts/patch-dependencies.mjs --check  # exit 1 if a patch is not in effect
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export const patches = [
  {
    name: "prisma-parameter-graph-maps",
    package: "@prisma/client",
    // Prisma's query plan cache reads a graph of the schema's inputs at start (3,146 nodes here),
    // keeping each node's edges in an object keyed by string-table index (up to 949). V8 gives such
    // an object a backing array as long as its largest key: 15 MB of mostly holes, alive for the
    // process's life. With a Map per node, constructing the client grows the heap by about 3 MB
    // instead of 17.7 (the test measures it).
    files: ["runtime/client.js", "runtime/client.mjs"],
    replacements: [
      [
        "let i=this.#i(),o={};for(let s=0;s<i;s++){let a=this.#i(),u=this.#a(),",
        "let i=this.#i(),o=new Map;for(let s=0;s<i;s++){let a=this.#i(),u=this.#a(),",
      ],
      ["o[a]=S}r.push({edges:o})", "o.set(a,S)}r.push({edges:o})"],
      [
        "let i=this.#i(),o={};for(let s=0;s<i;s++){let a=this.#i(),u=this.#o(),",
        "let i=this.#i(),o=new Map;for(let s=0;s<i;s++){let a=this.#i(),u=this.#o(),",
      ],
      ["o[a]=P}r.push({edges:o})", "o.set(a,P)}r.push({edges:o})"],
      ["let o=n.edges[i];if(o)return{flags:", "let o=n.edges.get(i);if(o)return{flags:"],
      ["let o=n.edges[i];if(o)return{argsNodeId:", "let o=n.edges.get(i);if(o)return{argsNodeId:"],
    ],
  },
];

const occurrences = (text, part) => text.split(part).length - 1;

/** What a patch's file is now: "applied", "unpatched" (every text to replace there once) or "changed". */
export function fileState(text, replacements) {
  if (replacements.every(([from, to]) => occurrences(text, to) === 1 && !text.includes(from))) return "applied";
  if (replacements.every(([from]) => occurrences(text, from) === 1)) return "unpatched";
  return "changed";
}

function versionOf(packageDir) {
  try {
    return JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")).version;
  } catch {
    return "?";
  }
}

/** Each patch's file and its state; with `apply`, unpatched files are patched first. */
export function patchDependencies({ apply, modules = path.join(root, "node_modules") } = {}) {
  const results = [];
  for (const patch of patches) {
    const packageDir = path.join(modules, patch.package);
    const version = versionOf(packageDir);
    for (const file of patch.files) {
      const full = path.join(packageDir, file);
      if (!existsSync(full)) {
        results.push({ patch: patch.name, file: full, state: "missing", version });
        continue;
      }
      let text = readFileSync(full, "utf8");
      let state = fileState(text, patch.replacements);
      if (apply && state === "unpatched") {
        for (const [from, to] of patch.replacements) text = text.replace(from, () => to);
        writeFileSync(full, text);
        state = fileState(text, patch.replacements);
      }
      results.push({ patch: patch.name, file: full, state, version });
    }
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const check = process.argv.includes("--check");
  const results = patchDependencies({ apply: !check });
  const off = results.filter((r) => r.state !== "applied");
  for (const r of off) {
    process.stderr.write(
      `patch-dependencies: ${r.patch} not in effect for ${path.relative(root, r.file)} (${r.state}; installed version ${r.version}): ` +
        "the package works as installed; update or remove the patch in scripts/patch-dependencies.mjs\n",
    );
  }
  // An install never fails for a patch (the packages work without it); --check does, for the tests.
  process.exit(check && off.length ? 1 : 0);
}
