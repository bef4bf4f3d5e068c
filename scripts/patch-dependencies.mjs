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
  {
    name: "graphql-tools-shared-resolve-info",
    package: "@graphql-tools/executor",
    // The executor builds every field's \`info\` as an object of 14 properties and two closures, for
    // each item of a list again (250 times for a list page of 50 tasks, about 1,900 for the vendor
    // page). Here a field's parts are kept once per execution and each item's \`info\` holds its
    // path and them, the same properties read through getters: with the arguments patch below, 17 %
    // fewer bytes a list page (bench/heap-profile.mjs), CPU a request 4 to 5 % lower on the graph's reads.
    files: ["esm/execution/execute.js"],
    replacements: [
      [
        `export function buildResolveInfo(exeContext, fieldDef, fieldNodes, parentType, path) {
    // The resolve function's optional fourth argument is a collection of
    // information about the current execution state.
    // GraphQL.js v17 requires getAbortSignal / getAsyncHelpers on GraphQLResolveInfo.
    // track() mirrors Yoga/Cloudflare waitUntil via context.waitUntil when available.
    let asyncHelpers;
    const variableValues = versionInfo.major >= 17 ? exeContext.variableValues : exeContext.variableValues.coerced;
    return {
        fieldName: fieldDef.name,
        fieldNodes,
        returnType: fieldDef.type,
        parentType,
        path,
        schema: exeContext.schema,
        fragments: exeContext.fragments,
        rootValue: exeContext.rootValue,
        operation: exeContext.operation,
        variableValues: variableValues,
        signal: exeContext.signal,
        getAbortSignal: () => exeContext.signal,
        getAsyncHelpers: () => (asyncHelpers ??= {
            promiseAll: Promise.all.bind(Promise),
            track: maybePromises => {
                const waitUntil = exeContext.contextValue?.waitUntil;
                if (typeof waitUntil !== 'function') {
                    return;
                }
                for (const value of maybePromises) {
                    if (isPromise(value)) {
                        waitUntil(value);
                    }
                }
            },
        }),
    };
}
`,
        `export function buildResolveInfo(exeContext, fieldDef, fieldNodes, parentType, path) {
    // One record per field of an execution (a list's items share it), the path each one's own.
    let infos = exeContext.resolveInfos;
    if (infos === undefined) {
        infos = exeContext.resolveInfos = new Map();
    }
    let shared = infos.get(fieldNodes);
    if (shared === undefined || shared.parentType !== parentType || shared.fieldDef !== fieldDef) {
        shared = new SharedResolveInfo(exeContext, fieldDef, fieldNodes, parentType);
        infos.set(fieldNodes, shared);
    }
    return new ResolveInfo(shared, path);
}
class SharedResolveInfo {
    constructor(exeContext, fieldDef, fieldNodes, parentType) {
        this.exeContext = exeContext;
        this.fieldDef = fieldDef;
        this.fieldNodes = fieldNodes;
        this.parentType = parentType;
        this.variableValues = versionInfo.major >= 17 ? exeContext.variableValues : exeContext.variableValues.coerced;
        this.asyncHelpers = undefined;
    }
}
class ResolveInfo {
    constructor(shared, path) {
        this.shared = shared;
        this.path = path;
    }
    get fieldName() { return this.shared.fieldDef.name; }
    get fieldNodes() { return this.shared.fieldNodes; }
    get returnType() { return this.shared.fieldDef.type; }
    get parentType() { return this.shared.parentType; }
    get schema() { return this.shared.exeContext.schema; }
    get fragments() { return this.shared.exeContext.fragments; }
    get rootValue() { return this.shared.exeContext.rootValue; }
    get operation() { return this.shared.exeContext.operation; }
    get variableValues() { return this.shared.variableValues; }
    get signal() { return this.shared.exeContext.signal; }
    getAbortSignal() { return this.shared.exeContext.signal; }
    getAsyncHelpers() {
        const shared = this.shared;
        const exeContext = shared.exeContext;
        return (shared.asyncHelpers ??= {
            promiseAll: Promise.all.bind(Promise),
            track: maybePromises => {
                const waitUntil = exeContext.contextValue?.waitUntil;
                if (typeof waitUntil !== 'function') {
                    return;
                }
                for (const value of maybePromises) {
                    if (isPromise(value)) {
                        waitUntil(value);
                    }
                }
            },
        });
    }
}
`,
      ],
    ],
  },
  {
    name: "graphql-tools-fast-result-maps",
    package: "@graphql-tools/executor",
    // Every object of an answer was made with Object.create(null): V8 keeps such an object's
    // properties in a hash table (dictionary mode), which takes several times the bytes and makes
    // JSON.stringify take its slow path (a page of 50 tasks: 29 to 34 us against 10 to 13). Objects
    // of a constructor whose prototype has a null prototype keep the same guarantee (no inherited
    // key: an alias "__proto__" or "constructor" is an own property like any other) with fast
    // properties. promiseForObject.js defines it, for itself and for execute.js.
    files: ["esm/execution/promiseForObject.js"],
    replacements: [
      [
        "export function promiseForObject(object, signal, signalPromise) {\n    signal?.throwIfAborted();\n    const resolvedObject = Object.create(null);\n",
        "/** An answer's object: no prototype of its own to inherit keys from, and fast properties. */\nexport function ResultMap() { }\nResultMap.prototype = Object.create(null);\nexport function promiseForObject(object, signal, signalPromise) {\n    signal?.throwIfAborted();\n    const resolvedObject = new ResultMap();\n",
      ],
    ],
  },
  {
    name: "graphql-tools-fast-result-maps-in-execute",
    package: "@graphql-tools/executor",
    // The objects of executeFields (an object's fields run in parallel: nearly every object of an
    // answer) and executeFieldsSerially (a mutation's root), as above.
    files: ["esm/execution/execute.js"],
    replacements: [
      [
        "import { promiseForObject } from './promiseForObject.js';",
        "import { promiseForObject, ResultMap } from './promiseForObject.js';",
      ],
      ["        });\n    }, Object.create(null));\n}", "        });\n    }, new ResultMap());\n}"],
      [
        "function executeFields(exeContext, parentType, sourceValue, path, fields, asyncPayloadRecord) {\n    const results = Object.create(null);",
        "function executeFields(exeContext, parentType, sourceValue, path, fields, asyncPayloadRecord) {\n    const results = new ResultMap();",
      ],
    ],
  },
  {
    name: "graphql-tools-arguments-of-argumentless-fields",
    // The executor's own copy (graphql-yoga's execution reads arguments through it).
    package: "@graphql-tools/executor/node_modules/@graphql-tools/utils",
    // A Map of the field node's arguments was built for every field execution, also for the fields
    // that define none (nearly all of a page's): they now answer their empty object at once.
    files: ["esm/getArgumentValues.js"],
    replacements: [
      [
        `function getArgumentValuesLegacy(def, node, variableValues) {
    const coercedValues = {};
    const argumentNodes = node.arguments ?? [];
`,
        `function getArgumentValuesLegacy(def, node, variableValues) {
    const coercedValues = {};
    // A field without arguments (most of them) has nothing to read: no map of the node's arguments.
    if (def.args.length === 0) {
        return coercedValues;
    }
    const argumentNodes = node.arguments ?? [];
`,
      ],
    ],
  },
  // The two copies installed: graphql-yoga's, @envelop/core's and @whatwg-node/server's (1.3.2), and
  // the executor's own (2.0.0), the same code.
  ...["@whatwg-node/promise-helpers", "@graphql-tools/executor/node_modules/@whatwg-node/promise-helpers"].map((pkg) => ({
    name: "promise-helpers-values-at-hand",
    package: pkg,
    // Yoga and envelop run every plugin hook of a request through iterateAsync and
    // handleMaybePromise, which wrapped even a value at hand in three fake promises of three
    // closures each: 77 of the 197 KB a GraphQL get task allocated. A value at hand now goes
    // straight through and a run of hooks that answer at once is a loop; a promise, a throw, a
    // finally step and the order of the calls are as before (the test runs each case).
    files: ["esm/index.js"],
    replacements: [
      [
        `export function handleMaybePromise(inputFactory, outputSuccessFactory, outputErrorFactory, finallyFactory) {
    let result$ = fakePromise().then(inputFactory).then(outputSuccessFactory, outputErrorFactory);
`,
        `export function handleMaybePromise(inputFactory, outputSuccessFactory, outputErrorFactory, finallyFactory) {
    // Without a finally step, a value at hand goes straight through: no fake promise per step.
    if (!finallyFactory) {
        let input;
        try {
            input = inputFactory();
        }
        catch (error) {
            if (!outputErrorFactory) {
                throw error;
            }
            return unfakePromise(fakePromise(outputErrorFactory(error)));
        }
        if (isPromise(input)) {
            return unfakePromise(fakePromise(input).then(outputSuccessFactory, outputErrorFactory));
        }
        if (!outputSuccessFactory) {
            return input;
        }
        const output = outputSuccessFactory(input);
        return isPromise(output) ? unfakePromise(fakePromise(output)) : output;
    }
    let result$ = fakePromise().then(inputFactory).then(outputSuccessFactory, outputErrorFactory);
`,
      ],
      [
        `    function iterate() {
        const { done: endOfIterator, value } = iterator.next();
        if (endOfIterator) {
            return;
        }
        let endedEarly = false;
        function endEarly() {
            endedEarly = true;
        }
        return handleMaybePromise(function handleCallback() {
            return callback(value, endEarly, index++);
        }, function handleCallbackResult(result) {
            if (result) {
                results?.push(result);
            }
            if (endedEarly) {
                return;
            }
            return iterate();
        });
    }
`,
        `    function iterate() {
        // Callbacks that answer at once are taken in a loop; one that answers a promise goes on when it settles.
        for (;;) {
            const { done: endOfIterator, value } = iterator.next();
            if (endOfIterator) {
                return;
            }
            let endedEarly = false;
            const endEarly = () => {
                endedEarly = true;
            };
            const result = callback(value, endEarly, index++);
            if (isPromise(result)) {
                return unfakePromise(fakePromise(result).then(function handleCallbackResult(result) {
                    if (result) {
                        results?.push(result);
                    }
                    if (endedEarly) {
                        return;
                    }
                    return iterate();
                }));
            }
            if (result) {
                results?.push(result);
            }
            if (endedEarly) {
                return;
            }
        }
    }
`,
      ],
    ],
  })),
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

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
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
