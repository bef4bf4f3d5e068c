// The peer: PostGraphile 5, the server a team would pick instead of this one, on the same
// PostgreSQL database and the same Node as the service. Installed on demand into bench/.peer/
// (git-ignored), so that neither the project's dependencies nor its lock file carry it.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const PEER_VERSION = "5.1.5";
export const peerDir = path.join(path.dirname(fileURLToPath(import.meta.url)), ".peer");
const cli = path.join(peerDir, "node_modules", "postgraphile", "dist", "cli-run.js");

function installedVersion() {
  try {
    return JSON.parse(readFileSync(path.join(peerDir, "node_modules", "postgraphile", "package.json"), "utf8")).version;
  } catch {
    return null;
  }
}

/** Installs postgraphile@PEER_VERSION into bench/.peer unless it is there; returns a note on what happened. */
export function ensurePeer(log) {
  if (installedVersion() === PEER_VERSION && existsSync(cli)) return `PostGraphile ${PEER_VERSION} (bench/.peer)`;
  mkdirSync(peerDir, { recursive: true });
  writeFileSync(
    path.join(peerDir, "package.json"),
    `${JSON.stringify({ private: true, description: "installed by npm run bench", dependencies: { postgraphile: PEER_VERSION } }, null, 2)}\n`,
  );
  log(`installing PostGraphile ${PEER_VERSION} into bench/.peer (once; about a minute)`);
  // npm from the PATH that `npm run` set up, i.e. running on the project's pinned Node.
  const result = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: peerDir,
    encoding: "utf8",
  });
  if (result.status !== 0 || installedVersion() !== PEER_VERSION) {
    throw new Error(`installing PostGraphile failed (${result.status}):\n${result.stderr}`);
  }
  return `PostGraphile ${PEER_VERSION} (bench/.peer, installed now)`;
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

/** The peer's get task by id; with a token, as the secured peer's callers send it. */
export function peerTaskRequest(taskId, token) {
  return {
    method: "POST",
    path: "/graphql",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query: PEER_TASK_QUERY, variables: { id: taskId } }),
    deterministic: true,
  };
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
