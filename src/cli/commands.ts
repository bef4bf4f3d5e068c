import { permissions } from "../auth/permissions.js";
import { MemberRole } from "../generated/prisma/enums.js";
import type { AuditSigner } from "../modules/audit/audit.keys.js";
import type { StoreOf } from "../modules/comments/attachments.jobs.js";
import type { StoreKind } from "../platform/attachments/store.js";
import type { Db } from "../platform/db/database.js";
import type { JobQueue } from "../platform/jobs.js";
import type * as services from "./services.js";

/** The service functions the commands call (./services.js, imported once a command is to run). */
export type Services = typeof services;

/** A mistake in how the CLI was called: printed with a usage hint, exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The command whose usage to point at; undefined for the program. */
    readonly command?: Command,
  ) {
    super(message);
  }
}

export type OptionSpec = {
  type: "string" | "boolean";
  /** Shown in help; string options only. */
  valueName?: string;
  description: string;
  required?: boolean;
};

export type CommandResult = {
  /** Printed with --json: one object with exactly these keys. */
  json: Record<string, unknown>;
  /** Printed without --json. */
  text: string;
  /** The process's exit code; 0 when absent (e.g. 1 for an audit trail that does not verify). */
  exitCode?: number;
};

/** What a command may use besides the database: the job queue, started on first use (and stopped by run.ts). */
export type CommandContext = {
  jobQueue(): Promise<JobQueue | undefined>;
  /** The audit checkpoints' signer: AUDIT_SIGNING_KEY, else the key in DATA_DIR. */
  auditSigner(): AuditSigner;
  /** The attachment stores the configuration reaches, by kind (each built on first use). */
  attachmentStores(): Promise<StoreOf>;
  /** ATTACHMENT_DOWNLOAD_TTL_SECONDS: how long a download URL handed out stays usable. */
  downloadTtlSeconds: number;
};

/** Validated arguments, ready to run against a database. */
export type Prepared = (db: Db, context: CommandContext) => Promise<CommandResult>;

export type Command = {
  /** The words that name it, e.g. ["apikey", "create"]. */
  path: string[];
  summary: string;
  description?: string;
  options: Record<string, OptionSpec>;
  /** One required argument after the options (a file, say), handed to prepare under its name. */
  positional?: { name: string; valueName: string; description: string };
  examples: string[];
  /** Checks the option values (throwing UsageError) and returns the work to do. */
  prepare(values: Record<string, string | boolean | undefined>, services: Services): Prepared;
};

const roles = Object.values(MemberRole);

function str(values: Record<string, string | boolean | undefined>, name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

/** Argument checks done with service helpers still count as usage errors. */
function asUsage<T>(command: Command, { AppError }: Services, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof AppError) throw new UsageError(error.message, command);
    throw error;
  }
}

function count(items: unknown[], one: string, many = `${one}s`): string {
  return `${items.length} ${items.length === 1 ? one : many}`;
}

const orgCreate: Command = {
  path: ["org", "create"],
  summary: "Create an organization",
  options: {
    name: { type: "string", valueName: "NAME", description: "name of the organization", required: true },
  },
  examples: ["org create --name Acme --json"],
  prepare(values, { createOrganization }) {
    const name = str(values, "name") as string;
    return async (db) => {
      const org = await createOrganization(db, name);
      return { json: { id: org.id, name: org.name }, text: `Created organization ${org.id} (${org.name})` };
    };
  },
};

const userCreate: Command = {
  path: ["user", "create"],
  summary: "Create a user (or reuse the one with that e-mail), optionally as a member of an organization",
  options: {
    email: { type: "string", valueName: "EMAIL", description: "e-mail address; an existing user is reused", required: true },
    name: { type: "string", valueName: "NAME", description: "display name of a new user", required: true },
    org: { type: "string", valueName: "ORG", description: "organization id (org_...) to add the user to as a member" },
    role: { type: "string", valueName: "ROLE", description: `member role with --org: ${roles.join(", ")} (default employee)` },
  },
  examples: [
    "user create --email ada@example.com --name 'Ada Lovelace' --json",
    "user create --email ada@example.com --name 'Ada Lovelace' --org org_... --role admin --json",
  ],
  prepare(values, { createUser }) {
    const email = str(values, "email") as string;
    const name = str(values, "name") as string;
    const organizationId = str(values, "org");
    const role = str(values, "role");
    if (role !== undefined && !organizationId)
      throw new UsageError("--role needs --org (the role is the one in that organization)", this);
    if (role !== undefined && !(roles as string[]).includes(role)) {
      throw new UsageError(`Unknown role ${JSON.stringify(role)}; use one of ${roles.join(", ")}`, this);
    }
    return async (db) => {
      const result = await createUser(db, { email, name, organizationId, role: role as MemberRole | undefined });
      const text = result.memberId
        ? `User ${result.userId} is member ${result.memberId} of ${organizationId} (role ${role ?? "employee"})`
        : `User ${result.userId} (${email.trim().toLowerCase()})`;
      return { json: { userId: result.userId, memberId: result.memberId }, text };
    };
  },
};

const apikeyCreate: Command = {
  path: ["apikey", "create"],
  summary: "Create an API key for an organization; the key is printed only once",
  options: {
    org: { type: "string", valueName: "ORG", description: "organization id (org_...)", required: true },
    name: { type: "string", valueName: "NAME", description: "a name to recognize the key by", required: true },
    scopes: {
      type: "string",
      valueName: "SCOPES",
      description: `"all" (default) or a comma-separated list of: ${permissions.join(", ")}`,
    },
    "expires-in": {
      type: "string",
      valueName: "DURATION",
      description: "lifetime such as 30s, 15m, 12h or 30d (default: no expiry)",
    },
  },
  examples: [
    "apikey create --org org_... --name ci --json",
    "apikey create --org org_... --name reader --scopes task:read --expires-in 30d",
  ],
  prepare(values, services) {
    const { createApiKey, parseDuration, parseScopes } = services;
    const organizationId = str(values, "org") as string;
    const name = str(values, "name") as string;
    const scopes = asUsage(this, services, () => parseScopes(str(values, "scopes") ?? "all"));
    const expiresIn = str(values, "expires-in");
    const expiresInMs = expiresIn === undefined ? undefined : asUsage(this, services, () => parseDuration(expiresIn));
    if (expiresInMs === 0) throw new UsageError("--expires-in must be longer than zero", this);
    return async (db) => {
      const key = await createApiKey(db, { organizationId, name, scopes, expiresInMs });
      const text = [
        `Created API key ${key.id} for ${organizationId}`,
        `  scopes:  ${key.scopes.length === permissions.length ? "all" : key.scopes.join(", ")}`,
        `  expires: ${key.expiresAt ?? "never"}`,
        "",
        `  ${key.key}`,
        "",
        "This is the only time the key is shown: store it now. Send it in the X-API-Key header.",
      ].join("\n");
      return { json: { id: key.id, key: key.key, scopes: key.scopes, expiresAt: key.expiresAt }, text };
    };
  },
};

const apikeyRevoke: Command = {
  path: ["apikey", "revoke"],
  summary: "Revoke an API key (revoking twice keeps the first time)",
  options: {
    id: { type: "string", valueName: "ID", description: "API key id (apk_...)", required: true },
  },
  examples: ["apikey revoke --id apk_... --json"],
  prepare(values, { revokeApiKey }) {
    const id = str(values, "id") as string;
    return async (db) => {
      const result = await revokeApiKey(db, id);
      return {
        json: { id: result.id, revokedAt: result.revokedAt },
        text: `API key ${result.id} revoked at ${result.revokedAt}`,
      };
    };
  },
};

const sessionCreate: Command = {
  path: ["session", "create"],
  summary: "Create a session for a user; the token is printed only once",
  options: {
    user: { type: "string", valueName: "USER", description: "user id (usr_...)", required: true },
    ttl: { type: "string", valueName: "DURATION", description: "lifetime such as 15m, 12h or 30d (default 1h)" },
  },
  examples: ["session create --user usr_... --json", "session create --user usr_... --ttl 12h"],
  prepare(values, services) {
    const { createSession, parseDuration } = services;
    const userId = str(values, "user") as string;
    const ttlMs = asUsage(this, services, () => parseDuration(str(values, "ttl") ?? "1h"));
    if (ttlMs === 0) throw new UsageError("--ttl must be longer than zero", this);
    return async (db) => {
      const session = await createSession(db, userId, ttlMs);
      const text = [
        `Created a session for ${userId}, valid until ${session.expiresAt}`,
        "",
        `  ${session.token}`,
        "",
        "Send it as the cookie session_token=<token> or as Authorization: Bearer <token>, with X-Organization-Id.",
      ].join("\n");
      return { json: { token: session.token, expiresAt: session.expiresAt }, text };
    };
  },
};

const seed: Command = {
  path: ["seed"],
  summary: "Create a new demo organization with members, tasks, vendors, risks, policies, task items and an API key",
  options: {},
  examples: ["seed --json"],
  prepare(_values, { seedDemo }) {
    return async (db) => {
      const demo = await seedDemo(db);
      const text = [
        `Created demo organization ${demo.organizationId}`,
        `  ${count(demo.memberIds, "member")}, ${count(demo.taskIds, "task")}, ${count(demo.vendorIds, "vendor")}, ` +
          `${count(demo.riskIds, "risk")}, ${count(demo.policyIds, "policy", "policies")}, ${count(demo.taskItemIds, "task item")}`,
        `  first task: ${demo.taskIds[0]}`,
        "",
        `  API key (every scope): ${demo.apiKey}`,
        "",
        "This is the only time the key is shown: store it now. Send it in the X-API-Key header.",
      ].join("\n");
      const json = {
        organizationId: demo.organizationId,
        apiKey: demo.apiKey,
        userIds: demo.userIds,
        memberIds: demo.memberIds,
        taskIds: demo.taskIds,
        vendorIds: demo.vendorIds,
        riskIds: demo.riskIds,
        policyIds: demo.policyIds,
        taskItemIds: demo.taskItemIds,
      };
      return { json, text };
    };
  },
};

const noQueue = "The job queue was never started on this database (e-mail not configured): no mail jobs.";

const mailFailed: Command = {
  path: ["mail", "failed"],
  summary: "List notification e-mail kept as failed after its last attempt, oldest first",
  description:
    "Each line is one message: its job id, its notification, the attempts made, when the last failed and why. Retry them with mail retry once the cause is fixed.",
  options: {
    limit: { type: "string", valueName: "N", description: "at most N jobs (default 100, at most 10000)" },
  },
  examples: ["mail failed", "mail failed --limit 20 --json"],
  prepare(values, { failedJobs, QUEUES }) {
    const limitValue = str(values, "limit") ?? "100";
    const limit = Number(limitValue);
    if (!/^\d+$/.test(limitValue) || limit < 1 || limit > 10_000)
      throw new UsageError("--limit must be a whole number from 1 to 10000", this);
    return async (_db, context) => {
      const queue = await context.jobQueue();
      if (!queue) return { json: { jobs: [] }, text: noQueue };
      const jobs = (await failedJobs(queue.boss, QUEUES.notificationMail, limit)).map((job) => ({
        id: job.id,
        notificationId: (job.data as { notificationId?: string } | null)?.notificationId ?? null,
        attempts: job.retryCount + 1,
        failedAt: job.failedAt ? new Date(job.failedAt).toISOString() : null,
        error: (job.output as { message?: string } | null)?.message ?? null,
      }));
      const text = jobs.length
        ? [
            `${count(jobs, "failed message")}:`,
            ...jobs.map((j) => `  ${j.id}  ${j.notificationId}  ${j.attempts} attempts, last ${j.failedAt}: ${j.error}`),
          ].join("\n")
        : "No failed notification e-mail.";
      return { json: { jobs }, text };
    };
  },
};

const mailRetry: Command = {
  path: ["mail", "retry"],
  summary: "Send failed notification e-mail again: the jobs named, or all of them",
  description:
    "Each job gets one more attempt (a further failure is kept as failed again); a replica sends it within its poll interval. The message keeps its Message-ID, so a receiver drops a copy it already has.",
  options: {
    id: { type: "string", valueName: "IDS", description: "job ids (from mail failed), comma-separated" },
    all: { type: "boolean", description: "every failed message" },
  },
  examples: ["mail retry --all --json", "mail retry --id 1b2c...,3d4e..."],
  prepare(values, { retryFailedJobs, QUEUES }) {
    const ids = str(values, "id")
      ?.split(",")
      .map((id) => id.trim())
      .filter(Boolean);
    const all = values.all === true;
    if (!all && !ids?.length) throw new UsageError("Name the jobs with --id, or retry all with --all", this);
    if (all && ids) throw new UsageError("Use --id or --all, not both", this);
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
    const bad = ids?.find((id) => !uuid.test(id));
    if (bad) throw new UsageError(`${JSON.stringify(bad)} is not a job id (a UUID, as mail failed lists them)`, this);
    return async (_db, context) => {
      const queue = await context.jobQueue();
      if (!queue) return { json: { retried: 0 }, text: noQueue };
      const retried = await retryFailedJobs(queue.boss, QUEUES.notificationMail, ids);
      return { json: { retried }, text: `${retried} failed ${retried === 1 ? "message" : "messages"} queued again.` };
    };
  },
};

const orgOption: OptionSpec = { type: "string", valueName: "ORG", description: "organization id (org_...)", required: true };

const auditVerify: Command = {
  path: ["audit", "verify"],
  summary: "Verify an organization's audit chain (exit 1 when it is broken)",
  description:
    "Recomputes every event's hash from the one before and checks the signed checkpoints, as GET /v1/audit/verify does; prints {ok, checked, firstBrokenSequence, reason}. Writes nothing.",
  options: {
    org: orgOption,
    from: { type: "string", valueName: "SEQUENCE", description: "first sequence to check (default: the chain's first)" },
    to: { type: "string", valueName: "SEQUENCE", description: "last sequence to check (default: the chain's last)" },
  },
  examples: ["audit verify --org org_... --json", "audit verify --org org_... --from 1000 --to 2000"],
  prepare(values, { createAuditTrail }) {
    const organizationId = str(values, "org") as string;
    const sequence = (name: string) => {
      const text = str(values, name);
      if (text === undefined) return undefined;
      if (!/^[1-9][0-9]{0,9}$/.test(text)) throw new UsageError(`--${name} is a sequence: an integer of at least 1`, this);
      return Number(text);
    };
    const range = { from: sequence("from"), to: sequence("to") };
    return async (db, context) => {
      const result = await createAuditTrail(db, context.auditSigner()).verify(organizationId, range);
      const text = result.ok
        ? `The audit trail of ${organizationId} verifies: ${result.checked} events checked.`
        : `The audit trail of ${organizationId} is broken at sequence ${result.firstBrokenSequence}: ${result.reason} (${result.checked} events checked before it).`;
      return { json: result, text, exitCode: result.ok ? 0 : 1 };
    };
  },
};

const auditPurge: Command = {
  path: ["audit", "purge"],
  summary: "Remove an organization's audit events older than a date, keeping a signed checkpoint of what was removed",
  description:
    "The retention purge: removes the events before the first one at or after DATE (verified first; nothing is removed from a chain that does not verify), and signs a checkpoint of the last one removed, from which the chain is verified afterwards. AUDIT_RETENTION_DAYS does the same on a timer.",
  options: {
    org: orgOption,
    before: {
      type: "string",
      valueName: "DATE",
      description: "ISO 8601 date or time (UTC); events created before it go",
      required: true,
    },
  },
  examples: ["audit purge --org org_... --before 2025-01-01 --json"],
  prepare(values, { createAuditTrail }) {
    const organizationId = str(values, "org") as string;
    const text = str(values, "before") as string;
    const before = new Date(text);
    if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(before.getTime())) {
      throw new UsageError(`--before ${JSON.stringify(text)} is not an ISO 8601 date (e.g. 2025-01-01)`, this);
    }
    return async (db, context) => {
      const { removed, checkpoint } = await createAuditTrail(db, context.auditSigner()).purge(organizationId, before);
      return {
        json: { removed, checkpoint },
        text: checkpoint
          ? `Removed ${removed} audit events of ${organizationId} (through sequence ${checkpoint.sequence}); signed checkpoint ${checkpoint.id}.`
          : `No audit event of ${organizationId} is older than ${before.toISOString()}.`,
      };
    };
  },
};

const documentsPublish: Command = {
  path: ["documents", "publish"],
  summary: "Publish an app's trusted documents (persisted operations) for every replica: all or none",
  description:
    "FILE is graphql-codegen's persisted-documents.json, Relay's query map or Apollo's persisted query manifest. " +
    "Each id must be the SHA-256 of its document and each document must validate against the current schema; " +
    "otherwise nothing is stored, every bad document is named and the exit code is 1. Publishing again changes nothing. " +
    "Publish before the app version that sends them ships.",
  options: {
    app: { type: "string", valueName: "NAME", description: "the app the documents belong to (logs, metrics)", required: true },
    version: { type: "string", valueName: "V", description: "the app's version or build (logs, metrics)", required: true },
  },
  positional: { name: "file", valueName: "FILE", description: "the document file" },
  examples: ["documents publish --app web --version 1.4.0 ./persisted-documents.json --json"],
  prepare(values, services) {
    const { checkDocuments, checkLabel, documentEntries, publishDocuments, readFileSync, schema } = services;
    const app = asUsage(this, services, () => checkLabel("app", str(values, "app") as string));
    const version = asUsage(this, services, () => checkLabel("version", str(values, "version") as string));
    const file = str(values, "file") as string;
    return async (db) => {
      let content: string;
      try {
        content = readFileSync(file, "utf8");
      } catch (error) {
        throw new services.AppError("BAD_USER_INPUT", `Cannot read ${file}: ${(error as Error).message}`);
      }
      const documents = checkDocuments(schema, documentEntries(content));
      const result = await publishDocuments(db, { app, version, documents });
      return {
        json: result,
        text: `${app} ${version}: ${result.published} documents published, ${result.alreadyKnown} already known`,
      };
    };
  },
};

const documentsList: Command = {
  path: ["documents", "list"],
  summary: "List the trusted documents stored, oldest first",
  options: {
    app: { type: "string", valueName: "NAME", description: "only this app's documents" },
  },
  examples: ["documents list --json", "documents list --app web"],
  prepare(values, { listDocuments }) {
    const app = str(values, "app");
    return async (db) => {
      const documents = await listDocuments(db, { app });
      const text = documents.length
        ? documents.map((d) => `${d.id}  ${d.app} ${d.version}  ${d.operationName ?? "(unnamed)"}  ${d.createdAt}`).join("\n")
        : "No trusted documents stored.";
      return { json: { documents }, text };
    };
  },
};

const frameworkFormats = ["oscal", "json", "csv"] as const;
type FrameworkFormatName = (typeof frameworkFormats)[number];

/** The format a file is in when --format is not given: CSV by its extension, OSCAL when its JSON holds a catalog. */
function formatOf(file: string, content: string): FrameworkFormatName {
  if (file.toLowerCase().endsWith(".csv")) return "csv";
  try {
    const value = JSON.parse(content) as unknown;
    return value && typeof value === "object" && "catalog" in value ? "oscal" : "json";
  } catch {
    return "json";
  }
}

function readDocument(services: Services, file: string): string {
  try {
    return services.readFileSync(file, "utf8");
  } catch (error) {
    throw new services.AppError("BAD_USER_INPUT", `Cannot read ${file}: ${(error as Error).message}`);
  }
}

const frameworksImport: Command = {
  path: ["frameworks", "import"],
  summary: "Import a framework for every organization (shipped), or fill in a shipped framework's descriptions",
  description:
    "FILE is an OSCAL catalog in JSON (NIST's; a resolved profile is a catalog), or the plain format in JSON or CSV (docs/frameworks.md). " +
    "All or nothing: a bad file names its first bad JSON pointer or CSV line and exits 1. " +
    "A key and version that match a shipped framework fill in its requirements' descriptions (by ref) and change nothing else; " +
    "a shipped key with another version is refused (a new version needs a key of its own). " +
    "Prints {id, key, name, version, requirementCount, created, descriptionsFilled, unmatched}.",
  options: {
    format: {
      type: "string",
      valueName: "FORMAT",
      description: `${frameworkFormats.join(", ")} (default: csv for a .csv file, oscal for JSON holding a catalog, else json)`,
    },
    key: { type: "string", valueName: "KEY", description: "the framework's key (default: the file's; required for CSV)" },
    name: { type: "string", valueName: "NAME", description: "the framework's name (default: the file's; required for CSV)" },
    version: { type: "string", valueName: "V", description: "the framework's version (default: the file's; required for CSV)" },
  },
  positional: { name: "file", valueName: "FILE", description: "the framework document" },
  examples: [
    "frameworks import NIST_SP-800-53_rev5_catalog.json --key nist-sp-800-53-rev5 --version 5.0.1 --json",
    "frameworks import iso-27001-licensed.csv --key iso-iec-27001-2022 --name 'ISO/IEC 27001:2022 Annex A' --version 2022 --json",
  ],
  prepare(values, services) {
    const format = str(values, "format");
    if (format !== undefined && !(frameworkFormats as readonly string[]).includes(format)) {
      throw new UsageError(`Unknown format ${JSON.stringify(format)}; use one of ${frameworkFormats.join(", ")}`, this);
    }
    const file = str(values, "file") as string;
    return async (db) => {
      const document = readDocument(services, file);
      const result = await services.createFrameworkImportService(db).importShipped({
        format: (format as FrameworkFormatName | undefined) ?? formatOf(file, document),
        document,
        key: str(values, "key"),
        name: str(values, "name"),
        version: str(values, "version"),
      });
      const text = result.created
        ? `Imported ${result.key} ${result.version} (${result.id}): ${result.requirementCount} requirements, shipped to every organization`
        : `Filled in ${result.descriptionsFilled} descriptions of the shipped ${result.key} ${result.version} (${result.id})` +
          (result.unmatched.length
            ? `; ${count(result.unmatched, "ref")} of the file it does not have: ${result.unmatched.slice(0, 10).join(", ")}`
            : "");
      return { json: result, text };
    };
  },
};

const frameworksMap: Command = {
  path: ["frameworks", "map"],
  summary: "Import a mapping set between two frameworks, for every organization",
  description:
    "FILE is {source, target, mappings: [{sourceRef, targetRef, relationship}]} in JSON, source and target framework keys, relationship equal, subset, superset or intersect. " +
    "All or nothing: unknown keys or refs are named and the exit code is 1. A pair imported again takes the new relationship. " +
    "Prints {sourceKey, targetKey, sourceFrameworkId, targetFrameworkId, mappingCount}.",
  options: {},
  positional: { name: "file", valueName: "FILE", description: "the mapping set" },
  examples: ["frameworks map csf-to-800-53.json --json"],
  prepare(values, services) {
    const file = str(values, "file") as string;
    return async (db) => {
      const result = await services.createFrameworkImportService(db).importShippedMappingSet(readDocument(services, file));
      return {
        json: result,
        text: `Mapped ${result.sourceKey} to ${result.targetKey}: ${result.mappingCount} mappings, for every organization`,
      };
    };
  },
};

const frameworksList: Command = {
  path: ["frameworks", "list"],
  summary: "List the shipped frameworks (those every organization sees), by key",
  options: {},
  examples: ["frameworks list --json"],
  prepare(_values, services) {
    return async (db) => {
      const frameworks = await services.createFrameworkImportService(db).listShipped();
      const text = frameworks.map((f) => `${f.key}  ${f.version}  ${f.requirementCount} requirements  ${f.name}`).join("\n");
      return { json: { frameworks }, text: text || "No shipped frameworks." };
    };
  },
};

// Written out rather than imported from the store port, which pulls in graphql (through the errors).
const storeKinds: StoreKind[] = ["s3", "filesystem", "database"];

const attachmentsVerify: Command = {
  path: ["attachments", "verify"],
  summary: "Re-read every attachment object of an organization and name those whose bytes changed (exit 1 when any did)",
  description:
    "Streams each object from its store and compares its size and SHA-256 with the ones recorded when it was attached (and vouched for by the audit chain); a missing object counts as changed. Prints {checked, mismatched: [attachment ids]}. Writes nothing.",
  options: { org: orgOption },
  examples: ["attachments verify --org org_... --json"],
  prepare(values, { verifyAttachments }) {
    const organizationId = str(values, "org") as string;
    return async (db, context) => {
      const result = await verifyAttachments(db, await context.attachmentStores(), organizationId);
      const text = result.mismatched.length
        ? [
            `${count(result.mismatched, "attachment")} of ${organizationId} no longer match their recorded SHA-256 (${result.checked} checked):`,
            ...result.mismatched.map((id) => `  ${id}`),
          ].join("\n")
        : `Every attachment of ${organizationId} matches its recorded SHA-256: ${result.checked} checked.`;
      return { json: result, text, exitCode: result.mismatched.length ? 1 : 0 };
    };
  },
};

const attachmentsMove: Command = {
  path: ["attachments", "move"],
  summary: "Copy every attachment not yet in a store there, check each copy, and switch to it (resumable)",
  description:
    "One attachment at a time, streamed: copy to a new key, read the copy back and check its SHA-256, switch the row to it (only if it still names the old object), and schedule the old object's deletion once download URLs handed out for it expired. Stop it at any point and run it again: switched attachments are skipped, and a copy left unswitched is deleted by the service later. Files over 10 MiB are refused by the database store. Prints {moved, bytes, skipped, failed: [{id, reason}]}; exit 1 when any failed.",
  options: {
    to: { type: "string", valueName: "STORE", description: `the store to move to: ${storeKinds.join(", ")}`, required: true },
  },
  examples: ["attachments move --to s3 --json", "attachments move --to filesystem"],
  prepare(values, { moveAttachments }) {
    const to = str(values, "to") as string;
    if (!(storeKinds as string[]).includes(to))
      throw new UsageError(`Unknown store ${JSON.stringify(to)}; use one of ${storeKinds.join(", ")}`, this);
    return async (db, context) => {
      const result = await moveAttachments(db, await context.attachmentStores(), to as StoreKind, {
        keepOldMs: context.downloadTtlSeconds * 1_000,
      });
      const text = [
        `Moved ${result.moved} attachments (${result.bytes} bytes) to the ${to} store; ${result.skipped} already there.`,
        ...(result.failed.length
          ? [`${count(result.failed, "attachment")} not moved:`, ...result.failed.map((f) => `  ${f.id}: ${f.reason}`)]
          : []),
      ].join("\n");
      return { json: result, text, exitCode: result.failed.length ? 1 : 0 };
    };
  },
};

export const commands: Command[] = [
  orgCreate,
  userCreate,
  apikeyCreate,
  apikeyRevoke,
  sessionCreate,
  seed,
  mailFailed,
  mailRetry,
  auditVerify,
  auditPurge,
  documentsPublish,
  documentsList,
  frameworksImport,
  frameworksMap,
  frameworksList,
  attachmentsVerify,
  attachmentsMove,
];
