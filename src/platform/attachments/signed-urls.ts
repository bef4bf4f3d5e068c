import { createHmac, timingSafeEqual } from "node:crypto";
import { type AttachmentStore, type StoreKind, uploadHeaders } from "./store.js";

/**
 * The URLs the service signs for stores that cannot sign their own (filesystem, database), served
 * by src/http/attachment-objects.ts: HMAC-SHA256 over every fact the URL admits, so that an altered
 * URL (another key, size, type, name or expiry) no longer verifies.
 */
export const OBJECTS_PATH = "/attachment-objects/";

export type UploadGrant = {
  op: "upload";
  store: StoreKind;
  key: string;
  expires: number;
  size: number;
  type: string;
  sha256: string;
};
export type DownloadGrant = { op: "download"; store: StoreKind; key: string; expires: number; name: string; type: string };
export type Grant = UploadGrant | DownloadGrant;

export type ServiceUrls = {
  /** An absolute URL on `origin` (PUBLIC_URL when set) for this grant. */
  sign(grant: Grant, origin: string | undefined): Promise<string>;
  /** The grant of a URL whose signature holds and whose expiry has not passed, or why not. */
  verify(url: URL, now?: number): Promise<Grant | "altered" | "expired">;
};

/** The secret itself, or how to get it once when first needed (from the database: create-store.ts). */
export type UrlSecret = string | (() => Promise<string>);

const uploadFields = ["op", "store", "expires", "size", "type", "sha256"] as const;
const downloadFields = ["op", "store", "expires", "name", "type"] as const;

export function serviceUrls(urlSecret: UrlSecret, publicUrl: string | undefined): ServiceUrls {
  let secret: Promise<string> | undefined;
  const secretOnce = () => {
    secret ??= typeof urlSecret === "string" ? Promise.resolve(urlSecret) : urlSecret();
    secret.catch(() => {
      secret = undefined;
    });
    return secret;
  };
  const mac = async (grant: Grant) =>
    createHmac("sha256", await secretOnce())
      .update(
        JSON.stringify(
          grant.op === "upload"
            ? ["v1", grant.op, grant.store, grant.key, grant.expires, grant.size, grant.type, grant.sha256]
            : ["v1", grant.op, grant.store, grant.key, grant.expires, grant.name, grant.type],
        ),
      )
      .digest();

  return {
    async sign(grant, origin) {
      const base = publicUrl ?? origin;
      if (!base) throw new Error("A service-signed attachment URL needs PUBLIC_URL or the request's origin");
      const url = new URL(`${OBJECTS_PATH}${grant.key}`, `${base}/`);
      const fields = grant.op === "upload" ? uploadFields : downloadFields;
      for (const field of fields) url.searchParams.set(field, String(grant[field as keyof Grant]));
      url.searchParams.set("sig", (await mac(grant)).toString("base64url"));
      return url.toString();
    },
    async verify(url, now = Date.now()) {
      const q = url.searchParams;
      const key = url.pathname.slice(url.pathname.lastIndexOf("/") + 1);
      const store = q.get("store");
      if (store !== "filesystem" && store !== "database") return "altered";
      const expires = Number(q.get("expires"));
      const base = { store, key, expires } as const;
      let grant: Grant;
      if (q.get("op") === "upload") {
        const size = Number(q.get("size"));
        grant = { op: "upload", ...base, size, type: q.get("type") ?? "", sha256: q.get("sha256") ?? "" };
      } else if (q.get("op") === "download") {
        grant = { op: "download", ...base, name: q.get("name") ?? "", type: q.get("type") ?? "" };
      } else {
        return "altered";
      }
      // The signature as written, not as decoded: base64url ignores the last character's low bits,
      // so two spellings would decode alike and an altered URL would pass.
      const given = Buffer.from(q.get("sig") ?? "");
      const expected = Buffer.from((await mac(grant)).toString("base64url"));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "altered";
      if (!Number.isSafeInteger(expires) || expires * 1000 <= now) return "expired";
      return grant;
    },
  };
}

/** signUpload and signDownload of a store whose URLs the service signs and serves. */
export function serviceSigned(
  store: "filesystem" | "database",
  urls: ServiceUrls,
): Pick<AttachmentStore, "signUpload" | "signDownload"> {
  const expiry = (seconds: number) => Math.floor(Date.now() / 1000) + seconds;
  return {
    async signUpload(key, o) {
      const expires = expiry(o.expiresInSeconds);
      const url = await urls.sign({ op: "upload", store, key, expires, size: o.size, type: o.type, sha256: o.sha256 }, o.origin);
      return { url, method: "PUT", headers: uploadHeaders(o), expiresAt: new Date(expires * 1000) };
    },
    async signDownload(key, o) {
      const expires = expiry(o.expiresInSeconds);
      const url = await urls.sign({ op: "download", store, key, expires, name: o.fileName, type: o.type }, o.origin);
      return { url, expiresAt: new Date(expires * 1000) };
    },
  };
}
