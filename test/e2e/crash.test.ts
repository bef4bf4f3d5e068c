import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/admin/admin.service.js";
import { seedDemo } from "../../src/admin/seed.js";
import { permissions } from "../../src/auth/permissions.js";
import { openDatabase } from "../../src/platform/db/database.js";
import { freshDataDir } from "../helpers/data-dir.js";
import { startServer } from "../helpers/server-process.js";
import { migratedPostgresDatabase, usePostgres } from "../helpers/test-app.js";

const start = (env: Record<string, string>) => startServer({ LOG_LEVEL: "warn", REDIS_URL: "", ...env }, { until: "ready" });

/** Writes tasks concurrently, kills the server with SIGKILL mid-burst, restarts it, and checks every acknowledged write. */
async function crashDuringWrites(env: Record<string, string>, key: string) {
  const first = await start(env);
  const acknowledged: string[] = [];
  let killed = false;
  const writes = Array.from({ length: 80 }, (_, i) =>
    fetch(`${first.url}/v1/tasks`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ title: `crash test ${i}` }),
    }).then(
      async (r) => {
        if (r.status === 201) acknowledged.push((await r.json()).id);
        if (acknowledged.length >= 10 && !killed) {
          killed = true;
          first.child.kill("SIGKILL");
        }
      },
      () => undefined,
    ),
  );
  await Promise.all(writes);
  await new Promise((resolve) =>
    first.child.exitCode !== null || first.child.signalCode ? resolve(null) : first.child.on("exit", resolve),
  );
  expect(first.child.signalCode).toBe("SIGKILL");
  expect(acknowledged.length).toBeGreaterThanOrEqual(10);
  expect(acknowledged.length).toBeLessThan(80);

  const second = await start(env);
  try {
    const found = new Set<string>();
    let cursor: string | null = null;
    do {
      const page: { items: { id: string }[]; nextCursor: string | null } = await fetch(
        `${second.url}/v1/tasks?limit=100${cursor ? `&cursor=${cursor}` : ""}`,
        { headers: { "x-api-key": key } },
      ).then((r) => r.json());
      for (const item of page.items) found.add(item.id);
      cursor = page.nextCursor;
    } while (cursor);
    expect(acknowledged.filter((id) => !found.has(id))).toEqual([]);
  } finally {
    second.child.kill("SIGKILL");
  }
}

describe("crash safety", () => {
  // Each run its own part: `npm test` the embedded database, `npm run test:postgres` PostgreSQL (vitest.config.ts).
  describe.skipIf(usePostgres)("on the embedded database", () => {
    let dataDir: string;
    afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

    it("keeps every acknowledged write through a SIGKILL and reopens cleanly", async () => {
      dataDir = freshDataDir("gateway-crash-");
      const database = await openDatabase({ kind: "embedded", dataDir });
      const demo = await seedDemo(database.db);
      await database.close();
      await crashDuringWrites({ DATA_DIR: dataDir, DATABASE_URL: "", SEED_DEMO_DATA: "false" }, demo.apiKey);
    });
  });

  describe.runIf(usePostgres)("on PostgreSQL", () => {
    let drop: () => Promise<void>;
    afterAll(() => drop?.());

    it("keeps every acknowledged write through a SIGKILL", async () => {
      const created = await migratedPostgresDatabase();
      drop = created.drop;
      const database = await openDatabase({ kind: "postgres", url: created.url });
      const demo = await seedDemo(database.db);
      const { key } = await createApiKey(database.db, {
        organizationId: demo.organizationId,
        name: "crash",
        scopes: [...permissions],
      });
      await database.close();
      await crashDuringWrites({ DATABASE_URL: created.url }, key);
    });
  });
});
