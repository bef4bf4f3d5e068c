import { describe, expect, it } from "vitest";
import { withAuditEvent } from "../../src/modules/audit/audit.chain.js";

const event = (entityId: string) => ({
  id: `aev_${entityId}`,
  organizationId: "org_1",
  action: "comment.created",
  entityType: "comment",
  entityId,
  data: { content: entityId },
});
const change = (table: string, value: string) => (param: (value: unknown) => string) => ({
  ctes: `change AS (INSERT INTO "${table}" ("id") VALUES (${param(value)}) RETURNING *)`,
  answer: "SELECT change.* FROM change",
});

describe("withAuditEvent's text kept by shape", () => {
  it("keeps a shape's first text for the process, with each call's own values", () => {
    const first = withAuditEvent(event("a"), change("Comment", "cmt_a"), "comment test");
    // The same shape must mean the same text: what a call builds for it is not looked at again.
    const second = withAuditEvent(event("b"), change("Elsewhere", "cmt_b"), "comment test");
    expect(second.sql).toBe(first.sql);
    expect(second.sql).toContain('INSERT INTO "Comment"');
    expect(second.values).toContain("cmt_b");
    expect(second.values).not.toContain("cmt_a");
    // Without a shape, or with another, the text is the call's own.
    expect(withAuditEvent(event("c"), change("Elsewhere", "x")).sql).toContain('"Elsewhere"');
    expect(withAuditEvent(event("d"), change("Other", "x"), "other test").sql).toContain('"Other"');
  });
});
