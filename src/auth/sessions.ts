import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../platform/db/database.js";
import { NotFoundError } from "../platform/errors.js";
import { newId } from "../platform/ids.js";

const TOKEN_PATTERN = /^cws_[A-Za-z0-9_-]{43}$/;

export function hashSessionToken(token: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash("sha256").update(token).digest());
}

export function isSessionToken(value: string): boolean {
  return TOKEN_PATTERN.test(value);
}

/** A session for the user; the token (256 random bits) is returned once and stored only hashed. */
export async function createSession(db: Db, userId: string, ttlMs: number) {
  const user = await db.user.findUnique({ where: { id: userId }, select: { id: true } });
  if (!user) throw new NotFoundError("User", userId);
  const token = `cws_${randomBytes(32).toString("base64url")}`;
  const expiresAt = new Date(Date.now() + ttlMs);
  await db.session.create({ data: { id: newId("ses"), userId, tokenHash: hashSessionToken(token), expiresAt } });
  return { token, expiresAt: expiresAt.toISOString() };
}
