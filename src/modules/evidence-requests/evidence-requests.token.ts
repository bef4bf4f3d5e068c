import { createHmac } from "node:crypto";
import { hashLinkToken, LINK_PATH } from "../../auth/evidence-request-links.js";
import { type KeptSecret, secretReader } from "../../platform/kept-secrets.js";

/**
 * The link of an evidence request. Its token is 256 bits, HMAC-SHA256 of the request's id and link
 * generation under the link secret (EVIDENCE_REQUEST_LINK_SECRET, else one the service keeps), as
 * base64url: unguessable without the secret, stored nowhere (only its SHA-256 is, in
 * EvidenceRequest.tokenHash), and yet rebuilt by the mail worker for a reminder or a rejection
 * sent days later, so that no job payload or log line ever holds it. A resend raises the
 * generation: the old token's hash is replaced, and the old link is dead at once.
 */
export type LinkTokens = {
  /** The token of a generation of a request's link. */
  token(evidenceRequestId: string, generation: number): Promise<string>;
  /** The token and the hash that identifies it (EvidenceRequest.tokenHash). */
  issue(evidenceRequestId: string, generation: number): Promise<{ token: string; tokenHash: string }>;
  /** The page's URL for a token: `<base>/requests/<token>`. */
  url(base: string, token: string): string;
};

export function linkTokens(secret: KeptSecret): LinkTokens {
  const key = secretReader(secret);
  const token = async (evidenceRequestId: string, generation: number) =>
    createHmac("sha256", await key())
      .update(`evidence-request-link\n${evidenceRequestId}\n${generation}`)
      .digest("base64url");
  return {
    token,
    async issue(evidenceRequestId, generation) {
      const value = await token(evidenceRequestId, generation);
      return { token: value, tokenHash: hashLinkToken(value) };
    },
    url: (base, value) => `${base.replace(/\/+$/, "")}${LINK_PATH}${value}`,
  };
}
