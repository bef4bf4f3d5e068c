import { authorize } from "../../auth/actor.js";
import type { OwnRouteHandlers } from "../../rest/own-routes.js";
import { exportRequest, exportStream } from "./audit.export.js";
import type { AuditService } from "./audit.service.js";

/** The REST facade's own audit routes (routes.ts, ownRestRoutes): the export stream and the public key. */
export function auditRestHandlers(audit: AuditService): Pick<OwnRouteHandlers, "exportAuditEvents" | "getAuditPublicKey"> {
  return {
    async exportAuditEvents({ url, auth, requestId }) {
      const actor = authorize({ auth, requestId }, "audit:read");
      const { body, contentType, filename } = exportStream(audit.trail, actor.organizationId, exportRequest(url.searchParams));
      return new Response(body, {
        headers: {
          "content-type": contentType,
          "content-disposition": `attachment; filename="${filename}"`,
          "cache-control": "no-store",
        },
      });
    },
    async getAuditPublicKey() {
      return new Response(audit.signer.publicKeyPem, {
        headers: { "content-type": "application/x-pem-file", "cache-control": "public, max-age=300" },
      });
    },
  };
}
