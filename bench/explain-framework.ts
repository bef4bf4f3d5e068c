// EXPLAIN (ANALYZE, BUFFERS) of the readiness statements behind the framework page, on a database
// made by bench/framework-inprocess.mjs (framework-page's data):
//
//   DATABASE_URL=postgresql://... npx tsx bench/explain-framework.ts [seed.json] [which: readiness,requirements,controls] [summary]
//
// Prints each plan (or, with "summary", its execution time and shared buffers only).
import { readFileSync } from "node:fs";
import pg from "pg";
import type { Prisma } from "../src/generated/prisma/client.js";
import * as readiness from "../src/modules/frameworks/frameworks.readiness.js";

const seed = JSON.parse(readFileSync(process.argv[2] ?? ".exp/fw/seed.json", "utf8"));
const which = (process.argv[3] ?? "readiness,requirements,controls").split(",");
const summary = process.argv[4] === "summary";
const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
const org = seed.organizationId as string;
const { rows: fw } = await client.query(
  `SELECT f."id" FROM "Framework" f JOIN "FrameworkAdoption" a ON a."frameworkId" = f."id" AND a."organizationId" = $1 WHERE f."key" = 'nist-sp-800-53-rev5'`,
  [org],
);
const frameworkId = fw[0].id as string;
const { rows: page } = await client.query(
  `SELECT "id" FROM "Requirement" WHERE "frameworkId" = $1 AND "assessable" ORDER BY "position", "id" LIMIT 100`,
  [frameworkId],
);
const requirementIds = page.map((r) => r.id as string);
const { rows: controls } = await client.query(
  `SELECT DISTINCT "controlId" FROM "ControlRequirement" WHERE "organizationId" = $1 AND "requirementId" = ANY($2::text[])`,
  [org, requirementIds],
);
const controlIds = controls.map((r) => r.controlId as string);

// Each exported statement builder records the statement it would run instead of running it.
const captured: Prisma.Sql[] = [];
const fake = {
  $transaction: true,
  $queryRaw: async (s: Prisma.Sql) => {
    captured.push(s);
    return [];
  },
} as never;
const now = new Date();
const statements: Record<string, () => Promise<unknown>> = {
  readiness: () => readiness.frameworkStates(fake, org, [frameworkId], now),
  requirements: () => readiness.requirementStatuses(fake, org, requirementIds, now),
  controls: () => readiness.controlStatuses(fake, org, controlIds, now),
};
for (const name of which) {
  captured.length = 0;
  await statements[name]?.();
  for (const s of captured) {
    // Twice: the second with a warm cache, as the page runs it.
    await client.query(s.text, s.values as unknown[]);
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${s.text}`, s.values as unknown[]);
    const lines = rows.map((r) => r["QUERY PLAN"] as string);
    console.log(`--- ${name}`);
    if (summary) {
      console.log(
        lines
          .filter((l) => /Execution Time|Planning Time/.test(l) || /^\s*Buffers/.test(l))
          .slice(0, 1)
          .join("\n"),
      );
      console.log(lines.filter((l) => /Execution Time|Planning Time/.test(l)).join("\n"));
    } else console.log(lines.join("\n"));
  }
}
await client.end();
