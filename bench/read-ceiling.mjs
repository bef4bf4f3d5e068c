// The read path's ceiling (issue 46, item 1), in one process and one run, on the vendor page and the
// comments page documents:
//   (a) today's path: the app answering the document in process (`yoga.fetch`, no socket), CPU ms a page;
//   (b) the same shaped rows answered by an executor over the service's schema with default
//       resolvers only (graphql-js's `execute`, and graphql-tools' executor, which Yoga runs);
//   (c) the same rows written to JSON by code that knows the document.
// The three alternate in short blocks, `CEILING_ROUNDS` times, so that the machine's load hits them
// alike; the CPU of the machine's other processes during the run is printed beside them.
// `CEILING_PROFILE=1` then writes a CPU profile of (a) to .exp/ceiling/ and prints where it goes.
//
//   node bench/read-ceiling.mjs            (after nothing: it bundles this tree's src/ itself)
//
// Settings: CEILING_ROUNDS (3), CEILING_REQUESTS (200 a block), CEILING_POSTGRES_URL (TEST_POSTGRES_URL,
// else the local server).
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { appBundle, throwawayDatabase } from "./app-bundle.mjs";
import { otherCoresDuring } from "./cpu.mjs";
import { createVendorPage, VENDOR_PAGE_QUERY } from "./scenarios/vendor-page.mjs";
import { startFlagsOf } from "./settings.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;
if (!env.CEILING_CHILD) {
  const result = spawnSync(process.execPath, [...startFlagsOf(), fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...env, CEILING_CHILD: "1" },
  });
  process.exit(result.status ?? 1);
}

const rounds = Number(env.CEILING_ROUNDS ?? 3);
const perBlock = Number(env.CEILING_REQUESTS ?? 200);
const log = (line) => process.stdout.write(`${line}\n`);
const require = createRequire(path.join(root, "package.json"));
const graphql = require("graphql");
const { normalizedExecutor } = require("@graphql-tools/executor");

export const COMMENTS_PAGE_QUERY =
  "query CommentsPage($id: ID!) { vendor(id: $id) { comments(limit: 5) { totalCount items { id content createdAt author { name } attachments { id name } } } } }";

/** (c): each page's answer written from its rows by code that knows its document. */
const byHand = {
  "vendor-page": (data) => ({
    nodes: data.nodes.map((v) => ({
      id: v.id,
      name: v.name,
      taskItemStats: {
        total: v.taskItemStats.total,
        byStatus: {
          todo: v.taskItemStats.byStatus.todo,
          in_progress: v.taskItemStats.byStatus.in_progress,
          in_review: v.taskItemStats.byStatus.in_review,
          done: v.taskItemStats.byStatus.done,
          canceled: v.taskItemStats.byStatus.canceled,
        },
      },
      comments: {
        items: v.comments.items.map((c) => ({
          id: c.id,
          content: c.content,
          createdAt: c.createdAt.toISOString(),
          author: { name: c.author.name },
        })),
      },
    })),
  }),
  "comments-page": (data) => ({
    vendor: {
      comments: {
        totalCount: data.vendor.comments.totalCount,
        items: data.vendor.comments.items.map((c) => ({
          id: c.id,
          content: c.content,
          createdAt: c.createdAt.toISOString(),
          author: { name: c.author.name },
          attachments: c.attachments.map((a) => ({ id: a.id, name: a.name })),
        })),
      },
    },
  }),
};

const outDir = path.join(root, ".exp", "ceiling");
const mod = await import(pathToFileURL(await appBundle(root, path.join(outDir, "app"))).href);
const database = await throwawayDatabase(env.CEILING_POSTGRES_URL ?? env.TEST_POSTGRES_URL);
try {
  const seed = database.seed(root);
  const pino = (await import("pino")).default;
  const config = mod.loadConfig();
  const db = await mod.openDatabase({ kind: "postgres", url: config.databaseUrl, poolSize: config.databasePoolSize });
  const app = mod.createApp({ database: db, config, logger: pino({ level: "warn" }) });
  const server = createServer(app.yoga);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const vendorIds = await createVendorPage(`http://127.0.0.1:${server.address().port}`, seed);
  server.close();

  const { Request } = app.yoga.fetchAPI;
  const pages = {
    "vendor-page": { query: VENDOR_PAGE_QUERY, variables: { ids: vendorIds } },
    "comments-page": { query: COMMENTS_PAGE_QUERY, variables: { id: vendorIds[0] } },
  };
  const viaApp = async (page) => {
    const response = await app.yoga.fetch(
      new Request("http://127.0.0.1/graphql", {
        method: "POST",
        headers: { "x-api-key": seed.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ query: page.query, variables: page.variables }),
      }),
      {},
    );
    return response.text();
  };

  // The service's schema with every resolver taken out (default resolvers, default type resolution
  // by __typename), its scalars kept: what the executor itself costs.
  const bare = graphql.buildSchema(graphql.printSchema(mod.schema));
  for (const name of ["DateTime", "Date", "JSON"])
    Object.assign(bare.getType(name), { serialize: mod.schema.getType(name).serialize });

  /** The answer's data as the rows the resolvers read: __typename on each record, instants as Dates. */
  const shaped = (value, type) => {
    if (Array.isArray(value)) return value.map((v) => shaped(v, type));
    if (value === null || typeof value !== "object") return value;
    const out = {};
    const concrete = value.id?.startsWith?.("vnd_") ? bare.getType("Vendor") : graphql.getNamedType(type);
    const fields = concrete.getFields?.() ?? {};
    for (const [key, v] of Object.entries(value)) {
      const field = fields[key];
      const named = field && graphql.getNamedType(field.type);
      out[key] = named?.name === "DateTime" && typeof v === "string" ? new Date(v) : shaped(v, field?.type ?? type);
    }
    if (value.id?.startsWith?.("vnd_")) out.__typename = "Vendor";
    return out;
  };

  for (const [id, page] of Object.entries(pages)) {
    const text = await viaApp(page);
    const answer = JSON.parse(text);
    if (answer.errors) throw new Error(`${id}: ${text}`);
    const document = graphql.parse(page.query);
    const problems = graphql.validate(bare, document);
    if (problems.length) throw problems[0];
    const rootValue = shaped(answer.data, bare.getQueryType());
    const args = { schema: bare, document, rootValue, variableValues: page.variables };
    page.sides = {
      "(a) today's path, in process": () => viaApp(page),
      "(b) graphql-js execute, default resolvers": () => JSON.stringify(graphql.execute(args)),
      "(b') graphql-tools executor (Yoga's), default resolvers": () => JSON.stringify(normalizedExecutor(args)),
      "(c) written by code that knows the document": () => JSON.stringify({ data: byHand[id](rootValue) }),
    };
    for (const [side, fn] of Object.entries(page.sides)) {
      const out = await fn();
      if (out !== text) throw new Error(`${id}: ${side} answers differently:\n${out.slice(0, 400)}\n${text.slice(0, 400)}`);
    }
  }

  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const block = async (fn, n) => {
    const before = cpuMs();
    for (let i = 0; i < n; i++) await fn();
    return (cpuMs() - before) / n;
  };
  for (const page of Object.values(pages)) for (const fn of Object.values(page.sides)) await block(fn, 100);

  log(
    `Node ${process.version} ${startFlagsOf().join(" ")}, graphql ${require("graphql/package.json").version}; ${rounds} rounds of ${perBlock} pages a side, alternating`,
  );
  const results = {};
  const noise = await otherCoresDuring(async () => {
    for (let round = 0; round < rounds; round++) {
      for (const [id, page] of Object.entries(pages)) {
        const sides = Object.entries(page.sides);
        // Alternating: forward on even rounds, backward on odd ones.
        for (const [side, fn] of round % 2 ? sides.toReversed() : sides) {
          results[id] ??= {};
          results[id][side] ??= [];
          results[id][side].push(await block(fn, perBlock));
        }
      }
    }
  });
  for (const [id, sides] of Object.entries(results)) {
    log(`${id}: CPU ms a page, rounds (median)`);
    const a = median(Object.values(sides)[0]);
    for (const [side, ms] of Object.entries(sides)) {
      const m = median(ms);
      log(`  ${side.padEnd(56)} ${ms.map((x) => x.toFixed(2)).join(" ")}  (${m.toFixed(2)}; ${(m / a).toFixed(3)} of (a))`);
    }
  }
  log(`other processes: ${noise.toFixed(2)} cores during the run`);
  writeFileSync(path.join(outDir, "last.json"), JSON.stringify({ results, otherCores: noise }, null, 2));

  if (env.CEILING_PROFILE) {
    const { Session } = await import("node:inspector/promises");
    const session = new Session();
    session.connect();
    for (const id of Object.keys(pages)) {
      await session.post("Profiler.enable");
      await session.post("Profiler.setSamplingInterval", { interval: 100 });
      await session.post("Profiler.start");
      await block(Object.values(pages[id].sides)[0], Number(env.CEILING_PROFILE_REQUESTS ?? 1000));
      const { profile } = await session.post("Profiler.stop");
      const file = path.join(outDir, `${id}.cpuprofile`);
      writeFileSync(file, JSON.stringify(profile));
      log(`profile of (a) ${id}: ${path.relative(root, file)}`);
    }
  }
  await db.close?.();
} finally {
  await database.drop();
}
process.exit(0);

function median(xs) {
  const v = xs.toSorted((x, y) => x - y);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}
