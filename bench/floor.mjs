// The floor: a plain node:http server with the service's own database driver and no framework, no
// ORM and no GraphQL. For each benchmark scenario it checks the API key the way the service does (one
// indexed query by lookup id, SHA-256 and a constant-time compare, revocation, expiry, scope), makes
// one indexed query (the create: one transaction) and writes byte-for-byte the JSON the service
// writes. What the service costs on top of this is the cost of the gateway.
//
//   FLOOR_DB=postgres DATABASE_URL=postgres://... PORT=4100 node bench/floor.mjs
//   FLOOR_DB=pglite   DATA_DIR=/path/to/data      PORT=4100 node bench/floor.mjs   (the service must be stopped)
//
// Routes (the same paths as the service, for the benchmark's requests only):
//   GET  /ready
//   GET  /v1/tasks/:taskId
//   POST /graphql                                  { query, variables: { id } } — the task query, the vendor page ({ ids }),
//                                                  the framework page and its readiness alone ({ id } of a framework)
//   POST /v1/comments                              { content, entityId, entityType: "task", userId }
//   PATCH /v1/tasks/:taskId                        { title }  (bench/writes.mjs)
//   POST /v1/policies/:id/versions                 {}         (bench/writes.mjs)
//   GET  /v1/task-management/stats?entityId=&entityType=vendor|risk
//   GET  /v1/comments?entityId=&entityType=task&limit=
import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { floorFrameworkPage, floorFrameworkReadiness } from "./scenarios/framework-page.mjs";
import { floorVendorPage } from "./scenarios/vendor-page.mjs";

const kind = process.env.FLOOR_DB ?? (process.env.DATABASE_URL ? "postgres" : "pglite");
const port = Number(process.env.PORT ?? 4100);
const host = process.env.HOST ?? "127.0.0.1";

// timestamp(3) without time zone holds UTC (as Prisma writes it): parse it as UTC on both drivers.
const parseTimestamp = (s) => new Date(`${s.replace(" ", "T")}Z`);

/** `query(sql, params)` → rows; `transaction(fn)` runs fn(query) in one transaction; `close()`. */
async function openDriver() {
  if (kind === "postgres") {
    const { default: pg } = await import("pg");
    pg.types.setTypeParser(1114, parseTimestamp);
    // The service's pool size (DATABASE_POOL_SIZE, default 10).
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) });
    pool.on("error", () => {});
    await pool.query("SELECT 1");
    return {
      query: async (sql, params) => (await pool.query(sql, params)).rows,
      async transaction(fn) {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          const result = await fn(async (sql, params) => (await client.query(sql, params)).rows);
          await client.query("COMMIT");
          return result;
        } catch (error) {
          await client.query("ROLLBACK").catch(() => {});
          throw error;
        } finally {
          client.release();
        }
      },
      close: () => pool.end(),
    };
  }
  const dataDir = process.env.DATA_DIR;
  if (!dataDir) throw new Error("DATA_DIR is required for FLOOR_DB=pglite");
  const unlock = lockDataDir(dataDir);
  const { PGlite } = await import("@electric-sql/pglite");
  const { pg_trgm } = await import("@electric-sql/pglite/contrib/pg_trgm");
  const db = new PGlite(dataDir, { parsers: { 1114: parseTimestamp }, extensions: { pg_trgm } });
  await db.waitReady;
  return {
    query: async (sql, params) => (await db.query(sql, params)).rows,
    transaction: (fn) => db.transaction((tx) => fn(async (sql, params) => (await tx.query(sql, params)).rows)),
    async close() {
      await db.close();
      unlock();
    },
  };
}

/** The service's data directory lock (src/platform/db/data-dir-lock.ts): one process at a time. */
function lockDataDir(dataDir) {
  const lockPath = path.join(dataDir, "gateway.lock");
  try {
    const owner = Number.parseInt(readFileSync(lockPath, "utf8"), 10);
    try {
      process.kill(owner, 0);
      throw new Error(`${dataDir} is in use by process ${owner}`);
    } catch (error) {
      if (error.code !== "ESRCH") throw error;
      unlinkSync(lockPath);
    }
  } catch (error) {
    if (error.code !== "ENOENT") throw error;
  }
  const fd = openSync(lockPath, "wx");
  writeSync(fd, String(process.pid));
  closeSync(fd);
  return () => {
    try {
      unlinkSync(lockPath);
    } catch {}
  };
}

const db = await openDriver();

// ---------------------------------------------------------------------------------------------
// API key: cwk_<16 hex lookup id>_<43 chars>; one indexed query by lookup id, SHA-256 compared in
// constant time against the stored hash (a decoy when unknown), then revocation, expiry, scope.

const KEY_PATTERN = /^cwk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const sha256 = (s) => createHash("sha256").update(s).digest();
const decoy = sha256("cwk_0000000000000000_decoy");

async function authenticate(req, ...permissions) {
  const key = req.headers["x-api-key"]?.trim();
  if (!key) return { status: 401 };
  const lookupId = KEY_PATTERN.exec(key)?.[1];
  const [row] = lookupId
    ? await db.query(
        `SELECT "id", "organizationId", "secretHash", "scopes", "expiresAt", "revokedAt", "lastUsedAt" FROM "ApiKey" WHERE "lookupId" = $1`,
        [lookupId],
      )
    : [];
  const presented = sha256(key);
  const stored = row?.secretHash;
  const expected = stored && stored.length === presented.length ? stored : decoy;
  const now = new Date();
  if (!timingSafeEqual(presented, expected) || !row || row.revokedAt || (row.expiresAt && row.expiresAt <= now)) {
    return { status: 401 };
  }
  if (!permissions.every((permission) => row.scopes.includes(permission))) return { status: 403 };
  // Like the service: record use at most once a minute.
  if (!row.lastUsedAt || now - row.lastUsedAt > 60_000) {
    await db.query(`UPDATE "ApiKey" SET "lastUsedAt" = $1 WHERE "id" = $2`, [utc(now), row.id]);
  }
  return { organizationId: row.organizationId, apiKeyId: row.id };
}

/** A timestamp parameter for a `timestamp(3)` column, in UTC. */
const utc = (date) => date.toISOString().slice(0, -1);

// Ids like src/platform/ids.ts: 48-bit millisecond clock, then 80 random bits.
const newId = (prefix) => `${prefix}_${Date.now().toString(16).padStart(12, "0")}${randomBytes(10).toString("hex")}`;

// ---------------------------------------------------------------------------------------------
// Responses: the service's REST answers have their keys sorted; GraphQL answers follow the query.

function send(res, status, body, headers = {}) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

const errorBody = (status) => ({ statusCode: status, code: String(status) });

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch (error) {
        reject(error);
      }
    });
    req.on("error", reject);
  });
}

const TASK_SQL = `SELECT "id", "title", "status", "description", "taskTemplateId", "createdAt", "updatedAt" FROM "Task" WHERE "id" = $1 AND "organizationId" = $2`;

async function getTask(req, res, taskId) {
  const auth = await authenticate(req, "task:read");
  if (auth.status) return send(res, auth.status, errorBody(auth.status));
  const [t] = await db.query(TASK_SQL, [taskId, auth.organizationId]);
  if (!t) return send(res, 404, errorBody(404));
  send(res, 200, {
    createdAt: t.createdAt,
    description: t.description,
    id: t.id,
    status: t.status,
    taskTemplateId: t.taskTemplateId,
    title: t.title,
    updatedAt: t.updatedAt,
  });
}

async function graphqlTask(req, res) {
  const body = await readJson(req);
  if (body.query?.includes("framework(")) return graphqlFramework(req, res, body);
  const auth = await authenticate(req, "task:read");
  if (auth.status) return send(res, 200, { errors: [{ message: "unauthenticated" }] });
  if (body.query?.includes("nodes("))
    return send(res, 200, await floorVendorPage(db, auth.organizationId, body.variables?.ids ?? []));
  const [t] = await db.query(TASK_SQL, [body.variables?.id, auth.organizationId]);
  if (!t) return send(res, 200, { errors: [{ message: "not found" }], data: null });
  send(res, 200, {
    data: {
      task: {
        id: t.id,
        title: t.title,
        status: t.status,
        description: t.description,
        taskTemplateId: t.taskTemplateId,
        createdAt: t.createdAt,
        updatedAt: t.updatedAt,
      },
    },
  });
}

// The framework page (the framework, its readiness, requirements with states and controls) and its
// readiness alone: bench/scenarios/framework-page.mjs.
async function graphqlFramework(req, res, body) {
  const page = body.query.includes("requirements(");
  const auth = await (page ? authenticate(req, "framework:read", "control:read") : authenticate(req, "framework:read"));
  if (auth.status) return send(res, 200, { errors: [{ message: "unauthenticated" }] });
  const answer = page ? floorFrameworkPage : floorFrameworkReadiness;
  send(res, 200, await answer(db, auth.organizationId, body.variables?.id, utc(new Date())));
}

// The comment row, inserted only when the task exists in the organization and the author is an
// active member there (the service's two checks, folded into the insert), returning the author.
const INSERT_COMMENT_SQL = `
WITH m AS (
  SELECT m."id" AS "memberId", u."id", u."name", u."email", u."image"
  FROM "Member" m JOIN "User" u ON u."id" = m."userId"
  WHERE m."organizationId" = $2 AND m."userId" = $6 AND m."isActive"
), e AS (
  SELECT 1 FROM "Task" WHERE "id" = $3 AND "organizationId" = $2
), c AS (
  INSERT INTO "Comment" ("id", "organizationId", "entityType", "entityId", "content", "authorId", "apiKeyId", "contextUrl", "createdAt")
  SELECT $1, $2, 'task', $3, $4, m."memberId", $5, NULL, $7::timestamp(3) FROM m, e
  RETURNING "id"
)
SELECT m."id", m."name", m."email", m."image" FROM c, m`;

// A change's outbox rows: one webhook delivery per enabled endpoint of the organization that
// listens to every type (the writes bench's one endpoint), in the change's transaction.
const OUTBOX_SQL = `INSERT INTO "WebhookDelivery" ("id", "organizationId", "endpointId", "eventId", "eventType", "status", "nextAttemptAt", "createdAt", "updatedAt")
SELECT $1 || substr(md5(e."id"), 1, 8), e."organizationId", e."id", $2, $3, 'pending', $4::timestamp(3), $4::timestamp(3), $4::timestamp(3)
FROM "WebhookEndpoint" e WHERE e."organizationId" = $5 AND e."enabled"`;

/** The audit row (unchained: sequence 0) and the outbox rows of a change, in its transaction. */
async function auditAndOutbox(query, { organizationId, apiKeyId, action, entityType, entityId, data, requestId, now }) {
  const eventId = newId("aud");
  await query(
    `INSERT INTO "AuditEvent" ("id", "organizationId", "actorUserId", "actorApiKeyId", "action", "entityType", "entityId", "data", "requestId", "createdAt", "sequence", "hash")
     VALUES ($1, $2, NULL, $3, $4, $5, $6, $7::jsonb, $8, $9::timestamp(3), 0, repeat('0', 64))`,
    [eventId, organizationId, apiKeyId, action, entityType, entityId, JSON.stringify(data), requestId, utc(now)],
  );
  await query(OUTBOX_SQL, [newId("whd"), eventId, action, utc(now), organizationId]);
}

// PATCH /v1/tasks/:id with a title: the row locked and read (the audit event keeps the change), updated, its event and outbox row.
async function updateTask(req, res, taskId) {
  const auth = await authenticate(req, "task:update");
  if (auth.status) return send(res, auth.status, errorBody(auth.status));
  const input = await readJson(req);
  if (typeof input.title !== "string" || !input.title.trim()) return send(res, 400, errorBody(400));
  const requestId = randomUUID();
  const now = new Date();
  const task = await db.transaction(async (query) => {
    const [current] = await query(`SELECT "title" FROM "Task" WHERE "id" = $1 AND "organizationId" = $2 FOR UPDATE`, [
      taskId,
      auth.organizationId,
    ]);
    if (!current) return null;
    const [row] = await query(
      `UPDATE "Task" SET "title" = $1, "updatedAt" = $2::timestamp(3) WHERE "id" = $3
       RETURNING "id", "title", "status", "description", "taskTemplateId", "createdAt", "updatedAt"`,
      [input.title, utc(now), taskId],
    );
    const data = { changes: { title: { from: current.title, to: input.title } } };
    await auditAndOutbox(query, { ...auth, action: "task.updated", entityType: "task", entityId: taskId, data, requestId, now });
    return row;
  });
  if (!task) return send(res, 404, errorBody(404));
  send(res, 200, task, { "x-request-id": requestId });
}

// POST /v1/policies/:id/versions: the next number, the new draft with the current version's content, its event and outbox row.
async function createPolicyVersion(req, res, policyId) {
  const auth = await authenticate(req, "policy:update");
  if (auth.status) return send(res, auth.status, errorBody(auth.status));
  const requestId = randomUUID();
  const now = new Date();
  const created = await db.transaction(async (query) => {
    const [policy] = await query(
      `UPDATE "Policy" SET "lastVersionNumber" = "lastVersionNumber" + 1, "updatedAt" = $3::timestamp(3)
       WHERE "id" = $1 AND "organizationId" = $2 RETURNING "lastVersionNumber", "currentVersionId"`,
      [policyId, auth.organizationId, utc(now)],
    );
    if (!policy) return null;
    const id = newId("pv");
    await query(
      `INSERT INTO "PolicyVersion" ("id", "organizationId", "policyId", "version", "status", "content", "sourceVersionId", "createdByKeyId", "createdAt")
       SELECT $1, $2, $3, $4, 'draft', COALESCE((SELECT "content" FROM "PolicyVersion" WHERE "id" = $5), '[]'::jsonb), $5, $6, $7::timestamp(3)`,
      [id, auth.organizationId, policyId, policy.lastVersionNumber, policy.currentVersionId, auth.apiKeyId, utc(now)],
    );
    const data = { versionId: id, version: policy.lastVersionNumber, sourceVersionId: policy.currentVersionId };
    await auditAndOutbox(query, {
      ...auth,
      action: "policy.version_created",
      entityType: "policy",
      entityId: policyId,
      data,
      requestId,
      now,
    });
    return { versionId: id, version: policy.lastVersionNumber };
  });
  if (!created) return send(res, 404, errorBody(404));
  send(res, 201, created, { "x-request-id": requestId });
}

async function createComment(req, res) {
  const auth = await authenticate(req, "comment:create");
  if (auth.status) return send(res, auth.status, errorBody(auth.status));
  const input = await readJson(req);
  if (typeof input.content !== "string" || !input.content.trim() || input.entityType !== "task" || !input.userId) {
    return send(res, 400, errorBody(400));
  }
  const id = newId("cmt");
  const requestId = randomUUID();
  const now = new Date();
  const author = await db.transaction(async (query) => {
    const [row] = await query(INSERT_COMMENT_SQL, [
      id,
      auth.organizationId,
      input.entityId,
      input.content,
      auth.apiKeyId,
      input.userId,
      utc(now),
    ]);
    if (!row) return null;
    const data = { entityType: input.entityType, entityId: input.entityId, attachments: [], contextUrl: null };
    await auditAndOutbox(query, {
      ...auth,
      action: "comment.created",
      entityType: "comment",
      entityId: id,
      data,
      requestId,
      now,
    });
    return row;
  });
  if (!author) return send(res, 404, errorBody(404));
  send(
    res,
    201,
    {
      attachments: [],
      author: { deactivated: false, email: author.email, id: author.id, image: author.image, name: author.name },
      content: input.content,
      createdAt: now,
      id,
    },
    { "x-request-id": requestId },
  );
}

const STATUSES = ["todo", "in_progress", "in_review", "done", "canceled"];

// One grouped query; the entity's existence (404 otherwise) is folded in as the driving row.
const statsSql = (table) => `
SELECT i."status", count(i."id")::int AS "n"
FROM (SELECT "id" FROM "${table}" WHERE "id" = $1 AND "organizationId" = $2) e
LEFT JOIN "TaskItem" i ON i."organizationId" = $2 AND i."entityType" = $3::"TaskItemEntityType" AND i."entityId" = e."id"
GROUP BY i."status"`;
const STATS_SQL = { vendor: statsSql("Vendor"), risk: statsSql("Risk") };

async function taskItemStats(req, res, params) {
  const auth = await authenticate(req, "task:read");
  if (auth.status) return send(res, auth.status, errorBody(auth.status));
  const entityType = params.get("entityType");
  const sql = STATS_SQL[entityType];
  if (!sql) return send(res, 400, errorBody(400));
  const rows = await db.query(sql, [params.get("entityId"), auth.organizationId, entityType]);
  if (rows.length === 0) return send(res, 404, errorBody(404));
  const byStatus = { todo: 0, in_progress: 0, in_review: 0, done: 0, canceled: 0 };
  for (const row of rows) if (row.status) byStatus[row.status] = row.n;
  const total = STATUSES.reduce((sum, s) => sum + byStatus[s], 0);
  send(res, 200, {
    byStatus: {
      canceled: byStatus.canceled,
      done: byStatus.done,
      in_progress: byStatus.in_progress,
      in_review: byStatus.in_review,
      todo: byStatus.todo,
    },
    total,
  });
}

// A page of comments, newest first, with authors and attachment metadata: one query with the same
// joins (comment → member → user, attachments), the entity's existence folded in as the driving row.
const COMMENTS_SQL = `
SELECT x.* FROM (SELECT "id" FROM "Task" WHERE "id" = $1 AND "organizationId" = $2) e
LEFT JOIN LATERAL (
  SELECT c."id", c."content", c."createdAt", u."id" AS "userId", u."name", u."email", u."image", m."isActive",
         a."id" AS "attachmentId", a."name" AS "attachmentName", a."type" AS "attachmentType", a."sha256" AS "attachmentSha256", a."size" AS "attachmentSize",
         a."createdAt" AS "attachmentCreatedAt"
  FROM (
    SELECT "id", "content", "createdAt", "authorId" FROM "Comment"
    WHERE "organizationId" = $2 AND "entityType" = 'task' AND "entityId" = e."id"
    ORDER BY "createdAt" DESC, "id" DESC LIMIT $3
  ) c
  JOIN "Member" m ON m."id" = c."authorId"
  JOIN "User" u ON u."id" = m."userId"
  LEFT JOIN "Attachment" a ON a."commentId" = c."id"
) x ON true
ORDER BY x."createdAt" DESC, x."id" DESC, x."attachmentCreatedAt" ASC, x."attachmentId" ASC`;

async function listComments(req, res, params) {
  const auth = await authenticate(req, "comment:read");
  if (auth.status) return send(res, auth.status, errorBody(auth.status));
  const limit = Number(params.get("limit") ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100 || params.get("entityType") !== "task") {
    return send(res, 400, errorBody(400));
  }
  const rows = await db.query(COMMENTS_SQL, [params.get("entityId"), auth.organizationId, limit + 1]);
  if (rows.length === 0) return send(res, 404, errorBody(404));
  const items = [];
  let current = null;
  for (const row of rows) {
    if (row.id === null) break; // the task exists but has no comments
    if (current?.id !== row.id) {
      current = {
        attachments: [],
        author: { deactivated: !row.isActive, email: row.email, id: row.userId, image: row.image, name: row.name },
        content: row.content,
        createdAt: row.createdAt,
        id: row.id,
      };
      items.push(current);
    }
    if (row.attachmentId) {
      current.attachments.push({
        createdAt: row.attachmentCreatedAt,
        id: row.attachmentId,
        name: row.attachmentName,
        sha256: row.attachmentSha256,
        size: row.attachmentSize,
        type: row.attachmentType,
      });
    }
  }
  const page = items.slice(0, limit);
  const last = page[page.length - 1];
  const nextCursor =
    items.length > limit && last
      ? Buffer.from(JSON.stringify([{ d: last.createdAt.toISOString() }, last.id])).toString("base64url")
      : null;
  send(res, 200, { items: page, nextCursor });
}

// ---------------------------------------------------------------------------------------------

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url, "http://floor");
    const p = url.pathname;
    if (req.method === "GET" && (p === "/ready" || p === "/health")) return send(res, 200, { status: "ok" });
    if (req.method === "GET" && p.startsWith("/v1/tasks/")) return await getTask(req, res, decodeURIComponent(p.slice(10)));
    if (req.method === "POST" && p === "/graphql") return await graphqlTask(req, res);
    if (req.method === "POST" && p === "/v1/comments") return await createComment(req, res);
    if (req.method === "PATCH" && p.startsWith("/v1/tasks/")) return await updateTask(req, res, decodeURIComponent(p.slice(10)));
    const version = /^\/v1\/policies\/([^/]+)\/versions$/.exec(p);
    if (req.method === "POST" && version) return await createPolicyVersion(req, res, decodeURIComponent(version[1]));
    if (req.method === "GET" && p === "/v1/task-management/stats") return await taskItemStats(req, res, url.searchParams);
    if (req.method === "GET" && p === "/v1/comments") return await listComments(req, res, url.searchParams);
    send(res, 404, errorBody(404));
  } catch (error) {
    process.stderr.write(`floor: ${error.stack ?? error}\n`);
    if (!res.headersSent) send(res, 500, errorBody(500));
    else res.destroy();
  }
});

server.listen(port, host);

let closing = false;
async function shutdown() {
  if (closing) return;
  closing = true;
  server.close();
  server.closeAllConnections();
  await db.close().catch(() => {});
  process.exit(0);
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
