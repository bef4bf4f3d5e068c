import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { createSession } from "../../src/auth/sessions.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org } = await openFixture({ authFailuresPerMinute: 5, trustProxy: true, organizations: 1 });

const from = (address: string, key: string) =>
  t.rest("GET", `/v1/tasks/${org.taskIds[0]}`, { key, headers: { "x-forwarded-for": address } });

describe("credential guessing", () => {
  it("refuses an address after 5 failed authentications, whatever it sends next, on both transports", async () => {
    for (let i = 0; i < 5; i++)
      expect((await from("198.51.100.1", `cwk_${"0".repeat(16)}_${String(i).padEnd(43, "x")}`)).status).toBe(401);
    const blocked = await from("198.51.100.1", org.apiKey);
    expect(blocked.status).toBe(429);
    expect(blocked.body.code).toBe("RATE_LIMITED");
    const gql = await t.gql(
      `query($id: ID!) { task(taskId: $id) { id } }`,
      { id: org.taskIds[0] },
      {
        key: org.apiKey,
        headers: { "x-forwarded-for": "198.51.100.1" },
      },
    );
    expect(gql.body.errors[0].extensions.code).toBe("RATE_LIMITED");
    expect((await from("198.51.100.2", org.apiKey)).status).toBe(200);
  });

  it("does not count successful authentications", async () => {
    for (let i = 0; i < 10; i++) expect((await from("198.51.100.3", org.apiKey)).status).toBe(200);
  });
});

describe("secret checks", () => {
  /**
   * Median times of two calls, measured in alternation so that whatever else the machine does
   * (the suite runs two workers on two cores) weighs on both alike.
   */
  async function medians(a: () => Promise<unknown>, b: () => Promise<unknown>, runs = 80): Promise<[number, number]> {
    const times: [number[], number[]] = [[], []];
    const time = async (fn: () => Promise<unknown>) => {
      const start = process.hrtime.bigint();
      await fn();
      return Number(process.hrtime.bigint() - start);
    };
    for (let i = 0; i < runs; i++) {
      times[0].push(await time(a));
      times[1].push(await time(b));
    }
    const median = (list: number[]) => list.sort((x, y) => x - y)[Math.floor(runs / 2)] as number;
    return [median(times[0]), median(times[1])];
  }

  it("take the same path for an unknown key id and a wrong secret", async () => {
    const lookup = org.apiKey.slice(4, 20);
    const wrongSecret = `cwk_${lookup}_${"B".repeat(43)}`;
    const unknownId = `cwk_${"f".repeat(16)}_${"B".repeat(43)}`;
    // Both cost one indexed lookup, then none while cached, and one constant-time comparison.
    const otherKey = (await t.keyWith(org.organizationId, ["task:read"])).key;
    const freshWrong = `cwk_${otherKey.slice(4, 20)}_${"B".repeat(43)}`;
    const freshUnknown = `cwk_${"e".repeat(16)}_${"B".repeat(43)}`;
    // The key lookups themselves (countQueries' count leaves them out).
    const lookups = async (fn: () => Promise<unknown>) =>
      (await t.countQueries(fn)).statements.filter((s) => s.includes('"ApiKey"')).length;
    const first = [
      await lookups(() => from("198.51.100.10", freshWrong)),
      await lookups(() => from("198.51.100.11", freshUnknown)),
    ];
    expect(first).toEqual([1, 1]);
    const cached = [
      await lookups(() => from("198.51.100.10", freshWrong)),
      await lookups(() => from("198.51.100.11", freshUnknown)),
    ];
    expect(cached).toEqual([0, 0]);
    const [wrong, unknown] = await medians(
      () => from("198.51.100.12", wrongSecret),
      () => from("198.51.100.13", unknownId),
    );
    // Generous bound: the machine is shared; a real difference would be a missing lookup or compare.
    expect(Math.abs(wrong - unknown) / Math.max(wrong, unknown)).toBeLessThan(0.5);
  });
});

describe("secrets in logs and errors", () => {
  it("never appear in log lines or error bodies", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const app = createApp({
      database: t.database,
      config: { production: true, bodyLimitBytes: 1 << 20 },
      logger: pino({ level: "trace" }, sink),
    });
    const { token } = await createSession(t.db, org.userIds[0] as string, 60_000);
    const bodies: string[] = [];
    const secrets = [org.apiKey, token, `${org.apiKey.slice(0, 30)}tampered-but-long-enough-secret`];
    for (const secret of secrets) {
      const variants: Record<string, string>[] = [
        { "x-api-key": secret },
        { authorization: `Bearer ${secret}` },
        { cookie: `session_token=${secret}` },
      ];
      for (const headers of variants) {
        const res = await app.fetch(new Request("http://test/v1/tasks/tsk_missing", { headers }));
        bodies.push(await res.text());
        const gql = await app.fetch(
          new Request("http://test/graphql", {
            method: "POST",
            headers: { ...headers, "content-type": "application/json" },
            body: JSON.stringify({ query: `{ task(taskId: "tsk_missing") { id } }` }),
          }),
        );
        bodies.push(await gql.text());
      }
    }
    expect(lines.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      const secretPart = secret.slice(-30);
      for (const text of [...lines, ...bodies]) expect(text).not.toContain(secretPart);
    }
  });
});
