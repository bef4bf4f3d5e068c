// npm run bench: the service in production mode against the floor (bench/floor.mjs), on PostgreSQL
// and on PGlite, at 32 and 128 connections, runs alternating service and floor; prints a table,
// the issue's targets as PASS/FAIL, writes bench/results.json and bench/profile-summary.txt.
// A measurement, not a test: it exits 0 whatever the figures. How to run and read it: bench/README.md;
// the results of past runs: bench/results/.
// The scenarios are the files of bench/scenarios/ (one each: its data, request, peer and targets),
// the standalone measurements those of bench/suites.mjs; this file runs them: the databases, the
// processes in alternation, the peer, the profile and the price of each step.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { postgresCpuMs, postgresCpuSince, processCpuMs, systemBusyMs } from "./cpu.mjs";
import { buildGuardsBundle, GUARD_STEPS, guardTable, priceGuards } from "./guards.mjs";
import {
  aggregate,
  benchDir,
  checkQuiet,
  children,
  cleanups,
  floorEnv,
  fmtRun,
  load,
  memoryMb,
  ratios,
  root,
  sampleResponses,
  seedDatabase,
  serviceArgs,
  serviceEnv,
  sqlProbe,
  startFlags,
  startProcess,
  stopProcess,
  stopped,
  withClient,
} from "./harness.mjs";
import {
  ensurePeer,
  noTask,
  noVendors,
  PEER_VENDOR_PAGE_DIFFERENCES,
  PEER_VERSION,
  peerJwtProcess,
  peerProcess,
  peerToken,
  sameTask,
  setUpTenancy,
  setUpVendorFunctions,
  setUpVendorTenancy,
  vendorPageDifference,
} from "./peer.mjs";
import { formatSummary, summarizeProfile } from "./profile.mjs";
import { peerTable, table, targets } from "./report.mjs";
import { activeScenarios, peerScenario, requestsFor } from "./scenarios/index.mjs";
import { log, num, PEER_CONNECTIONS, ratioPct, settings, sleep } from "./settings.mjs";
import { suites } from "./suites.mjs";

const env = process.env;

// ------------------------------------------------------------------------------------------------
// One database: its data, the processes, the alternation

async function benchDatabase(kind, workDir) {
  const label = kind === "postgres" ? "PostgreSQL" : "PGlite";
  const out = { kind, label, scenarios: {}, coldStart: {}, starts: [], responses: {} };
  const database = { kind };
  let adminClient = null;
  if (kind === "postgres") {
    adminClient = new pg.Client({ connectionString: settings.postgresUrl });
    // A server stopped or a database dropped while the client is connected must not end the bench.
    adminClient.on("error", () => {});
    try {
      await adminClient.connect();
    } catch (error) {
      log(`\n${label}: not reachable at ${settings.postgresUrl} (${error.message}); skipped.`);
      return { ...out, skipped: `not reachable: ${error.message}` };
    }
    const name = `bench_${process.pid}_${randomBytes(4).toString("hex")}`;
    await adminClient.query(`CREATE DATABASE "${name}"`);
    // The secured peer's tenant role (roles are cluster-wide: dropped once the database is gone).
    database.tenantRole = `${name}_tenant`;
    // Tenant roles of earlier runs whose database is gone (a run killed before its cleanup).
    const stale = await adminClient.query(
      `SELECT rolname FROM pg_roles r WHERE rolname ~ '^bench_[0-9]+_[0-9a-f]+_tenant$'
         AND NOT EXISTS (SELECT 1 FROM pg_database d WHERE d.datname || '_tenant' = r.rolname)`,
    );
    for (const { rolname } of stale.rows) await adminClient.query(`DROP ROLE IF EXISTS "${rolname}"`).catch(() => {});
    const url = new URL(settings.postgresUrl);
    url.pathname = `/${name}`;
    database.url = url.toString();
    database.name = name;
    database.admin = adminClient;
    cleanups.push(async () => {
      await adminClient.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch((e) => log(`drop ${name}: ${e.message}`));
      await adminClient
        .query(`DROP ROLE IF EXISTS "${database.tenantRole}"`)
        .catch((e) => log(`drop role ${database.tenantRole}: ${e.message}`));
      await adminClient.end().catch(() => {});
    });
    out.database = name;
  } else {
    database.dataDir = mkdtempSync(path.join(tmpdir(), "bench-pglite-"));
    cleanups.push(async () => rmSync(database.dataDir, { recursive: true, force: true }));
    out.database = database.dataDir;
  }

  log(`\n=== ${label} (${out.database}) ===`);
  out.busyCoresBefore = await checkQuiet(label);
  const t = performance.now();
  const seed = seedDatabase(database);
  log(`seeded through the CLI in ${((performance.now() - t) / 1000).toFixed(1)} s (organization ${seed.organizationId})`);
  /** The seed and what the scenarios' setups add to it (the vendor page's vendors). */
  const scenarioData = { seed, data: {} };
  const reqs = requestsFor(scenarioData);
  const probe = reqs["rest-task"];
  const logFile = path.join(workDir, `${kind}.log`);

  const startService = async (extraArgs = []) => {
    const proc = await startProcess({ name: "service", args: serviceArgs(extraArgs), env: serviceEnv(database), logFile, probe });
    out.starts.push({ target: "service", ...proc.coldStart });
    return proc;
  };
  const startFloor = async () => {
    const proc = settings.against
      ? await startProcess({
          name: "baseline",
          args: serviceArgs([], settings.against),
          env: { ...serviceEnv(database), ...settings.againstEnv },
          logFile,
          probe,
        })
      : await startProcess({ name: "floor", args: ["bench/floor.mjs"], env: floorEnv(database), logFile, probe });
    out.starts.push({ target: "floor", ...proc.coldStart });
    return proc;
  };

  // Cold start: spawn to /ready 200, then to the first authenticated 200.
  let service = await startService();
  out.coldStart.service = service.coldStart;
  log(
    `service cold start: /ready ${service.coldStart.readyMs.toFixed(0)} ms, first authenticated 200 ${service.coldStart.firstRequestMs.toFixed(0)} ms, ` +
      `RSS ${service.coldStart.rssAtStartMb?.toFixed(0)} MB`,
  );
  // Each scenario's data, through the service's API; then its request for that data.
  // For a setup that writes thousands of rows: what autovacuum would do within a minute (the test
  // server runs without it, and plans made on empty statistics are not the ones a deployment runs).
  // PGlite has no autovacuum: it measures what an embedded deployment gets.
  const analyze = async () => {
    if (kind === "postgres") await withClient(database, (client) => client.query("ANALYZE"));
  };
  for (const s of activeScenarios) {
    if (!s.setup) continue;
    await s.setup({ base: service.base, seed, data: scenarioData.data, log, analyze });
    reqs[s.id] = s.request(scenarioData);
  }
  const vendorIds = scenarioData.data.vendorIds ?? null;
  out.responses.service = await sampleResponses(service.base, reqs);

  let floor = null;
  if (kind === "pglite") {
    // One process at a time on an embedded database: stop the service before the floor opens it.
    await stopProcess(service);
    service = null;
  }
  floor = await startFloor();
  out.coldStart.floor = floor.coldStart;
  log(
    `floor cold start: /ready ${floor.coldStart.readyMs.toFixed(0)} ms, first authenticated 200 ${floor.coldStart.firstRequestMs.toFixed(0)} ms, ` +
      `RSS ${floor.coldStart.rssAtStartMb?.toFixed(0)} MB`,
  );
  out.responses.floor = await sampleResponses(floor.base, reqs);
  out.responsesMatch = {};
  for (const s of activeScenarios) {
    const a = out.responses.service[s.id];
    const b = out.responses.floor[s.id];
    const same = a.status === b.status && a.normalized === b.normalized;
    out.responsesMatch[s.id] = same;
    log(
      `  ${s.label}: service ${a.status} ${a.body.length} B, floor ${b.status} ${b.body.length} B — ${same ? "same JSON" : "DIFFERENT"}`,
    );
    if (!same) log(`    service: ${a.body.slice(0, 300)}\n    floor:   ${b.body.slice(0, 300)}`);
  }
  // The peer and the framework ceiling, on PostgreSQL, for the scenarios marked `peer`; the peer
  // alone for those marked `peerPage`.
  let peer = null;
  let peerJwt = null;
  let framework = null;
  const peerRequest = peerScenario("task").peerRequest(scenarioData);
  let peerJwtRequest = null;
  const peerTask = activeScenarios.some((s) => s.peer === "task");
  const peerPage = Boolean(vendorIds) && activeScenarios.some((s) => s.peer === "page");
  /** The peer's vendor page: anonymous, and with the token of the seeded organization. */
  let peerVendorRequest = null;
  let peerJwtVendorRequest = null;
  if (kind === "postgres" && settings.peer && (peerTask || peerPage)) {
    out.peer = { version: PEER_VERSION, install: ensurePeer(log) };
    // PostGraphile reads the schema once at start: the vendor page's functions come first.
    if (peerPage) await withClient(database, setUpVendorFunctions);
    const how = peerProcess(database.url);
    peer = await startProcess({ name: "PostGraphile", ...how, logFile, probe: peerRequest, readyPath: null });
    out.coldStart.peer = peer.coldStart;
    log(
      `${out.peer.install} cold start: first answer ${peer.coldStart.firstRequestMs.toFixed(0)} ms, RSS ${peer.coldStart.rssAtStartMb?.toFixed(0)} MB`,
    );
    const response = await fetch(peer.base + peerRequest.path, peerRequest);
    out.responses.peer = { status: response.status, body: await response.text() };
    // The service's task to compare with is REST get task's answer (as in startPeerJwt).
    if (out.responses.service["rest-task"]) {
      out.peer.sameTask = sameTask(out.responses.service["rest-task"].body, out.responses.peer.body);
      log(
        `  PostGraphile taskByRowId: ${out.responses.peer.status} ${out.responses.peer.body.length} B — ${out.peer.sameTask ? "the same task" : "DIFFERENT"}`,
      );
      if (!out.peer.sameTask) log(`    PostGraphile: ${out.responses.peer.body.slice(0, 300)}`);
    }
    if (peerPage) {
      peerVendorRequest = peerScenario("page").peerRequest(scenarioData);
      const page = await fetch(peer.base + peerVendorRequest.path, peerVendorRequest);
      out.responses.peerVendorPage = { status: page.status, body: await page.text() };
      const difference = vendorPageDifference(out.responses.service["vendor-page"].body, out.responses.peerVendorPage.body);
      out.peer.vendorPage = { sameAnswer: difference === null, differences: PEER_VENDOR_PAGE_DIFFERENCES };
      log(
        `  PostGraphile vendorsByIds (vendor page): ${page.status} ${out.responses.peerVendorPage.body.length} B — ${difference === null ? "the same vendors, statistics and comments" : `DIFFERENT: ${difference}`}`,
      );
      if (difference !== null) throw new Error("PostGraphile's vendor page is not the service's (see above)");
    }
    ({ peerJwt, peerJwtRequest, peerJwtVendorRequest } = await startPeerJwt(database, scenarioData, out, logFile, peerPage));
    if (peerTask) framework = await startFramework(reqs, out.responses.service, logFile);
  }

  if (kind === "postgres") {
    // SQL per request, from PostgreSQL's statistics (sequential requests, before any load).
    out.sql = {};
    if (peer && peerTask) {
      out.sql.peer = await sqlProbe(database, peer, peerRequest, 100);
      log(
        `  SQL per request, PostGraphile taskByRowId: ${out.sql.peer.xactsPerRequest.toFixed(2)} transactions, ${out.sql.peer.scansPerRequest.toFixed(2)} table scans`,
      );
    }
    if (peerJwt && peerTask) {
      out.sql.peerJwt = await sqlProbe(database, peerJwt, peerJwtRequest, 100);
      log(
        `  SQL per request, PostGraphile with JWT + RLS: ${out.sql.peerJwt.xactsPerRequest.toFixed(2)} transactions, ${out.sql.peerJwt.scansPerRequest.toFixed(2)} table scans`,
      );
    }
    if (peer && peerVendorRequest) {
      out.sql.peerVendorPage = await sqlProbe(database, peer, peerVendorRequest, 100);
      log(
        `  SQL per request, PostGraphile vendor page: ${out.sql.peerVendorPage.xactsPerRequest.toFixed(2)} transactions, ${out.sql.peerVendorPage.scansPerRequest.toFixed(2)} table scans`,
      );
    }
    if (peerJwt && peerJwtVendorRequest) {
      out.sql.peerJwtVendorPage = await sqlProbe(database, peerJwt, peerJwtVendorRequest, 100);
      log(
        `  SQL per request, PostGraphile vendor page with JWT + RLS: ${out.sql.peerJwtVendorPage.xactsPerRequest.toFixed(2)} transactions, ${out.sql.peerJwtVendorPage.scansPerRequest.toFixed(2)} table scans`,
      );
    }
    for (const s of activeScenarios) {
      out.sql[s.id] = {
        service: await sqlProbe(database, service, reqs[s.id], 100),
        floor: await sqlProbe(database, floor, reqs[s.id], 100),
      };
      const fmt = (p) =>
        `${p.xactsPerRequest.toFixed(2)} transactions, ${p.scansPerRequest.toFixed(2)} table scans${p.failed ? ` (${p.failed} failed)` : ""}`;
      log(`  SQL per request, ${s.label}: service ${fmt(out.sql[s.id].service)}; floor ${fmt(out.sql[s.id].floor)}`);
    }
  }
  const expected = (target, id) => {
    if (target === "peer") return id === "vendor-page" ? out.responses.peerVendorPage.body : out.responses.peer.body;
    if (target === "peerJwt") return id === "vendor-page" ? out.responses.peerJwtVendorPage.body : out.responses.peerJwt.body;
    if (target === "framework") return undefined;
    return reqs[id].deterministic ? out.responses[target][id].body : undefined;
  };

  const record = (id, connections, target, run) => {
    out.scenarios[id] ??= {};
    out.scenarios[id][connections] ??= { service: [], floor: [] };
    out.scenarios[id][connections][target] ??= [];
    out.scenarios[id][connections][target].push(run);
  };
  /** Who else runs in a scenario's alternation: the peer and the framework ceiling, when up. */
  const extras = (s) =>
    s.peer === "task"
      ? [
          peer && ["peer", peer, peerRequest],
          peerJwt && ["peerJwt", peerJwt, peerJwtRequest],
          framework && ["framework", framework, reqs[s.id]],
        ].filter(Boolean)
      : s.peer === "page"
        ? [
            peerVendorRequest && ["peer", peer, peerVendorRequest],
            peerJwtVendorRequest && ["peerJwt", peerJwt, peerJwtVendorRequest],
          ].filter(Boolean)
        : [];

  if (kind === "postgres") {
    /** Every process of the scenario's lineup (service, floor, the peers) under its request for `seconds`, in turn. */
    const warmUp = async (s, seconds) => {
      await load(service, reqs[s.id], 32, seconds, undefined);
      await load(floor, reqs[s.id], 32, seconds, undefined);
      for (const [, proc, request] of extras(s)) await load(proc, request, 32, seconds, undefined);
    };
    // Every process warmed on every scenario first (the JIT of a fresh process takes tens of
    // seconds under load to settle): the scenarios in turn, 2 s at a time, until the service has
    // had BENCH_FIRST_WARMUP seconds of load; the floor and the peers as many turns alike.
    if (settings.firstWarmupS > 0 && activeScenarios.length) {
      const started = performance.now();
      const turns = Math.ceil(settings.firstWarmupS / 2);
      for (let turn = 0; turn < turns; turn++) {
        await warmUp(activeScenarios[turn % activeScenarios.length], 2);
      }
      log(
        `first warm-up: ${turns} turns of 2 s per process over the scenarios, ${((performance.now() - started) / 1000).toFixed(0)} s`,
      );
    }
    // Both processes up; alternate service and floor run by run.
    for (const s of activeScenarios) {
      await warmUp(s, settings.warmupS);
      for (const connections of settings.connections) {
        for (let round = 1; round <= settings.rounds; round++) {
          // ABBA order (service first in odd rounds, last in even ones): a trend during the run
          // (JIT warm-up, caches, the machine) favours no side.
          const lineup = [
            ["service", service, reqs[s.id]],
            ["floor", floor, reqs[s.id]],
            ...(connections === PEER_CONNECTIONS ? extras(s) : []),
          ];
          const runs = {};
          for (const [target, proc, request] of round % 2 ? lineup : lineup.toReversed()) {
            const run = await load(proc, request, connections, settings.durationS, expected(target, s.id));
            record(s.id, connections, target, run);
            runs[target] = run;
            log(`  ${s.id.padEnd(14)} c${String(connections).padEnd(4)} ${target.padEnd(9)} #${round}  ${fmtRun(run)}`);
            await sleep(300);
          }
          if (lineup.length > 2) {
            const of = (target) => (runs[target] ? `${ratioPct(runs.service.rps / runs[target].rps)} of ${target}` : null);
            log(
              `  ${"".padEnd(14)} round #${round}: service at ${["peerJwt", "peer", "floor", "framework"].map(of).filter(Boolean).join(", ")}`,
            );
          }
        }
      }
    }
    out.finalMemory = { service: memoryMb(service.pid), floor: memoryMb(floor.pid) };
    if (peer) out.finalMemory.peer = memoryMb(peer.pid);
    if (peerJwt) out.finalMemory.peerJwt = memoryMb(peerJwt.pid);
    await stopProcess(framework);
    await stopProcess(peerJwt);
    await stopProcess(peer);
    await stopProcess(floor);
    await stopProcess(service);
    if (settings.profile && !settings.against && activeScenarios.some((s) => s.id === settings.profileScenario)) {
      out.profile = await profileRun(settings.profileScenario, reqs[settings.profileScenario], workDir, startService);
    }
    const guardScenarios = activeScenarios.filter((s) => s.peer === "task");
    if (settings.guards && !settings.against && guardScenarios.length) {
      const scenarios = guardScenarios.map((s) => ({
        id: s.id,
        label: s.label,
        request: reqs[s.id],
        expectBody: out.responses.service[s.id].body,
      }));
      out.guards = { mode: settings.guardsMode, scenarios: scenarios.map(({ id, label }) => ({ id, label })) };
      if (settings.guardsMode === "inprocess") {
        log(
          `\nThe price of each per-request step (bench/guards.mjs, in process): ${guardScenarios.map((s) => s.id).join(", ")}, ` +
            `${settings.guardBlocks} blocks of ${settings.guardRequests} requests one at a time per side, alternating (ABBA)`,
        );
        out.guards.rows = await priceGuardsInProcess(database, scenarios, workDir);
      } else {
        log(
          `\nThe price of each per-request step (bench/guards.mjs, over HTTP): ${guardScenarios.map((s) => s.id).join(", ")}, 32 connections, ` +
            `${settings.guardRounds} rounds of ${settings.guardDurationS} s, both processes under load at once (16 connections each), each pair started afresh`,
        );
        out.guards.rows = await priceGuards({
          bundle: guardsBundle.server,
          start: ({ bundle, without, name }) =>
            startProcess({
              name,
              args: serviceArgs([], bundle),
              env: { ...serviceEnv(database), BENCH_WITHOUT: without },
              logFile,
              probe,
            }),
          stop: stopProcess,
          log,
          cpuMsOf: processCpuMs,
          // Cores busy with anything but the two servers, PostgreSQL and the load generator, over a round.
          busyCores: (pids) => {
            const servers = () => pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
            const before = {
              system: systemBusyMs(),
              wall: performance.now(),
              self: process.cpuUsage(),
              postgres: postgresCpuMs(),
              servers: servers(),
            };
            return () => {
              const self = process.cpuUsage(before.self);
              const ownMs = (self.user + self.system) / 1000 + postgresCpuSince(before.postgres) + servers() - before.servers;
              return Math.max(0, systemBusyMs() - before.system - ownMs) / (performance.now() - before.wall);
            };
          },
          scenarios,
          steps: settings.guardSteps,
          rounds: settings.guardRounds,
          durationS: settings.guardDurationS,
          warmupS: settings.warmupS,
          connections: PEER_CONNECTIONS,
        });
      }
    }
  } else {
    // One process at a time: alternate whole phases, ABBA (service, floor, floor, service, ...).
    await stopProcess(floor);
    floor = null;
    for (let round = 1; round <= settings.rounds; round++) {
      for (const target of round % 2 ? ["service", "floor"] : ["floor", "service"]) {
        const proc = target === "service" ? await startService() : await startFloor();
        for (const s of activeScenarios) await load(proc, reqs[s.id], 32, Math.min(settings.warmupS, 1.5), undefined);
        for (const s of activeScenarios) {
          for (const connections of settings.connections) {
            const run = await load(proc, reqs[s.id], connections, settings.durationS, expected(target, s.id));
            record(s.id, connections, target, run);
            log(`  ${s.id.padEnd(14)} c${String(connections).padEnd(4)} ${target.padEnd(7)} #${round}  ${fmtRun(run)}`);
            await sleep(300);
          }
        }
        out.finalMemory ??= {};
        out.finalMemory[target] = memoryMb(proc.pid);
        await stopProcess(proc);
      }
    }
  }

  for (const s of activeScenarios) {
    for (const connections of settings.connections) {
      const cell = out.scenarios[s.id]?.[connections];
      if (!cell) continue;
      cell.serviceMedian = aggregate(cell.service);
      cell.floorMedian = aggregate(cell.floor);
      cell.ratio = ratios(cell.serviceMedian, cell.floorMedian);
      if (cell.peer) {
        cell.peerMedian = aggregate(cell.peer);
        cell.ratioToPeer = ratios(cell.serviceMedian, cell.peerMedian);
      }
      if (cell.peerJwt) {
        cell.peerJwtMedian = aggregate(cell.peerJwt);
        cell.ratioToPeerJwt = ratios(cell.serviceMedian, cell.peerJwtMedian);
      }
      if (cell.framework) cell.frameworkMedian = aggregate(cell.framework);
    }
  }
  // The framework ceiling's share of the floor, as the summary prints it.
  for (const s of activeScenarios) {
    const cell = out.scenarios[s.id]?.[PEER_CONNECTIONS];
    if (!cell?.frameworkMedian) continue;
    out.framework ??= {};
    out.framework[s.id] = {
      framework: cell.frameworkMedian.rps,
      floor: cell.floorMedian.rps,
      ratio: cell.frameworkMedian.rps / cell.floorMedian.rps,
    };
  }
  const serviceRss = Object.values(out.scenarios).flatMap((byConn) =>
    Object.values(byConn).flatMap((c) => c.service.map((r) => r.rssMb)),
  );
  out.serviceRssMaxMb = serviceRss.length ? Math.max(...serviceRss) : null;
  return out;
}

/**
 * The in-process pricing (bench/guards-inprocess.mjs) in a process of its own, started with the
 * service's Node flags and environment; its rows in the shape of the HTTP pricing's.
 */
async function priceGuardsInProcess(database, scenarios, workDir) {
  const input = path.join(workDir, "guards-input.json");
  const output = path.join(workDir, "guards-output.json");
  const steps = GUARD_STEPS.filter((s) => !settings.guardSteps || settings.guardSteps.includes(s.id));
  writeFileSync(
    input,
    JSON.stringify({
      app: guardsBundle.app,
      steps: steps.map((s) => s.id),
      scenarios: scenarios.map((s) => ({ id: s.id, ...s.request, expectBody: s.expectBody })),
      blocks: settings.guardBlocks,
      requestsPerSlot: settings.guardRequests,
      warmupRequests: 300,
    }),
  );
  const child = spawn(process.execPath, [...serviceArgs([], path.join(benchDir, "guards-inprocess.mjs")), input, output], {
    cwd: root,
    env: serviceEnv(database),
    stdio: ["ignore", "inherit", "inherit"],
  });
  children.add(child);
  const code = await new Promise((resolve) => child.once("exit", resolve));
  children.delete(child);
  if (code !== 0) throw new Error(`the in-process pricing exited with ${code}`);
  const byTransport = JSON.parse(readFileSync(output, "utf8"));
  const label = (id) =>
    id === "none"
      ? "A/A: nothing off (the noise)"
      : id === "all"
        ? "every step of the list off at once (a bound)"
        : GUARD_STEPS.find((s) => s.id === id).label;
  return ["none", ...steps.map((s) => s.id), "all"].map((id) => ({
    id,
    label: label(id),
    transports: Object.fromEntries(scenarios.map((s) => [s.id, byTransport[s.id][id]])),
  }));
}

/**
 * PostGraphile as a multi-tenant deployment runs it (bench/peer.mjs): the tenant role and the
 * row-level-security policy, then the peer with the lazy-jwt preset. Checked before any load: a
 * token of the task's organization gets the service's task, a token of another organization null.
 * With `page` (the vendor page is measured), the tenancy of the tables the page reads too, and
 * the same checks of the page: the service's answer for the organization's token, no vendor for
 * another organization's.
 */
async function startPeerJwt(database, scenarioData, out, logFile, page) {
  const { seed } = scenarioData;
  const taskPeer = peerScenario("task").peerRequest;
  const pagePeer = peerScenario("page")?.peerRequest;
  await withClient(database, async (client) => {
    await setUpTenancy(client, database.tenantRole);
    if (page) await setUpVendorTenancy(client, database.tenantRole);
  });
  const secret = randomBytes(32).toString("base64url");
  const token = await peerToken(secret, { role: database.tenantRole, organizationId: seed.organizationId });
  const peerJwtRequest = taskPeer(scenarioData, token);
  const peerJwt = await startProcess({
    name: "PostGraphile (JWT + RLS)",
    ...peerJwtProcess(database.url, secret),
    logFile,
    probe: peerJwtRequest,
    readyPath: null,
  });
  out.coldStart.peerJwt = peerJwt.coldStart;
  const ask = async (request) => {
    const response = await fetch(peerJwt.base + request.path, request);
    return { status: response.status, body: await response.text() };
  };
  out.responses.peerJwt = await ask(peerJwtRequest);
  const otherToken = await peerToken(secret, { role: database.tenantRole, organizationId: `${seed.organizationId}_other` });
  const other = await ask(taskPeer(scenarioData, otherToken));
  // The service's task is there to compare with when a get-task scenario runs (the peer's probe is its get task either way).
  const serviceTask = out.responses.service["rest-task"]?.body;
  out.peerJwt = {
    role: database.tenantRole,
    sameTask: serviceTask ? sameTask(serviceTask, out.responses.peerJwt.body) : null,
    otherOrganizationGetsNull: other.status === 200 && noTask(other.body),
  };
  log(
    `PostGraphile with JWT + RLS (lazy-jwt, role ${database.tenantRole}) cold start: first answer ${peerJwt.coldStart.firstRequestMs.toFixed(0)} ms; ` +
      `its organization's token: ${out.peerJwt.sameTask ? "the same task" : out.peerJwt.sameTask === null ? `${out.responses.peerJwt.status} (no get-task scenario to compare with)` : "DIFFERENT"}; ` +
      `another organization's token: ${out.peerJwt.otherOrganizationGetsNull ? "null (row-level security holds)" : `NOT null: ${other.status} ${other.body.slice(0, 200)}`}`,
  );
  if (out.peerJwt.sameTask === false) log(`    PostGraphile (JWT): ${out.responses.peerJwt.body.slice(0, 300)}`);
  if (!out.peerJwt.otherOrganizationGetsNull) throw new Error("the secured peer showed a task to another organization's token");
  if (!page) return { peerJwt, peerJwtRequest, peerJwtVendorRequest: null };

  const peerJwtVendorRequest = pagePeer(scenarioData, token);
  out.responses.peerJwtVendorPage = await ask(peerJwtVendorRequest);
  const difference = vendorPageDifference(out.responses.service["vendor-page"].body, out.responses.peerJwtVendorPage.body);
  const otherPage = await ask(pagePeer(scenarioData, otherToken));
  out.peerJwt.vendorPage = {
    sameAnswer: difference === null,
    otherOrganizationGetsNoVendor: otherPage.status === 200 && noVendors(otherPage.body),
    differences: PEER_VENDOR_PAGE_DIFFERENCES,
  };
  log(
    `  vendor page with JWT + RLS: its organization's token: ${difference === null ? "the same vendors, statistics and comments" : `DIFFERENT: ${difference}`}; ` +
      `another organization's token: ${out.peerJwt.vendorPage.otherOrganizationGetsNoVendor ? "no vendor (row-level security holds)" : `VENDORS: ${otherPage.status} ${otherPage.body.slice(0, 200)}`}`,
  );
  if (difference !== null) throw new Error("the secured peer's vendor page is not the service's (see above)");
  if (!out.peerJwt.vendorPage.otherOrganizationGetsNoVendor)
    throw new Error("the secured peer showed vendors to another organization's token");
  return { peerJwt, peerJwtRequest, peerJwtVendorRequest };
}

/**
 * graphql-yoga + Sofa alone (bench/framework.mjs: a constant task, no database, no auth): the most
 * any service on this stack could reach here. It runs in the alternation of the `peer` scenarios.
 */
async function startFramework(reqs, serviceResponses, logFile) {
  const task = JSON.parse(serviceResponses["rest-task"]?.body ?? "{}");
  const proc = await startProcess({
    name: "framework",
    args: ["bench/framework.mjs"],
    env: { ...process.env, NODE_ENV: "production", FRAMEWORK_TASK: JSON.stringify(task) },
    logFile,
    probe: reqs["rest-task"],
  });
  log("framework ceiling up: graphql-yoga + Sofa answering a constant task (no database, no auth), in the same alternation");
  return proc;
}

/** The service once more under node --cpu-prof, one scenario (BENCH_PROFILE_SCENARIO, REST get task when unset) at 32 connections; summary of the load window. */
async function profileRun(scenario, request, workDir, startService) {
  const dir = path.join(workDir, "profile");
  mkdirSync(dir, { recursive: true });
  log(`\nCPU profile: ${scenario}, 32 connections, ${settings.profileDurationS} s (service under --cpu-prof)`);
  const proc = await startService(["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-name", "service.cpuprofile"]);
  await load(proc, request, 32, settings.warmupS, undefined);
  const startUs = Number(process.hrtime.bigint() / 1000n);
  const run = await load(proc, request, 32, settings.profileDurationS, undefined);
  const endUs = Number(process.hrtime.bigint() / 1000n);
  log(`  profiled run: ${fmtRun(run)}`);
  await stopProcess(proc);
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) {
    log("  no .cpuprofile was written");
    return { run, error: "no profile written" };
  }
  const profile = JSON.parse(readFileSync(path.join(dir, file), "utf8"));
  const profileEndUs = profile.endTime;
  const overlaps = startUs < profileEndUs && endUs > profile.startTime;
  const summary = summarizeProfile(profile, overlaps ? { startUs, endUs } : undefined);
  const keep = path.join(benchDir, "profiles");
  mkdirSync(keep, { recursive: true });
  const kept = `${scenario}-postgres.cpuprofile`;
  copyFileSync(path.join(dir, file), path.join(keep, kept));
  const title =
    `CPU profile of the service, PostgreSQL, ${scenario} (${request.method} ${request.path}), 32 connections, ${settings.profileDurationS} s ` +
    `(${new Date().toISOString()})\n` +
    `Profiled run: ${run.rps.toFixed(0)} req/s, p50 ${run.p50.toFixed(1)} ms, p99 ${run.p99.toFixed(1)} ms ` +
    `(the profiler itself costs some throughput); other processes used ${run.cpu.otherCores.toFixed(2)} of ${cpus().length} cores meanwhile. ` +
    "The profiler samples wall-clock time: when the machine is oversubscribed, time spent waiting for a CPU is counted in whatever ran last, " +
    `typically the socket-write system calls that wake another process.\n${overlaps ? "Only the samples of the load window are counted." : "Whole profile (the load window could not be located)."}\n` +
    `Raw profile: bench/profiles/${kept} (open in Chrome DevTools > Performance, or speedscope).\n`;
  const text = formatSummary(summary, title);
  writeFileSync(path.join(benchDir, "profile-summary.txt"), text);
  return { run, window: overlaps, summary };
}

// ------------------------------------------------------------------------------------------------
// Main

async function cleanup() {
  for (const child of children) {
    stopped.add(child);
    child.kill("SIGKILL");
  }
  while (cleanups.length) await cleanups.pop()();
}

process.on("SIGINT", async () => {
  log("\ninterrupted: stopping processes and removing the throwaway databases");
  await cleanup();
  process.exit(130);
});

/** The bench-only bundle whose steps can be switched off (bench/guards.mjs), when guards are priced. */
let guardsBundle = null;

async function main() {
  const workDir = mkdtempSync(path.join(tmpdir(), "bench-run-"));
  cleanups.push(async () => rmSync(workDir, { recursive: true, force: true }));
  const startedAt = new Date();
  log(
    `npm run bench: ${cpus().length} CPUs, Node ${process.version} (service flags as in npm start: ${startFlags.join(" ") || "none"}); ${settings.rounds} rounds x ${settings.durationS} s per side, ` +
      `connections ${settings.connections.join(", ")}, databases ${settings.databases.join(", ")}, scenarios ${activeScenarios.map((s) => s.id).join(", ")}`,
  );
  let t = performance.now();
  const build = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
  if (build.status !== 0) throw new Error("build failed");
  log(`built dist/server.js in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  if (settings.guards && !settings.against && settings.databases.includes("postgres")) {
    guardsBundle = await buildGuardsBundle(root);
    log(
      `built the bench-only bundles with switchable steps: ${path.relative(root, guardsBundle.server)}, ${path.relative(root, guardsBundle.app)}`,
    );
  }

  const results = {
    startedAt: startedAt.toISOString(),
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    settings,
    databases: [],
  };
  for (const kind of ["postgres", "pglite"]) {
    if (!settings.databases.includes(kind)) continue;
    t = performance.now();
    const db = await benchDatabase(kind, workDir);
    db.elapsedS = (performance.now() - t) / 1000;
    // Raw bodies are long; keep only their comparison in results.json.
    if (db.responses) {
      for (const target of Object.keys(db.responses)) {
        for (const id of Object.keys(db.responses[target])) delete db.responses[target][id].normalized;
      }
    }
    results.databases.push(db);
  }
  // The standalone measurements (bench/suites.mjs: PgBouncer, notifications, the list page, ...), each
  // after the scenarios, each skipped by its own switch.
  for (const suite of suites) {
    if (env[suite.skip] === "0" || !suite.runs(settings)) continue;
    const missing = suite.missing?.(settings);
    if (missing) log(`${suite.id} scenario skipped: ${missing}`);
    else results[suite.resultKey] = await suite.run(settings, log);
  }
  results.elapsedS = (Date.now() - startedAt.getTime()) / 1000;

  const report = targets(results);
  results.targets = report.list;
  const profile = results.databases.find((d) => d.profile)?.profile;
  if (profile?.summary) profile.summary.functions = profile.summary.functions.slice(0, 40);
  const resultsFile = settings.against ? "results-against.json" : "results.json";
  writeFileSync(path.join(benchDir, resultsFile), `${JSON.stringify(results, null, 2)}\n`);
  if (settings.against) log(`\nA/B mode: the "floor" columns are ${settings.against}, not bench/floor.mjs.`);

  log(`\n${"=".repeat(100)}`);
  log(table(results));
  if (!settings.against) {
    const against = peerTable(results);
    if (against) log(`\n${against}`);
    log("\nTargets (issue 28; PostgreSQL at 32 connections unless named):");
    for (const target of report.list) {
      log(`  ${target.result.padEnd(5)}  ${target.name.padEnd(70)} ${target.measured}`);
      if (target.note) log(`        ${target.note}`);
    }
  }
  const framework = results.databases.find((d) => d.framework)?.framework;
  if (framework) {
    log("\nFramework ceiling (PostgreSQL phase, 32 conn): graphql-yoga + Sofa answering a constant task, no database, no auth");
    for (const [id, f] of Object.entries(framework)) {
      const service = results.databases.find((d) => d.kind === "postgres")?.scenarios[id]?.[32]?.serviceMedian?.rps;
      log(
        `  ${id.padEnd(14)} framework ${num(f.framework)} req/s = ${(f.ratio * 100).toFixed(0)}% of the floor (${num(f.floor)} req/s)` +
          (service ? `; the service reaches ${((service / f.framework) * 100).toFixed(0)}% of the framework alone` : ""),
      );
    }
  }
  const guards = results.databases.find((d) => d.guards)?.guards;
  if (guards) {
    log(
      guards.mode === "inprocess"
        ? "\nThe price of each per-request step (PostgreSQL, in process, one request at a time; CPU ms per request, every step on → this one off, " +
            "medians of the differences of alternating blocks [95 % interval]; same bundle, same run; the A/A row is the noise):"
        : "\nThe price of each per-request step (PostgreSQL, over HTTP, 16 + 16 connections at once; CPU ms of the server process per request, " +
            "every step on → this one off, medians of the rounds; same bundle, same run; the A/A row is the noise):",
    );
    log(guardTable(guards.rows, guards.scenarios));
  }
  if (report.errors.length) log(`\nService errors under load:\n  ${report.errors.join("\n  ")}`);
  if (profile?.summary) {
    log("\nWhere the service's time goes (REST get task, PostgreSQL; full summary in bench/profile-summary.txt):");
    for (const g of profile.summary.groups)
      if (g.selfPctOfBusy !== null) log(`  ${g.group.padEnd(78)} ${g.selfPctOfBusy.toFixed(1).padStart(5)}% self`);
  }
  for (const suite of suites) if (results[suite.resultKey]?.text) log(`\n${results[suite.resultKey].text}`);
  log(`\nbench/${resultsFile} written; ${results.elapsedS.toFixed(0)} s in all.`);
}

try {
  await main();
} catch (error) {
  // A broken harness is not a measurement: that one exits 1. Missed targets still exit 0.
  log(`\nbench failed: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
process.exit();
