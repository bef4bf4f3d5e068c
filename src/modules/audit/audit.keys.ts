import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { jcs } from "../../platform/audit-chain.js";

/** What a checkpoint states, signed in its RFC 8785 form (contract section 14). */
export type CheckpointStatement = { organizationId: string; sequence: number; hash: string; signedAt: string };
export type SignedCheckpoint = CheckpointStatement & { signature: string };

/** Signs checkpoints with the service's Ed25519 key and checks them with it or a previous one (key rotation). */
export type AuditSigner = {
  /** base64url SHA-256 of the current public key's SPKI (DER). */
  keyId: string;
  /** The current public key: PEM, SPKI (GET /v1/audit/public-key). */
  publicKeyPem: string;
  sign(statement: CheckpointStatement): SignedCheckpoint;
  /** True when `signature` is a valid signature of the statement by the current key or a trusted previous one. */
  verify(statement: CheckpointStatement, signature: string): boolean;
};

const keyIdOf = (publicKey: KeyObject) =>
  createHash("sha256")
    .update(publicKey.export({ type: "spki", format: "der" }))
    .digest("base64url");

/** The four fields, in a fresh object: what is signed never carries more. */
const statementOf = (c: CheckpointStatement): CheckpointStatement => ({
  organizationId: c.organizationId,
  sequence: c.sequence,
  hash: c.hash,
  signedAt: c.signedAt,
});

/**
 * A signer from a PKCS#8 PEM private key (Ed25519). `previousPublicKeys`: PEM text of earlier public
 * keys (SPKI, one or more blocks) whose checkpoints still verify after a key rotation.
 */
export function createAuditSigner(privateKeyPem: string, previousPublicKeys = ""): AuditSigner {
  const privateKey = createPrivateKey({ key: privateKeyPem, format: "pem" });
  if (privateKey.asymmetricKeyType !== "ed25519")
    throw new Error("AUDIT_SIGNING_KEY must be an Ed25519 private key (PKCS#8 PEM)");
  const publicKey = createPublicKey(privateKey);
  const trusted = [
    publicKey,
    ...(previousPublicKeys.match(/-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g) ?? []).map((pem) =>
      createPublicKey(pem),
    ),
  ];
  return {
    keyId: keyIdOf(publicKey),
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    sign(statement) {
      const signed = statementOf(statement);
      return { ...signed, signature: sign(null, Buffer.from(jcs(signed)), privateKey).toString("base64url") };
    },
    verify(statement, signature) {
      const bytes = Buffer.from(jcs(statementOf(statement)));
      const raw = Buffer.from(signature, "base64url");
      return raw.length === 64 && trusted.some((key) => verify(null, bytes, key, raw));
    },
  };
}

/** A new Ed25519 private key, PKCS#8 PEM. */
export function generateAuditSigningKey(): string {
  return generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
}

export const SIGNING_KEY_FILE = "audit-signing-key.pem";

/**
 * The signing key: AUDIT_SIGNING_KEY when set; else, on the embedded database, the key kept in the
 * data directory (made at first start, readable by the owner only); else none (the caller decides).
 */
export function loadAuditSigningKey(options: { pem?: string; dataDir?: string }): string | undefined {
  if (options.pem) return options.pem;
  if (!options.dataDir) return undefined;
  const file = path.join(options.dataDir, SIGNING_KEY_FILE);
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  mkdirSync(options.dataDir, { recursive: true });
  try {
    // "wx": of two processes starting on one directory, the second reads the first's key.
    writeFileSync(file, generateAuditSigningKey(), { flag: "wx", mode: 0o600 });
    chmodSync(file, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return readFileSync(file, "utf8");
}

/** The service's signer from its configuration: AUDIT_SIGNING_KEY, else the key in DATA_DIR (made at first start). */
export function auditSignerFromConfig(config: { dataDir: string; audit: { signingKey?: string; previousPublicKeys?: string } }) {
  const pem = loadAuditSigningKey({ pem: config.audit.signingKey, dataDir: config.dataDir }) as string;
  return createAuditSigner(pem, config.audit.previousPublicKeys);
}
