import path from "node:path";
import ipaddr from "ipaddr.js";
import { z } from "zod";
import { STORE_KINDS, type StoreKind } from "./attachments/store.js";
import { DEFAULT_TRANSACTION_LIMITS, type TransactionLimits, transactionLimitsProblem } from "./db/transaction-limits.js";

/**
 * Request bodies in flight at once. A JSON body costs several times its size while it is decoded
 * and written (about 6x for a large attachment), so 80 MiB keeps a replica well under 1 GB.
 */
export const DEFAULT_BODY_BUDGET_BYTES = 80 * 1024 * 1024;

/** Longest wait for a PostgreSQL connection, and for a mutation's turn (DATABASE_CONNECT_TIMEOUT_MS). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;

/** Mutations of one organization executed at once on a replica (DATABASE_WRITES_PER_ORGANIZATION, write-gate.ts). */
export const DEFAULT_WRITES_PER_ORGANIZATION = 4;

/** scheme://host[:port] as a browser sends it in Origin: never "null", "*", a path or a pattern. */
function isExactOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "https:" || url.protocol === "http:") && url.origin === value;
  } catch {
    return false;
  }
}

/** The web app's base URL: an http(s) origin, a trailing slash allowed; its origin is what the service uses. */
function isAppOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      (url.protocol === "https:" || url.protocol === "http:") &&
      url.pathname === "/" &&
      !url.search &&
      !url.hash &&
      !url.username &&
      !url.password &&
      (value === url.origin || value === `${url.origin}/`)
    );
  } catch {
    return false;
  }
}

/** ATTACHMENT_MAX_BYTES' default and ceiling: 100 MiB a file, 10 MiB on the database store. */
export const MAX_ATTACHMENT_BYTES = 100 * 1024 * 1024;
export const MAX_DATABASE_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** ATTACHMENT_UNATTACHED_MAX_BYTES' default: what an organization's uploads not yet attached may declare, 5 GiB. */
export const DEFAULT_UNATTACHED_MAX_BYTES = 5 * 1024 * 1024 * 1024;

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  HOST: z.string().min(1).default("127.0.0.1"),
  DATA_DIR: z.string().min(1).default("./.data"),
  // Read by openDatabase from the environment (database.ts); validated here so a bad size stops the start.
  EMBEDDED_SHARED_BUFFERS: z
    .string()
    .regex(/^[1-9][0-9]*(kB|MB|GB)$/, "must be a size in PostgreSQL's units, such as 16MB or 512kB")
    .refine((size) => {
      const kb = Number.parseInt(size, 10) * { kB: 1, MB: 1024, GB: 1024 * 1024 }[size.slice(-2) as "kB" | "MB" | "GB"];
      return kb >= 128 && kb <= 1024 * 1024;
    }, "must be between 128kB (PostgreSQL's least) and 1GB")
    .optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
    .optional(),
  DATABASE_DIRECT_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
    .optional(),
  DATABASE_READ_URLS: z
    .string()
    .default("")
    .transform((list) =>
      list
        .split(",")
        .map((url) => url.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^postgres(ql)?:\/\//, "each entry must be a postgres:// or postgresql:// URL"))),
  DATABASE_READ_MAX_LAG_MS: z.coerce.number().int().min(100).max(600_000).default(1_000),
  DATABASE_LOCK_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).optional(),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(10_000),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  DATABASE_POOL_IDLE_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(10_000),
  DATABASE_WRITES_PER_ORGANIZATION: z.coerce.number().int().min(0).max(200).default(DEFAULT_WRITES_PER_ORGANIZATION),
  DATABASE_PREPARED_STATEMENTS: z.enum(["true", "false"]).optional(),
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(DEFAULT_CONNECT_TIMEOUT_MS),
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(5_000),
  DATABASE_STARTUP_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  DATABASE_TRANSACTION_WAIT_MS: z.coerce.number().int().min(100).max(120_000).default(DEFAULT_TRANSACTION_LIMITS.maxWaitMs),
  DATABASE_TRANSACTION_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(DEFAULT_TRANSACTION_LIMITS.timeoutMs),
  REDIS_KEY_PREFIX: z.string().default("cwg:"),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
    .optional(),
  REDIS_TIMEOUT_MS: z.coerce.number().int().min(10).max(10_000).default(200),
  AUTH_JWT_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  AUTH_JWKS_URL: z.url().optional(),
  AUTH_JWT_ISSUER: z.string().optional(),
  AUTH_JWT_AUDIENCE: z.string().optional(),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(1200),
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(30),
  TRUST_PROXY: z.enum(["true", "false"]).default("false"),
  TRUST_PROXY_HOPS: z.coerce.number().int().min(1).max(10).default(1),
  CORS_ORIGINS: z
    .string()
    .default("")
    .transform((list) =>
      list
        .split(",")
        .map((origin) => origin.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().refine(isExactOrigin, "each entry must be an exact origin such as https://app.example.com"))),
  APP_URL: z
    .string()
    .refine(isAppOrigin, "must be the web app's origin, such as https://app.example.com (no path, query or credentials)")
    .transform((value) => new URL(value).origin)
    .optional(),
  AUTH_JWT_MAX_AGE_SECONDS: z.coerce.number().int().min(1).default(86_400),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).max(300_000).default(0),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(25_000),
  KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(65_000),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(36 * 1024 * 1024),
  BODY_BUDGET_BYTES: z.coerce.number().int().min(1024).default(DEFAULT_BODY_BUDGET_BYTES),
  LIVE_STREAMS_PER_CREDENTIAL: z.coerce.number().int().min(1).default(1_000),
  LIVE_STREAMS_PER_ORGANIZATION: z.coerce.number().int().min(1).default(10_000),
  LIVE_STREAM_HEARTBEAT_MS: z.coerce.number().int().min(100).max(300_000).default(15_000),
  LIVE_STREAM_BUFFER_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  NATIVE_MEMORY_TRIM_AFTER_CLOSED: z.coerce.number().int().min(0).default(1_000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  DEVICE_MANAGEMENT_URL: z.url().optional(),
  DEVICE_MANAGEMENT_TOKEN: z.string().optional(),
  INTROSPECTION: z.enum(["true", "false"]).optional(),
  GRAPHIQL: z.enum(["true", "false"]).optional(),
  TRUSTED_DOCUMENTS: z.enum(["allow", "sessions", "all"]).default("allow"),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  SEED_DEMO_DATA: z.enum(["true", "false"]).default("true"),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\/[^/]/, "must be an smtp:// or smtps:// URL")
    .optional(),
  MAIL_FROM: z
    .string()
    .refine(isMailbox, "must be an address, or a name and an address: Workspace <notify@example.com>")
    .optional(),
  PUBLIC_URL: z
    .string()
    .refine(isBaseUrl, "must be an http(s) URL without query or fragment, such as https://api.example.com")
    .optional(),
  MAIL_UNSUBSCRIBE_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  MAIL_RETRY_LIMIT: z.coerce.number().int().min(0).max(50).default(10),
  MAIL_RETRY_DELAY_SECONDS: z.coerce.number().int().min(1).max(86_400).default(30),
  MAIL_RETRY_DELAY_MAX_SECONDS: z.coerce.number().int().min(1).max(86_400).default(3_600),
  MAIL_POLL_INTERVAL_SECONDS: z.coerce.number().min(0.5).max(60).default(2),
  MAIL_WORKER: z.enum(["true", "false"]).default("true"),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default("5,300,1800,7200,18000,36000,50400,72000,86400")
    .transform((list) => list.split(",").map((s) => Number(s.trim())))
    .pipe(z.array(z.number().min(0).max(604_800)).min(1, "at least one delay")),
  WEBHOOK_DISABLE_AFTER_HOURS: z.coerce.number().min(0).max(8760).default(120),
  WEBHOOK_ALLOWED_CIDRS: z
    .string()
    .default("")
    .transform((list) =>
      list
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  WEBHOOK_DELIVERY_RETENTION_DAYS: z.coerce.number().min(1).max(3650).default(30),
  WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
  WEBHOOK_WORKER: z.enum(["true", "false"]).default("true"),
  AUDIT_SIGNING_KEY: z
    .string()
    .transform((pem) => pem.replaceAll("\\n", "\n"))
    .refine((pem) => pem.includes("-----BEGIN PRIVATE KEY-----"), "must be a PKCS#8 PEM private key (Ed25519)")
    .optional(),
  AUDIT_PREVIOUS_PUBLIC_KEYS: z
    .string()
    .transform((pem) => pem.replaceAll("\\n", "\n"))
    .optional(),
  AUDIT_CHECKPOINT_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
  BENCH_AUDIT_CHAIN: z.enum(["on", "off"]).default("on"),
  ATTACHMENT_STORE: z.enum(STORE_KINDS as [StoreKind, ...StoreKind[]]).optional(),
  ATTACHMENT_DIR: z.string().min(1).optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_REGION: z.string().min(1).optional(),
  S3_ENDPOINT: z.string().refine(isBaseUrl, "must be an http(s) URL such as http://127.0.0.1:9000").optional(),
  S3_FORCE_PATH_STYLE: z.enum(["true", "false"]).default("false"),
  ATTACHMENT_URL_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  EVIDENCE_REQUEST_LINK_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  ATTACHMENT_MAX_BYTES: z.coerce.number().int().min(1).max(MAX_ATTACHMENT_BYTES).optional(),
  ATTACHMENT_UPLOAD_TTL_SECONDS: z.coerce.number().int().min(1).max(604_800).default(900),
  ATTACHMENT_DOWNLOAD_TTL_SECONDS: z.coerce.number().int().min(1).max(3_600).default(300),
  ATTACHMENT_STORE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(5_000),
  ATTACHMENT_UNATTACHED_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .default(DEFAULT_UNATTACHED_MAX_BYTES),
});

/** `a@b.example` or `Name <a@b.example>`: what nodemailer puts in From. */
function isMailbox(value: string): boolean {
  const address = /^[^<>]*<([^<>]+)>$/.exec(value.trim())?.[1] ?? value.trim();
  return z.email().safeParse(address).success;
}

/** Where the service is reached from outside: links in e-mail are built on it. */
function isBaseUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "https:" || url.protocol === "http:") && !url.search && !url.hash && !value.includes("#");
  } catch {
    return false;
  }
}

/** E-mail for notifications (notifications.mail.ts); on only with SMTP_URL, MAIL_FROM and PUBLIC_URL. */
export type MailConfig = {
  smtpUrl: string;
  from: string;
  /** The service's public base URL, without a trailing slash: the unsubscribe links point here. */
  publicUrl: string;
  /** Signs the unsubscribe tokens (HS256 JWT); the same on every replica. */
  unsubscribeSecret: string;
  /** Attempts after the first before a message is kept as failed. */
  retryLimit: number;
  /** First retry delay; doubled (with jitter) each attempt, up to retryDelayMaxSeconds. */
  retryDelaySeconds: number;
  retryDelayMaxSeconds: number;
  /** How often each replica looks for messages to send. */
  pollIntervalSeconds: number;
  /**
   * Whether this replica sends the queued messages (MAIL_WORKER, on when absent). Off, it still
   * enqueues them in each change's transaction; a replica with it on sends them.
   */
  worker: boolean;
};

export type Config = {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  /** A direct connection (not through PgBouncer's transaction pooling) for migrations; databaseUrl when absent. */
  databaseDirectUrl: string | undefined;
  /** Streaming replicas that serve reads which may be slightly stale. */
  databaseReadUrls: string[];
  /** Replicas further behind the primary than this are skipped, and a caller's reads stay on the primary this long after it writes. */
  databaseReadMaxLagMs: number;
  /** Longest a statement waits for a lock (server-side lock_timeout); the statement timeout when unset. */
  databaseLockTimeoutMs: number;
  /** A transaction left idle this long is ended by the server, releasing its locks. */
  databaseIdleInTransactionTimeoutMs: number;
  databasePoolSize: number;
  /**
   * How long a pooled connection may sit unused before it is closed (0: never): the next request
   * after a quiet spell opens it again, a TLS handshake and a login away on a remote database.
   */
  databasePoolIdleTimeoutMs: number;
  /**
   * Mutations of one organization executed at once on this replica (write-gate.ts); the next wait
   * their turn in the service, holding no connection. 0: no limit.
   */
  databaseWritesPerOrganization: number;
  /**
   * Named (prepared) statements on the pooled connections: on by default, off by default when
   * DATABASE_DIRECT_URL is set (DATABASE_URL then goes through a pooler that may not keep them).
   */
  databasePreparedStatements: boolean;
  /** Longest wait for a PostgreSQL connection, new or from the pool. */
  databaseConnectTimeoutMs: number;
  /** Longest a PostgreSQL statement may run (server-side statement_timeout and a client-side bound). */
  databaseStatementTimeoutMs: number;
  /** How long start-up keeps retrying a PostgreSQL that does not answer before exiting 1. */
  databaseStartupTimeoutMs: number;
  /** Wait and run limits of every interactive transaction (transaction-limits.ts). */
  databaseTransactions: TransactionLimits;
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  /** `maxAgeSeconds`: tokens must carry exp, and iat no older than this. */
  jwt: { secret?: string; jwksUrl?: string; issuer?: string; audience?: string; maxAgeSeconds?: number };
  /** Longest a request waits on Redis before this replica goes on without it. */
  redisTimeoutMs: number;
  rateLimitPerMinute: number;
  trustProxy: boolean;
  /** Proxies in front of the service that each append to X-Forwarded-For (with trustProxy). */
  trustProxyHops: number;
  /** Origins (exact) whose pages may call the API from a browser, with credentials; none by default. */
  corsOrigins: string[];
  /** The web app's origin, for the deep links of notifications; none when unset. */
  appUrl: string | undefined;
  authFailuresPerMinute: number;
  shutdownGraceMs: number;
  /** After SIGTERM, how long to keep serving (with /ready at 503) before closing the listener. */
  shutdownDelayMs: number;
  /** Hard deadline from the signal to the exit, delay and grace included (under Kubernetes' 30 s grace period). */
  shutdownTimeoutMs: number;
  /**
   * How long an idle keep-alive connection stays open: longer than a load balancer keeps its idle
   * connections to the replica (AWS ALB 60 s), so that it never sends a request on one the server is closing.
   */
  keepAliveTimeoutMs: number;
  bodyLimitBytes: number;
  /** Bytes of request bodies admitted at once; past it, 503 with Retry-After before reading. */
  bodyBudgetBytes: number;
  /** Live streams (subscriptions over SSE): caps, keep-alive interval, and the unread bytes a reader may leave. */
  liveStreams: LiveStreamLimits;
  /**
   * Closed connections after which the replica gives their freed native memory back to the system
   * (malloc_trim, on glibc), at the next full garbage collection; 0 turns it off.
   */
  nativeMemoryTrimAfterClosed: number;
  logLevel: string;
  production: boolean;
  /** Introspection and GraphiQL: on in development, off in production unless enabled. */
  introspection: boolean;
  graphiql: boolean;
  /** Who may send GraphQL text instead of a trusted document's id: everyone, API keys only, or no one. */
  trustedDocuments: "allow" | "sessions" | "all";
  seedDemoData: boolean;
  /** OTLP/HTTP collector for traces; tracing is off without it. */
  otlpEndpoint: string | undefined;
  deviceManagement: { url: string; token?: string } | undefined;
  mail: MailConfig | undefined;
  webhooks: WebhookConfig;
  audit: AuditConfig;
  attachments: AttachmentConfig;
  /** EVIDENCE_REQUEST_LINK_SECRET: the key evidence requests' link tokens are derived with; kept by the service when unset. */
  evidenceRequestLinkSecret: string | undefined;
};

/** Where attachments' bytes live and the limits of their URLs (contract section 15, src/platform/attachments). */
export type AttachmentConfig = {
  /** The store new objects go to: filesystem on the embedded database, database on PostgreSQL, unless set. */
  store: StoreKind;
  /** The filesystem store's directory (ATTACHMENT_DIR, else DATA_DIR/attachments). */
  dir: string;
  /** The s3 store; undefined without S3_BUCKET (credentials come from the AWS SDK's default chain). */
  s3: S3StoreConfig | undefined;
  /**
   * Signs the URLs the service serves itself (filesystem and database stores); the same on every
   * replica. When unset, a secret the service makes once and keeps: in DATA_DIR on the embedded
   * database, in the database on PostgreSQL (attachmentUrlSecret).
   */
  urlSecret: string | undefined;
  /** Where the service is reached from outside (PUBLIC_URL); the request's own origin when unset. */
  publicUrl: string | undefined;
  /** Largest file: 100 MiB by default, at most 10 MiB on the database store. */
  maxBytes: number;
  uploadTtlSeconds: number;
  downloadTtlSeconds: number;
  /** Longest any store operation waits for the store before answering 503 (and a download for the store's next bytes). */
  timeoutMs: number;
  /**
   * The bytes an organization's uploads not yet attached (pending or expired and not yet swept)
   * may declare together: a new upload past it is 409. Bounds the storage unattached objects take.
   */
  unattachedMaxBytes: number;
};

export type S3StoreConfig = { bucket: string; region: string; endpoint: string | undefined; forcePathStyle: boolean };

export type LiveStreamLimits = {
  /** Open streams of one credential (an API key, or one user's sessions or JWTs). */
  perCredential: number;
  /** Open streams of one organization. */
  perOrganization: number;
  /** Keep-alive comment lines on an idle stream, so that proxies do not close it. */
  heartbeatMs: number;
  /** Bytes waiting for a reader that stopped reading; past them its stream is dropped. */
  maxBufferedBytes: number;
};

export const DEFAULT_LIVE_STREAM_LIMITS: LiveStreamLimits = {
  perCredential: 1_000,
  perOrganization: 10_000,
  heartbeatMs: 15_000,
  maxBufferedBytes: 256 * 1024,
};

/** The audit trail's signing key, checkpoints and retention (docs/audit.md). */
export type AuditConfig = {
  /** AUDIT_SIGNING_KEY (PKCS#8 PEM, Ed25519); the key in DATA_DIR when unset. */
  signingKey: string | undefined;
  /** Public keys (PEM, SPKI) of keys used before a rotation, whose checkpoints still verify. */
  previousPublicKeys: string | undefined;
  /** A checkpoint is signed within this many seconds of an organization's last new event. */
  checkpointSeconds: number;
  /** Events older than this many days are purged; kept forever when unset. */
  retentionDays: number | undefined;
  /** The bench's A/B only (BENCH_AUDIT_CHAIN=off): events unchained. */
  chain: boolean;
};

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== "")));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`).join("\n");
    throw new Error(`Invalid configuration:\n${problems}`);
  }
  const e = parsed.data;
  if (!e.DATABASE_URL && (e.DATABASE_DIRECT_URL || e.DATABASE_READ_URLS.length > 0)) {
    throw new Error(
      "Invalid configuration:\n  DATABASE_DIRECT_URL and DATABASE_READ_URLS apply to PostgreSQL: set DATABASE_URL too (the pooled connection)",
    );
  }
  const databaseTransactions = { maxWaitMs: e.DATABASE_TRANSACTION_WAIT_MS, timeoutMs: e.DATABASE_TRANSACTION_TIMEOUT_MS };
  const transactionProblem = transactionLimitsProblem(databaseTransactions, {
    statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
    connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
  });
  if (transactionProblem) throw new Error(`Invalid configuration:\n  ${transactionProblem}`);
  if (e.SHUTDOWN_DELAY_MS + e.SHUTDOWN_GRACE_MS >= e.SHUTDOWN_TIMEOUT_MS) {
    throw new Error(
      `Invalid configuration:\n  SHUTDOWN_DELAY_MS (${e.SHUTDOWN_DELAY_MS}) + SHUTDOWN_GRACE_MS (${e.SHUTDOWN_GRACE_MS}) must be less than SHUTDOWN_TIMEOUT_MS (${e.SHUTDOWN_TIMEOUT_MS}), which leaves the rest for closing the database`,
    );
  }
  const mail = mailConfig(e);
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    databaseDirectUrl: e.DATABASE_DIRECT_URL,
    databaseReadUrls: e.DATABASE_READ_URLS,
    databaseReadMaxLagMs: e.DATABASE_READ_MAX_LAG_MS,
    databaseLockTimeoutMs: e.DATABASE_LOCK_TIMEOUT_MS ?? e.DATABASE_STATEMENT_TIMEOUT_MS,
    databaseIdleInTransactionTimeoutMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    databasePoolIdleTimeoutMs: e.DATABASE_POOL_IDLE_TIMEOUT_MS,
    databaseWritesPerOrganization: e.DATABASE_WRITES_PER_ORGANIZATION,
    databasePreparedStatements: (e.DATABASE_PREPARED_STATEMENTS ?? (e.DATABASE_DIRECT_URL ? "false" : "true")) === "true",
    databaseConnectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
    databaseStatementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
    databaseStartupTimeoutMs: e.DATABASE_STARTUP_TIMEOUT_MS,
    databaseTransactions,
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    jwt: {
      secret: e.AUTH_JWT_SECRET,
      jwksUrl: e.AUTH_JWKS_URL,
      issuer: e.AUTH_JWT_ISSUER,
      audience: e.AUTH_JWT_AUDIENCE,
      maxAgeSeconds: e.AUTH_JWT_MAX_AGE_SECONDS,
    },
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    trustProxy: e.TRUST_PROXY === "true",
    trustProxyHops: e.TRUST_PROXY_HOPS,
    corsOrigins: e.CORS_ORIGINS,
    appUrl: e.APP_URL,
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    shutdownDelayMs: e.SHUTDOWN_DELAY_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    bodyBudgetBytes: e.BODY_BUDGET_BYTES,
    liveStreams: {
      perCredential: e.LIVE_STREAMS_PER_CREDENTIAL,
      perOrganization: e.LIVE_STREAMS_PER_ORGANIZATION,
      heartbeatMs: e.LIVE_STREAM_HEARTBEAT_MS,
      maxBufferedBytes: e.LIVE_STREAM_BUFFER_BYTES,
    },
    nativeMemoryTrimAfterClosed: e.NATIVE_MEMORY_TRIM_AFTER_CLOSED,
    logLevel: e.LOG_LEVEL,
    production: e.NODE_ENV === "production",
    introspection: e.INTROSPECTION ? e.INTROSPECTION === "true" : e.NODE_ENV !== "production",
    graphiql: e.GRAPHIQL ? e.GRAPHIQL === "true" : e.NODE_ENV !== "production",
    trustedDocuments: e.TRUSTED_DOCUMENTS,
    seedDemoData: e.SEED_DEMO_DATA === "true",
    otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
    deviceManagement: e.DEVICE_MANAGEMENT_URL ? { url: e.DEVICE_MANAGEMENT_URL, token: e.DEVICE_MANAGEMENT_TOKEN } : undefined,
    mail,
    webhooks: webhookConfig(e),
    audit: {
      signingKey: e.AUDIT_SIGNING_KEY,
      previousPublicKeys: e.AUDIT_PREVIOUS_PUBLIC_KEYS,
      checkpointSeconds: e.AUDIT_CHECKPOINT_SECONDS,
      retentionDays: e.AUDIT_RETENTION_DAYS,
      chain: e.BENCH_AUDIT_CHAIN === "on",
    },
    attachments: attachmentConfig(e),
    evidenceRequestLinkSecret: e.EVIDENCE_REQUEST_LINK_SECRET,
  };
}

function attachmentConfig(e: z.infer<typeof schema>): AttachmentConfig {
  const store = e.ATTACHMENT_STORE ?? (e.DATABASE_URL ? "database" : "filesystem");
  const problems: string[] = [];
  if (store === "s3" && !e.S3_BUCKET) problems.push("ATTACHMENT_STORE=s3 needs S3_BUCKET (and S3_REGION)");
  if (e.S3_BUCKET && !e.S3_REGION) problems.push("S3_BUCKET needs S3_REGION (us-east-1 for most S3-compatible servers)");
  const maxBytes = e.ATTACHMENT_MAX_BYTES ?? (store === "database" ? MAX_DATABASE_ATTACHMENT_BYTES : MAX_ATTACHMENT_BYTES);
  if (store === "database" && maxBytes > MAX_DATABASE_ATTACHMENT_BYTES)
    problems.push(`ATTACHMENT_MAX_BYTES is at most ${MAX_DATABASE_ATTACHMENT_BYTES} (10 MiB) on the database store`);
  if (problems.length > 0) throw new Error(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join("\n")}`);
  return {
    store,
    dir: e.ATTACHMENT_DIR ?? path.join(e.DATA_DIR, "attachments"),
    s3: e.S3_BUCKET
      ? {
          bucket: e.S3_BUCKET,
          region: e.S3_REGION as string,
          endpoint: e.S3_ENDPOINT,
          forcePathStyle: e.S3_FORCE_PATH_STYLE === "true",
        }
      : undefined,
    urlSecret: e.ATTACHMENT_URL_SECRET,
    publicUrl: e.PUBLIC_URL?.replace(/\/+$/, ""),
    maxBytes,
    uploadTtlSeconds: e.ATTACHMENT_UPLOAD_TTL_SECONDS,
    downloadTtlSeconds: e.ATTACHMENT_DOWNLOAD_TTL_SECONDS,
    timeoutMs: e.ATTACHMENT_STORE_TIMEOUT_MS,
    unattachedMaxBytes: e.ATTACHMENT_UNATTACHED_MAX_BYTES,
  };
}

const MAIL_SETTINGS = ["SMTP_URL", "MAIL_FROM", "PUBLIC_URL"] as const;

function mailConfig(e: z.infer<typeof schema>): MailConfig | undefined {
  const set = MAIL_SETTINGS.filter((name) => e[name] !== undefined);
  // PUBLIC_URL alone is the origin of attachment URLs (attachmentConfig), not a request for e-mail.
  if (e.SMTP_URL === undefined && e.MAIL_FROM === undefined) return undefined;
  if (set.length < MAIL_SETTINGS.length) {
    const missing = MAIL_SETTINGS.filter((name) => e[name] === undefined);
    throw new Error(
      `Invalid configuration:\n  e-mail needs SMTP_URL, MAIL_FROM and PUBLIC_URL together: ${set.join(", ")} ${set.length === 1 ? "is" : "are"} set, ${missing.join(" and ")} ${missing.length === 1 ? "is" : "are"} not (unset all three to send no e-mail)`,
    );
  }
  if (!e.MAIL_UNSUBSCRIBE_SECRET) {
    throw new Error(
      "Invalid configuration:\n  MAIL_UNSUBSCRIBE_SECRET (at least 32 characters, the same on every replica) signs the unsubscribe links of e-mail: set it with SMTP_URL",
    );
  }
  if (e.MAIL_RETRY_DELAY_MAX_SECONDS < e.MAIL_RETRY_DELAY_SECONDS) {
    throw new Error("Invalid configuration:\n  MAIL_RETRY_DELAY_MAX_SECONDS must be at least MAIL_RETRY_DELAY_SECONDS");
  }
  return {
    smtpUrl: e.SMTP_URL as string,
    from: e.MAIL_FROM as string,
    publicUrl: (e.PUBLIC_URL as string).replace(/\/+$/, ""),
    unsubscribeSecret: e.MAIL_UNSUBSCRIBE_SECRET,
    retryLimit: e.MAIL_RETRY_LIMIT,
    retryDelaySeconds: e.MAIL_RETRY_DELAY_SECONDS,
    retryDelayMaxSeconds: e.MAIL_RETRY_DELAY_MAX_SECONDS,
    pollIntervalSeconds: e.MAIL_POLL_INTERVAL_SECONDS,
    worker: e.MAIL_WORKER === "true",
  };
}

/** Webhook deliveries (modules/webhooks, contract section 12). */
export type WebhookConfig = {
  timeoutMs: number;
  /** Seconds between attempts: the first retry waits the first, and so on; after the last, the delivery failed. */
  retrySchedule: number[];
  disableAfterHours: number;
  /** CIDRs whose addresses a webhook may reach although they are private, loopback, ... */
  allowedCidrs: string[];
  retentionDays: number;
  pollIntervalMs: number;
  /** Whether this replica attempts deliveries (WEBHOOK_WORKER, on when absent). */
  worker: boolean;
  /** https only, unless the address is inside allowedCidrs. */
  httpsOnly: boolean;
};

function webhookConfig(e: z.infer<typeof schema>): WebhookConfig {
  for (const cidr of e.WEBHOOK_ALLOWED_CIDRS) {
    if (!isCidr(cidr))
      throw new Error(
        `Invalid configuration:\n  WEBHOOK_ALLOWED_CIDRS: ${JSON.stringify(cidr)} is not a CIDR (e.g. 10.0.0.0/8, fd00::/8)`,
      );
  }
  return {
    timeoutMs: e.WEBHOOK_TIMEOUT_MS,
    retrySchedule: e.WEBHOOK_RETRY_SCHEDULE,
    disableAfterHours: e.WEBHOOK_DISABLE_AFTER_HOURS,
    allowedCidrs: e.WEBHOOK_ALLOWED_CIDRS,
    retentionDays: e.WEBHOOK_DELIVERY_RETENTION_DAYS,
    pollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
    worker: e.WEBHOOK_WORKER === "true",
    httpsOnly: e.NODE_ENV === "production",
  };
}

function isCidr(value: string): boolean {
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
}
