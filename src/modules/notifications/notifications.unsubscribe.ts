import { jwtVerify, SignJWT } from "jose";
import type { NotificationReason, Prisma } from "../../generated/prisma/client.js";
import type { MailConfig } from "../../platform/config.js";
import type { Db } from "../../platform/db/database.js";
import { newId } from "../../platform/ids.js";
import { emailColumn, writeEmailPreferences } from "./notifications.service.js";

/** How long an unsubscribe link works after its notification was written (the contract's 90 days). */
export const UNSUBSCRIBE_VALID_DAYS = 90;
const AUDIENCE = "unsubscribe";
const reasons = new Set<string>(Object.keys(emailColumn));

export type UnsubscribeClaim = { memberId: string; reason: NotificationReason };

const keyOf = (secret: string) => new TextEncoder().encode(secret);

/**
 * A token naming a member and a reason: a JWT signed with HS256 and MAIL_UNSUBSCRIBE_SECRET (jose),
 * issued at the notification's time and expiring 90 days later. Derived only from those, so every
 * attempt at a message carries the same link.
 */
export async function unsubscribeToken(secret: string, claim: UnsubscribeClaim & { issuedAt: Date }): Promise<string> {
  const issuedAt = Math.floor(claim.issuedAt.getTime() / 1000);
  return new SignJWT({ reason: claim.reason })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(claim.memberId)
    .setAudience(AUDIENCE)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + UNSUBSCRIBE_VALID_DAYS * 86_400)
    .sign(keyOf(secret));
}

export async function unsubscribeUrl(
  config: Pick<MailConfig, "publicUrl" | "unsubscribeSecret">,
  claim: UnsubscribeClaim & { issuedAt: Date },
) {
  return `${config.publicUrl}/unsubscribe/${await unsubscribeToken(config.unsubscribeSecret, claim)}`;
}

/** The member and reason a token names, or undefined when it is not ours, altered, or expired. */
export async function readUnsubscribeToken(secret: string, token: string): Promise<UnsubscribeClaim | undefined> {
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ["HS256"],
      audience: AUDIENCE,
      requiredClaims: ["exp", "sub"],
    });
    if (typeof payload.sub !== "string" || typeof payload.reason !== "string" || !reasons.has(payload.reason)) return undefined;
    return { memberId: payload.sub, reason: payload.reason as NotificationReason };
  } catch {
    return undefined;
  }
}

export type UnsubscribeOutcome = { done: true; reason: NotificationReason } | { done: false };

/**
 * One-click unsubscribe (RFC 8058): the token is the only credential. Switches that reason's e-mail
 * off for that member, with the audit event any preference change has, its actor the member
 * itself. Idempotent: when it is off already nothing is written.
 */
export function createUnsubscribe(db: Db, secret: string) {
  return {
    /** Whether the token is valid now (the GET page shows the button only then). */
    async check(token: string): Promise<UnsubscribeClaim | undefined> {
      return readUnsubscribeToken(secret, token);
    },
    async apply(token: string, requestId?: string): Promise<UnsubscribeOutcome> {
      const claim = await readUnsubscribeToken(secret, token);
      if (!claim) return { done: false };
      const member = await db.member.findUnique({
        where: { id: claim.memberId },
        select: { organizationId: true, userId: true },
      });
      if (!member) return { done: false };
      await writeEmailPreferences(
        db,
        { memberId: claim.memberId, organizationId: member.organizationId },
        { [claim.reason]: false },
        (changes) => ({
          id: newId("aud"),
          organizationId: member.organizationId,
          actorUserId: member.userId,
          action: "notification_preferences.updated",
          entityType: "notification_preferences",
          entityId: claim.memberId,
          data: { changes, via: "unsubscribe link" } as Prisma.InputJsonValue,
          requestId,
        }),
      );
      return { done: true, reason: claim.reason };
    },
  };
}

export type Unsubscribe = ReturnType<typeof createUnsubscribe>;
