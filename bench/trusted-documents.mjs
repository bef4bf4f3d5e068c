// The "trusted documents" scenario (issue 37): get task by id as a stored document over GET
// (`/graphql?documentId=sha256:...&variables=...`, with its ETag) against the same document as text
// over POST, and by id over POST (no ETag: what the id alone saves), in alternating rounds of the same
// run (text, id POST, id GET, id GET, id POST, text, ...), with the service's CPU per
// request. PostgreSQL (a throwaway database on BENCH_POSTGRES_URL, default the local server), the
// built server (dist/server.js) in production mode with the default policy (TRUSTED_DOCUMENTS=allow).
// Alone: `node bench/trusted-documents.mjs` (BENCH_DURATION seconds per round, default 3; BENCH_ROUNDS, default 2).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { postgresCpuMs, postgresCpuSince, processCpuMs } from "./cpu.mjs";
import { newResultsFile } from "./settings.mjs";
import { replicaEnv, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CONNECTIONS = 16;
const GRAPHQL_TASK =
  "query GetTask($id: ID!) { task(taskId: $id) { id title status description taskTemplateId createdAt updatedAt } }";
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

function cli(args, env) {
  const run = spawnSync("npm", ["run", "--silent", "cli", "--", ...args, "--json"], { cwd: root, env, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`cli ${args.join(" ")} failed: ${run.stderr}`);
  return JSON.parse(
    run.stdout
      .trim()
      .split("\n")
      .findLast((l) => l.startsWith("{")),
  );
}

/** The bundle without `npm start`'s Node flags, as this scenario has always started it. */
async function startService(databaseUrl, cleanups) {
  const { child, base } = await startReplica({
    env: replicaEnv(databaseUrl, ["DATABASE_DIRECT_URL", "DATABASE_READ_URLS"]),
    cleanups,
    args: ["dist/server.js"],
  });
  return { child, url: base };
}

async function round(service, request, durationS) {
  const cpuBefore = processCpuMs(service.child.pid);
  const pgBefore = postgresCpuMs();
  const result = await autocannon({ url: service.url + request.path, ...request, connections: CONNECTIONS, duration: durationS });
  const requests = result.requests.total;
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    cpuMsPerRequest: (processCpuMs(service.child.pid) - cpuBefore) / requests,
    pgCpuMsPerRequest: postgresCpuSince(pgBefore) / requests,
    bytesPerRequest: request.path.length + (request.body?.length ?? 0),
  };
}

export async function benchTrustedDocuments({ durationS = 3, rounds = 2, postgresUrl, log = console.log }) {
  const cleanups = [];
  const workDir = mkdtempSync(path.join(tmpdir(), "bench-documents-"));
  cleanups.push(() => rmSync(workDir, { recursive: true, force: true }));
  try {
    const databaseUrl = await throwawayDatabase(postgresUrl, "bench_documents", cleanups);
    const env = { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "silent" };

    const seed = cli(["seed"], env);
    const id = createHash("sha256").update(GRAPHQL_TASK).digest("hex");
    const file = path.join(workDir, "persisted-documents.json");
    writeFileSync(file, JSON.stringify({ [`sha256:${id}`]: GRAPHQL_TASK }));
    const published = cli(["documents", "publish", "--app", "bench", "--version", "1", file], env);
    log(`trusted documents scenario: published ${JSON.stringify(published)}`);

    const service = await startService(databaseUrl, cleanups);
    const variables = JSON.stringify({ id: seed.taskIds[0] });
    const headers = { "x-api-key": seed.apiKey, accept: "application/json" };
    const requests = {
      "text over POST": {
        method: "POST",
        path: "/graphql",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ query: GRAPHQL_TASK, variables: { id: seed.taskIds[0] }, operationName: "GetTask" }),
      },
      "id over POST": {
        method: "POST",
        path: "/graphql",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ documentId: `sha256:${id}`, variables: { id: seed.taskIds[0] }, operationName: "GetTask" }),
      },
      "id over GET": {
        method: "GET",
        path: `/graphql?${new URLSearchParams({ documentId: `sha256:${id}`, variables, operationName: "GetTask" })}`,
        headers,
      },
    };
    for (const [label, request] of Object.entries(requests)) {
      const check = await fetch(service.url + request.path, {
        method: request.method,
        headers: request.headers,
        body: request.body,
      });
      const body = await check.json();
      if (check.status !== 200 || body.data?.task?.id !== seed.taskIds[0])
        throw new Error(`${label}: ${check.status} ${JSON.stringify(body)}`);
      await round(service, request, 1); // warm-up
    }
    const labels = Object.keys(requests);
    const samples = Object.fromEntries(labels.map((label) => [label, []]));
    const order = [];
    for (let r = 0; r < rounds; r++) order.push(...(r % 2 ? [...labels].reverse() : labels));
    for (const label of order) samples[label].push(await round(service, requests[label], durationS));

    const summary = Object.fromEntries(
      Object.entries(samples).map(([label, runs]) => [
        label,
        {
          rps: median(runs.map((x) => x.rps)),
          p99: median(runs.map((x) => x.p99)),
          errors: runs.reduce((s, x) => s + x.errors, 0),
          cpuMsPerRequest: median(runs.map((x) => x.cpuMsPerRequest)),
          pgCpuMsPerRequest: median(runs.map((x) => x.pgCpuMsPerRequest)),
          requestBytes: runs[0].bytesPerRequest,
        },
      ]),
    );
    const text = summary["text over POST"];
    const byId = summary["id over GET"];
    const lines = [
      `Get task by id, GraphQL, PostgreSQL, ${CONNECTIONS} connections, ${order.length} alternating rounds of ${durationS} s (medians):`,
      "  request          req/s    p99 ms   service CPU ms/req   PostgreSQL CPU ms/req   request line+body bytes   errors",
      ...Object.entries(summary).map(
        ([label, s]) =>
          `  ${label.padEnd(15)}  ${s.rps.toFixed(0).padStart(5)}    ${String(s.p99).padStart(6)}   ${s.cpuMsPerRequest.toFixed(3).padStart(18)}   ${s.pgCpuMsPerRequest.toFixed(3).padStart(21)}   ${String(s.requestBytes).padStart(23)}   ${s.errors}`,
      ),
      `  id over GET / text over POST: ${(byId.rps / text.rps).toFixed(2)}x the requests per second, ${(byId.cpuMsPerRequest / text.cpuMsPerRequest).toFixed(2)}x the service CPU per request.`,
      `  id over POST / text over POST: ${(summary["id over POST"].cpuMsPerRequest / text.cpuMsPerRequest).toFixed(2)}x the service CPU per request.`,
      "  The load generator shares the 2 cores with the service and PostgreSQL.",
    ];
    return { summary, text: lines.join("\n") };
  } finally {
    while (cleanups.length) await cleanups.pop()();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const build = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
  if (build.status !== 0) process.exit(1);
  const { text } = await benchTrustedDocuments({
    durationS: Number(process.env.BENCH_DURATION ?? 3),
    rounds: Number(process.env.BENCH_ROUNDS ?? 2),
    postgresUrl: process.env.BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
  });
  console.log(text);
  const out = newResultsFile("trusted-documents");
  writeFileSync(
    out,
    `# Trusted documents: a stored document over GET against its text over POST (${new Date().toISOString()})\n\n` +
      "`node bench/trusted-documents.mjs` (issue 37), on the shared 2-core machine.\n\n```\n" +
      `${text}\n\`\`\`\n`,
  );
  process.exit(0);
}

/** In `npm run bench` (bench/suites.mjs): get task as a stored document over GET against its text over POST. */
export const suite = {
  id: "trusted-documents",
  resultKey: "trustedDocuments",
  skip: "BENCH_TRUSTED_DOCUMENTS",
  runs: (settings) => !settings.against && settings.databases.includes("postgres"),
  run: (settings, log) =>
    benchTrustedDocuments({ durationS: settings.durationS, rounds: settings.rounds, postgresUrl: settings.postgresUrl, log }),
};
