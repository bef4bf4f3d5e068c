import { z } from "zod";

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  HOST: z.string().min(1).default("127.0.0.1"),
  DATA_DIR: z.string().min(1).default("./.data"),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
    .optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(3_000),
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(5_000),
  DATABASE_STARTUP_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
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
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).max(300_000).default(0),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(36 * 1024 * 1024),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  DEVICE_MANAGEMENT_URL: z.url().optional(),
  DEVICE_MANAGEMENT_TOKEN: z.string().optional(),
  INTROSPECTION: z.enum(["true", "false"]).optional(),
  GRAPHIQL: z.enum(["true", "false"]).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  SEED_DEMO_DATA: z.enum(["true", "false"]).default("true"),
});

export type Config = {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** Longest wait for a PostgreSQL connection, new or from the pool. */
  databaseConnectTimeoutMs: number;
  /** Longest a PostgreSQL statement may run (server-side statement_timeout and a client-side bound). */
  databaseStatementTimeoutMs: number;
  /** How long start-up keeps retrying a PostgreSQL that does not answer before exiting 1. */
  databaseStartupTimeoutMs: number;
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  /** Longest a request waits on Redis before this replica goes on without it. */
  redisTimeoutMs: number;
  jwt: { secret?: string; jwksUrl?: string; issuer?: string; audience?: string };
  rateLimitPerMinute: number;
  trustProxy: boolean;
  authFailuresPerMinute: number;
  shutdownGraceMs: number;
  /** After SIGTERM, how long to keep serving (with /ready at 503) before closing the listener. */
  shutdownDelayMs: number;
  bodyLimitBytes: number;
  logLevel: string;
  production: boolean;
  /** Introspection and GraphiQL: on in development, off in production unless enabled. */
  introspection: boolean;
  graphiql: boolean;
  seedDemoData: boolean;
  /** OTLP/HTTP collector for traces; tracing is off without it. */
  otlpEndpoint: string | undefined;
  deviceManagement: { url: string; token?: string } | undefined;
};

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== "")));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`).join("\n");
    throw new Error(`Invalid configuration:\n${problems}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    databaseConnectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
    databaseStatementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
    databaseStartupTimeoutMs: e.DATABASE_STARTUP_TIMEOUT_MS,
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    jwt: { secret: e.AUTH_JWT_SECRET, jwksUrl: e.AUTH_JWKS_URL, issuer: e.AUTH_JWT_ISSUER, audience: e.AUTH_JWT_AUDIENCE },
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    trustProxy: e.TRUST_PROXY === "true",
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    shutdownDelayMs: e.SHUTDOWN_DELAY_MS,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    logLevel: e.LOG_LEVEL,
    production: e.NODE_ENV === "production",
    introspection: e.INTROSPECTION ? e.INTROSPECTION === "true" : e.NODE_ENV !== "production",
    graphiql: e.GRAPHIQL ? e.GRAPHIQL === "true" : e.NODE_ENV !== "production",
    seedDemoData: e.SEED_DEMO_DATA === "true",
    otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
    deviceManagement: e.DEVICE_MANAGEMENT_URL ? { url: e.DEVICE_MANAGEMENT_URL, token: e.DEVICE_MANAGEMENT_TOKEN } : undefined,
  };
}
