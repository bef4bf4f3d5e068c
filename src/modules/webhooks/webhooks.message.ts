import { type AttemptResult, sign } from "./webhooks.http.js";

export type Sent = AttemptResult;

type Signing = { secret: string; previousSecret: string | null; previousSecretUntil: Date | null };

/**
 * The Standard Webhooks headers of one attempt: `webhook-id` (the same on every attempt and every
 * endpoint), this attempt's `webhook-timestamp`, and `webhook-signature` with the current secret,
 * and the previous one beside it for 24 hours after a rotation.
 */
export function buildMessage(endpoint: Signing, id: string, body: string, now = new Date()) {
  const timestamp = Math.floor(now.getTime() / 1000);
  const signatures = [sign(endpoint.secret, id, timestamp, body)];
  if (endpoint.previousSecret && endpoint.previousSecretUntil && endpoint.previousSecretUntil > now) {
    signatures.push(sign(endpoint.previousSecret, id, timestamp, body));
  }
  return {
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signatures.join(" "),
    },
  };
}

export function succeeded(sent: Sent): boolean {
  return sent.status !== null && sent.status >= 200 && sent.status < 300;
}

/** The delivery's columns after an attempt; `nextAttemptAt` null ends it (succeeded, or failed for good). */
export function recordAttempt(sent: Sent, attempts: number, nextAttemptAt: Date | null) {
  const ok = succeeded(sent);
  return {
    status: ok ? ("succeeded" as const) : nextAttemptAt ? ("retrying" as const) : ("failed" as const),
    attempts,
    lastAttemptAt: new Date(),
    nextAttemptAt: ok ? null : nextAttemptAt,
    lockedUntil: null,
    // The job that carried this attempt is done; a retry gets a new one from the relay.
    jobId: null,
    responseStatus: sent.status,
    responseBody: sent.body,
    durationMs: sent.durationMs,
    error: ok ? null : (sent.error ?? `the endpoint answered ${sent.status}`),
  };
}
