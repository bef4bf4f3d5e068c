import type { AttachmentConfig } from "../config.js";
import type { Db } from "../db/database.js";
import { keptSecret } from "../kept-secrets.js";
import { createDatabaseStore } from "./database.js";
import { createFilesystemStore } from "./filesystem.js";
import { createS3Store, type S3StoreSettings } from "./s3.js";
import { type ServiceUrls, serviceUrls, type UrlSecret } from "./signed-urls.js";
import type { AttachmentStore, StoreKind } from "./store.js";

/** The stores the configuration reaches, each made on first use, and the service's own URLs. */
export type AttachmentStores = {
  /** Where new objects go (ATTACHMENT_STORE). */
  store: AttachmentStore;
  /** The store of a row's `store` column; undefined when the configuration cannot reach it (s3 without S3_BUCKET). */
  storeOf(kind: StoreKind): AttachmentStore | undefined;
  /** Signs and checks the URLs of the filesystem and database stores (src/http/attachment-objects.ts). */
  urls: ServiceUrls;
};

export type AttachmentStoreSettings = Pick<AttachmentConfig, "store" | "dir" | "publicUrl" | "timeoutMs"> & {
  s3: S3StoreSettings | undefined;
  /** The secret of the service-signed URLs: attachmentUrlSecret. */
  urlSecret: UrlSecret;
};

export function openAttachmentStores(settings: AttachmentStoreSettings, deps: { db: Db }): AttachmentStores {
  const urls = serviceUrls(settings.urlSecret, settings.publicUrl);
  const made = new Map<StoreKind, AttachmentStore>();
  const make = (kind: StoreKind): AttachmentStore | undefined => {
    const { timeoutMs } = settings;
    switch (kind) {
      case "s3":
        return settings.s3 ? createS3Store({ ...settings.s3, timeoutMs }) : undefined;
      case "filesystem":
        return createFilesystemStore({ dir: settings.dir, urls, timeoutMs });
      case "database":
        return createDatabaseStore({ db: deps.db, urls, timeoutMs });
    }
  };
  const storeOf = (kind: StoreKind) => {
    if (!made.has(kind)) {
      const store = make(kind);
      if (store) made.set(kind, store);
    }
    return made.get(kind);
  };
  const store = storeOf(settings.store);
  if (!store) throw new Error(`ATTACHMENT_STORE=${settings.store} is not configured`);
  return { store, storeOf, urls };
}

/**
 * The secret of the service-signed URLs: ATTACHMENT_URL_SECRET; else, on the embedded database,
 * the one kept in DATA_DIR, and on PostgreSQL the one kept in the database, which every replica
 * reads (made by the first that needs it; read when first needed, so a start does not wait on it).
 */
export function attachmentUrlSecret(
  config: { dataDir: string; databaseUrl?: string; attachments: Pick<AttachmentConfig, "urlSecret"> },
  db?: Db,
): UrlSecret {
  return keptSecret(
    {
      given: config.attachments.urlSecret,
      dataDir: config.dataDir,
      databaseUrl: config.databaseUrl,
      file: "attachment-url-secret",
      name: "attachment-url",
    },
    db,
  );
}
