// The in-process price of each step (bench/guards-inprocess.mjs) alone, without the rest of
// `npm run bench`: builds the bench-only bundle with switchable steps, makes a throwaway PostgreSQL
// database seeded by the CLI, and prices the steps on REST get task and GraphQL get task.
//
//   npx node bench/guards-alone.mjs            # every step of bench/guards.mjs (the pinned Node: npx)
//   BENCH_GUARDS=cost-rule,operation-limits BENCH_GUARD_BLOCKS=60 npx node bench/guards-alone.mjs
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildGuardsBundle, GUARD_STEPS } from "./guards.mjs";
import { startFlagsOf } from "./settings.mjs";
import { replicaEnv, seedOrganization, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
const postgresUrl = env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const only = env.BENCH_GUARDS ? env.BENCH_GUARDS.split(",") : null;
const steps = GUARD_STEPS.filter((s) => !only || only.includes(s.id)).map((s) => s.id);
const cleanups = [];
const cleanup = async () => {
  for (const undo of cleanups.reverse()) await undo().catch(() => {});
};
process.once("SIGINT", () => cleanup().then(() => process.exit(130)));

const GRAPHQL_TASK = "query($id: ID!) { task(taskId: $id) { id title status description taskTemplateId createdAt updatedAt } }";
try {
  const bundle = await buildGuardsBundle(root);
  const databaseUrl = await throwawayDatabase(postgresUrl, "guards", cleanups);
  const serviceEnv = {
    ...replicaEnv(databaseUrl),
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "1000000000",
    SEED_DEMO_DATA: "false",
  };
  const seed = seedOrganization(serviceEnv);
  const key = { "x-api-key": seed.apiKey };
  const scenarios = [
    { id: "rest-task", method: "GET", path: `/v1/tasks/${seed.taskIds[0]}`, headers: key },
    {
      id: "graphql-task",
      method: "POST",
      path: "/graphql",
      headers: { ...key, "content-type": "application/json" },
      body: JSON.stringify({ query: GRAPHQL_TASK, variables: { id: seed.taskIds[0] } }),
    },
  ];
  const work = mkdtempSync(path.join(root, "bench", ".guards", "alone-"));
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  // The expected bodies: the app with every step on, in a process of its own.
  const probe = path.join(work, "probe.mjs");
  writeFileSync(
    probe,
    `const { createApp, loadConfig, openDatabase } = await import(${JSON.stringify(bundle.app)});
const config = loadConfig();
const database = await openDatabase({ kind: "postgres", url: config.databaseUrl, poolSize: 2 });
const app = createApp({ database, config, logger: (await import("pino")).default({ level: "warn" }) });
const out = {};
for (const s of ${JSON.stringify(scenarios)}) {
  const r = await app.yoga.fetch(new app.yoga.fetchAPI.Request("http://127.0.0.1" + s.path, { method: s.method, headers: s.headers, body: s.body }), {});
  out[s.id] = await r.text();
}
process.stdout.write(JSON.stringify(out));
await database.close?.();
process.exit(0);
`,
  );
  const bodies = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [probe], { cwd: root, env: serviceEnv, stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (chunk) => {
      text += chunk;
    });
    child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(text)) : reject(new Error(`probe exited ${code}`))));
  });
  const input = path.join(work, "input.json");
  const output = path.join(work, "output.json");
  writeFileSync(
    input,
    JSON.stringify({
      app: bundle.app,
      steps,
      scenarios: scenarios.map((s) => ({ ...s, expectBody: bodies[s.id] })),
      blocks: Number(env.BENCH_GUARD_BLOCKS ?? 60),
      requestsPerSlot: Number(env.BENCH_GUARD_REQUESTS ?? 10),
      warmupRequests: 300,
    }),
  );
  process.stdout.write(`steps: ${steps.join(", ")}\n`);
  const code = await new Promise((resolve) => {
    const child = spawn(process.execPath, [...startFlagsOf(), path.join(root, "bench", "guards-inprocess.mjs"), input, output], {
      cwd: root,
      env: serviceEnv,
      stdio: ["ignore", "inherit", "inherit"],
    });
    child.once("exit", resolve);
  });
  if (code !== 0) throw new Error(`the in-process pricing exited with ${code}`);
} finally {
  await cleanup();
}
process.exit(0);
