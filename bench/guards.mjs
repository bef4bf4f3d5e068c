// The price of each per-request step (issue 28, item 2): a bench-only bundle of the service in
// which any step can be switched off at start (BENCH_WITHOUT=<id>,<id>), measured against the same
// bundle with every step on, in the same run, on both transports. Nothing here reaches the
// production bundle: the switches are esbuild stand-ins for one export of a module each, built
// into bench/.guards/ (git-ignored), and src/ has no trace of them.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import autocannon from "autocannon";
import { build } from "esbuild";
import { bundleOptions } from "../scripts/build.mjs";

/**
 * The steps. `module` is what src/ imports (a path from the repository's root, or a package that
 * src/app.ts imports); `stubs` replace exports when the step is off. A step off keeps everything
 * else of its module: only the named export changes, and only in the bench's bundle.
 */
export const GUARD_STEPS = [
  {
    id: "request-id",
    label: "request id (X-Request-Id)",
    module: "src/http/request-id.ts",
    stubs: { useRequestId: "() => ({})" },
  },
  {
    id: "metrics",
    label: "metrics (Prometheus, per route)",
    module: "src/http/metrics.ts",
    stubs: { useMetrics: "() => ({ answered: {} })" },
  },
  {
    id: "log",
    label: "request log",
    module: "src/http/request-log.ts",
    stubs: { useRequestLog: "() => ({ start: {}, line: {} })" },
  },
  {
    id: "rate-limit",
    label: "rate limit (per caller, and on failed authentication)",
    module: "src/http/rate-limit.ts",
    stubs: { useRateLimit: "() => ({})", limitAuthenticationFailures: "(verify) => verify" },
  },
  {
    id: "body-admission",
    label: "body admission (GraphQL: budget, depth, before auth)",
    module: "src/http/body-admission.ts",
    stubs: { useGraphqlBodyAdmission: "() => ({})" },
  },
  {
    id: "input-hygiene",
    label: "input hygiene (GraphQL variables)",
    module: "src/http/input-hygiene.ts",
    stubs: { useGraphqlInputHygiene: "() => ({})" },
  },
  {
    id: "cors",
    label: "CORS (Yoga's cors option)",
    module: "graphql-yoga",
    importer: "src/app.ts",
    reexport: ["useReadinessCheck"],
    stubs: { createYoga: "(options) => real.createYoga({ ...options, cors: false })" },
  },
  {
    id: "csrf",
    label: "CSRF prevention",
    module: "src/http/event-streams.ts",
    stubs: { useCsrfPreventionExceptSameOriginEventStreams: "() => ({})" },
  },
  { id: "idempotency", label: "idempotency keys", module: "src/http/idempotency.ts", stubs: { useIdempotency: "() => ({})" } },
  {
    id: "operation-limits",
    label: "operation limits (depth, aliases, tokens)",
    module: "src/graphql/operation-limits.ts",
    stubs: { useOperationLimits: "() => ({})" },
  },
  { id: "cost-rule", label: "cost rule", module: "src/graphql/query-cost.ts", stubs: { useQueryCost: "() => ({})" } },
  {
    id: "trusted-documents",
    label: "trusted documents (policy, stored ids)",
    module: "src/http/trusted-documents.ts",
    stubs: {
      useTrustedDocuments: "() => ({ plugin: {}, parsing: {}, counts: { runs: new Map(), refused: 0, unknown: 0, parsed: 0 } })",
    },
  },
  {
    id: "safety-net",
    label: "safety net around every hook",
    module: "src/http/error-masking.ts",
    stubs: { withSafetyNet: "(logger, plugins) => plugins" },
  },
  {
    id: "loaders",
    label: "per-request loaders (made, none used here)",
    module: "src/modules/request-loaders.ts",
    stubs: { createLoaders: "() => ({})" },
  },
  {
    id: "rest-validation",
    label: "REST validation (path, query, body)",
    module: "src/rest/request-validation.ts",
    stubs: { validateRestRequest: "() => ({ nulls: [], variables: {} })" },
  },
  {
    id: "etag",
    label: "ETag (REST reads: body re-read, hashed)",
    module: "src/rest/etag.ts",
    stubs: {
      withEtag: "async (request, response) => response",
      etaggedJson:
        '(request, status, json, fetchAPI) => new fetchAPI.Response(json, { status, headers: { "content-type": "application/json; charset=utf-8" } })',
    },
  },
];

const NAMESPACE = "bench-guard-step";

/** esbuild plugin: each step's module is replaced by a wrapper that re-exports it, but for its stubs when off. */
function switchesPlugin(root, steps) {
  const byPath = new Map();
  const byPackage = new Map();
  for (const step of steps) {
    if (step.module.startsWith("src/")) byPath.set(path.join(root, step.module), step);
    else byPackage.set(step.module, step);
  }
  return {
    name: "bench-guard-switches",
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData?.real || args.namespace === NAMESPACE) return undefined;
        const pkg = byPackage.get(args.path);
        if (pkg) {
          if (args.importer !== path.join(root, pkg.importer)) return undefined;
          return { path: pkg.module, namespace: NAMESPACE, pluginData: { step: pkg } };
        }
        if (!args.path.startsWith(".")) return undefined;
        const resolved = await b.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, pluginData: { real: true } });
        const step = byPath.get(resolved.path);
        return step ? { path: resolved.path, namespace: NAMESPACE, pluginData: { step } } : undefined;
      });
      b.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => {
        const { step } = args.pluginData;
        const from = JSON.stringify(step.module.startsWith("src/") ? args.path : step.module);
        // Decided at each call: by BENCH_WITHOUT for a whole process, or by `globalThis.__benchWithout`
        // (a Set) for the app being built or the request being served (the in-process runner).
        const id = JSON.stringify(step.id);
        const lines = [
          `import * as real from ${from};`,
          step.reexport ? `export { ${step.reexport.join(", ")} } from ${from};` : `export * from ${from};`,
          `const fromEnv = new Set((process.env.BENCH_WITHOUT ?? "").split(",").filter(Boolean));`,
          `const off = () => { const w = globalThis.__benchWithout ?? fromEnv; return w.has(${id}) || w.has("all"); };`,
          ...Object.entries(step.stubs).map(
            ([name, stub]) => `export const ${name} = (...args) => (off() ? (${stub})(...args) : real.${name}(...args));`,
          ),
        ];
        return { contents: lines.join("\n"), loader: "js", resolveDir: path.join(root, "src") };
      });
    },
  };
}

/**
 * Builds the bench-only bundle into bench/.guards/server.js: the service's entry with the switches
 * (`steps`: these, or another list such as the write path's, bench/write-path.mjs, into `dir`).
 * From there the bundle finds its migrations as dist/ does (`../../prisma/migrations`).
 */
export async function buildGuardsBundle(root, { steps = GUARD_STEPS, dir = ".guards" } = {}) {
  const outdir = path.join(root, "bench", dir);
  mkdirSync(outdir, { recursive: true });
  // The in-process runner's entry: the app and what it needs, without the HTTP server.
  const appEntry = path.join(outdir, "app-entry.ts");
  writeFileSync(
    appEntry,
    [
      'import "../../src/platform/engine-flags.ts";',
      'export { createApp } from "../../src/app.ts";',
      'export { loadConfig } from "../../src/platform/config.ts";',
      'export { openDatabase } from "../../src/platform/db/database.ts";',
      "",
    ].join("\n"),
  );
  await build({
    ...bundleOptions(outdir),
    entryPoints: { server: path.join(root, "src/server.ts"), app: appEntry },
    plugins: [switchesPlugin(root, steps)],
  });
  return { server: path.join(outdir, "server.js"), app: path.join(outdir, "app.js") };
}

const median = (xs) => {
  const v = xs.filter((x) => typeof x === "number" && !Number.isNaN(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};

/**
 * Both processes under the same load at the same time (half the connections each), so that
 * whatever else the machine does in those seconds hits both alike; CPU time of each server
 * process per request over the same window.
 */
async function loadPair(pair, request, connections, durationS, expectBody, cpuMsOf) {
  const before = pair.map((proc) => cpuMsOf(proc.pid));
  const results = await Promise.all(
    pair.map((proc) =>
      autocannon({
        url: proc.base + request.path,
        method: request.method,
        headers: request.headers,
        body: request.body,
        connections: Math.max(1, Math.round(connections / 2)),
        duration: durationS,
        timeout: 10,
        ...(expectBody ? { expectBody } : {}),
      }),
    ),
  );
  return results.map((result, i) => ({
    rps: result.requests.average,
    requests: result.requests.total,
    errors: result.errors + result.timeouts + result.non2xx + (result.mismatches ?? 0),
    cpuMsPerRequest: result.requests.total ? (cpuMsOf(pair[i].pid) - before[i]) / result.requests.total : null,
  }));
}

/**
 * For each step: the bundle with every step on and the bundle with that step off, both started
 * afresh (the same age, the same warm-up), then rounds in which both take the same load at the
 * same time, on each transport; the price is the median over rounds of the difference in CPU time
 * of the server process per request. An A/A row (nothing off) tells the noise; an "all" row
 * (every step off at once) the bound.
 */
export async function priceGuards({
  bundle,
  start,
  stop,
  log,
  scenarios,
  steps,
  rounds,
  durationS,
  warmupS,
  connections,
  cpuMsOf,
  busyCores,
}) {
  const variants = [
    { id: "none", label: "A/A: nothing off (the noise)" },
    ...GUARD_STEPS.filter((s) => !steps || steps.includes(s.id)),
    { id: "all", label: "every step of the list off at once (a bound)" },
  ];
  const out = [];
  for (const variant of variants) {
    const [base, without] = await Promise.all([
      start({ bundle, without: "", name: "all steps on" }),
      start({ bundle, without: variant.id === "none" ? "" : variant.id, name: `without ${variant.id}` }),
    ]);
    const row = { id: variant.id, label: variant.label, transports: {} };
    try {
      for (const scenario of scenarios) {
        await loadPair([base, without], scenario.request, connections, warmupS, undefined, cpuMsOf);
        const runs = [];
        for (let round = 1; round <= rounds; round++) {
          const busy = busyCores([base.pid, without.pid]);
          const [on, off] = await loadPair(
            [base, without],
            scenario.request,
            connections,
            durationS,
            scenario.expectBody,
            cpuMsOf,
          );
          runs.push({ on, off, otherCores: busy() });
        }
        const t = {
          cpuBase: median(runs.map((r) => r.on.cpuMsPerRequest)),
          cpuWithout: median(runs.map((r) => r.off.cpuMsPerRequest)),
          priceMs: median(runs.map((r) => r.on.cpuMsPerRequest - r.off.cpuMsPerRequest)),
          rpsBase: median(runs.map((r) => r.on.rps)),
          rpsWithout: median(runs.map((r) => r.off.rps)),
          otherCores: median(runs.map((r) => r.otherCores)),
          errorsBase: runs.reduce((n, r) => n + r.on.errors, 0),
          errorsWithout: runs.reduce((n, r) => n + r.off.errors, 0),
          runs,
        };
        t.pricePct = t.priceMs / t.cpuBase;
        row.transports[scenario.id] = t;
        log(
          `  ${variant.id.padEnd(17)} ${scenario.id.padEnd(13)} CPU ms/req on ${t.cpuBase.toFixed(3)}, off ${t.cpuWithout.toFixed(3)}: ` +
            `price ${t.priceMs >= 0 ? "+" : ""}${t.priceMs.toFixed(3)} ms (${(100 * t.pricePct).toFixed(1)} %; rounds ${runs.map((r) => (r.on.cpuMsPerRequest - r.off.cpuMsPerRequest).toFixed(2)).join(" ")}); ` +
            `req/s ${t.rpsBase.toFixed(0)} vs ${t.rpsWithout.toFixed(0)}; errors ${t.errorsBase}/${t.errorsWithout}; other cores ${t.otherCores.toFixed(2)}`,
        );
      }
    } finally {
      await Promise.all([stop(base), stop(without)]);
    }
    out.push(row);
  }
  return out;
}

/** The guard prices as a Markdown table (what the dated results file carries). */
export function guardTable(rows, scenarios) {
  const cell = (t) =>
    t
      ? `${t.cpuBase.toFixed(2)} → ${t.cpuWithout.toFixed(2)}: **${t.priceMs >= 0 ? "+" : "−"}${Math.abs(t.priceMs).toFixed(3)}**` +
        (t.lowMs !== undefined ? ` [${t.lowMs.toFixed(3)}, ${t.highMs.toFixed(3)}]` : "") +
        ` (${(100 * t.pricePct).toFixed(0)} %)` +
        (t.errorsBase + t.errorsWithout ? ` ⚠ ${t.errorsBase}/${t.errorsWithout} errors` : "")
      : "–";
  const lines = [
    `| step | ${scenarios.map((s) => `${s.label}: CPU ms/req on → off: price (share)`).join(" | ")} | other cores |`,
    `| --- | ${scenarios.map(() => "---:").join(" | ")} | ---: |`,
  ];
  for (const row of rows) {
    const other = median(scenarios.map((s) => row.transports[s.id]?.otherCores));
    lines.push(
      `| ${row.label} (\`${row.id}\`) | ${scenarios.map((s) => cell(row.transports[s.id])).join(" | ")} | ${other?.toFixed(2) ?? "–"} |`,
    );
  }
  return lines.join("\n");
}
