// The price of each step of a write (issue 47, item 1), as bench/guards-inprocess.mjs prices the
// guards of a read: one bench-only bundle whose steps can be switched off (esbuild stand-ins, into
// bench/.write-path/, git-ignored; src/ has no trace of them), one app per variant in this one
// process on one throwaway PostgreSQL database, requests one at a time in short blocks that
// alternate between the app with every step on and the app with one step off. The price of a step
// is the median over the blocks of the difference in CPU time of this process per request.
// Beside it, the SQL statements per write (every query the pg driver sends: BEGIN and COMMIT
// included, each a round trip), counted by wrapping pg's Client#query in this process.
//
//   node bench/write-path.mjs
//
// Settings (environment): WRITE_BLOCKS (40), WRITE_REQUESTS (10 per block), WRITE_SCENARIOS
// (every scenario), WRITE_STEPS (every step), BENCH_POSTGRES_URL (the local server).
// Not measured: the HTTP server's own work (parsing, writing), the same for every variant.
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { systemBusyMs } from "./cpu.mjs";
import { buildGuardsBundle } from "./guards.mjs";
import { startFlagsOf } from "./settings.mjs";
import { replicaEnv, seedOrganization, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;

/** The steps of a write that can be switched off; each stub stands for one export of one module. */
export const WRITE_STEPS = [
  {
    id: "authentication",
    label: "authentication (API key: parse, cache, hash compare)",
    module: "src/auth/authenticate.ts",
    // The first answer of each app, kept: what is left is the cost of deciding it per request.
    stubs: {
      createAuthenticator:
        "(...a) => { const f = real.createAuthenticator(...a); let s; return async (r) => (s ??= await f(r)); }",
    },
  },
  {
    id: "rest-validation",
    label: "REST validation (path, query, body against the OpenAPI shapes)",
    module: "src/rest/request-validation.ts",
    stubs: { validateRestRequest: "() => ({ nulls: [], variables: {} })" },
  },
  {
    id: "validation",
    label: "input validation (zod, parseInput)",
    module: "src/platform/validation.ts",
    stubs: { parseInput: "(schema, input) => input" },
  },
  {
    id: "entity-check",
    label: "the record's existence (a SELECT before the transaction)",
    module: "src/modules/entities.ts",
    stubs: { assertEntityExists: "async () => {}" },
  },
  {
    id: "webhook-enqueue",
    label: "webhook enqueue (the outbox row; the endpoints are still read)",
    module: "src/modules/webhooks/webhooks.enqueue.ts",
    // The bench's endpoint listens to comment.*, task.* and policy.*: these filters match none.
    stubs: { deliveryFilters: '() => ["bench.none"]' },
  },
  {
    id: "audit-chain",
    label: "the chain (head row, sequence, hash; the event still written unchained)",
    module: "src/modules/audit/audit.chain.ts",
    stubs: { auditEventStatement: "(data) => real.auditEventStatement(data, false)" },
  },
  {
    id: "audit-event",
    label: "the audit event with its chain and outbox (nothing written)",
    module: "src/modules/audit/audit.service.ts",
    stubs: { writeAuditEvent: "async () => {}" },
  },
  {
    id: "mentions",
    label: "mentions and their notifications (parse, insert, mail job)",
    module: "src/modules/comments/mentions.ts",
    stubs: { mentionedIds: "() => []" },
  },
  {
    id: "live-event",
    label: "the live event (published after the commit)",
    module: "src/platform/events.ts",
    stubs: { createEvents: "(...a) => ({ ...real.createEvents(...a), publish() {} })" },
  },
  {
    id: "idempotency",
    label: "Idempotency-Key (the key's row, the answer kept, one transaction)",
    module: "src/http/idempotency.ts",
    stubs: { useIdempotency: "() => ({})" },
  },
];

// Started with the service's Node flags: re-run this file under them once.
const startFlags = startFlagsOf();
if (!env.WRITE_CHILD && import.meta.url === `file://${process.argv[1]}`) {
  const result = spawnSync(process.execPath, [...startFlags, fileURLToPath(import.meta.url)], {
    stdio: "inherit",
    env: { ...env, WRITE_CHILD: "1" },
  });
  process.exit(result.status ?? 1);
}

const blocks = Number(env.WRITE_BLOCKS ?? 40);
const perBlock = Number(env.WRITE_REQUESTS ?? 10);
const postgresUrl = env.BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const log = (line) => process.stdout.write(`${line}\n`);

// Every statement the driver sends, counted (and the last request's kept, to show them).
let statements = 0;
let recorded = null;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function counted(config, ...rest) {
  statements++;
  if (recorded)
    recorded.push(
      String(typeof config === "string" ? config : config?.text)
        .replace(/\s+/g, " ")
        .slice(0, 110),
    );
  return query.call(this, config, ...rest);
};

const cleanups = [];
try {
  const bundle = await buildGuardsBundle(root, { steps: WRITE_STEPS, dir: ".write-path" });
  const baseEnv = replicaEnv(await throwawayDatabase(postgresUrl, "bench_write", cleanups));
  Object.assign(env, baseEnv, {
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "1000000000",
    SEED_DEMO_DATA: "false",
    WEBHOOK_WORKER: "false",
    MAIL_WORKER: "false",
  });
  const org = seedOrganization(env);
  const { createApp, loadConfig, openDatabase } = await import(pathToFileURL(bundle.app).href);
  const config = loadConfig();
  const database = await openDatabase({
    kind: "postgres",
    url: config.databaseUrl,
    poolSize: config.databasePoolSize,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
  });
  const logger = (await import("pino")).default({ level: "warn" });

  const steps = WRITE_STEPS.filter((s) => !env.WRITE_STEPS || env.WRITE_STEPS.split(",").includes(s.id));
  const variants = [
    { id: "base", off: new Set() },
    { id: "none", off: new Set() },
    ...steps.map((s) => ({ id: s.id, label: s.label, off: new Set([s.id]) })),
    { id: "all", off: new Set(["all"]) },
  ];
  for (const variant of variants) {
    globalThis.__benchWithout = variant.off;
    variant.app = createApp({ database, config, logger });
  }

  const key = { "x-api-key": org.apiKey, "content-type": "application/json" };
  // One endpoint listening to every event: each write queues one delivery (the floor's outbox row).
  {
    const { Request } = variants[0].app.yoga.fetchAPI;
    const response = await variants[0].app.yoga.fetch(
      new Request("http://127.0.0.1/v1/webhook-endpoints", {
        method: "POST",
        headers: key,
        body: JSON.stringify({ url: "https://hooks.example.com/bench", eventTypes: ["comment.*", "task.*", "policy.*"] }),
      }),
      {},
    );
    if (response.status !== 201) throw new Error(`webhook endpoint: ${response.status} ${await response.text()}`);
  }
  const comment = (content) => JSON.stringify({ content, entityId: org.taskIds[1], entityType: "task", userId: org.userIds[0] });
  let n = 0;
  const scenarios = [
    {
      id: "comment",
      label: "REST create comment",
      request: () => ({ method: "POST", path: "/v1/comments", headers: key, body: comment("Benchmark comment") }),
    },
    {
      id: "comment-mention",
      label: "… mentioning a member",
      request: () => ({
        method: "POST",
        path: "/v1/comments",
        headers: key,
        body: comment(`Benchmark comment for @[Member](${org.memberIds[1]})`),
      }),
    },
    {
      id: "comment-keyed",
      label: "… with an Idempotency-Key",
      request: () => ({
        method: "POST",
        path: "/v1/comments",
        headers: { ...key, "idempotency-key": randomUUID() },
        body: comment("Benchmark comment"),
      }),
    },
    {
      id: "update-task",
      label: "REST update task (title)",
      request: () => ({
        method: "PATCH",
        path: `/v1/tasks/${org.taskIds[2]}`,
        headers: key,
        body: JSON.stringify({ title: `Task ${n++}` }),
      }),
    },
    {
      id: "policy-version",
      label: "REST create policy version",
      request: () => ({
        method: "POST",
        path: `/v1/policies/${org.policyIds[0]}/versions`,
        headers: key,
        body: JSON.stringify({}),
      }),
    },
  ].filter((s) => !env.WRITE_SCENARIOS || env.WRITE_SCENARIOS.split(",").includes(s.id));

  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  async function slot(variant, scenario, count) {
    globalThis.__benchWithout = variant.off;
    const { Request } = variant.app.yoga.fetchAPI;
    let errors = 0;
    const before = cpuMs();
    const sent = statements;
    for (let i = 0; i < count; i++) {
      const r = scenario.request();
      const response = await variant.app.yoga.fetch(new Request(`http://127.0.0.1${r.path}`, r), {});
      await response.text();
      if (response.status >= 300) errors++;
    }
    return { cpu: (cpuMs() - before) / count, statements: (statements - sent) / count, errors };
  }
  const median = (xs) => {
    const v = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(v.length / 2);
    return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  };

  const results = {};
  const busyStart = systemBusyMs();
  const wallStart = performance.now();
  const ownStart = cpuMs();
  for (const scenario of scenarios) {
    results[scenario.id] = { label: scenario.label, variants: {} };
    for (const variant of variants) await slot(variant, scenario, 20);
    // The statements of one write with every step on.
    recorded = [];
    await slot(variants[0], scenario, 1);
    results[scenario.id].statements = recorded;
    recorded = null;
    for (const variant of variants.slice(1)) {
      const diffs = [];
      const on = [];
      const off = [];
      let stmtOn = 0;
      let stmtOff = 0;
      let errors = 0;
      for (let block = 0; block < blocks; block++) {
        const pair = block % 2 ? [variant, variants[0]] : [variants[0], variant];
        const m = {};
        for (const v of pair) m[v === variants[0] ? "on" : "off"] = await slot(v, scenario, perBlock);
        on.push(m.on.cpu);
        off.push(m.off.cpu);
        diffs.push(m.on.cpu - m.off.cpu);
        stmtOn = m.on.statements;
        stmtOff = m.off.statements;
        errors += m.on.errors + m.off.errors;
      }
      const sorted = diffs.toSorted((a, b) => a - b);
      const k = Math.max(0, Math.floor(sorted.length / 2 - 0.98 * Math.sqrt(sorted.length)));
      const r = {
        cpuOn: median(on),
        cpuOff: median(off),
        price: median(diffs),
        low: sorted[k],
        high: sorted[sorted.length - 1 - k],
        statementsOn: stmtOn,
        statementsOff: stmtOff,
        errors,
      };
      results[scenario.id].variants[variant.id] = r;
      log(
        `  ${scenario.id.padEnd(15)} ${variant.id.padEnd(16)} CPU ms on ${r.cpuOn.toFixed(3)} off ${r.cpuOff.toFixed(3)}: ` +
          `price ${r.price.toFixed(3)} [${r.low.toFixed(3)}, ${r.high.toFixed(3)}] (${((100 * r.price) / r.cpuOn).toFixed(1)} %); ` +
          `statements ${r.statementsOn} → ${r.statementsOff}; errors ${errors}`,
      );
    }
  }
  const otherCores = (systemBusyMs() - busyStart - (cpuMs() - ownStart)) / (performance.now() - wallStart);
  const loadavg = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

  // The table: one row per step, one column per scenario.
  const lines = [
    `Other processes used ${otherCores.toFixed(2)} of the machine's cores meanwhile (load average at the end ${loadavg}); ${blocks} blocks of ${perBlock} requests per side.`,
    "",
    `| step | ${scenarios.map((s) => `${s.label}: CPU ms on → off: price [95 %] (share); statements`).join(" | ")} |`,
    `| --- | ${scenarios.map(() => "---").join(" | ")} |`,
  ];
  for (const variant of variants.slice(1)) {
    const cells = scenarios.map((s) => {
      const r = results[s.id].variants[variant.id];
      return `${r.cpuOn.toFixed(2)} → ${r.cpuOff.toFixed(2)}: **${r.price.toFixed(3)}** [${r.low.toFixed(3)}, ${r.high.toFixed(3)}] (${((100 * r.price) / r.cpuOn).toFixed(0)} %); ${r.statementsOn} → ${r.statementsOff}${r.errors ? ` ⚠ ${r.errors} errors` : ""}`;
    });
    const label =
      variant.id === "none" ? "A/A: nothing off (the noise)" : variant.id === "all" ? "every step off at once" : variant.label;
    lines.push(`| ${label} (\`${variant.id}\`) | ${cells.join(" | ")} |`);
  }
  lines.push("");
  for (const s of scenarios) {
    lines.push(`${s.label}, the statements of one write (every step on):`, "");
    for (const [i, text] of results[s.id].statements.entries()) lines.push(`${i + 1}. \`${text.replaceAll("`", "'")}\``);
    lines.push("");
  }
  log(`\n${lines.join("\n")}`);
  writeFileSync(path.join(root, "bench", ".write-path", "last.json"), JSON.stringify({ results, otherCores, loadavg }));
  await database.close?.();
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
}
process.exit(0);
