import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { access, constants, link, mkdir, open, readdir, stat, unlink } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { type ServiceUrls, serviceSigned } from "./signed-urls.js";
import {
  type AttachmentStore,
  checkedBytes,
  isObjectKey,
  measure,
  ObjectExistsError,
  StoreUnavailableError,
  withinTimeout,
} from "./store.js";

/**
 * Objects as files under `dir`, sharded by the key's first two characters: `dir/ab/abcdef…`. A put
 * writes a temporary file beside the object and links it into place (a link never replaces an
 * existing file, so an object is written once); the service signs and serves the URLs.
 */
export function createFilesystemStore(options: { dir: string; urls: ServiceUrls; timeoutMs: number }): AttachmentStore {
  const { dir, urls, timeoutMs } = options;
  const fileOf = (key: string) => objectFile(dir, key);
  const timed = <T>(what: string, work: () => Promise<T>) =>
    withinTimeout(timeoutMs, what, () => work().catch((error) => Promise.reject(unavailableOr(error))));

  async function openFile(key: string) {
    const handle = await timed("open", () => open(fileOf(key), "r").catch(absentAsNull));
    if (!handle) return null;
    try {
      const { size } = await handle.stat();
      return { handle, size };
    } catch (error) {
      await handle.close();
      throw unavailableOr(error);
    }
  }

  return {
    kind: "filesystem",

    async put(key, body, expect) {
      const file = fileOf(key);
      const temp = path.join(path.dirname(file), `.${key}.${randomBytes(6).toString("hex")}.partial`);
      await timed("put", async () => {
        await mkdir(path.dirname(file), { recursive: true });
        if (await exists(file)) throw new ObjectExistsError(key);
      });
      try {
        const source = body instanceof Uint8Array ? Readable.from([body]) : body;
        await pipeline(source, checkedBytes(expect), createWriteStream(temp, { flags: "wx", mode: 0o600 }));
        // EEXIST is the other writer having won, not a store failure: translated before `timed` sees it.
        await timed("put", () =>
          link(temp, file).catch((error) => {
            throw (error as NodeJS.ErrnoException).code === "EEXIST" ? new ObjectExistsError(key) : error;
          }),
        );
      } catch (error) {
        throw unavailableOr(error);
      } finally {
        await unlink(temp).catch(() => {});
      }
    },

    async open(key) {
      const opened = await openFile(key);
      if (!opened) return null;
      return { body: opened.handle.createReadStream(), size: opened.size };
    },

    async digest(key) {
      const opened = await openFile(key);
      if (!opened) return null;
      return measure(opened.handle.createReadStream()).catch((error) => Promise.reject(unavailableOr(error)));
    },

    async delete(key) {
      await timed("delete", () => unlink(fileOf(key)).catch(absentAsNull));
    },

    ...serviceSigned("filesystem", urls),

    async ping() {
      await timed("ping", async () => {
        await mkdir(dir, { recursive: true });
        await access(dir, constants.R_OK | constants.W_OK);
      });
    },

    async sweepIncomplete(startedBefore) {
      let removed = 0;
      for (const shard of (await readdir(dir).catch(absentAsNull)) ?? []) {
        for (const name of (await readdir(path.join(dir, shard)).catch(absentAsNull)) ?? []) {
          if (!name.startsWith(".") || !name.endsWith(".partial")) continue;
          const file = path.join(dir, shard, name);
          const facts = await stat(file).catch(absentAsNull);
          if (facts && facts.mtime < startedBefore && (await unlink(file).then(() => true, absentAsNull))) removed++;
        }
      }
      return removed;
    },
  };
}

async function exists(file: string): Promise<boolean> {
  return Boolean(await stat(file).catch(absentAsNull));
}

function absentAsNull(error: NodeJS.ErrnoException): null {
  if (error.code === "ENOENT") return null;
  throw error;
}

/** A file system error that is no fault of the request (full disk, I/O error, no permission): the store is unavailable. */
function unavailableOr(error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code) && code !== "ENOENT")
    return new StoreUnavailableError(`The attachment store cannot be used right now (${code}); retry shortly`, error);
  return error;
}

/** The file of an object (`dir/ab/abcdef…`): where an operator or a test finds its bytes. */
export function objectFile(dir: string, key: string): string {
  if (!isObjectKey(key)) throw new Error(`Not an object key: ${JSON.stringify(key)}`);
  return path.join(dir, key.slice(0, 2), key);
}
