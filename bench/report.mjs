// The report of `npm run bench`: the table of every scenario against the floor, the table against
// the peer, and the targets (each scenario's own, from bench/scenarios/, and the run's).
import { cpus } from "node:os";
import { PEER_VERSION } from "./peer.mjs";
import { activeScenarios, scenarioList } from "./scenarios/index.mjs";
import { median, num, PEER_CONNECTIONS, QUIET_CORES, ratioPct, ratioX, settings } from "./settings.mjs";

export function table(results) {
  const lines = [];
  const header = [
    ["scenario", 36, "l"],
    ["conn", 4],
    ["svc req/s", 9],
    ["floor", 7],
    ["ratio", 6],
    ["svc p50", 8],
    ["floor", 6],
    ["ratio", 6],
    ["svc p99", 8],
    ["floor", 6],
    ["ratio", 6],
    ["err svc/floor", 14],
    ["svc RSS", 8],
    ["floor", 6],
    ["ratio", 6],
    ["CPU ms/req", 10],
    ["floor", 6],
    ["ratio", 6],
  ];
  const row = (cells) =>
    cells.map((c, i) => (header[i][2] === "l" ? String(c).padEnd(header[i][1]) : String(c).padStart(header[i][1]))).join(" ");
  for (const db of results.databases) {
    if (db.skipped) {
      lines.push(`${db.label}: skipped (${db.skipped})`);
      continue;
    }
    lines.push("");
    lines.push(
      `${db.label} — medians of ${settings.rounds} runs of ${settings.durationS} s each side; latency in ms; RSS in MB after the load; ` +
        "CPU ms/req: CPU time of the server process per request; ratio = service / floor (req/s: higher is better; the rest: lower is better)",
    );
    lines.push(row(header.map((h) => h[0])));
    for (const s of activeScenarios) {
      for (const connections of settings.connections) {
        const cell = db.scenarios[s.id]?.[connections];
        if (!cell) continue;
        const a = cell.serviceMedian;
        const b = cell.floorMedian;
        const errs = (x) => `${x.errors + x.non2xx + x.mismatches}`;
        // service, floor, ratio of one measure
        const triple = (key, digits, ratio) => [num(a[key], digits), num(b[key], digits), ratio(cell.ratio[key])];
        lines.push(
          row([
            s.label,
            connections,
            ...triple("rps", 0, ratioPct),
            ...triple("p50", 1, ratioX),
            ...triple("p99", 1, ratioX),
            `${errs(a)}/${errs(b)}`,
            ...triple("rssMb", 0, ratioX),
            ...triple("cpuMsPerRequest", 2, ratioX),
          ]),
        );
      }
    }
    const cs = db.coldStart;
    lines.push(
      `cold start (spawn → /ready 200 → first authenticated 200): service ${num(cs.service?.readyMs)} / ${num(cs.service?.firstRequestMs)} ms, ` +
        `floor ${num(cs.floor?.readyMs)} / ${num(cs.floor?.firstRequestMs)} ms, ratio ${ratioX(cs.service && cs.floor ? cs.service.firstRequestMs / cs.floor.firstRequestMs : null)}` +
        `; RSS after start: service ${num(cs.service?.rssAtStartMb)} MB, floor ${num(cs.floor?.rssAtStartMb)} MB; ` +
        `largest service RSS after a run ${num(db.serviceRssMaxMb)} MB`,
    );
    const allRuns = Object.values(db.scenarios).flatMap((byConn) =>
      Object.values(byConn).flatMap((c) => [...c.service, ...c.floor]),
    );
    const other = allRuns.map((r) => r.cpu.otherCores);
    if (other.length) {
      lines.push(
        `noise: other processes (not service, floor, PostgreSQL or the load generator) used ${median(other).toFixed(2)} cores ` +
          `(median of runs), ${Math.max(...other).toFixed(2)} at most, of ${cpus().length}` +
          (median(other) > QUIET_CORES
            ? ` — the machine was not quiet (more than ${QUIET_CORES}): its targets are not counted`
            : ""),
      );
    }
    if (db.sql) {
      lines.push(
        "SQL per request (PostgreSQL statistics, 100 sequential requests): transactions / table scans, service vs floor",
      );
      for (const s of activeScenarios) {
        const q = db.sql[s.id];
        if (!q) continue;
        const tables = (p) =>
          Object.entries(p.tables)
            .map(([t, n]) => `${t} ${n}`)
            .join(", ");
        lines.push(
          `  ${s.label.padEnd(36)} service ${q.service.xactsPerRequest.toFixed(2)} / ${q.service.scansPerRequest.toFixed(2)} (${tables(q.service)})` +
            `  floor ${q.floor.xactsPerRequest.toFixed(2)} / ${q.floor.scansPerRequest.toFixed(2)} (${tables(q.floor)})`,
        );
      }
    }
    const differ = Object.entries(db.responsesMatch ?? {}).filter(([, same]) => !same);
    lines.push(
      differ.length
        ? `responses DIFFER between service and floor: ${differ.map(([id]) => id).join(", ")}`
        : "service and floor answer the same JSON for every scenario",
    );
  }
  return lines.join("\n");
}

/** Service, PostGraphile (secured and anonymous), floor and framework ceiling side by side, for the `peer` and `peerPage` scenarios. */
export function peerTable(results) {
  const db = results.databases.find((d) => d.kind === "postgres" && !d.skipped);
  const rows = activeScenarios.map((s) => [s, db?.scenarios[s.id]?.[PEER_CONNECTIONS]]).filter(([, c]) => c?.peerMedian);
  if (!rows.length) return null;
  const header = [
    ["scenario", Math.max(17, ...rows.map(([s]) => s.label.length)), "l"],
    ["svc req/s", 9],
    ["PG+JWT", 7],
    ["svc/JWT", 7],
    ["PG anon", 7],
    ["svc/PG", 7],
    ["floor", 6],
    ["svc/floor", 9],
    ["fw", 6],
    ["svc/fw", 6],
    ["p99 svc", 7],
    ["JWT", 5],
    ["PG", 5],
    ["CPU ms/req svc", 14],
    ["JWT", 5],
    ["PG", 5],
    ["floor", 5],
    ["fw", 5],
    ["DB CPU svc", 10],
    ["JWT", 5],
    ["PG", 5],
    ["err svc/JWT/PG", 14],
  ];
  const row = (cells) =>
    cells.map((c, i) => (header[i][2] === "l" ? String(c).padEnd(header[i][1]) : String(c).padStart(header[i][1]))).join(" ");
  const lines = [
    `PostgreSQL, ${PEER_CONNECTIONS} connections, the same alternation: the service against PostGraphile ${PEER_VERSION} ` +
      "as deployed for tenants (PG+JWT: lazy-jwt preset, an HS256 token per request, role + organization claims as settings, " +
      "row-level security) and anonymous (PG anon: no authentication, the ceiling), both GraphQL: taskByRowId with the same seven fields " +
      "for get task, vendorsByIds through SQL functions for the vendor page (what differs: below); " +
      "the floor; the framework ceiling (fw: yoga + Sofa, constant task; get task only). CPU ms/req of the server process; DB CPU: PostgreSQL's per request",
    row(header.map((h) => h[0])),
  ];
  const errs = (x) => (x ? `${x.errors + x.non2xx + x.mismatches}` : "-");
  for (const [s, c] of rows) {
    const a = c.serviceMedian;
    const fw = c.frameworkMedian;
    const jwt = c.peerJwtMedian;
    lines.push(
      row([
        s.label,
        num(a.rps),
        num(jwt?.rps),
        ratioPct(c.ratioToPeerJwt?.rps),
        num(c.peerMedian.rps),
        ratioPct(c.ratioToPeer.rps),
        num(c.floorMedian.rps),
        ratioPct(c.ratio.rps),
        num(fw?.rps),
        fw ? ratioPct(a.rps / fw.rps) : "-",
        num(a.p99, 1),
        num(jwt?.p99, 1),
        num(c.peerMedian.p99, 1),
        num(a.cpuMsPerRequest, 2),
        num(jwt?.cpuMsPerRequest, 2),
        num(c.peerMedian.cpuMsPerRequest, 2),
        num(c.floorMedian.cpuMsPerRequest, 2),
        num(fw?.cpuMsPerRequest, 2),
        num(a.dbCpuMsPerRequest, 2),
        num(jwt?.dbCpuMsPerRequest, 2),
        num(c.peerMedian.dbCpuMsPerRequest, 2),
        `${errs(a)}/${errs(jwt)}/${errs(c.peerMedian)}`,
      ]),
    );
  }
  const cs = db.coldStart.peer;
  if (cs)
    lines.push(
      `PostGraphile cold start to its first answer ${num(cs.firstRequestMs)} ms; RSS after start ${num(cs.rssAtStartMb)} MB` +
        (db.coldStart.peerJwt
          ? `; with JWT + RLS ${num(db.coldStart.peerJwt.firstRequestMs)} ms, ${num(db.coldStart.peerJwt.rssAtStartMb)} MB`
          : ""),
    );
  const sql = (p) => `${p.xactsPerRequest.toFixed(2)} transactions, ${p.scansPerRequest.toFixed(2)} table scans`;
  if (db.sql?.peer)
    lines.push(
      `PostGraphile SQL per request: anonymous ${sql(db.sql.peer)}${db.sql.peerJwt ? `; with JWT + RLS ${sql(db.sql.peerJwt)}` : ""}`,
    );
  if (db.sql?.peerVendorPage)
    lines.push(
      `PostGraphile SQL per request, vendor page: anonymous ${sql(db.sql.peerVendorPage)}` +
        `${db.sql.peerJwtVendorPage ? `; with JWT + RLS ${sql(db.sql.peerJwtVendorPage)}` : ""}; service ${sql(db.sql["vendor-page"].service)}`,
    );
  if (db.peer?.sameTask === false) lines.push("PostGraphile's answer was NOT the service's task: its figures do not compare");
  if (db.peerJwt && db.peerJwt.sameTask !== null)
    lines.push(
      `PostGraphile with JWT + RLS: its organization's token ${db.peerJwt.sameTask ? "gets the service's task" : "does NOT get the service's task"}, ` +
        `another organization's token ${db.peerJwt.otherOrganizationGetsNull ? "gets null" : "does NOT get null"}`,
    );
  const page = db.peerJwt?.vendorPage ?? db.peer?.vendorPage;
  if (page) {
    lines.push(
      `Vendor page: PostGraphile's answer is the service's (the same vendors in order, statistics, 5 newest comments with their authors' names)` +
        (db.peerJwt?.vendorPage
          ? `; with JWT + RLS another organization's token ${db.peerJwt.vendorPage.otherOrganizationGetsNoVendor ? "gets no vendor" : "DOES get vendors"}`
          : ""),
    );
    lines.push(`  what PostGraphile answers differently: ${page.differences}`);
  }
  return lines.join("\n");
}

/**
 * The targets, in a fixed order: each scenario's (its `targets`, called for every scenario, run or
 * not, so that a target not run reads SKIP), then the run's own (cold start, memory).
 */
export function targets(results) {
  const pgDb = results.databases.find((d) => d.kind === "postgres" && !d.skipped);
  const cell = (id) => pgDb?.scenarios[id]?.[32];
  const list = [];
  const add = (order, name, measured, pass, note = "") => {
    const target = {
      order,
      name,
      measured,
      result:
        pass === null
          ? typeof measured === "string" && measured.startsWith("not counted")
            ? "NOISY"
            : "SKIP"
          : pass
            ? "PASS"
            : "FAIL",
      note,
    };
    list.push(target);
    return target;
  };
  // Issue 46, item 6: a figure counts only from a quiet machine. Above QUIET_CORES of other
  // processes (median over the cell's runs, every side) the target says so instead of a ratio.
  const noiseOf = (c) => {
    const runs = [c?.service, c?.floor, c?.peer, c?.peerJwt, c?.framework].flatMap((r) => r ?? []);
    return runs.length ? median(runs.map((r) => r.cpu.otherCores)) : 0;
  };
  const noisy = (order, name, c) => {
    const noise = noiseOf(c);
    if (noise <= QUIET_CORES) return null;
    return add(
      order,
      name,
      `not counted: other processes used ${noise.toFixed(2)} cores during its runs (at most ${QUIET_CORES})`,
      null,
    );
  };
  // Issue 28: against PostGraphile as deployed for tenants, and against the anonymous ceiling.
  const peer = (order, id, label, which, min) => {
    const c = cell(id);
    const peerCell = which === "peerJwt" ? c?.peerJwtMedian : c?.peerMedian;
    const ratio = which === "peerJwt" ? c?.ratioToPeerJwt : c?.ratioToPeer;
    const name = `${label} ≥ ${Number.isInteger(min) ? min.toFixed(1) : min}× PostGraphile ${which === "peerJwt" ? "with JWT + RLS" : "anonymous"}`;
    if (peerCell) {
      const refused = noisy(order, name, c);
      if (refused) return refused;
    }
    return add(
      order,
      name,
      peerCell ? `${ratio.rps.toFixed(2)}× (${num(c.serviceMedian.rps)} vs ${num(peerCell.rps)} req/s)` : "not run",
      peerCell ? ratio.rps >= min : null,
    );
  };
  const p99Below = (order, scenario, ms) => {
    const c = cell(scenario.id);
    const name = `PostgreSQL, 32 conn: ${scenario.label} p99 < ${ms} ms`;
    if (c) {
      const refused = noisy(order, name, c);
      if (refused) return refused;
    }
    return add(order, name, c ? `${num(c.serviceMedian.p99, 1)} ms` : "not run", c ? c.serviceMedian.p99 < ms : null);
  };
  for (const scenario of scenarioList) {
    scenario.targets?.({ pgDb, cell, add, peer, p99Below, noisy, num, active: activeScenarios.includes(scenario) });
  }
  const cs = pgDb?.coldStart?.service;
  // Start-up is timed between the scenarios: it counts when the run's scenarios were quiet.
  const runNoise = pgDb ? Object.values(pgDb.scenarios ?? {}).flatMap((byConn) => Object.values(byConn)) : [];
  const startName = "PostgreSQL: cold start to first answered request < 2 s";
  if (!cs || !runNoise.some((c) => noisy(90, startName, c))) {
    add(90, startName, cs ? `${num(cs.firstRequestMs)} ms` : "not run", cs ? cs.firstRequestMs < 2000 : null);
  }
  add(
    91,
    "PostgreSQL: service RSS < 250 MB after the load",
    pgDb?.serviceRssMaxMb ? `${num(pgDb.serviceRssMaxMb)} MB (max over all runs)` : "not run",
    pgDb?.serviceRssMaxMb ? pgDb.serviceRssMaxMb < 250 : null,
  );
  list.sort((a, b) => a.order - b.order);
  const errorFree = [];
  for (const db of results.databases) {
    for (const [id, byConn] of Object.entries(db.scenarios ?? {})) {
      for (const [connections, c] of Object.entries(byConn)) {
        const a = c.serviceMedian;
        if (a && a.errors + a.non2xx + a.mismatches > 0)
          errorFree.push(
            `${db.label} ${id} c${connections}: ${a.errors} errors, ${a.non2xx} non-2xx, ${a.mismatches} wrong bodies`,
          );
      }
    }
  }
  return { list, errors: errorFree };
}
