import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { permissions } from "../../src/auth/permissions.js";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import { QUEUES, startJobQueue } from "../../src/platform/jobs.js";
import { cliInProcess, type CliRun as Run, runCli } from "../helpers/cli-process.js";
import { freshDataDir } from "../helpers/data-dir.js";
import { createPostgresDatabase, usePostgres } from "../helpers/test-app.js";

/**
 * The operator CLI's commands run in this process (cliInProcess: the runCli that src/cli/main.ts
 * runs, on its own database connection each time, as a process would). What only a process shows
 * runs as one (runCli, the bundled CLI): exit codes 0, 1 and 2, stdout holding the result alone,
 * and the data directory's lock, held while it runs, refused while another process holds it.
 */

/** Exactly one JSON object is all there is on stdout. */
function jsonOf(run: Run): Record<string, unknown> {
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  const value: unknown = JSON.parse(run.stdout);
  expect(value).toBeTypeOf("object");
  expect(Array.isArray(value)).toBe(false);
  return value as Record<string, unknown>;
}

function sortedKeys(value: object): string[] {
  return Object.keys(value).sort();
}

const { DATABASE_URL: _serverDatabase, ...inheritedEnv } = process.env;

// Each run its own part: `npm test` the embedded database, `npm run test:postgres` PostgreSQL (vitest.config.ts).
describe.skipIf(usePostgres)("operator CLI on the embedded database", () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let orgId: string;
  const run = (...args: string[]) => cliInProcess(args, env);
  const runProcess = (...args: string[]) => runCli(args, env);

  beforeAll(async () => {
    // A copy of the migrated data directory of the run (test/e2e/server.test.ts covers a first
    // start on an empty one).
    dataDir = freshDataDir("cli-test-");
    env = { ...inheritedEnv, DATA_DIR: dataDir, LOG_LEVEL: "silent" };
    orgId = jsonOf(await run("org", "create", "--name", "Shared Org", "--json")).id as string;
  });

  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("prints help for the program and for each command with exit code 0", async () => {
    const runs = await Promise.all([
      runProcess("--help"),
      run("help"),
      run("apikey", "--help"),
      run("org", "create", "--help"),
      run("user", "create", "-h"),
      run("apikey", "create", "--help"),
      run("apikey", "revoke", "--help"),
      run("seed", "--help"),
    ]);
    for (const r of runs) {
      expect(r.code).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout).toContain("Usage:");
    }
    const [program, , group, orgCreate, userCreate, apikeyCreate] = runs;
    for (const command of ["org create", "user create", "apikey create", "apikey revoke", "seed"]) {
      expect(program?.stdout).toContain(command);
    }
    expect(group?.stdout).toContain("apikey revoke");
    expect(orgCreate?.stdout).toContain("--name NAME");
    expect(userCreate?.stdout).toContain("contractor");
    expect(apikeyCreate?.stdout).toContain("--expires-in DURATION");
  });

  it("exits 2 with a message on stderr for an unknown command, option or missing required option", async () => {
    const [unknownCommand, unknownSubcommand, missingSubcommand, unknownOption, missingOption, badRole] = await Promise.all([
      runProcess("frobnicate", "--json"),
      run("org", "delete", "--json"),
      run("apikey"),
      run("org", "create", "--name", "X", "--colour", "red", "--json"),
      run("apikey", "create", "--name", "ci", "--json"),
      run("user", "create", "--email", "x@example.com", "--name", "X", "--org", orgId, "--role", "king"),
    ]);
    expect(unknownCommand.stderr).toMatch(/Unknown command "frobnicate"/);
    expect(unknownSubcommand.stderr).toMatch(/Unknown command "org delete"/);
    expect(missingSubcommand.stderr).toMatch(/Missing subcommand/);
    expect(unknownOption.stderr).toMatch(/Unknown option --colour/);
    expect(missingOption.stderr).toMatch(/Missing required option --org/);
    expect(badRole.stderr).toMatch(/Unknown role "king"/);
    for (const r of [unknownCommand, unknownSubcommand, missingSubcommand, unknownOption, missingOption, badRole]) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it("creates an organization and releases the data directory afterwards", async () => {
    const org = jsonOf(await runProcess("org", "create", "--name", "Acme", "--json"));
    expect(sortedKeys(org)).toEqual(["id", "name"]);
    expect(org.id).toMatch(/^org_/);
    expect(org.name).toBe("Acme");
    expect(existsSync(path.join(dataDir, "gateway.lock"))).toBe(false);
  });

  it("creates a user without a membership when --org is missing", async () => {
    const user = jsonOf(await run("user", "create", "--email", "solo@example.com", "--name", "Solo", "--json"));
    expect(sortedKeys(user)).toEqual(["memberId", "userId"]);
    expect(user.userId).toMatch(/^usr_/);
    expect(user.memberId).toBeNull();
  });

  it("adds a user to an organization, and exits 1 when adding them a second time", async () => {
    const args = ["user", "create", "--email", "twice@example.com", "--name", "Twice", "--org", orgId, "--role", "auditor"];
    const user = jsonOf(await run(...args, "--json"));
    expect(sortedKeys(user)).toEqual(["memberId", "userId"]);
    expect(user.userId).toMatch(/^usr_/);
    expect(user.memberId).toMatch(/^mem_/);

    const again = await run(...args, "--json");
    expect(again.code).toBe(1);
    expect(again.stdout).toBe("");
    expect(again.stderr).toMatch(/already a member/);
    expect(again.stderr).not.toMatch(/\n\s+at /);
  });

  it("creates API keys with every scope by default, or the scopes and lifetime given", async () => {
    const all = jsonOf(await run("apikey", "create", "--org", orgId, "--name", "ci", "--json"));
    expect(sortedKeys(all)).toEqual(["expiresAt", "id", "key", "scopes"]);
    expect(all.id).toMatch(/^apk_/);
    expect(all.key).toMatch(/^cwk_/);
    expect(all.scopes).toEqual([...permissions]);
    expect(all.expiresAt).toBeNull();

    const before = Date.now();
    const limited = jsonOf(
      await run(
        "apikey",
        "create",
        "--org",
        orgId,
        "--name",
        "reader",
        "--scopes",
        "task:read,comment:read",
        "--expires-in",
        "30d",
        "--json",
      ),
    );
    expect(sortedKeys(limited)).toEqual(["expiresAt", "id", "key", "scopes"]);
    expect(limited.scopes).toEqual(["task:read", "comment:read"]);
    const expiresAt = Date.parse(limited.expiresAt as string);
    expect(expiresAt - before).toBeGreaterThanOrEqual(30 * 86_400_000);
    expect(expiresAt - before).toBeLessThan(30 * 86_400_000 + 60_000);
  });

  it("says that the key is shown only once without --json", async () => {
    const r = await run("apikey", "create", "--org", orgId, "--name", "human");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/cwk_/);
    expect(r.stdout).toMatch(/only time the key is shown/);
  });

  it("exits 1 when creating a key for an unknown organization or revoking an unknown key", async () => {
    const [unknownOrg, unknownKey] = [
      await run("apikey", "create", "--org", "org_missing", "--name", "ci", "--json"),
      await run("apikey", "revoke", "--id", "apk_missing", "--json"),
    ];
    expect(unknownOrg.stderr).toMatch(/org_missing/);
    expect(unknownKey.stderr).toMatch(/apk_missing/);
    for (const r of [unknownOrg, unknownKey]) {
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it("exits 1 naming the data directory while another process holds its lock", async () => {
    const holder = await holdLock(dataDir);
    try {
      const r = await runProcess("org", "create", "--name", "Blocked", "--json");
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(path.resolve(dataDir));
      expect(r.stderr).toContain(`process ${holder.pid}`);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await stop(holder);
      await rm(path.join(dataDir, "gateway.lock"), { force: true });
    }
  });

  it("verifies an organization's audit chain (exit 1 when broken) and purges it with a signed checkpoint", async () => {
    const org = jsonOf(await run("org", "create", "--name", "Audited", "--json")).id as string;
    for (let i = 0; i < 2; i++) expect((await run("apikey", "create", "--org", org, "--name", `k${i}`, "--json")).code).toBe(0);
    const verified = await run("audit", "verify", "--org", org, "--json");
    expect(verified.code).toBe(0);
    expect(jsonOf(verified)).toEqual({ ok: true, checked: 2, firstBrokenSequence: null, reason: null });

    const purged = await run("audit", "purge", "--org", org, "--before", new Date(Date.now() + 60_000).toISOString(), "--json");
    expect(purged.code).toBe(0);
    expect(jsonOf(purged)).toMatchObject({ removed: 2, checkpoint: { organizationId: org, sequence: 2, purgedEvents: 2 } });
    // The key was made in the data directory at first use, readable by its owner only.
    expect(statSync(path.join(dataDir, "audit-signing-key.pem")).mode & 0o777).toBe(0o600);
    expect((await run("apikey", "create", "--org", org, "--name", "after", "--json")).code).toBe(0);
    expect(jsonOf(await run("audit", "verify", "--org", org, "--json"))).toMatchObject({ ok: true, checked: 1 });

    const database = await openDatabase({ kind: "embedded", dataDir });
    try {
      await database.db.$transaction(async (tx) => {
        await tx.$executeRawUnsafe("SET LOCAL session_replication_role = replica");
        await tx.$executeRawUnsafe(`UPDATE "AuditEvent" SET "action" = 'api_key.revoked' WHERE "organizationId" = $1`, org);
      });
    } finally {
      await database.close();
    }
    const broken = await run("audit", "verify", "--org", org, "--json");
    expect(broken.code).toBe(1);
    expect(JSON.parse(broken.stdout)).toMatchObject({ ok: false, checked: 0, firstBrokenSequence: 3 });
    const text = await run("audit", "verify", "--org", org);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain("broken at sequence 3");

    const usage = await run("audit", "purge", "--org", org, "--before", "yesterday");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("ISO 8601");
  });

  it("lists notification e-mail kept as failed and sends it again (none before the queue ever ran)", async () => {
    expect(jsonOf(await run("mail", "failed", "--json"))).toEqual({ jobs: [] });
    // One message failed for good, as a service with e-mail configured leaves it.
    const database = await openDatabase({ kind: "embedded", dataDir });
    let id: string | null;
    try {
      const queue = await startJobQueue({ pglite: database.pglite, logger: pino({ level: "silent" }) });
      await queue.boss.createQueue(QUEUES.notificationMail, { retryLimit: 0 });
      id = await queue.boss.send(QUEUES.notificationMail, { notificationId: "ntf_cli" });
      const [job] = await queue.boss.fetch(QUEUES.notificationMail);
      await queue.boss.fail(QUEUES.notificationMail, job?.id as string, { message: "550 mailbox unavailable" });
      await queue.stop(1_000);
    } finally {
      await database.close();
    }
    const failed = jsonOf(await run("mail", "failed", "--json"));
    expect(failed.jobs).toEqual([
      { id, notificationId: "ntf_cli", attempts: 1, failedAt: expect.any(String), error: "550 mailbox unavailable" },
    ]);
    const usage = await run("mail", "retry", "--id", "not-a-uuid");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("is not a job id");
    expect(jsonOf(await run("mail", "retry", "--all", "--json"))).toEqual({ retried: 1 });
    expect((await run("mail", "failed")).stdout).toBe("No failed notification e-mail.\n");
  });

  describe("against the database it wrote", () => {
    let seed: Record<string, unknown>;
    let validKey: string;
    let revokedKey: string;

    beforeAll(async () => {
      const valid = jsonOf(await run("apikey", "create", "--org", orgId, "--name", "valid", "--json"));
      const revoked = jsonOf(await run("apikey", "create", "--org", orgId, "--name", "revoked", "--json"));
      const revocation = jsonOf(await run("apikey", "revoke", "--id", revoked.id as string, "--json"));
      expect(sortedKeys(revocation)).toEqual(["id", "revokedAt"]);
      expect(revocation.id).toBe(revoked.id);
      expect(Number.isNaN(Date.parse(revocation.revokedAt as string))).toBe(false);
      seed = jsonOf(await run("seed", "--json"));
      validKey = valid.key as string;
      revokedKey = revoked.key as string;
    });

    /** The app on the data directory, opened once the CLI has exited (it holds the lock while it runs). */
    async function withApp(fn: (app: ReturnType<typeof createApp>, database: Database) => Promise<void>) {
      const database = await openDatabase({ kind: "embedded", dataDir });
      try {
        const app = createApp({
          database,
          config: { production: false, bodyLimitBytes: 37748736 },
          logger: pino({ level: "silent" }),
        });
        await fn(app, database);
      } finally {
        await database.close();
      }
    }

    it("seed prints a demo organization whose lists are filled and whose first member is the first user", async () => {
      const lists = ["userIds", "memberIds", "taskIds", "vendorIds", "riskIds", "policyIds", "taskItemIds"];
      expect(sortedKeys(seed)).toEqual(["apiKey", "organizationId", ...lists].sort());
      expect(seed.organizationId).toMatch(/^org_/);
      expect(seed.apiKey).toMatch(/^cwk_/);
      for (const list of lists) {
        expect(Array.isArray(seed[list]) && (seed[list] as unknown[]).length > 0, list).toBe(true);
      }
      const [userId] = seed.userIds as string[];
      const [memberId] = seed.memberIds as string[];
      expect(userId).toMatch(/^usr_/);
      expect(memberId).toMatch(/^mem_/);

      await withApp(async (app, database) => {
        const member = await database.db.member.findUniqueOrThrow({ where: { id: memberId as string } });
        expect(member.userId).toBe(userId);
        expect(member.organizationId).toBe(seed.organizationId);
        expect(member.role).toBe("owner");
        const [taskId] = seed.taskIds as string[];
        const response = await app.fetch(
          new Request(`http://test/v1/tasks/${taskId}`, { headers: { "x-api-key": seed.apiKey as string } }),
        );
        expect(response.status).toBe(200);
      });
    });

    it("session create prints a token that authenticates its user in their organization", async () => {
      const [userId] = seed.userIds as string[];
      const session = jsonOf(await run("session", "create", "--user", userId as string, "--ttl", "2h", "--json"));
      expect(sortedKeys(session)).toEqual(["expiresAt", "token"]);
      expect(session.token).toMatch(/^cws_/);
      const ttl = Date.parse(session.expiresAt as string) - Date.now();
      expect(ttl).toBeGreaterThan(1.9 * 3600_000);
      expect(ttl).toBeLessThanOrEqual(2 * 3600_000);
      const missing = await run("session", "create", "--user", "usr_missing", "--json");
      expect(missing.code).toBe(1);
      await withApp(async (app) => {
        const [taskId] = seed.taskIds as string[];
        const headers = { cookie: `session_token=${session.token}`, "x-organization-id": seed.organizationId as string };
        const response = await app.fetch(new Request(`http://test/v1/tasks/${taskId}`, { headers }));
        expect(response.status).toBe(200);
      });
    });

    it("a created key authenticates and a revoked key does not", async () => {
      await withApp(async (app) => {
        const call = (key: string) => app.fetch(new Request("http://test/v1/tasks/unknown", { headers: { "x-api-key": key } }));
        expect((await call(validKey)).status).toBe(404);
        expect((await call(revokedKey)).status).toBe(401);
      });
    });
  });
});

describe.runIf(usePostgres)("operator CLI on PostgreSQL", () => {
  let env: NodeJS.ProcessEnv;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    env = { ...process.env, LOG_LEVEL: "silent", DATABASE_URL: database.url };
  });
  afterAll(() => drop());

  it("creates an organization, a member and a key, and seeds", async () => {
    const org = jsonOf(await cliInProcess(["org", "create", "--name", "Pg Org", "--json"], env));
    expect(org.id).toMatch(/^org_/);
    const email = `pg.${Date.now()}@example.com`;
    const user = jsonOf(
      await cliInProcess(["user", "create", "--email", email, "--name", "Pg", "--org", org.id as string, "--json"], env),
    );
    expect(user.memberId).toMatch(/^mem_/);
    const key = jsonOf(await cliInProcess(["apikey", "create", "--org", org.id as string, "--name", "ci", "--json"], env));
    expect(key.key).toMatch(/^cwk_/);
    const seed = jsonOf(await cliInProcess(["seed", "--json"], env));
    expect((seed.memberIds as string[]).length).toBeGreaterThan(0);
  });
});

/** A process that holds the data directory lock the way a running server does. */
async function holdLock(dataDir: string): Promise<ChildProcess> {
  const script = `
    require("node:fs").writeFileSync(require("node:path").join(process.argv[1], "gateway.lock"), String(process.pid));
    process.stdout.write("locked\\n");
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ["-e", script, dataDir], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`lock holder exited with ${code}`)));
    child.stdout?.once("data", () => resolve());
  });
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill();
  await exited;
}
