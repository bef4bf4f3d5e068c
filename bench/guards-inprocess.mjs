// The price of each per-request step, in process (bench/guards.mjs builds the bundle; run.mjs
// starts this file with the service's Node flags and reads its answer). One app per variant, all
// on the same database in this one process; requests one at a time (as each HTTP request arrives
// in a tick of its own under load), in short blocks that alternate between the app with every step
// on and the app with one step off, so that whatever the machine does hits both alike.
// Not measured here: the HTTP server's own work (parsing, writing), the same for every variant.
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import pino from "pino";
import { systemBusyMs } from "./cpu.mjs";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { createApp, loadConfig, openDatabase } = await import(pathToFileURL(input.app).href);

const config = loadConfig();
const database = await openDatabase({
  kind: "postgres",
  url: config.databaseUrl,
  poolSize: config.databasePoolSize,
  connectTimeoutMs: config.databaseConnectTimeoutMs,
  statementTimeoutMs: config.databaseStatementTimeoutMs,
});
const logger = pino({ level: "warn" });

const variants = [
  { id: "base", off: new Set() },
  { id: "none", off: new Set() },
  ...input.steps.map((id) => ({ id, off: new Set([id]) })),
  { id: "all", off: new Set(["all"]) },
];
for (const variant of variants) {
  globalThis.__benchWithout = variant.off;
  variant.app = createApp({ database, config, logger });
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** n requests one after the other; CPU ms of this process per request, and wrong answers. */
async function slot(variant, scenario, n) {
  globalThis.__benchWithout = variant.off;
  const { Request } = variant.app.yoga.fetchAPI;
  let errors = 0;
  const before = cpuMs();
  for (let i = 0; i < n; i++) {
    const request = new Request(`http://127.0.0.1${scenario.path}`, {
      method: scenario.method,
      headers: scenario.headers,
      body: scenario.body,
    });
    const response = await variant.app.yoga.fetch(request, {});
    const text = await response.text();
    if (response.status !== 200 || text !== scenario.expectBody) errors++;
  }
  return { cpuMsPerRequest: (cpuMs() - before) / n, errors };
}

const median = (xs) => {
  const v = xs.filter((x) => typeof x === "number" && !Number.isNaN(x)).sort((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

// For each variant: blocks of `requestsPerSlot` requests, base and variant back to back (ABBA by
// block), so that the two see the same seconds of the machine; the price is the median difference
// over the blocks, with its 95 % interval (the mean and its standard error are kept beside it).
const results = {};
for (const scenario of input.scenarios) {
  for (const variant of variants) await slot(variant, scenario, input.warmupRequests);
  results[scenario.id] = {};
  for (const variant of variants.filter((v) => v.id !== "base")) {
    const base = variants[0];
    const diffs = [];
    const on = [];
    const off = [];
    let errorsBase = 0;
    let errorsWithout = 0;
    const wall = performance.now();
    const busy = systemBusyMs();
    const own = cpuMs();
    for (let block = 0; block < input.blocks; block++) {
      const pair = block % 2 ? [variant, base] : [base, variant];
      const measured = {};
      for (const v of pair) measured[v === base ? "on" : "off"] = await slot(v, scenario, input.requestsPerSlot);
      on.push(measured.on.cpuMsPerRequest);
      off.push(measured.off.cpuMsPerRequest);
      diffs.push(measured.on.cpuMsPerRequest - measured.off.cpuMsPerRequest);
      errorsBase += measured.on.errors;
      errorsWithout += measured.off.errors;
    }
    const otherCores = (systemBusyMs() - busy - (cpuMs() - own)) / (performance.now() - wall);
    const meanMs = mean(diffs);
    const sd = Math.sqrt(diffs.reduce((a, d) => a + (d - meanMs) ** 2, 0) / (diffs.length - 1));
    // The price is the median of the block differences: a block that a burst of the machine or a
    // major collection hit moves a mean far more than a median. Its 95 % interval from the order
    // statistics (the sign test's: ranks n/2 ± 0.98 √n).
    const sorted = diffs.toSorted((a, b) => a - b);
    const k = Math.max(0, Math.floor(sorted.length / 2 - 0.98 * Math.sqrt(sorted.length)));
    const priceMs = median(diffs);
    results[scenario.id][variant.id] = {
      cpuBase: median(on),
      cpuWithout: median(off),
      priceMs,
      pricePct: priceMs / median(on),
      lowMs: sorted[k],
      highMs: sorted[sorted.length - 1 - k],
      meanMs,
      standardErrorMs: sd / Math.sqrt(diffs.length),
      otherCores,
      errorsBase,
      errorsWithout,
      requestsPerSide: input.blocks * input.requestsPerSlot,
    };
    const r = results[scenario.id][variant.id];
    process.stdout.write(
      `  ${variant.id.padEnd(17)} ${scenario.id.padEnd(13)} CPU ms/req on ${r.cpuBase.toFixed(3)}, off ${r.cpuWithout.toFixed(3)}: ` +
        `price ${r.priceMs >= 0 ? "+" : ""}${r.priceMs.toFixed(3)} ms [${r.lowMs.toFixed(3)}, ${r.highMs.toFixed(3)}] (${(100 * r.pricePct).toFixed(1)} %; ` +
        `mean ${r.meanMs.toFixed(3)} ± ${(2 * r.standardErrorMs).toFixed(3)}); ` +
        `errors ${errorsBase}/${errorsWithout}; other cores ${otherCores.toFixed(2)}\n`,
    );
  }
}
writeFileSync(process.argv[3], JSON.stringify(results));
await database.close?.();
process.exit(0);
