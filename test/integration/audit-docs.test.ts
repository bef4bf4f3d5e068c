import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

// The auditor's snippet of docs/audit.md, run as the page gives it: plain Node, no dependency.
const page = readFileSync(new URL("../../docs/audit.md", import.meta.url), "utf8");
const snippet = /```js verify-export\.mjs\n([\s\S]*?)```/.exec(page)?.[1];

let t: TestApp;
let org: SeedResult;
let dir: string;

beforeAll(async () => {
  t = await createTestApp();
  org = await t.seedOrg();
  for (let i = 0; i < 3; i++) {
    const res = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: {
        content: `Evidence "${i}", with ü and a comma`,
        entityId: org.taskIds[0],
        entityType: "task",
        userId: org.userIds[0],
      },
    });
    expect(res.status).toBe(201);
  }
  dir = mkdtempSync(path.join(tmpdir(), "audit-offline-"));
  writeFileSync(path.join(dir, "verify-export.mjs"), snippet as string);
  writeFileSync(path.join(dir, "public-key.pem"), (await t.rest("GET", "/v1/audit/public-key")).text);
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await t.close();
});

const offline = (exported: string) => {
  writeFileSync(path.join(dir, "audit.jsonl"), exported);
  return spawnSync(process.execPath, ["verify-export.mjs", "audit.jsonl", "public-key.pem"], { cwd: dir, encoding: "utf8" });
};

describe("verifying an export offline, as docs/audit.md shows", () => {
  it("accepts a whole export and a range", async () => {
    expect(snippet).toContain("createPublicKey");
    const whole = await t.rest("GET", "/v1/audit-events/export", { key: org.apiKey });
    const events = await t.db.auditEvent.count({ where: { organizationId: org.organizationId } });
    const run = offline(whole.text);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(`ok: ${events} events, signed through sequence ${events}`);
    const range = offline((await t.rest("GET", "/v1/audit-events/export?from=2&to=4", { key: org.apiKey })).text);
    expect(range.status, range.stderr).toBe(0);
    expect(range.stdout).toContain("ok: 3 events, signed through sequence 4");
  });

  it("refuses a changed event, a removed one and a forged checkpoint", async () => {
    const lines = (await t.rest("GET", "/v1/audit-events/export", { key: org.apiKey })).text.trimEnd().split("\n");
    const changed = [...lines];
    changed[2] = JSON.stringify({ ...JSON.parse(changed[2] as string), action: "task.deleted" });
    const a = offline(`${changed.join("\n")}\n`);
    expect(a.status).toBe(1);
    expect(a.stderr).toContain("sequence 3 does not match its hash");

    const removed = lines.filter((_, i) => i !== 1);
    const b = offline(`${removed.join("\n")}\n`);
    expect(b.status).toBe(1);
    expect(b.stderr).toContain("gap before sequence 3");

    const forged = [...lines];
    const last = JSON.parse(forged[forged.length - 1] as string);
    last.checkpoint.sequence += 1;
    forged[forged.length - 1] = JSON.stringify(last);
    const c = offline(`${forged.join("\n")}\n`);
    expect(c.status).toBe(1);
    expect(c.stderr).toContain("signature is not valid");
  });
});
