import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { attachmentUrlSecret } from "../../src/platform/attachments/create-store.js";
import { loadConfig } from "../../src/platform/config.js";

const postgres = { DATABASE_URL: "postgresql://app@db.internal/app" };
const secret = { ATTACHMENT_URL_SECRET: "0123456789abcdef0123456789abcdef" };

describe("attachment configuration", () => {
  it("needs nothing on the embedded database: the filesystem store under DATA_DIR, 100 MiB, 900 s and 300 s, 5 GiB unattached", () => {
    expect(loadConfig({ DATA_DIR: "/var/lib/gateway" }).attachments).toEqual({
      store: "filesystem",
      dir: path.join("/var/lib/gateway", "attachments"),
      s3: undefined,
      urlSecret: undefined,
      publicUrl: undefined,
      maxBytes: 100 * 1024 * 1024,
      uploadTtlSeconds: 900,
      downloadTtlSeconds: 300,
      timeoutMs: 5_000,
      unattachedMaxBytes: 5 * 1024 * 1024 * 1024,
    });
    expect(loadConfig({ ATTACHMENT_UNATTACHED_MAX_BYTES: "1073741824" }).attachments.unattachedMaxBytes).toBe(1024 ** 3);
    expect(() => loadConfig({ ATTACHMENT_UNATTACHED_MAX_BYTES: "0" })).toThrow(/ATTACHMENT_UNATTACHED_MAX_BYTES/);
  });

  it("defaults to the database store on PostgreSQL, 10 MiB a file, with nothing new to set", () => {
    expect(loadConfig(postgres).attachments).toMatchObject({
      store: "database",
      maxBytes: 10 * 1024 * 1024,
      urlSecret: undefined,
    });
    expect(loadConfig({ ...postgres, ...secret }).attachments.urlSecret).toBe(secret.ATTACHMENT_URL_SECRET);
    expect(() => loadConfig({ ...postgres, ATTACHMENT_MAX_BYTES: String(10 * 1024 * 1024 + 1) })).toThrow(
      /ATTACHMENT_MAX_BYTES is at most 10485760 \(10 MiB\) on the database store/,
    );
  });

  it("reads the s3 store's bucket, region, endpoint and path style; S3 signs its own URLs, so no secret is needed", () => {
    const config = loadConfig({
      ...postgres,
      ATTACHMENT_STORE: "s3",
      S3_BUCKET: "evidence",
      S3_REGION: "eu-central-1",
      S3_ENDPOINT: "http://minio.internal:9000",
      S3_FORCE_PATH_STYLE: "true",
      ATTACHMENT_MAX_BYTES: "52428800",
    });
    expect(config.attachments).toMatchObject({
      store: "s3",
      s3: { bucket: "evidence", region: "eu-central-1", endpoint: "http://minio.internal:9000", forcePathStyle: true },
      maxBytes: 52_428_800,
    });
    expect(() => loadConfig({ ATTACHMENT_STORE: "s3" })).toThrow(/ATTACHMENT_STORE=s3 needs S3_BUCKET/);
    expect(() => loadConfig({ S3_BUCKET: "evidence" })).toThrow(/S3_BUCKET needs S3_REGION/);
    expect(() => loadConfig({ S3_BUCKET: "b", S3_REGION: "r", S3_ENDPOINT: "minio:9000" })).toThrow(/S3_ENDPOINT/);
  });

  it("takes PUBLIC_URL alone as the origin of the service's URLs, without asking for e-mail", () => {
    const config = loadConfig({ PUBLIC_URL: "https://api.example.com/" });
    expect(config.attachments.publicUrl).toBe("https://api.example.com");
    expect(config.mail).toBeUndefined();
  });

  it("refuses values out of range, naming the setting", () => {
    expect(() => loadConfig({ ATTACHMENT_STORE: "gcs" })).toThrow(/ATTACHMENT_STORE/);
    expect(() => loadConfig({ ATTACHMENT_MAX_BYTES: String(100 * 1024 * 1024 + 1) })).toThrow(/ATTACHMENT_MAX_BYTES/);
    expect(() => loadConfig({ ATTACHMENT_DOWNLOAD_TTL_SECONDS: "3601" })).toThrow(/ATTACHMENT_DOWNLOAD_TTL_SECONDS/);
    expect(() => loadConfig({ ATTACHMENT_UPLOAD_TTL_SECONDS: "0" })).toThrow(/ATTACHMENT_UPLOAD_TTL_SECONDS/);
    expect(() => loadConfig({ ATTACHMENT_STORE_TIMEOUT_MS: "10" })).toThrow(/ATTACHMENT_STORE_TIMEOUT_MS/);
    expect(() => loadConfig({ ATTACHMENT_URL_SECRET: "short" })).toThrow(/ATTACHMENT_URL_SECRET: must be at least 32 characters/);
    expect(loadConfig({ ATTACHMENT_DOWNLOAD_TTL_SECONDS: "1", ATTACHMENT_UPLOAD_TTL_SECONDS: "1" }).attachments).toMatchObject({
      downloadTtlSeconds: 1,
      uploadTtlSeconds: 1,
    });
  });
});

describe("the URL secret on the embedded database", () => {
  it("is made in DATA_DIR at first start (readable by the owner only) and read back after, unless ATTACHMENT_URL_SECRET is set", () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "url-secret-"));
    try {
      const first = attachmentUrlSecret({ dataDir, attachments: { urlSecret: undefined } }) as string;
      expect(first).toMatch(/^[\w-]{43}$/);
      expect(statSync(path.join(dataDir, "attachment-url-secret")).mode & 0o777).toBe(0o600);
      expect(attachmentUrlSecret({ dataDir, attachments: { urlSecret: undefined } })).toBe(first);
      expect(attachmentUrlSecret({ dataDir, attachments: { urlSecret: secret.ATTACHMENT_URL_SECRET } })).toBe(
        secret.ATTACHMENT_URL_SECRET,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
