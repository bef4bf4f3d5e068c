import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  auditSignerFromConfig,
  createAuditSigner,
  generateAuditSigningKey,
  loadAuditSigningKey,
} from "../../src/modules/audit/audit.keys.js";
import { loadConfig } from "../../src/platform/config.js";

const statement = { organizationId: "org_1", sequence: 3, hash: "a".repeat(64), signedAt: "2026-11-26T08:00:00.000Z" };

describe("audit signing keys", () => {
  it("reads AUDIT_SIGNING_KEY with \\n for line breaks, and refuses what is not a PKCS#8 PEM or a number of days", () => {
    const pem = generateAuditSigningKey();
    const config = loadConfig({ AUDIT_SIGNING_KEY: pem.trim().replaceAll("\n", "\\n"), AUDIT_RETENTION_DAYS: "30" });
    expect(config.audit).toMatchObject({ signingKey: pem.trim(), retentionDays: 30, checkpointSeconds: 60, chain: true });
    expect(createAuditSigner(config.audit.signingKey as string).keyId).toBe(createAuditSigner(pem).keyId);
    expect(() => loadConfig({ AUDIT_SIGNING_KEY: "secret" })).toThrow(/AUDIT_SIGNING_KEY/);
    expect(() => loadConfig({ AUDIT_RETENTION_DAYS: "0" })).toThrow(/AUDIT_RETENTION_DAYS/);
    expect(() => loadConfig({ AUDIT_CHECKPOINT_SECONDS: "0" })).toThrow(/AUDIT_CHECKPOINT_SECONDS/);
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 })
      .privateKey.export({ type: "pkcs8", format: "pem" })
      .toString();
    expect(() => createAuditSigner(rsa)).toThrow(/Ed25519/);
  });

  it("makes the key in DATA_DIR once, readable by its owner only, and uses it after", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "audit-key-"));
    try {
      const first = loadAuditSigningKey({ dataDir: dir }) as string;
      expect(first).toContain("-----BEGIN PRIVATE KEY-----");
      const file = path.join(dir, "audit-signing-key.pem");
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(loadAuditSigningKey({ dataDir: dir })).toBe(first);
      expect(readFileSync(file, "utf8")).toBe(first);
      const signer = auditSignerFromConfig({ dataDir: dir, audit: {} });
      expect(signer.keyId).toBe(createAuditSigner(first).keyId);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("verifies checkpoints of the current key and of previous keys listed after a rotation, and nothing else", () => {
    const old = createAuditSigner(generateAuditSigningKey());
    const other = createAuditSigner(generateAuditSigningKey());
    const current = createAuditSigner(generateAuditSigningKey(), `${old.publicKeyPem}\n`);
    const byOld = old.sign(statement);
    expect(current.verify(statement, current.sign(statement).signature)).toBe(true);
    expect(current.verify(statement, byOld.signature)).toBe(true);
    expect(current.verify(statement, other.sign(statement).signature)).toBe(false);
    expect(current.verify({ ...statement, sequence: 4 }, byOld.signature)).toBe(false);
    expect(Buffer.from(byOld.signature, "base64url")).toHaveLength(64);
  });
});
