// The scenarios of `npm run bench`: every other .mjs file of this folder is one, found here and
// run in the order of their `order`. Adding a scenario is adding a file (bench/README.md, "Adding a
// scenario"); the runner (bench/run.mjs) measures it against the floor (bench/floor.mjs) and, when
// it names one, against the peer, and prints its rows and targets.
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { settings } from "../settings.mjs";

/**
 * @typedef {{ method: string, path: string, headers: Record<string, string>, body?: string, deterministic: boolean }} BenchRequest
 * @typedef {{ seed: any, data: Record<string, any> }} ScenarioData  the seed (CLI `seed --json`) and what setups added
 * @typedef {object} Scenario
 * @property {string} id  what BENCH_SCENARIOS names
 * @property {number} order  its place in the run and the tables
 * @property {string} label  its row's name
 * @property {string} floor  what the floor (bench/floor.mjs) does for it, for the README
 * @property {(ctx: { base: string, seed: any, data: Record<string, any>, log: (line: string) => void, analyze: () => Promise<void> }) => Promise<void>} [setup]
 *   data it needs, made through the service's API once the service runs (before any answer is compared);
 *   `analyze()` runs ANALYZE on PostgreSQL (nothing on PGlite), as autovacuum would after thousands of writes
 * @property {(d: ScenarioData) => BenchRequest} request  the request the load repeats; a `deterministic`
 *   answer is checked on every response
 * @property {"task" | "page"} [peer]  measured against PostGraphile too, in the same alternation: "task"
 *   against taskByRowId (anonymous, with JWT + RLS) and the framework ceiling; "page" against the vendor page
 * @property {(d: ScenarioData, token?: string) => BenchRequest} [peerRequest]  the peer's equivalent (with a token: the secured peer's)
 * @property {(t: Targets) => void} [targets]  its targets, printed PASS/FAIL/SKIP (bench/report.mjs)
 */

const dir = path.dirname(fileURLToPath(import.meta.url));
const files = readdirSync(dir).filter((file) => file.endsWith(".mjs") && file !== "index.mjs");

/** @type {Scenario[]} */
export const scenarioList = (
  await Promise.all(files.map(async (file) => (await import(pathToFileURL(path.join(dir, file)).href)).default))
)
  .filter(Boolean)
  .sort((a, b) => a.order - b.order);

for (const s of scenarioList) {
  if (!s.id || typeof s.request !== "function" || typeof s.order !== "number") {
    throw new Error(`bench/scenarios: ${s.id ?? "a file"} needs an id, an order and a request`);
  }
}
for (const id of settings.scenarios ?? []) {
  if (!scenarioList.some((s) => s.id === id)) {
    console.error(`BENCH_SCENARIOS: unknown scenario ${id} (known: ${scenarioList.map((s) => s.id).join(", ")})`);
    process.exit(2);
  }
}

/** The scenarios this run measures (BENCH_SCENARIOS, all when unset). */
export const activeScenarios = scenarioList.filter((s) => !settings.scenarios || settings.scenarios.includes(s.id));

/** Every scenario's request for this data (the probes use get task's whether or not it runs). */
export function requestsFor(data) {
  return Object.fromEntries(scenarioList.map((s) => [s.id, s.request(data)]));
}

/** The scenario whose peer's equivalent stands for a kind ("task": get task by id). */
export function peerScenario(kind) {
  return scenarioList.find((s) => s.peer === kind);
}
