import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/platform/db/database.js";
import { migratedCluster } from "../helpers/data-dir.js";
import { migratedPostgresDatabase, usePostgres } from "../helpers/test-app.js";

describe("openDatabase", () => {
  it("observes statements only when opened to count them", async () => {
    const plain = await openDatabase({ kind: "embedded", loadDataDir: migratedCluster() });
    try {
      expect(() => plain.onQuery(() => {})).toThrow(/countQueries/);
    } finally {
      await plain.close();
    }

    const counted = await openDatabase({ kind: "embedded", countQueries: true, loadDataDir: migratedCluster() });
    try {
      const statements: string[] = [];
      counted.onQuery((sql) => statements.push(sql));
      await counted.db.organization.count();
      expect(statements.some((sql) => /SELECT COUNT/i.test(sql))).toBe(true);
    } finally {
      await counted.close();
    }
  });

  it("runs the adapter's statements with its parsers in context, not handed to PGlite, and the database's own with PGlite's", async () => {
    // database.ts: PGlite merged the adapter's parsers with its own ~320 for every statement handed them.
    const database = await openDatabase({ kind: "embedded", loadDataDir: migratedCluster() });
    try {
      const pglite = database.pglite as NonNullable<typeof database.pglite>;
      const handed: unknown[] = [];
      const query = pglite.query.bind(pglite);
      pglite.query = ((sql: string, params?: unknown[], options?: Record<string, unknown>) => {
        handed.push(options);
        return query(sql, params, options);
      }) as typeof pglite.query;
      const rows = async (client: Pick<typeof database.db, "$queryRaw">) =>
        client.$queryRaw<{ at: Date; big: bigint; j: unknown; arr: string[]; n: unknown }[]>`
          SELECT timestamptz '2026-12-01 10:00:00+00' AS at, 9007199254740993::int8 AS big,
                 '{"a":[1,2]}'::jsonb AS j, ARRAY['x', 'y'] AS arr, 1.50::numeric AS n`;
      const [plain] = await rows(database.db);
      const [inTransaction] = await database.db.$transaction((tx) => rows(tx));
      for (const row of [plain, inTransaction]) {
        expect(row?.at).toEqual(new Date("2026-12-01T10:00:00Z"));
        expect(row?.big).toBe(9007199254740993n);
        expect(row?.j).toEqual({ a: [1, 2] });
        expect(row?.arr).toEqual(["x", "y"]);
        expect(String(row?.n)).toBe("1.5");
      }
      expect(handed.length).toBeGreaterThan(0);
      for (const options of handed) expect(options).not.toHaveProperty("parsers");
      // Not the adapter's: PGlite's own parsers, and the same after the adapter's statements ran.
      const own = await pglite.query<{ at: Date; n: number; a: number[] }>(
        "SELECT timestamptz '2026-12-01 10:00:00+00' AS at, 1::int AS n, ARRAY[1, 2] AS a",
      );
      expect(own.rows[0]).toEqual({ at: new Date("2026-12-01T10:00:00Z"), n: 1, a: [1, 2] });
    } finally {
      await database.close();
    }
  });

  it("falls through to the parsers of the adapter's own database, with two open in one process", async () => {
    const open = () => openDatabase({ kind: "embedded", loadDataDir: migratedCluster() });
    const [first, second] = await Promise.all([open(), open()]);
    try {
      // int4 (OID 23), which the adapter leaves to PGlite: a parser of the second database's own.
      (second.pglite as NonNullable<typeof second.pglite>).parsers[23] = () => 42;
      const one = async (database: typeof first) => (await database.db.$queryRaw<{ n: number }[]>`SELECT 1::int4 AS n`)[0]?.n;
      expect(await one(first)).toBe(1);
      expect(await one(second)).toBe(42);
      expect(await one(first)).toBe(1);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it("reads bytea back byte for byte on the embedded database, in a transaction and out of one", async () => {
    // database.ts gives pglite-prisma-adapter Buffer's hex decoder for bytea instead of its own.
    const database = await openDatabase({ kind: "embedded", loadDataDir: migratedCluster() });
    try {
      const every = Uint8Array.from({ length: 256 * 4 }, (_, i) => i % 256);
      const large = new Uint8Array(1 << 20).map((_, i) => (i * 7919) % 251);
      for (const bytes of [new Uint8Array(0), every, large]) {
        const [plain] = await database.db.$queryRaw<{ b: Uint8Array }[]>`SELECT ${bytes}::bytea AS b`;
        const [inTransaction] = await database.db.$transaction(
          (tx) => tx.$queryRaw<{ b: Uint8Array }[]>`SELECT ${bytes}::bytea AS b, txid_current()`,
        );
        for (const row of [plain, inTransaction]) {
          expect(row?.b).toBeInstanceOf(Uint8Array);
          expect(Buffer.compare(Buffer.from(row?.b ?? []), Buffer.from(bytes))).toBe(0);
        }
      }
    } finally {
      await database.close();
    }
  });

  it("gives the embedded database the shared buffers EMBEDDED_SHARED_BUFFERS names, 32MB without it (not PostgreSQL's 128MB)", async () => {
    const before = process.env.EMBEDDED_SHARED_BUFFERS;
    try {
      for (const [setting, shown] of [
        ["8MB", "8MB"],
        [undefined, "32MB"],
      ] as const) {
        if (setting) process.env.EMBEDDED_SHARED_BUFFERS = setting;
        else delete process.env.EMBEDDED_SHARED_BUFFERS;
        const database = await openDatabase({ kind: "embedded", loadDataDir: migratedCluster() });
        try {
          const [row] = await database.db.$queryRaw<{ shared_buffers: string }[]>`SHOW shared_buffers`;
          expect(row?.shared_buffers).toBe(shown);
        } finally {
          await database.close();
        }
      }
    } finally {
      if (before === undefined) delete process.env.EMBEDDED_SHARED_BUFFERS;
      else process.env.EMBEDDED_SHARED_BUFFERS = before;
    }
  });
});

describe.runIf(usePostgres)("prepared statements on PostgreSQL", () => {
  it("prepares each statement Prisma sends once per connection when asked, and not otherwise", async () => {
    const { url, drop } = await migratedPostgresDatabase();
    try {
      for (const preparedStatements of [true, false]) {
        // One connection: the statement that reads pg_prepared_statements runs where the others ran.
        const database = await openDatabase({ kind: "postgres", url, poolSize: 1, preparedStatements });
        try {
          await database.db.organization.findMany({ where: { name: "a" } });
          await database.db.organization.findMany({ where: { name: "b" } });
          const prepared = await database.db.$queryRaw<{ name: string; statement: string }[]>`
            SELECT name, statement FROM pg_prepared_statements
            WHERE statement LIKE '%"Organization"%' AND statement NOT LIKE '%pg_prepared_statements%'`;
          if (preparedStatements) {
            // The two reads differ only in their parameter: one statement, named by its text.
            expect(prepared).toHaveLength(1);
            expect(prepared[0]?.name).toMatch(/^prisma_[0-9a-f]{24}$/);
          } else {
            expect(prepared).toHaveLength(0);
          }
        } finally {
          await database.close();
        }
      }
    } finally {
      await drop();
    }
  });
});

describe.runIf(usePostgres)("the pool's idle connections on PostgreSQL", () => {
  it("closes a connection left unused for DATABASE_POOL_IDLE_TIMEOUT_MS, and keeps it with 0", async () => {
    const { url, drop } = await migratedPostgresDatabase();
    try {
      for (const poolIdleTimeoutMs of [150, 0]) {
        const database = await openDatabase({ kind: "postgres", url, poolSize: 2, poolIdleTimeoutMs });
        try {
          await database.db.organization.findMany({ where: { name: "a" } });
          expect(database.poolStats?.().total).toBeGreaterThan(0);
          await new Promise((resolve) => setTimeout(resolve, 600));
          if (poolIdleTimeoutMs) expect(database.poolStats?.()).toMatchObject({ total: 0, idle: 0 });
          else expect(database.poolStats?.().idle).toBeGreaterThan(0);
        } finally {
          await database.close();
        }
      }
    } finally {
      await drop();
    }
  });
});
