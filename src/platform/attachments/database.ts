import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db } from "../db/database.js";
import { isDatabaseUnavailable } from "../db/unavailable.js";
import { type ServiceUrls, serviceSigned } from "./signed-urls.js";
import { type AttachmentStore, checkedBytes, measure, ObjectExistsError, StoreUnavailableError, withinTimeout } from "./store.js";

/** Bytes of one AttachmentObjectPart row: no read or write holds more of a file at once. */
export const PART_BYTES = 1024 * 1024;

/**
 * Objects in the database: parts of 1 MiB (AttachmentObjectPart), then the AttachmentObject row
 * once every part is in. Parts are written under a staging key and take the object's key in the
 * transaction that creates its row, so an object exists only complete, and only once. The service
 * signs and serves the URLs.
 */
export function createDatabaseStore(options: { db: Db; urls: ServiceUrls; timeoutMs: number }): AttachmentStore {
  const { db, urls, timeoutMs } = options;
  const timed = <T>(what: string, work: () => Promise<T>) =>
    withinTimeout(timeoutMs, what, () => work().catch((error) => Promise.reject(unavailableOr(error))));
  const objectOf = (key: string) => timed("read", () => db.attachmentObject.findUnique({ where: { objectKey: key } }));

  async function* parts(key: string) {
    for (let part = 0; ; part++) {
      const row = await timed("read", () =>
        db.attachmentObjectPart.findUnique({ where: { objectKey_part: { objectKey: key, part } }, select: { data: true } }),
      );
      if (!row) return;
      yield Buffer.from(row.data);
    }
  }

  return {
    kind: "database",

    async put(key, body, expect) {
      if (await objectOf(key)) throw new ObjectExistsError(key);
      const staging = `${key}.${Date.now()}.${randomBytes(6).toString("hex")}`;
      const writePart = (part: number, data: Uint8Array<ArrayBuffer>) =>
        timed("write", () => db.attachmentObjectPart.create({ data: { objectKey: staging, part, data } }));
      try {
        const checked = checkedBytes(expect);
        const source = body instanceof Uint8Array ? Readable.from([body]) : body;
        const flowing = pipeline(source, checked);
        flowing.catch(() => {});
        let part = 0;
        let buffer = Buffer.allocUnsafe(PART_BYTES);
        let filled = 0;
        for await (const chunk of checked as AsyncIterable<Buffer>) {
          for (let offset = 0; offset < chunk.length; ) {
            const n = Math.min(PART_BYTES - filled, chunk.length - offset);
            chunk.copy(buffer, filled, offset, offset + n);
            filled += n;
            offset += n;
            if (filled === PART_BYTES) {
              await writePart(part++, buffer);
              buffer = Buffer.allocUnsafe(PART_BYTES);
              filled = 0;
            }
          }
        }
        await flowing;
        if (filled > 0 || part === 0) await writePart(part, buffer.subarray(0, filled));
        await timed("write", () =>
          db.$transaction([
            db.attachmentObject.create({ data: { objectKey: key, size: expect.size, sha256: expect.sha256, type: expect.type } }),
            db.attachmentObjectPart.updateMany({ where: { objectKey: staging }, data: { objectKey: key } }),
          ]),
        ).catch((error) => {
          throw error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002"
            ? new ObjectExistsError(key)
            : error;
        });
      } catch (error) {
        await db.attachmentObjectPart.deleteMany({ where: { objectKey: staging } }).catch(() => {});
        throw unavailableOr(error);
      }
    },

    async open(key) {
      const object = await objectOf(key);
      if (!object) return null;
      return { body: Readable.from(parts(key), { objectMode: false }), size: object.size };
    },

    async digest(key) {
      const object = await objectOf(key);
      if (!object) return null;
      return measure(Readable.from(parts(key), { objectMode: false }));
    },

    async delete(key) {
      await timed("delete", () =>
        db.$transaction([
          db.attachmentObject.deleteMany({ where: { objectKey: key } }),
          db.attachmentObjectPart.deleteMany({ where: { objectKey: key } }),
        ]),
      );
    },

    ...serviceSigned("database", urls),

    async ping() {
      await timed("ping", () => db.$queryRaw`SELECT 1`);
    },

    async sweepIncomplete(startedBefore) {
      // A staging key is `<key>.<start in ms>.<random>`; a complete object's parts carry its key alone.
      return timed(
        "delete",
        () =>
          db.$executeRaw`DELETE FROM "AttachmentObjectPart"
          WHERE "objectKey" ~ '^[0-9a-f]{32}[.][0-9]{13}[.][0-9a-f]+$'
            AND split_part("objectKey", '.', 2)::bigint < ${startedBefore.getTime()}`,
      );
    },
  };
}

function unavailableOr(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !isDatabaseUnavailable(error)) return error;
  return new StoreUnavailableError(
    "The database holding the attachments is unavailable or too slow right now; retry shortly",
    error,
  );
}
