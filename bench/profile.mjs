// Summarizes a V8 .cpuprofile (node --cpu-prof): self time by package / source file, the share of
// busy time each package is on the stack for, and the top self-time functions. Frames of the bundle
// (dist/service.js) are mapped back to src/ files through its source map.
//
//   node bench/profile.mjs path/to/file.cpuprofile [windowStartUs windowEndUs]
//   PROFILE_TOP=100 node bench/profile.mjs ...   # keep the top 100 functions (40 by default)
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const special = new Set(["(garbage collector)", "(program)", "(idle)", "(root)"]);
// libuv stream write bindings: the time of the write(2)/writev(2) system calls on sockets.
const socketWrites = new Set([
  "writev",
  "writeBuffer",
  "writeUtf8String",
  "writeLatin1String",
  "writeAsciiString",
  "writeUcs2String",
]);

/** A package name for node_modules paths, "node:<module>" for Node's own, "src/..." for the app. */
function makeClassifier() {
  const maps = new Map();
  function sourceMapFor(file) {
    if (!maps.has(file)) {
      const mapFile = `${file}.map`;
      maps.set(file, existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, "utf8"))) : null);
    }
    return maps.get(file);
  }
  return function classify(frame) {
    const { url, functionName, lineNumber, columnNumber } = frame;
    const name = functionName || "(anonymous)";
    if (!url) {
      if (special.has(functionName)) return { pkg: functionName, where: "", name };
      if (socketWrites.has(functionName)) return { pkg: "(socket writes)", where: "", name };
      return { pkg: "(V8 builtins / native)", where: "", name };
    }
    if (url.startsWith("wasm://")) return { pkg: "(WebAssembly)", where: url, name };
    if (url.startsWith("node:")) {
      const rest = url
        .slice(5)
        .replace(/^internal\//, "")
        .replace(/^deps\//, "");
      const mod = rest.split("/")[0].replace(/^_/, "");
      return { pkg: `node:${mod}`, where: `${url}:${lineNumber + 1}`, name };
    }
    const file = url.startsWith("file://") ? fileURLToPath(url) : url;
    const nm = file.lastIndexOf("/node_modules/");
    if (nm >= 0) {
      const parts = file.slice(nm + 14).split("/");
      const pkg = parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
      const inPkg = parts.slice(pkg.includes("/") ? 2 : 1).join("/");
      return { pkg, where: `${pkg}/${inPkg}:${lineNumber + 1}`, name };
    }
    const map = sourceMapFor(file);
    const entry = map?.findEntry(lineNumber, columnNumber);
    if (entry?.originalSource) {
      const source = entry.originalSource.replace(/^.*?\/(src|node_modules)\//, "$1/");
      if (source.startsWith("node_modules/")) {
        const parts = source.slice(13).split("/");
        const pkg = parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
        return { pkg, where: `${source}:${entry.originalLine + 1}`, name };
      }
      return { pkg: `app ${source}`, where: `${source}:${entry.originalLine + 1}`, name };
    }
    return { pkg: `app ${path.basename(file)}`, where: `${path.basename(file)}:${lineNumber + 1}`, name };
  };
}

// Coarser buckets for the "where does the time go" overview.
const groups = [
  ["idle (waiting for I/O)", (p) => p === "(idle)"],
  ["garbage collection", (p) => p === "(garbage collector)"],
  ["V8 (program: compile, IC, runtime)", (p) => p === "(program)"],
  [
    "PostgreSQL driver (pg, pg-protocol, ...)",
    (p) => /^(pg|pg-protocol|pg-pool|pg-types|postgres-.*|pgpass|pg-connection-string)$/.test(p),
  ],
  [
    "Prisma (client runtime, driver adapter, wasm query compiler)",
    (p) => p.startsWith("@prisma/") || p === "prisma" || p.startsWith("app src/generated/prisma") || p === "(WebAssembly)",
  ],
  [
    "GraphQL execution (graphql, @pothos, @graphql-tools)",
    (p) => /^(graphql|@pothos\/.*|@graphql-tools\/.*|dataloader)$/.test(p),
  ],
  [
    "HTTP framework (graphql-yoga, @whatwg-node, @envelop, sofa-api + fets, armor)",
    (p) =>
      /^(graphql-yoga|@graphql-yoga\/.*|@whatwg-node\/.*|@envelop\/.*|sofa-api|fets|@sinclair\/typebox|@escape\.tech\/.*|@graphql-hive\/.*|urlpattern-polyfill)$/.test(
        p,
      ),
  ],
  [
    "logging, metrics, rate limit (pino, prom-client, rate-limiter-flexible)",
    (p) => /^(pino.*|prom-client|rate-limiter-flexible|sonic-boom|tdigest|bintrees)$/.test(p),
  ],
  ["validation (zod)", (p) => p === "zod"],
  ["app code (src/)", (p) => p.startsWith("app ")],
  ["async_hooks (AsyncLocalStorage's promise hooks)", (p) => p === "node:async_hooks"],
  ["web Request/Response in Node (undici, web streams)", (p) => /^node:(undici|webstreams|worker|blob|url)$/.test(p)],
  ["socket writes (writev system calls)", (p) => p === "(socket writes)"],
  ["Node core (http, net, streams, timers, ...)", (p) => p.startsWith("node:")],
  ["V8 builtins / native (JSON, crypto, regexp, ...)", (p) => p === "(V8 builtins / native)"],
];
const groupOf = (pkg) => groups.find(([, test]) => test(pkg))?.[0] ?? "other packages";

/**
 * @param profile parsed .cpuprofile
 * @param window optional { startUs, endUs } on the profile's clock (CLOCK_MONOTONIC, like process.hrtime)
 */
export function summarizeProfile(profile, window) {
  const classify = makeClassifier();
  const byId = new Map();
  const parent = new Map();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const info = new Map();
  const infoOf = (id) => {
    if (!info.has(id)) info.set(id, classify(byId.get(id).callFrame));
    return info.get(id);
  };

  const { samples, timeDeltas } = profile;
  const self = new Map(); // pkg -> µs
  const onStack = new Map(); // pkg -> µs (busy samples whose stack includes the package)
  const fnSelf = new Map(); // "name|where|pkg" -> µs
  const writesBy = new Map(); // package that issued a socket write -> µs
  let total = 0;
  let busy = 0;
  let t = profile.startTime;
  let inWindow = 0;
  for (let i = 0; i < samples.length; i++) {
    t += timeDeltas[i] ?? 0;
    const duration = timeDeltas[i + 1] ?? timeDeltas[i] ?? 0;
    if (window && (t < window.startUs || t > window.endUs)) continue;
    inWindow++;
    const id = samples[i];
    const leaf = infoOf(id);
    total += duration;
    self.set(leaf.pkg, (self.get(leaf.pkg) ?? 0) + duration);
    const key = `${leaf.name}|${leaf.where}|${leaf.pkg}`;
    fnSelf.set(key, (fnSelf.get(key) ?? 0) + duration);
    if (leaf.pkg === "(idle)") continue;
    busy += duration;
    if (leaf.pkg === "(socket writes)") {
      let by = "node";
      for (let n = parent.get(id); n !== undefined; n = parent.get(n)) {
        const pkg = infoOf(n).pkg;
        if (!pkg.startsWith("node:")) {
          by = pkg;
          break;
        }
      }
      writesBy.set(by, (writesBy.get(by) ?? 0) + duration);
    }
    const seen = new Set();
    for (let n = id; n !== undefined; n = parent.get(n)) {
      const pkg = infoOf(n).pkg;
      if (special.has(pkg)) continue;
      const g = groupOf(pkg);
      seen.add(pkg);
      seen.add(`group:${g}`);
    }
    for (const pkg of seen) onStack.set(pkg, (onStack.get(pkg) ?? 0) + duration);
  }

  const groupSelf = new Map();
  for (const [pkg, us] of self) groupSelf.set(groupOf(pkg), (groupSelf.get(groupOf(pkg)) ?? 0) + us);
  const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]);
  return {
    samples: inWindow,
    totalMs: total / 1000,
    busyMs: busy / 1000,
    groups: sorted(groupSelf).map(([group, us]) => ({
      group,
      selfMs: us / 1000,
      selfPctOfBusy: group.startsWith("idle") ? null : (100 * us) / busy,
      onStackPctOfBusy: group.startsWith("idle") ? null : (100 * (onStack.get(`group:${group}`) ?? 0)) / busy,
    })),
    socketWritesBy: sorted(writesBy).map(([pkg, us]) => ({ pkg, selfMs: us / 1000, selfPctOfBusy: (100 * us) / busy })),
    packages: sorted(self)
      .filter(([pkg]) => pkg !== "(idle)")
      .map(([pkg, us]) => ({
        pkg,
        group: groupOf(pkg),
        selfMs: us / 1000,
        selfPctOfBusy: (100 * us) / busy,
        onStackPctOfBusy: special.has(pkg) ? null : (100 * (onStack.get(pkg) ?? 0)) / busy,
      })),
    functions: sorted(fnSelf)
      .filter(([key]) => !key.startsWith("(idle)|"))
      .slice(0, Number(process.env.PROFILE_TOP ?? 40))
      .map(([key, us]) => {
        const [name, where, pkg] = key.split("|");
        return { name, where, pkg, selfMs: us / 1000, selfPctOfBusy: (100 * us) / busy };
      }),
  };
}

const pct = (x) => (x === null || x === undefined ? "     " : `${x.toFixed(1).padStart(5)}%`);

export function formatSummary(summary, title) {
  const lines = [];
  lines.push(title);
  lines.push(
    `${summary.samples} samples, ${summary.totalMs.toFixed(0)} ms profiled, ${summary.busyMs.toFixed(0)} ms busy ` +
      `(${((100 * summary.busyMs) / summary.totalMs).toFixed(0)}% of the main thread; the rest is idle, waiting for the database or the network).`,
  );
  lines.push("Percentages are of busy (non-idle) main-thread time. self: time in the code itself;");
  lines.push("on stack: time when the code is anywhere on the stack (includes what it calls).");
  lines.push("");
  lines.push(`${"By area".padEnd(80)}  self  on stack`);
  for (const g of summary.groups) {
    if (g.selfPctOfBusy === null) continue;
    // Node core and V8 builtins sit under every stack (event loop, microtasks): no on-stack figure.
    const base = g.group.startsWith("Node core") || g.group.startsWith("V8 builtins");
    lines.push(`  ${g.group.padEnd(78)} ${pct(g.selfPctOfBusy)}  ${base ? "" : pct(g.onStackPctOfBusy)}`);
  }
  if (summary.socketWritesBy.length) {
    lines.push(
      `  socket writes issued by: ${summary.socketWritesBy.map((w) => `${w.pkg} ${w.selfPctOfBusy.toFixed(1)}%`).join(", ")}`,
    );
  }
  lines.push("");
  lines.push(`${"By package / source file (top 30)".padEnd(80)}  self  on stack`);
  for (const p of summary.packages.slice(0, 30)) {
    const base = p.pkg === "(V8 builtins / native)";
    lines.push(`  ${p.pkg.slice(0, 78).padEnd(78)} ${pct(p.selfPctOfBusy)}  ${base ? "" : pct(p.onStackPctOfBusy)}`);
  }
  lines.push("");
  lines.push("Top self-time functions                                                                          self");
  for (const f of summary.functions.slice(0, 30)) {
    const label = `${f.name} ${f.where ? `(${f.where})` : `[${f.pkg}]`}`;
    lines.push(`  ${label.slice(0, 96).padEnd(96)} ${pct(f.selfPctOfBusy)}`);
  }
  return `${lines.join("\n")}\n`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write("usage: node bench/profile.mjs file.cpuprofile [windowStartUs windowEndUs]\n");
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const window = process.argv[4] ? { startUs: Number(process.argv[3]), endUs: Number(process.argv[4]) } : undefined;
  process.stdout.write(formatSummary(summarizeProfile(profile, window), `CPU profile: ${file}`));
}
