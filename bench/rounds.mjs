// Alternating rounds for a standalone bench file: the same request (or a side's own) against two
// or more running servers, taking turns round by round in ABBA order (reversed every other round,
// so a trend in the machine favours no side), and the medians of the rounds: req/s, p50, p99, the
// CPU per request of each server process and of PostgreSQL, and each side's ratio to the first.
// bench/run.mjs alternates its scenarios the same way; this is the piece a file of its own reuses.
//
//   const result = await alternate(
//     [{ name: "service", base, pid, request }, { name: "baseline", base: base2, pid: pid2, request }],
//     { rounds: 3, durationS: 5, connections: 32, warmupS: 2, log },
//   );
//   log(result.text);
import autocannon from "autocannon";
import { postgresCpuMs, postgresCpuSince, processCpuMs } from "./cpu.mjs";

const median = (xs) => {
  const v = xs.toSorted((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};

/** One run of `durationS` seconds of `connections` against one side. */
export async function loadOnce(side, connections, durationS) {
  const cpuBefore = processCpuMs(side.pid);
  const postgresBefore = postgresCpuMs();
  const r = await autocannon({
    url: side.base + side.request.path,
    method: side.request.method ?? "GET",
    headers: side.request.headers,
    body: side.request.body,
    connections,
    duration: durationS,
    timeout: 10,
    ...(side.request.expectBody ? { expectBody: side.request.expectBody } : {}),
  });
  const requests = r.requests.total || 1;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts + r.non2xx + (r.mismatches ?? 0),
    cpuMsPerRequest: (processCpuMs(side.pid) - cpuBefore) / requests,
    dbCpuMsPerRequest: postgresCpuSince(postgresBefore) / requests,
  };
}

/**
 * Alternates `sides` for `rounds` rounds (at least 3 for a ratio to be judged by its median) and
 * returns per side the medians of its rounds and its ratio (req/s) to the first side, with a text
 * table to print.
 */
export async function alternate(sides, { rounds = 3, durationS = 5, connections = 32, warmupS = 2, log = () => {} } = {}) {
  for (const side of sides) if (warmupS > 0) await loadOnce(side, connections, warmupS);
  const runs = Object.fromEntries(sides.map((side) => [side.name, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const side of round % 2 ? sides : sides.toReversed()) {
      const run = await loadOnce(side, connections, durationS);
      runs[side.name].push(run);
      log(
        `  ${side.name.padEnd(16)} #${round}  ${run.rps.toFixed(0).padStart(6)} req/s  p99 ${run.p99.toFixed(1)} ms  ` +
          `CPU ${run.cpuMsPerRequest.toFixed(2)} ms/req (PostgreSQL ${run.dbCpuMsPerRequest.toFixed(2)})  errors ${run.errors}`,
      );
    }
  }
  const of = (name) => {
    const rs = runs[name];
    const pick = (key) => median(rs.map((r) => r[key]));
    return {
      rps: pick("rps"),
      p50: pick("p50"),
      p99: pick("p99"),
      cpuMsPerRequest: pick("cpuMsPerRequest"),
      dbCpuMsPerRequest: pick("dbCpuMsPerRequest"),
      errors: rs.reduce((sum, r) => sum + r.errors, 0),
      rpsRange: [Math.min(...rs.map((r) => r.rps)), Math.max(...rs.map((r) => r.rps))],
    };
  };
  const first = of(sides[0].name);
  const result = Object.fromEntries(
    sides.map((side) => {
      const m = of(side.name);
      // Each round's ratio to the first side, then their median: both sides saw the same seconds.
      const perRound = runs[side.name].map((r, i) => r.rps / runs[sides[0].name][i].rps);
      return [side.name, { ...m, ratio: m.rps / first.rps, ratioOfRounds: median(perRound), runs: runs[side.name] }];
    }),
  );
  const text = [
    `${connections} connections, ${rounds} alternating rounds of ${durationS} s; medians (req/s range); ratio to ${sides[0].name} (median of the rounds' ratios)`,
    "| side | req/s | ratio | p50 ms | p99 ms | CPU ms/req | PostgreSQL CPU ms/req | errors |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...sides.map(({ name }) => {
      const s = result[name];
      return `| ${name} | ${s.rps.toFixed(0)} (${s.rpsRange.map((x) => x.toFixed(0)).join("-")}) | ${s.ratioOfRounds.toFixed(2)} | ${s.p50.toFixed(1)} | ${s.p99.toFixed(1)} | ${s.cpuMsPerRequest.toFixed(2)} | ${s.dbCpuMsPerRequest.toFixed(2)} | ${s.errors} |`;
    }),
  ].join("\n");
  return { sides: result, text };
}

/**
 * Two kinds of load on one running server, in ABBA order (reversed every other round) for `rounds`
 * rounds: `runKind(kind)` runs one (an autocannon result); the medians per kind of req/s, p50, p99
 * and the CPU per request of the server (`pid`) and of PostgreSQL, with the errors summed.
 */
export async function abbaMedians([a, b], rounds, pid, runKind) {
  const runs = { [a]: [], [b]: [] };
  for (let r = 0; r < rounds; r++) {
    for (const kind of r % 2 ? [b, a, a, b] : [a, b, b, a]) {
      const before = { service: processCpuMs(pid), postgres: postgresCpuMs() };
      const result = await runKind(kind);
      const served = Math.max(result.requests.total, 1);
      runs[kind].push({
        serviceCpuMs: (processCpuMs(pid) - before.service) / served,
        postgresCpuMs: postgresCpuSince(before.postgres) / served,
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        errors: result.errors + result.non2xx,
      });
    }
  }
  const medianOf = (list, key) => median(list.map((x) => x[key]));
  return Object.fromEntries(
    Object.entries(runs).map(([kind, list]) => [
      kind,
      {
        rps: medianOf(list, "rps"),
        p50: medianOf(list, "p50"),
        p99: medianOf(list, "p99"),
        errors: list.reduce((sum, x) => sum + x.errors, 0),
        serviceCpuMs: medianOf(list, "serviceCpuMs"),
        postgresCpuMs: medianOf(list, "postgresCpuMs"),
      },
    ]),
  );
}
