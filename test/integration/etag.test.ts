import { describe, expect, it } from "vitest";
import { openFixture } from "../helpers/fixtures.js";

const { t, org } = await openFixture({ organizations: 1 });

describe("conditional GET", () => {
  it("tags REST reads, answers 304 with no body for a matching If-None-Match, and changes the tag when the record changes", async () => {
    const path = `/v1/tasks/${org.taskIds[0]}`;
    const first = await t.rest("GET", path, { key: org.apiKey });
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag") as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect(first.headers.get("cache-control")).toBe("private, no-cache");

    const again = await t.rest("GET", path, { key: org.apiKey, headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    expect(again.headers.get("etag")).toBe(etag);
    expect((await t.rest("GET", path, { key: org.apiKey, headers: { "if-none-match": `W/${etag}, "other"` } })).status).toBe(304);

    expect((await t.rest("PATCH", path, { key: org.apiKey, body: { title: "Renamed" } })).status).toBe(200);
    const changed = await t.rest("GET", path, { key: org.apiKey, headers: { "if-none-match": etag } });
    expect(changed.status).toBe(200);
    expect(changed.body.title).toBe("Renamed");
    expect(changed.headers.get("etag")).not.toBe(etag);
  });

  it("tags lists and downloads, and never errors or writes", async () => {
    const list = await t.rest("GET", "/v1/people", { key: org.apiKey });
    expect(list.headers.get("etag")).toBeTruthy();
    expect(
      (await t.rest("GET", "/v1/people", { key: org.apiKey, headers: { "if-none-match": list.headers.get("etag") as string } }))
        .status,
    ).toBe(304);
    const missing = await t.rest("GET", "/v1/tasks/tsk_missing", { key: org.apiKey, headers: { "if-none-match": "*" } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("etag")).toBeNull();
    const created = await t.rest("POST", "/v1/tasks", { key: org.apiKey, body: { title: "x" } });
    expect(created.headers.get("etag")).toBeNull();
  });
});
