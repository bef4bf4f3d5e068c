import { describe, expect, it } from "vitest";
import { mentionedIds } from "../../src/modules/comments/mentions.js";
import { deepLink } from "../../src/modules/notifications/notifications.service.js";
import { loadConfig } from "../../src/platform/config.js";

describe(mentionedIds.name, () => {
  it("reads mention nodes anywhere in TipTap/ProseMirror JSON, in order, once each", () => {
    const doc = {
      type: "doc",
      content: [
        { type: "paragraph", content: [{ type: "mention", attrs: { id: "mem_b", label: "B" } }] },
        {
          type: "bulletList",
          content: [
            { type: "listItem", content: [{ type: "paragraph", content: [{ type: "mention", attrs: { id: "mem_a" } }] }] },
          ],
        },
        { type: "mention", attrs: { id: "mem_b" } },
      ],
    };
    expect(mentionedIds(JSON.stringify(doc))).toEqual(["mem_b", "mem_a"]);
  });

  it("reads @[Display name](mem_…) markup in plain text and in the text nodes of JSON", () => {
    expect(mentionedIds("Hi @[Ada Lovelace](mem_01ab) and @[Grace](mem_02cd), @[Ada](mem_01ab)")).toEqual([
      "mem_01ab",
      "mem_02cd",
    ]);
    const doc = { type: "doc", content: [{ type: "text", text: "ping @[Alan](mem_03ef)" }] };
    expect(mentionedIds(JSON.stringify(doc))).toEqual(["mem_03ef"]);
  });

  it("finds nothing in text that only looks like a mention, and never throws", () => {
    for (const content of [
      "mail me at a@example.com",
      "@[unterminated](mem_01",
      "[link](mem_01ab)",
      "@[x](usr_01ab)",
      '{"type":"mention"}',
      '{"type":"mention","attrs":{"id":7}}',
      "[[[[",
      "null",
      "42",
      `${"[".repeat(1500)}${"]".repeat(1500)}`,
    ]) {
      expect(mentionedIds(content), content.slice(0, 30)).toEqual([]);
    }
  });

  it("walks a deeply nested document without exhausting the stack", () => {
    const depth = 5000;
    const text = `${'{"content":['.repeat(depth)}{"type":"mention","attrs":{"id":"mem_deep"}}${"]}".repeat(depth)}`;
    expect(mentionedIds(text)).toEqual(["mem_deep"]);
  });
});

describe(deepLink.name, () => {
  const links = { appUrl: "https://app.example.com", trustedOrigins: ["http://localhost:5173"] };
  const task = { type: "task", id: "tsk_1" } as const;

  it("is null without APP_URL, whatever the contextUrl", () => {
    expect(deepLink({}, "org_1", task, "https://app.example.com/org_1/tasks/tsk_1")).toBeNull();
  });

  it("takes a contextUrl on a trusted origin inside the organization, and nothing else", () => {
    expect(deepLink(links, "org_1", task, "http://localhost:5173/org_1/x?y=1")).toBe("http://localhost:5173/org_1/x?y=1");
    for (const url of [
      "https://app.example.com/org_12/tasks/tsk_1",
      "https://app.example.com/org_1",
      "https://app.example.com.evil.test/org_1/x",
      "https://app.example.com/org_1/../org_2/x",
      "ftp://app.example.com/org_1/x",
      "not a url",
    ]) {
      expect(deepLink(links, "org_1", task, url), url).toBe("https://app.example.com/org_1/tasks/tsk_1");
    }
  });

  it("falls back to the record's page; a task item to its parent's", () => {
    expect(deepLink(links, "org_1", { type: "policy", id: "pol_1" })).toBe("https://app.example.com/org_1/policies/pol_1");
    expect(deepLink(links, "org_1", { type: "task_item", id: "tski_1", parentType: "vendor", parentId: "vnd_1" })).toBe(
      "https://app.example.com/org_1/vendors/vnd_1?taskItemId=tski_1",
    );
  });
});

describe("APP_URL", () => {
  it("takes an origin, with or without a trailing slash", () => {
    expect(loadConfig({}).appUrl).toBeUndefined();
    expect(loadConfig({ APP_URL: "https://app.example.com" }).appUrl).toBe("https://app.example.com");
    expect(loadConfig({ APP_URL: "http://localhost:5173/" }).appUrl).toBe("http://localhost:5173");
  });

  it("refuses anything that is not an http(s) origin, naming the variable", () => {
    for (const value of [
      "app.example.com",
      "ftp://app.example.com",
      "https://app.example.com/app",
      "https://a@app.example.com",
    ]) {
      expect(() => loadConfig({ APP_URL: value }), value).toThrow(/APP_URL/);
    }
  });
});
