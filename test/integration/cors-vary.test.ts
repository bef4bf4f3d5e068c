import { afterAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

const listed = "https://app.example.com";
const second = "https://admin.example.com";
const apps: TestApp[] = [];
afterAll(() => Promise.all(apps.map((app) => app.close())));

async function appWith(corsOrigins: string[]) {
  const t = await createTestApp({ corsOrigins });
  apps.push(t);
  return { t, org: await t.seedOrg() };
}

type Probe = { name: string; path: string; init: RequestInit };

/** Every kind of answer: REST and GraphQL, success and refusal, and preflights. */
function probes(key: string, origin: string | undefined): Probe[] {
  const from: Record<string, string> = origin ? { origin } : {};
  const graphql = { query: "{ viewer { organization { id } } }" };
  return [
    { name: "REST GET", path: "/v1/people", init: { headers: { ...from, "x-api-key": key } } },
    { name: "REST 401", path: "/v1/people", init: { headers: from } },
    {
      name: "GraphQL POST",
      path: "/graphql",
      init: {
        method: "POST",
        headers: { ...from, "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(graphql),
      },
    },
    {
      name: "GraphQL GET",
      path: `/graphql?query=${encodeURIComponent(graphql.query)}`,
      init: { headers: { ...from, "x-api-key": key } },
    },
    ...["/v1/people", "/graphql"].map((path) => ({
      name: `preflight ${path}`,
      path,
      init: {
        method: "OPTIONS",
        headers: {
          ...from,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type, x-api-key",
        },
      },
    })),
  ];
}

const varies = (res: Response) =>
  (res.headers.get("vary") ?? "")
    .split(",")
    .map((token) => token.trim().toLowerCase())
    .includes("origin");

describe("Vary: Origin", () => {
  for (const origins of [[listed], [listed, second]]) {
    it(`is on every answer when CORS_ORIGINS lists ${origins.length} origin(s), whatever the caller's origin`, async () => {
      const { t, org } = await appWith(origins);
      for (const origin of [listed, second, "https://evil.example", undefined]) {
        for (const probe of probes(org.apiKey, origin)) {
          const res = await t.app.fetch(new Request(`http://test${probe.path}`, probe.init));
          const label = `${probe.name} from ${origin ?? "no origin"}`;
          expect(varies(res), label).toBe(true);
          expect(res.headers.get("vary")?.match(/origin/gi)?.length, label).toBe(1);
          const allowed = origin !== undefined && origins.includes(origin);
          expect(res.headers.get("access-control-allow-origin"), label).toBe(allowed ? origin : null);
        }
      }
    });
  }

  it("is absent when no origin is listed: no answer depends on it", async () => {
    const { t, org } = await appWith([]);
    for (const probe of probes(org.apiKey, listed)) {
      const res = await t.app.fetch(new Request(`http://test${probe.path}`, probe.init));
      expect(varies(res), probe.name).toBe(false);
      expect(res.headers.get("access-control-allow-origin"), probe.name).toBeNull();
    }
  });
});
