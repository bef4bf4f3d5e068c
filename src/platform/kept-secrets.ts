import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Db } from "./db/database.js";

/** A secret, or how to read it once it is first needed (from the database, shared by the replicas). */
export type KeptSecret = string | (() => Promise<string>);

/**
 * A secret the replicas share: the configured one when given; else, on the embedded database, one
 * kept in a file of DATA_DIR (mode 0600), and on PostgreSQL one kept in the database's
 * ServiceSecret table, made by the first replica that needs it and read by the others.
 */
export function keptSecret(
  where: { given: string | undefined; dataDir: string; databaseUrl?: string; file: string; name: string },
  db?: Db,
): KeptSecret {
  if (where.given) return where.given;
  if (!where.databaseUrl) return secretInDataDir(where.dataDir, where.file);
  return async () => {
    if (!db) throw new Error(`the secret ${where.name} is kept in the database: pass the database`);
    await db.serviceSecret.createMany({
      data: [{ name: where.name, value: randomBytes(32).toString("base64url") }],
      skipDuplicates: true,
    });
    return (await db.serviceSecret.findUniqueOrThrow({ where: { name: where.name } })).value;
  };
}

/** Reads a kept secret once, and again after a failure (the database did not answer). */
export function secretReader(secret: KeptSecret): () => Promise<string> {
  let read: Promise<string> | undefined;
  return () => {
    read ??= typeof secret === "string" ? Promise.resolve(secret) : secret();
    read.catch(() => {
      read = undefined;
    });
    return read;
  };
}

function secretInDataDir(dataDir: string, name: string): string {
  const file = path.join(dataDir, name);
  try {
    return readFileSync(file, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  try {
    // "wx": of two processes starting on one directory, the second reads the first's secret.
    writeFileSync(file, randomBytes(32).toString("base64url"), { flag: "wx", mode: 0o600 });
    chmodSync(file, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return readFileSync(file, "utf8").trim();
}
