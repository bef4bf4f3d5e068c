// The "framework page" scenario (issue 56, item 9; contract section 16, "Speed"): NIST SP 800-53
// rev 5 adopted, 300 controls, 1,500 maps, 600 links and 2,000 evidence items, all made through the
// REST API; then one GraphQL request for the framework's page (the framework, its readiness, its
// first 100 assessable requirements in catalog order with their state, where it is inherited from,
// and their controls with their states), against the floor answering the same page with two
// hand-written statements (bench/floor.mjs). The readiness alone is the next scenario,
// framework-readiness.mjs, on the same data.
import { createHash } from "node:crypto";

export const FRAMEWORK_PAGE_QUERY = `query FrameworkPage($id: ID!) {
  framework(id: $id) {
    id
    name
    version
    adopted
    readiness { assessable notApplicable unmapped ready partial notReady readyPercent }
    requirements(limit: 100, filter: { assessable: true }) {
      totalCount
      items {
        id
        ref
        title
        status { state inheritedFrom { ref } }
        controls { code name status { state } }
      }
    }
  }
}`;

const FRAMEWORK_KEY = "nist-sp-800-53-rev5";
/** The baseline whose shipped `equal` mapping to the full catalog gives some requirements of the page an inherited state. */
const BASELINE_KEY = "nist-sp-800-53-rev5-moderate";
const PAGE = 100;
const CONTROLS = 300;
const MAPS_PER_CONTROL = 5;
const EVIDENCE = 2000;
const TASKS = 20;
/** Requests in flight at once while the data is made. */
const CONCURRENCY = 8;
const DAY_MS = 86_400_000;

/** A GraphQL request for the framework with this query. */
export function frameworkRequest(seed, frameworkId, query) {
  return {
    method: "POST",
    path: "/graphql",
    headers: { "x-api-key": seed.apiKey, "content-type": "application/json" },
    body: JSON.stringify({ query, variables: { id: frameworkId ?? "fw_missing" } }),
    deterministic: true,
  };
}

async function call(base, seed, method, path, body, expected) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": seed.apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== expected)
    throw new Error(`framework page data: ${method} ${path} ${response.status} ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : null;
}

/** fn over items, `n` at a time, in order of start; the results in the items' order. */
async function inParallel(items, n, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return results;
}

async function frameworkByKey(base, seed, key) {
  const page = await call(base, seed, "GET", `/v1/frameworks?q=${encodeURIComponent(key)}&limit=100`, undefined, 200);
  const framework = page.items.find((f) => f.key === key);
  if (!framework) throw new Error(`framework page data: no framework ${key}`);
  return framework;
}

async function assessableRequirements(base, seed, frameworkId) {
  const all = [];
  let cursor = null;
  do {
    const query = `assessable=true&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const page = await call(base, seed, "GET", `/v1/frameworks/${frameworkId}/requirements?${query}`, undefined, 200);
    all.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

/** One evidence file for the control: an upload ticket, its bytes PUT with the ticket's headers, the evidence. */
async function addEvidence(base, seed, controlId, n, { collectedAt, validUntil }) {
  const bytes = Buffer.from(`Evidence ${n} of ${controlId}: access review signed off.`);
  const ticket = await call(
    base,
    seed,
    "POST",
    "/v1/attachment-uploads",
    {
      fileName: `evidence-${n}.txt`,
      fileType: "text/plain",
      size: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("base64"),
    },
    201,
  );
  const put = await fetch(ticket.uploadUrl, { method: ticket.method ?? "PUT", headers: ticket.headers, body: bytes });
  if (put.status >= 300) throw new Error(`framework page data: PUT upload ${put.status} ${await put.text()}`);
  await put.arrayBuffer().catch(() => {});
  await call(
    base,
    seed,
    "POST",
    `/v1/controls/${controlId}/evidence`,
    {
      uploadId: ticket.id,
      description: `Evidence ${n}`,
      ...(collectedAt ? { collectedAt: collectedAt.toISOString() } : {}),
      ...(validUntil ? { validUntil: validUntil.toISOString() } : {}),
    },
    201,
  );
}

/**
 * The page's data, through the API. 800-53 adopted; 300 controls (every third requires evidence
 * every 90 days) with 5 maps each: every requirement of the page's first 100 but ten has two
 * controls, those ten (spread over the page's requirements in the baseline) inherit their state from the MODERATE baseline's same requirement (mapped
 * to a control of its own; the shipped mapping set is `equal`), the rest spread over three in four
 * of the catalog's other requirements (the fourth stay unmapped); three of the page are not applicable. 600 links: each control one policy (one in ten a policy
 * never published) and one task (one in five not done). 2,000 evidence items, 6 or 7 a control:
 * every control's first item expired, every item of one control in seven expired (so 15 of the
 * controls that require evidence are expired), the rest valid for a year or without an end.
 */
export async function createFrameworkPage(base, seed, log = () => {}, analyze = async () => {}) {
  const started = performance.now();
  const framework = await frameworkByKey(base, seed, FRAMEWORK_KEY);
  const baseline = await frameworkByKey(base, seed, BASELINE_KEY);
  await call(base, seed, "POST", `/v1/frameworks/${framework.id}/adoption`, undefined, 200);
  const [requirements, baselineRequirements] = await Promise.all([
    assessableRequirements(base, seed, framework.id),
    assessableRequirements(base, seed, baseline.id),
  ]);
  const twinOf = new Map(baselineRequirements.map((r) => [r.ref, r.id]));
  const page = requirements.slice(0, PAGE);
  // One in four of the rest left without a control, so that some requirements are unmapped.
  const rest = requirements.slice(PAGE).filter((_, i) => i % 4 !== 3);
  const withTwin = page.filter((r) => twinOf.has(r.ref));
  const step = Math.max(1, Math.floor(withTwin.length / 10));
  const inherits = new Set(
    withTwin
      .filter((_, i) => i % step === step - 1)
      .slice(0, 10)
      .map((r) => r.id),
  );
  const own = page.filter((r) => !inherits.has(r.id)).map((r) => r.id);
  const twins = page.filter((r) => inherits.has(r.id)).map((r) => twinOf.get(r.ref));
  const targets = [...own, ...own];
  // A twin every seventh control, so that the inherited states vary.
  for (let i = 0, k = 0; targets.length < CONTROLS * MAPS_PER_CONTROL; i++) {
    targets.push(i % 35 === 0 && twins.length > 0 ? twins.shift() : rest[k++ % rest.length].id);
  }
  const notApplicable = [own[4], own[37], own[71]];

  const tasks = await inParallel(Array.from({ length: TASKS }), CONCURRENCY, (_, i) =>
    call(base, seed, "POST", "/v1/tasks", { title: `Control task ${i + 1}`, status: i < 16 ? "done" : "todo" }, 201),
  );
  const drafts = await inParallel([1, 2], CONCURRENCY, (i) =>
    call(base, seed, "POST", "/v1/policies", { name: `Draft policy ${i}` }, 201),
  );
  await inParallel(notApplicable, CONCURRENCY, (id) =>
    call(base, seed, "PUT", `/v1/requirements/${id}/applicability`, { applicable: false, justification: "Out of scope" }, 200),
  );

  const controls = await inParallel(Array.from({ length: CONTROLS }), CONCURRENCY, async (_, c) => {
    const control = await call(
      base,
      seed,
      "POST",
      "/v1/controls",
      {
        code: `FP-${String(c + 1).padStart(3, "0")}`,
        name: `Benchmark control ${c + 1}`,
        evidenceEveryDays: c % 3 === 0 ? 90 : null,
      },
      201,
    );
    const requirementIds = targets.slice(c * MAPS_PER_CONTROL, (c + 1) * MAPS_PER_CONTROL);
    await call(base, seed, "POST", `/v1/controls/${control.id}/requirements`, { requirementIds }, 200);
    const policy = c % 10 === 3 ? drafts[c % 2].id : seed.policyIds[c % seed.policyIds.length];
    await call(
      base,
      seed,
      "POST",
      `/v1/controls/${control.id}/links`,
      { policyIds: [policy], taskIds: [tasks[c % TASKS].id] },
      200,
    );
    return control.id;
  });

  const now = Date.now();
  const expired = { collectedAt: new Date(now - 400 * DAY_MS), validUntil: new Date(now - 30 * DAY_MS) };
  const valid = { collectedAt: new Date(now - 10 * DAY_MS), validUntil: new Date(now + 365 * DAY_MS) };
  const perControl = (c) => (c < EVIDENCE - CONTROLS * 6 ? 7 : 6);
  // One control's items one after another: two evidence writes on one control at once can deadlock
  // (each insert's foreign key share-locks the control row before the state change locks it).
  await inParallel(controls, CONCURRENCY, async (controlId, c) => {
    for (let k = 0; k < perControl(c); k++) {
      const when = c % 7 === 0 || k === 0 ? expired : c % 3 === 1 && k === 1 ? {} : valid;
      await addEvidence(base, seed, controlId, k + 1, when);
    }
  });
  const evidence = controls.reduce((sum, _, c) => sum + perControl(c), 0);
  log(
    `  framework page: 800-53 adopted, ${CONTROLS} controls, ${targets.length} maps, ${CONTROLS * 2} links, ${evidence} evidence items ` +
      `in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  // Thousands of rows just written: the statistics autovacuum would have made by the time a team looks.
  await analyze();
  return { frameworkId: framework.id };
}

// ---------------------------------------------------------------------------------------------
// The floor: two statements. Readiness as src/modules/frameworks/frameworks.readiness.ts defines it
// (contract section 16), written again by hand: a control is ready when it has a link or accepted
// evidence, no linked policy without a published current version, no linked task not done and,
// with evidenceEveryDays, accepted evidence valid now; a requirement's rank over its own controls
// (3 all ready, 2 some, 1 none); one without controls takes the best rank a mapping (shipped or
// the organization's, read both ways) gives it from a requirement with controls, at most 2 through
// subset or intersect, ties to the lowest requirement id.

/** Control states ($2 organization, $3 now), limited to the controls `which` names. */
const controlStates = (which) => `
  SELECT c."id", c."code", c."name",
    (e."n" > 0 OR lp."n" > 0 OR lt."n" > 0) AND lp."open" = 0 AND lt."open" = 0
      AND (c."evidenceEveryDays" IS NULL OR e."fresh") AS "ready"
  FROM "Control" c
  CROSS JOIN LATERAL (
    SELECT count(*) AS "n", COALESCE(bool_or(v."validUntil" IS NULL OR v."validUntil" > $3::timestamp(3)), FALSE) AS "fresh"
    FROM "Evidence" v WHERE v."controlId" = c."id" AND v."status" = 'accepted'
  ) e
  CROSS JOIN LATERAL (
    SELECT count(*) AS "n", count(*) FILTER (WHERE pv."status" IS DISTINCT FROM 'published') AS "open"
    FROM "ControlPolicy" l JOIN "Policy" p ON p."id" = l."policyId"
    LEFT JOIN "PolicyVersion" pv ON pv."id" = p."currentVersionId"
    WHERE l."controlId" = c."id"
  ) lp
  CROSS JOIN LATERAL (
    SELECT count(*) AS "n", count(*) FILTER (WHERE t."status" <> 'done') AS "open"
    FROM "ControlTask" l JOIN "Task" t ON t."id" = l."taskId"
    WHERE l."controlId" = c."id"
  ) lt
  WHERE c."organizationId" = $2 AND ${which}`;

/** A requirement's rank from the control states `cs` (and `cr`, its rows of ControlRequirement). */
const RANK = `CASE WHEN bool_and(cs."ready") THEN 3 WHEN bool_or(cs."ready") THEN 2 ELSE 1 END`;

/** The mappings that touch the requirements of `req` ($2 organization), read both ways: ("id", "other", "rel"). */
const links = (req) => `
  SELECT m."targetId" AS "id", m."sourceId" AS "other", m."relationship"::text AS "rel"
  FROM "RequirementMapping" m JOIN ${req} q ON q."id" = m."targetId"
  WHERE (m."organizationId" IS NULL OR m."organizationId" = $2) AND m."sourceId" <> m."targetId"
  UNION ALL
  SELECT m."sourceId", m."targetId",
    CASE m."relationship" WHEN 'subset' THEN 'superset' WHEN 'superset' THEN 'subset' ELSE m."relationship"::text END
  FROM "RequirementMapping" m JOIN ${req} q ON q."id" = m."sourceId"
  WHERE (m."organizationId" IS NULL OR m."organizationId" = $2) AND m."sourceId" <> m."targetId"`;

const INHERITED_RANK = `CASE WHEN l."rel" IN ('equal', 'superset') THEN k."rank" ELSE LEAST(k."rank", 2) END`;

/** Statement 1: the framework if the organization sees it, its adoption, its assessable requirements counted by state. */
export const FRAMEWORK_SQL = `
WITH cs AS (${controlStates("TRUE")}
), rk AS (
  SELECT cr."requirementId" AS "id", ${RANK} AS "rank"
  FROM "ControlRequirement" cr JOIN cs ON cs."id" = cr."controlId"
  WHERE cr."organizationId" = $2
  GROUP BY cr."requirementId"
), req AS (
  SELECT r."id" FROM "Requirement" r WHERE r."frameworkId" = $1 AND r."assessable"
), inh AS (
  SELECT l."id", max(${INHERITED_RANK}) AS "rank"
  FROM (${links("req")}) l JOIN rk k ON k."id" = l."other"
  GROUP BY l."id"
), st AS (
  SELECT CASE WHEN a."applicable" = FALSE THEN 0 ELSE COALESCE(o."rank", i."rank", -1) END AS "s"
  FROM req r
  LEFT JOIN "RequirementApplicability" a ON a."organizationId" = $2 AND a."requirementId" = r."id"
  LEFT JOIN rk o ON o."id" = r."id"
  LEFT JOIN inh i ON i."id" = r."id"
)
SELECT f."id", f."name", f."version",
  EXISTS (SELECT 1 FROM "FrameworkAdoption" ad WHERE ad."organizationId" = $2 AND ad."frameworkId" = f."id") AS "adopted",
  n.*
FROM "Framework" f
CROSS JOIN (
  SELECT count(*)::int AS "assessable",
    count(*) FILTER (WHERE st."s" = 0)::int AS "notApplicable",
    count(*) FILTER (WHERE st."s" = -1)::int AS "unmapped",
    count(*) FILTER (WHERE st."s" = 3)::int AS "ready",
    count(*) FILTER (WHERE st."s" = 2)::int AS "partial",
    count(*) FILTER (WHERE st."s" = 1)::int AS "notReady"
  FROM st
) n
WHERE f."id" = $1 AND (f."organizationId" IS NULL OR f."organizationId" = $2)`;

const STATE_OF_RANK = (rank) => `CASE ${rank} WHEN 3 THEN 'ready' WHEN 2 THEN 'partial' ELSE 'not_ready' END`;

/**
 * Statement 2: the page's requirements ($4 of them, catalog order) with their states, the
 * requirement an inherited state comes from, and their controls by code with their states: one row
 * per requirement and control. Only the controls the page needs are assessed.
 */
export const PAGE_SQL = `
WITH page AS (
  SELECT r."id", r."ref", r."title", r."position" FROM "Requirement" r
  WHERE r."frameworkId" = $1 AND r."assessable"
    AND EXISTS (SELECT 1 FROM "Framework" f WHERE f."id" = $1 AND (f."organizationId" IS NULL OR f."organizationId" = $2))
  ORDER BY r."position", r."id" LIMIT $4
), lk AS (${links("page")}
), cr AS (
  SELECT cr."requirementId", cr."controlId" FROM "ControlRequirement" cr
  WHERE cr."organizationId" = $2
    AND (cr."requirementId" IN (SELECT "id" FROM page) OR cr."requirementId" IN (SELECT "other" FROM lk))
), cs AS (${controlStates(`c."id" IN (SELECT "controlId" FROM cr)`)}
), rk AS (
  SELECT cr."requirementId" AS "id", ${RANK} AS "rank"
  FROM cr JOIN cs ON cs."id" = cr."controlId"
  GROUP BY cr."requirementId"
)
SELECT p."id", p."ref", p."title",
  CASE WHEN ad."frameworkId" IS NULL THEN NULL
       WHEN a."applicable" = FALSE THEN 'not_applicable'
       WHEN o."rank" IS NOT NULL THEN ${STATE_OF_RANK('o."rank"')}
       WHEN i."rank" IS NOT NULL THEN ${STATE_OF_RANK('i."rank"')}
       ELSE 'unmapped' END AS "state",
  CASE WHEN ad."frameworkId" IS NOT NULL AND a."applicable" IS DISTINCT FROM FALSE THEN i."ref" END AS "inheritedRef",
  c."code", c."name", c."ready"
FROM page p
LEFT JOIN "FrameworkAdoption" ad ON ad."organizationId" = $2 AND ad."frameworkId" = $1
LEFT JOIN "RequirementApplicability" a ON a."organizationId" = $2 AND a."requirementId" = p."id"
LEFT JOIN rk o ON o."id" = p."id"
LEFT JOIN LATERAL (
  SELECT x."ref", ${INHERITED_RANK} AS "rank"
  FROM lk l JOIN rk k ON k."id" = l."other" JOIN "Requirement" x ON x."id" = l."other"
  WHERE l."id" = p."id" AND o."rank" IS NULL
  ORDER BY ${INHERITED_RANK} DESC, l."other"
  LIMIT 1
) i ON TRUE
LEFT JOIN (cr m JOIN cs c ON c."id" = m."controlId") ON m."requirementId" = p."id"
ORDER BY p."position", p."id", c."code", c."id"`;

/** readyPercent as the service rounds it: one decimal, down; 0 when nothing is applicable. */
const readyPercent = (ready, applicable) => (applicable > 0 ? Math.floor((ready * 1000) / applicable) / 10 : 0);

function readinessOf(row) {
  if (!row.adopted) return null;
  return {
    assessable: row.assessable,
    notApplicable: row.notApplicable,
    unmapped: row.unmapped,
    ready: row.ready,
    partial: row.partial,
    notReady: row.notReady,
    readyPercent: readyPercent(row.ready, row.assessable - row.notApplicable),
  };
}

const notFound = (id) => ({
  errors: [{ message: `Framework ${id} not found`, path: ["framework"], extensions: { code: "NOT_FOUND" } }],
  data: { framework: null },
});

/** The floor's answer to FRAMEWORK_PAGE_QUERY: the JSON the service writes. */
export async function floorFrameworkPage(db, organizationId, frameworkId, now) {
  const [[framework], rows] = await Promise.all([
    db.query(FRAMEWORK_SQL, [frameworkId, organizationId, now]),
    db.query(PAGE_SQL, [frameworkId, organizationId, now, PAGE]),
  ]);
  if (!framework) return notFound(frameworkId);
  const items = [];
  let current = null;
  for (const row of rows) {
    if (current?.id !== row.id) {
      current = {
        id: row.id,
        ref: row.ref,
        title: row.title,
        status:
          row.state === null ? null : { state: row.state, inheritedFrom: row.inheritedRef ? { ref: row.inheritedRef } : null },
        controls: [],
      };
      items.push(current);
    }
    if (row.code !== null) {
      current.controls.push({ code: row.code, name: row.name, status: { state: row.ready ? "ready" : "not_ready" } });
    }
  }
  return {
    data: {
      framework: {
        id: framework.id,
        name: framework.name,
        version: framework.version,
        adopted: framework.adopted,
        readiness: readinessOf(framework),
        requirements: { totalCount: framework.assessable, items },
      },
    },
  };
}

/** The floor's answer to framework-readiness's query: statement 1 alone. */
export async function floorFrameworkReadiness(db, organizationId, frameworkId, now) {
  const [framework] = await db.query(FRAMEWORK_SQL, [frameworkId, organizationId, now]);
  if (!framework) return notFound(frameworkId);
  return { data: { framework: { readiness: readinessOf(framework) } } };
}

/** @type {import("./index.mjs").Scenario} */
export default {
  id: "framework-page",
  order: 70,
  label: "framework page in one request (GraphQL)",
  floor:
    "two statements: the framework with its adoption and its assessable requirements counted by state; the first 100 requirements with their states, the requirement an inherited state comes from (`LATERAL`) and their controls' states; readiness written by hand as `frameworks.readiness.ts` defines it",
  async setup({ base, seed, data, log, analyze }) {
    data.frameworkPage ??= await createFrameworkPage(base, seed, log, analyze);
  },
  request: ({ seed, data }) => frameworkRequest(seed, data.frameworkPage?.frameworkId, FRAMEWORK_PAGE_QUERY),
  targets(t) {
    const name = "PostgreSQL, 32 conn: framework page ≥ 0.5× the floor (two hand-written statements)";
    const c = t.cell("framework-page");
    const toFloor = c?.serviceMedian && c?.floorMedian ? c.serviceMedian.rps / c.floorMedian.rps : undefined;
    if (toFloor === undefined || !t.noisy(34, name, c)) {
      t.add(
        34,
        name,
        toFloor === undefined
          ? "not run"
          : `${t.num(toFloor, 2)}× (${t.num(c.serviceMedian.rps)} vs ${t.num(c.floorMedian.rps)} req/s)`,
        toFloor === undefined ? null : toFloor >= 0.5,
      );
    }
    if (t.active) t.p99Below(35, this, 100);
  },
};
