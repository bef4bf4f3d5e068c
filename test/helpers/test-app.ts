import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Redis } from "ioredis";
import pg from "pg";
import pino, { type Logger } from "pino";
import { inject } from "vitest";
import { createApiKey } from "../../src/admin/admin.service.js";
import { type SeedResult, seedDemo } from "../../src/admin/seed.js";
import { type AppDeps, createApp } from "../../src/app.js";
import type { Permission } from "../../src/auth/permissions.js";
import type { DeviceManagement } from "../../src/modules/members/device-management.js";
import type { NotificationMail } from "../../src/modules/notifications/notifications.service.js";
import { type AttachmentStores, openAttachmentStores } from "../../src/platform/attachments/create-store.js";
import type { StoreKind } from "../../src/platform/attachments/store.js";
import type { AttachmentConfig, Config } from "../../src/platform/config.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import type { Events } from "../../src/platform/events.js";
import { migratedCluster } from "./data-dir.js";
import { postgresAdminUrl as adminUrl, ensurePostgresTemplate } from "./postgres-template.js";
import { type S3TestServer, startS3Server } from "./s3-server.js";

/** `TEST_DATABASE=postgres` runs the suite against a throwaway database on the local server. */
export const usePostgres = process.env.TEST_DATABASE === "postgres";

/**
 * A new empty database on the local PostgreSQL server, and how to drop it; with `template`, a copy
 * of that database instead. Its name is `prefix` and a random suffix.
 */
export async function createPostgresDatabase(
  template?: string,
  prefix = "gateway_test_",
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/**
 * The name of the run's migrated PostgreSQL template (test/helpers/postgres-template.ts), made
 * now if no process of the run has made it yet: on an embedded run, the first file that needs a
 * migrated PostgreSQL database makes it, once for the run.
 */
let templateMade: Promise<string> | undefined;
export function postgresTemplate(): Promise<string> {
  const name = inject("postgresTemplate");
  templateMade ??= ensurePostgresTemplate(name).then(
    () => name,
    (error) => {
      templateMade = undefined;
      throw error;
    },
  );
  return templateMade;
}

/**
 * A new database on the local PostgreSQL server, migrated as the service leaves it: a copy of the
 * run's template (`CREATE DATABASE ... TEMPLATE`), named after it so that the global teardown
 * drops what a test leaves. For the tests that start servers or processes on PostgreSQL, on either
 * run; a test of migrating itself takes an empty one from `createPostgresDatabase()`.
 */
export async function migratedPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const template = await postgresTemplate();
  return createPostgresDatabase(template, `${template}_`);
}

// A copy of the database that test/helpers/global-setup.ts migrated once for the whole run; openDatabase()
// still checks the migrations, so a stale copy could only cost time, never hide a migration.
async function openTestDatabase(): Promise<{ database: Database; drop: () => Promise<void> }> {
  if (!usePostgres) {
    return {
      database: await openDatabase({ kind: "embedded", countQueries: true, loadDataDir: migratedCluster() }),
      drop: async () => {},
    };
  }
  // Named after the template, so that the global teardown drops what a worker leaves behind.
  const { url, drop } = await migratedPostgresDatabase();
  return {
    database: await openDatabase({ kind: "postgres", url, poolSize: 20, countQueries: true, preparedStatements: true }),
    drop,
  };
}

/**
 * A database of the caller's own (a copy of the migrated one), with its URL on PostgreSQL: for a
 * test that starts something else on it (the job queue, a service process) or closes it.
 */
export async function openOwnDatabase(): Promise<{ database: Database; url?: string; close(): Promise<void> }> {
  if (!usePostgres) {
    const { database } = await openTestDatabase();
    return { database, close: () => database.close() };
  }
  const { url, drop } = await migratedPostgresDatabase();
  const database = await openDatabase({ kind: "postgres", url, poolSize: 10, preparedStatements: true, countQueries: true });
  return {
    database,
    url,
    async close() {
      await database.close();
      await drop();
    },
  };
}

/**
 * One database per worker, shared by the files it runs one after the other (vitest's `isolate:
 * false` keeps this module, and so this database, between files): opening one costs about a second
 * of CPU, more than most files' tests. Files stay apart by working in organizations of their own;
 * the worker's database goes with its process (PGlite in memory) or with the run (PostgreSQL: the
 * global teardown drops it).
 */
let workerDatabase: Promise<Database> | undefined;
function sharedTestDatabase(): Promise<Database> {
  workerDatabase ??= openTestDatabase().then(({ database }) => database);
  return workerDatabase;
}

export type RestOptions = { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> };

export const testJwtSecret = "test-secret-for-hs256-signing-0123456789";

export async function createTestApp(
  options: {
    deviceManagement?: DeviceManagement;
    bodyLimitBytes?: number;
    bodyBudgetBytes?: number;
    corsOrigins?: string[];
    /** APP_URL: the web app's origin, for notification deep links. */
    appUrl?: string;
    jwt?: Config["jwt"];
    rateLimitPerMinute?: number;
    authFailuresPerMinute?: number;
    trustProxy?: boolean;
    /** TRUSTED_DOCUMENTS: who may send GraphQL text (allow when absent). */
    trustedDocuments?: Config["trustedDocuments"];
    redis?: Redis;
    /** Live events of this app (e.g. through Redis, as replicas share them); in memory when absent. */
    events?: Events;
    rateLimitKeyPrefix?: string;
    /** This app's database; the worker's shared one when absent (see `ownDatabase`). */
    database?: Database;
    /** A database of the app's own, for a test that closes or breaks it; closed by `close()`. */
    ownDatabase?: boolean;
    logger?: Logger;
    /** E-mail for notifications: the mailer (notifications.mail.ts) and /unsubscribe, or only a port to enqueue to. */
    mail?: AppDeps["mail"] | NotificationMail;
    /** Webhook target rules (allowed CIDRs, the resolver) and the worker whose metrics /metrics shows. */
    webhooks?: AppDeps["webhooks"];
    /** Live stream caps and buffers; keep-alives every 250 ms by default, so a closed test stream ends at once. */
    liveStreams?: Partial<Config["liveStreams"]>;
    /** Signs audit checkpoints; a key of the app's own when absent. */
    auditSigner?: AppDeps["auditSigner"];
    /**
     * Where new attachments' bytes go: as `npm start` chooses when absent (the database store on
     * PostgreSQL, the filesystem store on the embedded database). The filesystem store works in a
     * temporary directory of the app's own; the s3 store on `s3`, or on a server of the app's own.
     */
    attachmentStore?: StoreKind;
    /** The S3 server of the s3 store (startS3Server), which the caller closes. */
    s3?: S3TestServer;
    /** Attachment limits, the store timeout, PUBLIC_URL. */
    attachments?: Partial<
      Pick<
        AttachmentConfig,
        "maxBytes" | "uploadTtlSeconds" | "downloadTtlSeconds" | "timeoutMs" | "publicUrl" | "unattachedMaxBytes"
      >
    >;
    /** Stores made by the test itself (several apps on one store, a store behind a proxy); `attachmentStore` is then ignored. */
    attachmentStores?: AttachmentStores;
    /** False: Sofa answers every REST route (rest-dispatch.test.ts compares). */
    restDispatch?: boolean;
    /** Evidence requests' link tokens and PUBLIC_URL (a link secret of the app's own, and the request's origin, when absent). */
    evidenceRequests?: AppDeps["evidenceRequests"];
    /** DATABASE_WRITES_PER_ORGANIZATION (4 when absent) and how long a mutation may wait its turn (DATABASE_CONNECT_TIMEOUT_MS). */
    writes?: { perOrganization?: number; maxWaitMs?: number };
  } = {},
) {
  const { database, drop } = options.database
    ? { database: options.database, drop: undefined }
    : options.ownDatabase
      ? await openTestDatabase()
      : { database: await sharedTestDatabase(), drop: undefined };
  const attachments = options.attachmentStores
    ? { stores: options.attachmentStores, dir: undefined, s3: undefined, close: async () => {} }
    : await testAttachmentStores(database, options);
  const app = createApp({
    attachmentStores: attachments.stores,
    database,
    config: {
      production: false,
      bodyLimitBytes: options.bodyLimitBytes ?? 36 * 1024 * 1024,
      bodyBudgetBytes: options.bodyBudgetBytes,
      corsOrigins: options.corsOrigins,
      appUrl: options.appUrl,
      jwt: options.jwt ?? { secret: testJwtSecret },
      // Suites send far more than a minute's worth from one key; the limit has its own tests.
      rateLimitPerMinute: options.rateLimitPerMinute ?? 1_000_000,
      authFailuresPerMinute: options.authFailuresPerMinute ?? 1_000_000,
      trustProxy: options.trustProxy,
      trustedDocuments: options.trustedDocuments,
      // In process, a cancelled body's pending read ends with the next bytes: keep-alives bring them.
      liveStreams: { heartbeatMs: 250, ...options.liveStreams },
      attachments: options.attachments,
      databaseWritesPerOrganization: options.writes?.perOrganization,
      databaseConnectTimeoutMs: options.writes?.maxWaitMs,
    },
    redis: options.redis,
    events: options.events,
    rateLimitKeyPrefix: options.rateLimitKeyPrefix,
    logger: options.logger ?? pino({ level: "silent" }),
    deviceManagement: options.deviceManagement,
    mail: options.mail && "enqueue" in options.mail ? { mailer: options.mail } : options.mail,
    webhooks: options.webhooks,
    auditSigner: options.auditSigner,
    restDispatch: options.restDispatch,
    evidenceRequests: options.evidenceRequests,
  });

  async function rest(method: string, path: string, opts: RestOptions = {}) {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers["x-api-key"] = opts.key;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    const response = await app.fetch(new Request(`http://test${path}`, { method, headers, body }));
    const text = await response.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    // biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary JSON
    return { status: response.status, headers: response.headers, text, body: json as any };
  }

  async function gql(
    query: string,
    variables: Record<string, unknown> = {},
    opts: { key?: string; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { "content-type": "application/json", ...opts.headers };
    if (opts.key) headers["x-api-key"] = opts.key;
    const response = await app.fetch(
      new Request("http://test/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }) }),
    );
    // biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary JSON
    return { status: response.status, body: (await response.json()) as any };
  }

  /** A new organization with demo data and a key holding every scope. */
  async function seedOrg(): Promise<SeedResult> {
    return seedDemo(database.db, `Org ${randomBytes(3).toString("hex")}`);
  }

  async function keyWith(organizationId: string, scopes: Permission[], extra: { expiresInMs?: number } = {}) {
    return createApiKey(database.db, { organizationId, name: "test", scopes, ...extra });
  }

  /**
   * Counts the SQL statements `fn` makes Prisma send: `count` leaves out transaction control and
   * the API key's lookup and last-used write, which its 2-second cache makes come and go between
   * two otherwise equal requests on a loaded machine, and the audit timer's checkpoint pass (its
   * look for due organizations and a checkpoint insert for each: every test app of the worker
   * runs it every 60 s on the worker's shared database, and under load one fell inside a count,
   * 8 statements where 5 were expected); `statements` has them all.
   */
  async function countQueries(fn: () => Promise<unknown>): Promise<{ count: number; statements: string[] }> {
    const statements: string[] = [];
    database.onQuery((sql) => statements.push(sql));
    try {
      await fn();
    } finally {
      database.onQuery(undefined);
    }
    const count = statements.filter(
      (s) => !/^(BEGIN|COMMIT|ROLLBACK)/i.test(s.trim()) && !s.includes('"ApiKey"') && !auditTimerStatement(s),
    ).length;
    return { count, statements };
  }

  return {
    app,
    database,
    db: database.db,
    rest,
    gql,
    seedOrg,
    keyWith,
    countQueries,
    /** The app's attachment stores: `store` (new objects), `storeOf(kind)`, `urls`. */
    attachmentStores: attachments.stores,
    /** The filesystem store's directory (objects at `dir/<first two characters of the key>/<key>`; objectFile). */
    attachmentDir: attachments.dir,
    /** The S3 server of the s3 store. */
    s3: attachments.s3,
    /** Closes the app's own database (`ownDatabase`), and its own attachment directory or S3 server. */
    async close() {
      await attachments.close();
      if (!drop) return;
      await database.close();
      await drop();
    },
  };
}

export type TestApp = Awaited<ReturnType<typeof createTestApp>>;

/** The stores of a test app: the filesystem store in a directory of its own, the s3 store on a given or own server. */
async function testAttachmentStores(
  database: Database,
  options: { attachmentStore?: StoreKind; s3?: S3TestServer; attachments?: Partial<AttachmentConfig> },
): Promise<{ stores: AttachmentStores; dir: string; s3: S3TestServer | undefined; close(): Promise<void> }> {
  const kind = options.attachmentStore ?? (database.kind === "postgres" ? "database" : "filesystem");
  // Made by the store's first write: most apps never write one.
  const dir = path.join(tmpdir(), `attachments-${randomBytes(6).toString("hex")}`);
  const s3 = options.s3 ?? (kind === "s3" ? await startS3Server() : undefined);
  const stores = openAttachmentStores(
    {
      store: kind,
      dir,
      s3: s3 && { ...s3.settings, credentials: s3.credentials },
      publicUrl: options.attachments?.publicUrl,
      timeoutMs: options.attachments?.timeoutMs ?? 5_000,
      urlSecret: randomBytes(32).toString("hex"),
    },
    { db: database.db },
  );
  return {
    stores,
    dir,
    s3,
    async close() {
      rmSync(dir, { recursive: true, force: true });
      if (s3 && s3 !== options.s3) await s3.close();
    },
  };
}

/** A statement of the audit timer's checkpoint pass (audit.trail.ts `signDue`), not of a request. */
function auditTimerStatement(sql: string): boolean {
  return sql.includes('INSERT INTO "public"."AuditCheckpoint"') || /FROM "AuditChainHead" h\s+WHERE h\."sequence" >/.test(sql);
}
