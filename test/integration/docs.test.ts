import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { graphiqlExamples } from "../../src/http/graphiql.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const get = (path: string, headers: Record<string, string> = {}) => t.app.fetch(new Request(`http://test${path}`, { headers }));

/** Every URL a page loads: src and href attributes, plus the extra ones a test names. */
function assetUrls(html: string): string[] {
  return [...html.matchAll(/\s(?:src|href)="([^"]*)"/g)].map((m) => m[1] as string);
}

function expectOwnUrls(html: string, urls: string[]) {
  expect(urls.length).toBeGreaterThan(0);
  for (const url of urls) expect(url, url).toMatch(/^\/[^/]/);
  expect(html).not.toMatch(/https?:\/\//);
}

describe("REST docs at /v1/docs", () => {
  it("serves Swagger UI without a credential, loading only this server's assets", async () => {
    const res = await get("/v1/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    const html = await res.text();
    const urls = assetUrls(html);
    expectOwnUrls(html, urls);
    expect(urls.some((u) => u.startsWith("/v1/docs/swagger-ui-bundle.js"))).toBe(true);

    const types: Record<string, RegExp> = { js: /^text\/javascript/, css: /^text\/css/, png: /^image\/png$/ };
    for (const url of urls) {
      const asset = await get(url);
      expect(asset.status, url).toBe(200);
      const extension = new URL(url, "http://test").pathname.split(".").pop() as string;
      expect(asset.headers.get("content-type"), url).toMatch(types[extension] as RegExp);
      expect((await asset.arrayBuffer()).byteLength, url).toBeGreaterThan(0);
    }
    const init = await (await get("/v1/docs/init.js")).text();
    expect(init).toContain('url: "/v1/openapi.json"');
    expect(init).toContain("validatorUrl: null");
    expect((await get("/v1/docs/")).status).toBe(200);
  });

  it("answers a file it does not serve with a JSON 404, and a write with 405", async () => {
    const missing = await get("/v1/docs/../package.json");
    expect(missing.status).toBe(404);
    const other = await get("/v1/docs/swagger-initializer.js");
    expect(other.status).toBe(404);
    expect(await other.json()).toMatchObject({ code: "NOT_FOUND" });
    const post = await t.app.fetch(new Request("http://test/v1/docs", { method: "POST" }));
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("points at the OpenAPI document, which needs no credential either", async () => {
    const res = await get("/v1/openapi.json");
    expect(res.status).toBe(200);
    expect((await res.json()).openapi).toBe("3.1.0");
  });
});

describe("GraphiQL at /graphql", () => {
  async function page() {
    const res = await get("/graphql", { accept: "text/html" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await res.text();
    const options = /renderYogaGraphiQL\(document\.getElementById\("root"\), (.*)\)\);/.exec(html)?.[1];
    const workers = /const workerUrls = (.*);/.exec(html)?.[1];
    return { html, options: JSON.parse(options as string), workers: Object.values(JSON.parse(workers as string)) as string[] };
  }

  it("opens with the X-API-Key header to fill and the example operations", async () => {
    const { options } = await page();
    expect(JSON.parse(options.headers)).toEqual({ "X-API-Key": "" });
    expect(options.defaultQuery).toBe(graphiqlExamples);
    for (const name of ["GetTask", "TaskItemStats", "CreateComment", "UnlinkDevice", "CreatePolicyVersion"]) {
      expect(options.defaultQuery).toMatch(new RegExp(`(query|mutation) ${name}\\(`));
    }
  });

  it("loads its scripts, styles and editor workers from this server, not a CDN", async () => {
    const { html, workers } = await page();
    const urls = [...assetUrls(html), ...workers];
    expectOwnUrls(html, urls);
    const types: Record<string, RegExp> = { js: /^text\/javascript/, css: /^text\/css/, ico: /^image\/x-icon$/ };
    for (const url of urls) {
      const asset = await get(url);
      expect(asset.status, url).toBe(200);
      expect(asset.headers.get("content-type"), url).toMatch(types[url.split(".").pop() as string] as RegExp);
      expect((await asset.arrayBuffer()).byteLength, url).toBeGreaterThan(1000);
    }
    expect((await get("/graphiql/nothing.js")).status).toBe(404);
  });

  it("is off in production, assets included", async () => {
    const app = createApp({
      database: t.database,
      config: { production: true, bodyLimitBytes: 1024 * 1024 },
      logger: pino({ level: "silent" }),
    });
    const html = await app.fetch(new Request("http://test/graphql", { headers: { accept: "text/html" } }));
    expect(await html.text()).not.toContain("renderYogaGraphiQL");
    expect((await app.fetch(new Request("http://test/graphiql/graphiql.js"))).status).toBe(404);
    expect((await app.fetch(new Request("http://test/v1/docs"))).status).toBe(200);
  });
});
