// The readiness of NIST SP 800-53 alone (issue 56, item 9: "under 20 ms of the service's time"), on
// framework-page's data: `framework(id) { readiness {...} }`, against the floor's first statement
// alone. Its target is the service's time per request: the CPU the service and PostgreSQL spend on
// one (median of the rounds at 32 connections), not the latency at 32 connections, which is mostly
// the queue of 32 clients on 2 cores. The setup also times it one request at a time (its log line).
import { createFrameworkPage, frameworkRequest } from "./framework-page.mjs";

export const FRAMEWORK_READINESS_QUERY = `query FrameworkReadiness($id: ID!) {
  framework(id: $id) {
    readiness { assessable notApplicable unmapped ready partial notReady readyPercent }
  }
}`;

const LIMIT_MS = 20;

/** The median and 90th percentile of `n` requests sent one at a time, after `warmup` of them. */
async function alone(base, request, warmup, n) {
  const once = async () => {
    const started = performance.now();
    const response = await fetch(base + request.path, { method: request.method, headers: request.headers, body: request.body });
    const body = await response.text();
    if (response.status !== 200 || body.includes('"errors"')) throw new Error(`framework readiness: ${response.status} ${body}`);
    return performance.now() - started;
  };
  for (let i = 0; i < warmup; i++) await once();
  const times = [];
  for (let i = 0; i < n; i++) times.push(await once());
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(n / 2)], p90: times[Math.floor(n * 0.9)] };
}

/** @type {import("./index.mjs").Scenario} */
export default {
  id: "framework-readiness",
  order: 71,
  label: "framework readiness of 800-53 alone (GraphQL)",
  floor:
    "framework-page's first statement alone: the framework with its adoption and its assessable requirements counted by state",
  async setup({ base, seed, data, log, analyze }) {
    data.frameworkPage ??= await createFrameworkPage(base, seed, log, analyze);
    const { p50, p90 } = await alone(
      base,
      frameworkRequest(seed, data.frameworkPage.frameworkId, FRAMEWORK_READINESS_QUERY),
      10,
      50,
    );
    log(`  framework readiness of 800-53, one request at a time: median ${p50.toFixed(1)} ms, p90 ${p90.toFixed(1)} ms`);
  },
  request: ({ seed, data }) => frameworkRequest(seed, data.frameworkPage?.frameworkId, FRAMEWORK_READINESS_QUERY),
  targets(t) {
    const name = `PostgreSQL, 32 conn: readiness of 800-53 alone < ${LIMIT_MS} ms of the service's time (CPU of service + PostgreSQL per request)`;
    const c = t.cell("framework-readiness");
    const s = c?.serviceMedian;
    const ms = s?.cpuMsPerRequest != null && s?.dbCpuMsPerRequest != null ? s.cpuMsPerRequest + s.dbCpuMsPerRequest : undefined;
    if (ms !== undefined && t.noisy(36, name, c)) return;
    t.add(
      36,
      name,
      ms === undefined
        ? "not run"
        : `${t.num(ms, 1)} ms (service ${t.num(s.cpuMsPerRequest, 1)} + PostgreSQL ${t.num(s.dbCpuMsPerRequest, 1)}; p50 at 32 conn ${t.num(s.p50, 1)} ms)`,
      ms === undefined ? null : ms < LIMIT_MS,
    );
  },
};
