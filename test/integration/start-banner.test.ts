import pino from "pino";
import { describe, expect, it } from "vitest";
import { startBanner } from "../../src/admin/banner.js";
import { seedDemo } from "../../src/admin/seed.js";
import { seedFrameworkDemo } from "../../src/admin/seed-frameworks.js";
import { createApp } from "../../src/app.js";
import { createTestApp } from "../helpers/test-app.js";

// The banner of the first start names only what the server serves: every URL it prints answers
// (a browser's GET for a page, the curl line with the key and id it printed), in development and
// in production, where GraphiQL is off.
const t = await createTestApp();
const base = "http://127.0.0.1:4000";

describe("the start banner", () => {
  for (const production of [false, true]) {
    it(`prints only URLs that answer, with the key and ids of one organization (${production ? "production" : "development"})`, async () => {
      const graphiql = !production;
      const app = createApp({
        database: t.database,
        config: { production, graphiql, bodyLimitBytes: 1024 * 1024 },
        logger: pino({ level: "silent" }),
      });
      const demo = await seedDemo(t.db, "Banner demo");
      const frameworks = await seedFrameworkDemo(t.db, app.services, demo);
      const banner = startBanner({ base, graphiql, demo, frameworks });
      expect(banner.includes("GraphiQL:")).toBe(graphiql);
      const urls = [...banner.matchAll(/http:\/\/127\.0\.0\.1:4000(\/[^\s)]*)/g)].map((m) => m[1] as string);
      expect(urls.length).toBeGreaterThan(2);
      const key = /X-API-Key: (cwk_\S+)'/.exec(banner)?.[1] as string;
      const pages = urls.filter((p) => !p.includes("...") && !p.startsWith("/v1/tasks/") && !p.startsWith("/v1/frameworks/"));
      for (const path of pages) {
        // GraphiQL is a page a browser opens; without it, /graphql is for POSTs, as the banner says.
        const request =
          path === "/graphql" && !graphiql
            ? new Request(`http://test${path}`, {
                method: "POST",
                headers: { "content-type": "application/json", "x-api-key": key },
                body: JSON.stringify({ query: "{ __typename }" }),
              })
            : new Request(`http://test${path}`, { headers: { accept: "text/html" } });
        const page = await app.fetch(request);
        expect(page.status, path).toBeLessThan(400);
      }
      const taskPath = urls.find((p) => p.startsWith("/v1/tasks/")) as string;
      const task = await app.fetch(new Request(`http://test${taskPath}`, { headers: { "x-api-key": key } }));
      expect(task.status).toBe(200);
      // The demo's SOC 2, adopted by the key's organization.
      const frameworkPath = urls.find((p) => p.startsWith("/v1/frameworks/")) as string;
      const framework = await app.fetch(new Request(`http://test${frameworkPath}`, { headers: { "x-api-key": key } }));
      expect(await framework.json()).toMatchObject({ adopted: true, readiness: { ready: 4, notReady: 4 } });
      // Every id it prints belongs to the key's organization.
      const ids = /Ids to try:\s+task (\S+), vendor (\S+), policy (\S+), member (\S+)/.exec(banner)?.slice(1) as string[];
      for (const path of [`/v1/tasks/${ids[0]}`, `/v1/vendors/${ids[1]}`, `/v1/policies/${ids[2]}`, `/v1/people/${ids[3]}`]) {
        const res = await app.fetch(new Request(`http://test${path}`, { headers: { "x-api-key": key } }));
        expect(res.status, path).toBe(200);
      }
      // The README's first write: a comment by the key, acting for the user id it prints.
      const userId = /User id:\s+(usr_\S+)/.exec(banner)?.[1];
      expect(userId).toBeDefined();
      const comment = await app.fetch(
        new Request("http://test/v1/comments", {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify({ content: "Reviewed", entityType: "task", entityId: ids[0], userId }),
        }),
      );
      expect(comment.status, await comment.clone().text()).toBe(201);
    });
  }
});
