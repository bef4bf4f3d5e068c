// The "framework-import" measurement (issue 56): how long POST /v1/frameworks takes for a catalog of
// SP 800-53's size, the contract's bound being 10 s. It generates an OSCAL catalog like NIST's
// (20 families of 3 controls, each with 19 enhancements: 1,220 requirements, statements with items
// and parameters, about 4 MB) and imports it BENCH_IMPORT_ROUNDS times (3) into one organization
// of the built server, each under a new key; it prints each round's time and the median.
// Run alone: `node bench/framework-import.mjs` (PostgreSQL at BENCH_POSTGRES_URL or the local
// server; BENCH_IMPORT_DATABASE=pglite for the embedded database instead).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** An OSCAL catalog shaped like NIST's SP 800-53: families, controls, enhancements, statements with items. */
export function generatedCatalog({ families = 20, controlsPerFamily = 3, enhancements = 19 } = {}) {
  const statement = (id) => ({
    id: `${id}_smt`,
    name: "statement",
    parts: "abcdefgh".split("").map((item) => ({
      id: `${id}_smt.${item}`,
      name: "item",
      props: [{ name: "label", value: `${item}.` }],
      prose: `Perform the activity ${item} for the system {{ insert: param, ${id}_odp.01 }} and document it in the security plan, reviewing it after significant changes to the environment of operation.`,
    })),
  });
  const guidance = (id) => ({
    id: `${id}_gdn`,
    name: "guidance",
    prose: "Guidance text of the kind NIST writes for every control. ".repeat(12),
  });
  const control = (id, label, title, children = []) => ({
    id,
    class: "SP800-53",
    title,
    params: [{ id: `${id}_odp.01`, label: "organization-defined frequency" }],
    props: [
      { name: "label", value: label },
      { name: "sort-id", value: id },
    ],
    parts: [statement(id), guidance(id)],
    ...(children.length ? { controls: children } : {}),
  });
  const groups = Array.from({ length: families }, (_, f) => {
    const family = `f${String(f).padStart(2, "0")}`;
    return {
      id: family,
      class: "family",
      title: `Family ${f}`,
      controls: Array.from({ length: controlsPerFamily }, (_, c) => {
        const id = `${family}-${c + 1}`;
        const label = `${family.toUpperCase()}-${c + 1}`;
        return control(
          id,
          label,
          `Control ${label}`,
          Array.from({ length: enhancements }, (_, e) =>
            control(`${id}.${e + 1}`, `${label}(${e + 1})`, `Enhancement ${e + 1} of ${label}`),
          ),
        );
      }),
    };
  });
  return {
    catalog: {
      uuid: "7e9a1b94-6f43-4bcb-9d7e-6f0a4b3c2d11",
      metadata: { title: "Generated Catalog", "last-modified": "2026-12-03T00:00:00Z", version: "1", "oscal-version": "1.1.2" },
      groups,
    },
  };
}

async function main() {
  const rounds = Number(process.env.BENCH_IMPORT_ROUNDS ?? 3);
  const cleanups = [];
  try {
    if (!existsSync(path.join(root, "dist/server.js"))) {
      const built = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
      if (built.status !== 0) throw new Error("the build failed");
    }
    let env;
    if (process.env.BENCH_IMPORT_DATABASE === "pglite") {
      const dataDir = mkdtempSync(path.join(tmpdir(), "bench-import-"));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      env = { ...replicaEnv("", []), DATA_DIR: dataDir };
      delete env.DATABASE_URL;
    } else {
      const postgresUrl = process.env.BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
      env = replicaEnv(await throwawayDatabase(postgresUrl, "bench_import", cleanups));
    }
    // Seeded before the server starts: the embedded database takes one process at a time.
    const org = seedOrganization(env);
    const { base } = await startReplica({ env, settings: { LOG_LEVEL: "error" }, cleanups });
    const catalog = generatedCatalog({ families: 20, controlsPerFamily: 3, enhancements: 19 });
    const document = JSON.stringify(catalog);
    const requirements = 20 + 60 * 20;
    process.stderr.write(`framework-import: ${requirements} requirements, ${(document.length / 1e6).toFixed(1)} MB of OSCAL\n`);
    const times = [];
    for (let round = 0; round < rounds; round++) {
      const started = performance.now();
      const res = await fetch(`${base}/v1/frameworks`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": org.apiKey },
        body: JSON.stringify({ format: "oscal", document, key: `generated-${round}` }),
      });
      const ms = performance.now() - started;
      const body = await res.json();
      if (res.status !== 201 || body.requirementCount !== requirements) {
        throw new Error(`round ${round}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      }
      times.push(ms);
      process.stderr.write(`  round ${round + 1}: ${Math.round(ms)} ms\n`);
    }
    const result = {
      requirements,
      megabytes: Number((document.length / 1e6).toFixed(2)),
      medianMs: Math.round(median(times)),
      limitMs: 10_000,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
