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

/** The same seven fields as the service's GraphQL get task; the task's `id` column is `rowId` there. */
export const PEER_TASK_QUERY =
  "query($id: String!) { taskByRowId(rowId: $id) { rowId title status description taskTemplateId createdAt updatedAt } }";

export function peerTaskRequest(taskId) {
  return {
    method: "POST",
    path: "/graphql",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query: PEER_TASK_QUERY, variables: { id: taskId } }),
    deterministic: true,
  };
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
