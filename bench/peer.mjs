// The peer: PostGraphile 5, the server a team would pick instead of this one, on the same
// PostgreSQL database and the same Node as the service. Installed on demand into bench/.peer/
// (git-ignored), so that neither the project's dependencies nor its lock file carry it; the tree it
// installs is locked by bench/peer-lock/ (package.json + package-lock.json, installed with `npm ci`),
// so every run measures the same PostGraphile and the same grafast, @dataplan/pg, pg, ...
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const benchDir = path.dirname(fileURLToPath(import.meta.url));
export const peerDir = path.join(benchDir, ".peer");
/** The committed manifest and lock of the peer's tree. */
export const peerLockDir = path.join(benchDir, "peer-lock");
export const PEER_VERSION = JSON.parse(readFileSync(path.join(peerLockDir, "package.json"), "utf8")).dependencies.postgraphile;
const cli = path.join(peerDir, "node_modules", "postgraphile", "dist", "cli-run.js");
const stampFile = path.join(peerDir, "installed-lock.sha256");
/** PostGraphile 5 and grafast declare Node >= 22; on Node 20 every connection field fails at run time. */
const PEER_NODE_MAJOR = 22;

function lockDigest() {
  const hash = createHash("sha256");
  for (const file of ["package.json", "package-lock.json"]) hash.update(readFileSync(path.join(peerLockDir, file)));
  return hash.digest("hex");
}

function installedDigest() {
  try {
    return readFileSync(stampFile, "utf8").trim();
  } catch {
    return null;
  }
}

/**
 * Installs the locked tree (bench/peer-lock) into bench/.peer unless that very tree is there; returns
 * a note on what happened. `npm ci` installs exactly the lock's versions, checked against its
 * integrity hashes, and removes whatever else a .peer of an earlier run held.
 */
export function ensurePeer(log) {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < PEER_NODE_MAJOR) {
    throw new Error(
      `PostGraphile ${PEER_VERSION} needs Node >= ${PEER_NODE_MAJOR} (this is ${process.version}): run the bench through npm run, or npx node`,
    );
  }
  const digest = lockDigest();
  if (installedDigest() === digest && existsSync(cli)) return `PostGraphile ${PEER_VERSION} (bench/.peer, locked)`;
  mkdirSync(peerDir, { recursive: true });
  rmSync(stampFile, { force: true });
  for (const file of ["package.json", "package-lock.json"]) copyFileSync(path.join(peerLockDir, file), path.join(peerDir, file));
  log(`installing PostGraphile ${PEER_VERSION} and its locked dependencies into bench/.peer (once; about a minute)`);
  // npm from the PATH that `npm run` set up, i.e. running on the project's pinned Node.
  const result = spawnSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: peerDir, encoding: "utf8" });
  if (result.status !== 0 || !existsSync(cli)) {
    throw new Error(`installing PostGraphile failed (${result.status}):\n${result.stderr}`);
  }
  writeFileSync(stampFile, `${digest}\n`);
  return `PostGraphile ${PEER_VERSION} (bench/.peer, locked, installed now)`;
}

/** How to start it: PostGraphile's own CLI with the Amber preset, in production mode. */
export function peerProcess(databaseUrl) {
  return {
    cwd: peerDir,
    args: (port) => [cli, "--preset", "postgraphile/presets/amber", "-c", databaseUrl, "-s", "public", "-p", String(port)],
    env: { ...process.env, GRAPHILE_ENV: "production", NODE_ENV: "production" },
  };
}

// ------------------------------------------------------------------------------------------------
// PostGraphile as a multi-tenant deployment runs it: a JWT on every request, its claims handed to
// PostgreSQL as settings (`begin; select set_config(...); <query>; commit`), the role it names
// switched to for the transaction, and row-level security keeping each organization to its rows.

/** The claim PostGraphile turns into the setting `jwt.claims.organization_id`. */
export const ORGANIZATION_CLAIM = "organization_id";

/**
 * The tenancy of the peer's database: a NOLOGIN role with SELECT on the task table, and a policy
 * that shows a role's transaction only the tasks of the organization its token names. The table's
 * owner (the service, the floor and the anonymous peer connect as it) is not subject to the policy.
 * `client` is connected to the bench's database; `role` is cluster-wide, so the caller drops it.
 */
export async function setUpTenancy(client, role) {
  await client.query(`CREATE ROLE "${role}" NOLOGIN`);
  await client.query(`GRANT USAGE ON SCHEMA public TO "${role}"`);
  await client.query(`GRANT SELECT ON "Task" TO "${role}"`);
  await client.query(`ALTER TABLE "Task" ENABLE ROW LEVEL SECURITY`);
  await client.query(
    `CREATE POLICY "task_of_the_token_organization" ON "Task" FOR SELECT TO "${role}"
       USING ("organizationId" = current_setting('jwt.claims.${ORGANIZATION_CLAIM}', true))`,
  );
}

/**
 * The secured peer: PostGraphile's CLI with the Amber and lazy-jwt presets and
 * `grafserv.pgJwtSecret`, from a config file written into bench/.peer (it imports the presets
 * from PostGraphile's own node_modules). Connected as the same owner as the anonymous peer; the
 * token's `role` claim is what drops each transaction to the tenant role.
 */
export function peerJwtProcess(databaseUrl, secret) {
  const config = path.join(peerDir, "jwt.config.mjs");
  writeFileSync(
    config,
    [
      "// Written by bench/peer.mjs: PostGraphile as a multi-tenant deployment runs it.",
      'import { PostGraphileAmberPreset } from "postgraphile/presets/amber";',
      'import { PgLazyJWTPreset } from "postgraphile/presets/lazy-jwt";',
      "export default {",
      "  extends: [PostGraphileAmberPreset, PgLazyJWTPreset],",
      "  grafserv: { pgJwtSecret: process.env.PEER_JWT_SECRET },",
      "};",
      "",
    ].join("\n"),
  );
  return {
    cwd: peerDir,
    args: (port) => [cli, "-C", config, "-c", databaseUrl, "-s", "public", "-p", String(port)],
    env: { ...process.env, GRAPHILE_ENV: "production", NODE_ENV: "production", PEER_JWT_SECRET: secret },
  };
}

/** An HS256 token as the lazy-jwt preset verifies it (audience `postgraphile`): a role and an organization. */
export async function peerToken(secret, { role, organizationId }) {
  const { SignJWT } = await import("jose");
  return new SignJWT({ role, [ORGANIZATION_CLAIM]: organizationId })
    .setProtectedHeader({ alg: "HS256" })
    .setAudience("postgraphile")
    .setIssuedAt()
    .setExpirationTime("1d")
    .sign(new TextEncoder().encode(secret));
}

/** The same seven fields as the service's GraphQL get task; the task's `id` column is `rowId` there. */
export const PEER_TASK_QUERY =
  "query($id: String!) { taskByRowId(rowId: $id) { rowId title status description taskTemplateId createdAt updatedAt } }";

/** A GraphQL request to the peer; with a token, as the secured peer's callers send it. */
function peerRequest(query, variables, token) {
  return {
    method: "POST",
    path: "/graphql",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
    deterministic: true,
  };
}

/** The peer's get task by id. */
export function peerTaskRequest(taskId, token) {
  return peerRequest(PEER_TASK_QUERY, { id: taskId }, token);
}

/** Whether PostGraphile answered the task as not there (row-level security hid it), with no error. */
export function noTask(peerBody) {
  try {
    const body = JSON.parse(peerBody);
    return body?.data?.taskByRowId === null && !body.errors;
  } catch {
    return false;
  }
}

/**
 * Whether PostGraphile's answer is the service's task: the same values, the timestamps the same
 * instant (PostGraphile prints `timestamp(3)` columns without a zone, the service as UTC ISO).
 */
export function sameTask(serviceBody, peerBody) {
  try {
    const ours = JSON.parse(serviceBody);
    const theirs = JSON.parse(peerBody)?.data?.taskByRowId;
    if (!theirs) return false;
    const instant = (s) => (s ? Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(s) ? s : `${s}Z`) : null);
    return (
      ours.id === theirs.rowId &&
      ["title", "status", "description", "taskTemplateId"].every((k) => (ours[k] ?? null) === (theirs[k] ?? null)) &&
      instant(ours.createdAt) === instant(theirs.createdAt) &&
      instant(ours.updatedAt) === instant(theirs.updatedAt)
    );
  } catch {
    return false;
  }
}

// ------------------------------------------------------------------------------------------------
// The vendor page (bench/scenarios/vendor-page.mjs) on the peer. Vendor has no foreign key to its task items
// or comments (both point at their entity through entityType + entityId), so PostGraphile cannot
// follow them by itself; without plugins a deployment adds SQL to the database: functions that
// PostGraphile exposes as a root field (a function with no row argument) and as fields of Vendor
// (a function whose first argument is a "Vendor" row, named "Vendor_<field>": PostGraphile 5
// strips that prefix, see computedAttributeField in graphile-build-pg's PgCustomTypeFieldPlugin).
// Plain `LANGUAGE sql STABLE`, not SECURITY DEFINER: they run as the caller, so row-level security
// applies inside them. From comments to their author's name PostGraphile follows the foreign keys
// (Comment.authorId -> Member, Member.userId -> User).

/** The SQL functions (and one composite type) the peer's vendor page reads through; run as the tables' owner, before the peers start (PostGraphile reads the schema once at start). */
export const PEER_VENDOR_SQL = [
  // nodes(ids:) for vendors only: the vendors in the order of the ids; an id that is missing or
  // hidden by row-level security gives no row (the service's nodes gives null at its index).
  `CREATE FUNCTION "vendors_by_ids"("ids" text[]) RETURNS SETOF "Vendor" LANGUAGE sql STABLE AS $$
     SELECT v.* FROM unnest("ids") WITH ORDINALITY AS k("id", "ord") JOIN "Vendor" v ON v."id" = k."id" ORDER BY k."ord"
   $$`,
  `CREATE TYPE "vendor_task_item_stats" AS ("total" int, "todo" int, "in_progress" int, "in_review" int, "done" int, "canceled" int)`,
  // Vendor.taskItemStats: the vendor's task items counted by status, one row.
  `CREATE FUNCTION "Vendor_task_item_stats"("v" "Vendor") RETURNS "vendor_task_item_stats" LANGUAGE sql STABLE AS $$
     SELECT count(*)::int,
            (count(*) FILTER (WHERE i."status" = 'todo'))::int,
            (count(*) FILTER (WHERE i."status" = 'in_progress'))::int,
            (count(*) FILTER (WHERE i."status" = 'in_review'))::int,
            (count(*) FILTER (WHERE i."status" = 'done'))::int,
            (count(*) FILTER (WHERE i."status" = 'canceled'))::int
     FROM "TaskItem" i
     WHERE i."organizationId" = "v"."organizationId" AND i."entityType" = 'vendor' AND i."entityId" = "v"."id"
   $$`,
  // Vendor.comments: the vendor's comments, newest first (the service's order: createdAt, then id,
  // descending); the query asks for the first 5 of the connection.
  `CREATE FUNCTION "Vendor_comments"("v" "Vendor") RETURNS SETOF "Comment" LANGUAGE sql STABLE AS $$
     SELECT c.* FROM "Comment" c
     WHERE c."organizationId" = "v"."organizationId" AND c."entityType" = 'vendor' AND c."entityId" = "v"."id"
     ORDER BY c."createdAt" DESC, c."id" DESC
   $$`,
];

/** Creates the vendor page's functions (PEER_VENDOR_SQL); `client` is the tables' owner on the bench's database. */
export async function setUpVendorFunctions(client) {
  for (const statement of PEER_VENDOR_SQL) await client.query(statement);
}

/** The tables the vendor page reads, other than User, each kept to the token's organization. */
const VENDOR_PAGE_TABLES = ["Vendor", "TaskItem", "Comment", "Member"];

/**
 * The tenancy of the vendor page, beside setUpTenancy's (same role): SELECT on the tables it reads
 * and EXECUTE on its functions, and row-level security on each table: a row of the token's
 * organization, and a user who is a member of it (User has no organization of its own).
 */
export async function setUpVendorTenancy(client, role) {
  const organization = `current_setting('jwt.claims.${ORGANIZATION_CLAIM}', true)`;
  for (const table of VENDOR_PAGE_TABLES) {
    await client.query(`GRANT SELECT ON "${table}" TO "${role}"`);
    await client.query(`ALTER TABLE "${table}" ENABLE ROW LEVEL SECURITY`);
    await client.query(
      `CREATE POLICY "${table.toLowerCase()}_of_the_token_organization" ON "${table}" FOR SELECT TO "${role}"
         USING ("organizationId" = ${organization})`,
    );
  }
  await client.query(`GRANT SELECT ON "User" TO "${role}"`);
  await client.query(`ALTER TABLE "User" ENABLE ROW LEVEL SECURITY`);
  await client.query(
    `CREATE POLICY "user_member_of_the_token_organization" ON "User" FOR SELECT TO "${role}"
       USING (EXISTS (SELECT 1 FROM "Member" m WHERE m."userId" = "User"."id" AND m."organizationId" = ${organization}))`,
  );
  for (const fn of ['"vendors_by_ids"(text[])', '"Vendor_task_item_stats"("Vendor")', '"Vendor_comments"("Vendor")']) {
    await client.query(`GRANT EXECUTE ON FUNCTION ${fn} TO "${role}"`);
  }
  // Under row-level security PostgreSQL may test a condition before the policy only when its
  // function is leakproof: text equality is, enum equality is not. So the tenant's "entityType" =
  // 'vendor' cannot be an index condition, and the schema's indexes (organizationId, entityType,
  // entityId, ...) are read over the organization's whole range: with the comments the create
  // comment scenario adds, 146 ms of database CPU per page. A deployment finds that with EXPLAIN
  // and adds indexes that skip the enum; so does the bench (the service's writes pay for them too).
  await client.query(
    `CREATE INDEX "peer_rls_comment_entity" ON "Comment" ("organizationId", "entityId", "createdAt" DESC, "id" DESC)`,
  );
  await client.query(`CREATE INDEX "peer_rls_task_item_entity" ON "TaskItem" ("organizationId", "entityId")`);
}

/**
 * The service's VENDOR_PAGE_QUERY as the peer answers it: the same vendors, fields, statistics and
 * comments with their authors' names, through the functions above and the foreign keys.
 */
export const PEER_VENDOR_PAGE_QUERY = `query VendorPage($ids: [String]!) {
  vendorsByIds(ids: $ids) {
    nodes {
      rowId
      name
      taskItemStats { total todo inProgress inReview done canceled }
      comments(first: 5) { nodes { rowId content createdAt memberByAuthorId { userByUserId { name } } } }
    }
  }
}`;

/** What the peer's vendor page does otherwise than the service's, printed beside its figures. */
export const PEER_VENDOR_PAGE_DIFFERENCES =
  "vendors through an SQL function vendorsByIds(ids:) (vendors only, by row id; PostGraphile has node(id:) but no nodes(ids:)); " +
  "statistics and comments through SQL functions added to the database (Vendor_task_item_stats, Vendor_comments); " +
  "comments(first: 5) of a connection for comments(limit: 5); an id missing or of another organization gives no row, not null";

/** The peer's vendor page for these vendor ids. */
export function peerVendorPageRequest(vendorIds, token) {
  return peerRequest(PEER_VENDOR_PAGE_QUERY, { ids: vendorIds }, token);
}

/** A timestamp as an instant (PostGraphile prints `timestamp(3)` without a zone, the service as UTC ISO). */
const instant = (s) => (s ? Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(s) ? s : `${s}Z`) : null);

/** The service's vendor page in one shape to compare: [id, name, stats, comments] per vendor. */
function serviceVendorPage(body) {
  return body.data.nodes.map((v) =>
    v === null
      ? null
      : {
          id: v.id,
          name: v.name,
          stats: [
            v.taskItemStats.total,
            ...["todo", "in_progress", "in_review", "done", "canceled"].map((k) => v.taskItemStats.byStatus[k]),
          ],
          comments: v.comments.items.map((c) => ({
            id: c.id,
            content: c.content,
            at: instant(c.createdAt),
            author: c.author?.name ?? null,
          })),
        },
  );
}

/** The peer's vendor page in the same shape. */
function peerVendorPage(body) {
  return body.data.vendorsByIds.nodes.map((v) => ({
    id: v.rowId,
    name: v.name,
    stats: ["total", "todo", "inProgress", "inReview", "done", "canceled"].map((k) => v.taskItemStats?.[k] ?? null),
    comments: v.comments.nodes.map((c) => ({
      id: c.rowId,
      content: c.content,
      at: instant(c.createdAt),
      author: c.memberByAuthorId?.userByUserId?.name ?? null,
    })),
  }));
}

/**
 * Whether PostGraphile's vendor page is the service's: the same vendors in the same order, the same
 * statistics, the same comments in the same order with their authors' names; null when it is, else
 * what differs first.
 */
export function vendorPageDifference(serviceBody, peerBody) {
  let ours;
  let theirs;
  try {
    ours = serviceVendorPage(JSON.parse(serviceBody));
  } catch (error) {
    return `the service's answer does not read as a vendor page (${error.message})`;
  }
  try {
    theirs = peerVendorPage(JSON.parse(peerBody));
  } catch (error) {
    return `PostGraphile's answer does not read as a vendor page (${error.message}): ${peerBody.slice(0, 300)}`;
  }
  if (ours.length !== theirs.length) return `${ours.length} vendors from the service, ${theirs.length} from PostGraphile`;
  for (let i = 0; i < ours.length; i++) {
    const a = JSON.stringify(ours[i]);
    const b = JSON.stringify(theirs[i]);
    if (a !== b) return `vendor #${i + 1}: service ${a.slice(0, 400)}; PostGraphile ${b.slice(0, 400)}`;
  }
  return null;
}

/** Whether PostGraphile answered the vendor page with no vendor at all (row-level security hid them), with no error. */
export function noVendors(peerBody) {
  try {
    const body = JSON.parse(peerBody);
    return Array.isArray(body?.data?.vendorsByIds?.nodes) && body.data.vendorsByIds.nodes.length === 0 && !body.errors;
  } catch {
    return false;
  }
}
