import type { Readable } from "node:stream";
import type { Logger } from "pino";
import { authenticated } from "../../auth/actor.js";
import { guardedBody } from "../../platform/attachments/guarded-body.js";
import { storedBytesHeaders } from "../../platform/attachments/store.js";
import { BadUserInputError } from "../../platform/errors.js";
import type { DownloadHandler } from "../../rest/rest-plugin.js";
import { type AttachmentService, attachmentEtag } from "./attachments.service.js";

/**
 * GET /v1/attachments/{id}: the REST route of the `attachment` query (routes.ts, `download`),
 * answered with the stored bytes streamed from the store instead of the field's base64, so that
 * no file passes whole through a replica's memory. Same permission and 404 as the field.
 * The ETag is the bytes' SHA-256, known without reading them: If-None-Match answers 304 at once.
 */
export function attachmentDownload(
  attachments: AttachmentService,
  options: { logger: Logger; timeoutMs: number },
): DownloadHandler {
  return async ({ request, params, auth, requestId, abort }) => {
    const actor = authenticated({ auth, requestId });
    const id = decodeURIComponent(params.id ?? "");
    // As the GraphQL field answers (error-masking.ts): PostgreSQL text cannot hold NUL.
    if (id.includes("\u0000")) throw new BadUserInputError("Text must not contain NUL characters (\\u0000)");
    const attachment = await attachments.find(actor, id);
    const etag = attachmentEtag(attachment.sha256);
    const cached = { etag, "cache-control": "private, no-cache" };
    const known = request.headers.get("if-none-match");
    if (known && known.length <= 1024 && known.split(",").some((tag) => ["*", etag].includes(tag.trim().replace(/^W\//, "")))) {
      return new Response(null, { status: 304, headers: cached });
    }
    const headers = {
      ...cached,
      ...storedBytesHeaders({ type: attachment.type, size: attachment.size, fileName: attachment.name }),
    };
    if (request.method === "HEAD") return new Response(null, { headers });
    const { body } = await attachments.open(attachment);
    const guarded = guardedBody(body as Readable, {
      timeoutMs: options.timeoutMs,
      abort,
      onFail: (error, sentBytes) =>
        options.logger.warn(
          { requestId, attachmentId: attachment.id, store: attachment.store, sentBytes, size: attachment.size, err: error },
          "attachment download cut off: the store failed or stalled mid-stream",
        ),
    });
    return new Response(guarded, { headers });
  };
}
