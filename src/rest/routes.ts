/**
 * Every REST route, by the GraphQL field it serves. A root field that is not listed here has no
 * REST route: nothing is exposed by accident.
 */
export type RestRoute = {
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  /** Relative to /v1; a `:name` segment is the GraphQL argument of that name. */
  path: string;
  responseStatus: number;
  tags: string[];
  /**
   * The field answers a file (`attachment`): REST answers with the bytes themselves, streamed from
   * the attachment store by the guard's download handler (attachments.routes.ts), never as the
   * field's base64. Same path, permission, 404 and OpenAPI entry as the field would have.
   */
  download?: boolean;
  /** `Type.field`s this route's answer leaves out, so that it keeps the spec's exact shape. */
  omit?: string[];
  /**
   * A DELETE that takes its arguments besides the path in a JSON body, as the POST it undoes
   * (unlink control, contract section 16: "the same body"). The query string form it took first
   * is still read, documented as deprecated; a name given in both is a 400.
   */
  bodyOnDelete?: boolean;
};

export const restRoutes: Record<string, RestRoute> = {
  "Mutation.createComment": { method: "POST", path: "/comments", responseStatus: 201, tags: ["Comments"] },
  "Mutation.unlinkDevice": { method: "PATCH", path: "/people/:id/unlink-device", responseStatus: 200, tags: ["People"] },
  "Mutation.createPolicyVersion": { method: "POST", path: "/policies/:id/versions", responseStatus: 201, tags: ["Policies"] },
  "Mutation.createPolicy": { method: "POST", path: "/policies", responseStatus: 201, tags: ["Policies"] },
  "Query.policy": { method: "GET", path: "/policies/:id", responseStatus: 200, tags: ["Policies"] },
  "Query.policyVersions": { method: "GET", path: "/policies/:id/versions", responseStatus: 200, tags: ["Policies"] },
  "Query.taskItemStats": { method: "GET", path: "/task-management/stats", responseStatus: 200, tags: ["Task management"] },
  "Mutation.createTaskItem": { method: "POST", path: "/task-management", responseStatus: 201, tags: ["Task management"] },
  "Query.taskItems": { method: "GET", path: "/task-management", responseStatus: 200, tags: ["Task management"] },
  "Mutation.updateTaskItem": { method: "PATCH", path: "/task-management/:id", responseStatus: 200, tags: ["Task management"] },
  "Query.task": {
    method: "GET",
    path: "/tasks/:taskId",
    responseStatus: 200,
    tags: ["Tasks"],
    omit: ["Task.assigneeId", "Task.dueDate"],
  },
  "Mutation.createMember": { method: "POST", path: "/people", responseStatus: 201, tags: ["People"] },
  "Query.members": { method: "GET", path: "/people", responseStatus: 200, tags: ["People"] },
  "Query.member": { method: "GET", path: "/people/:id", responseStatus: 200, tags: ["People"] },
  "Mutation.updateMember": { method: "PATCH", path: "/people/:id", responseStatus: 200, tags: ["People"] },
  "Mutation.createTask": { method: "POST", path: "/tasks", responseStatus: 201, tags: ["Tasks"] },
  "Query.tasks": { method: "GET", path: "/tasks", responseStatus: 200, tags: ["Tasks"] },
  "Mutation.updateTask": { method: "PATCH", path: "/tasks/:taskId", responseStatus: 200, tags: ["Tasks"] },
  "Mutation.importFramework": { method: "POST", path: "/frameworks", responseStatus: 201, tags: ["Frameworks"] },
  "Mutation.importRequirementMapping": {
    method: "POST",
    path: "/frameworks/mappings",
    responseStatus: 201,
    tags: ["Frameworks"],
  },
  "Mutation.createVendor": { method: "POST", path: "/vendors", responseStatus: 201, tags: ["Vendors"] },
  "Mutation.createRisk": { method: "POST", path: "/risks", responseStatus: 201, tags: ["Risks"] },
  "Query.comments": { method: "GET", path: "/comments", responseStatus: 200, tags: ["Comments"] },
  "Query.attachment": { method: "GET", path: "/attachments/:id", responseStatus: 200, tags: ["Comments"], download: true },
  "Query.attachmentDownloadUrl": {
    method: "GET",
    path: "/attachments/:id/download-url",
    responseStatus: 200,
    tags: ["Comments"],
  },
  "Mutation.createAttachmentUpload": { method: "POST", path: "/attachment-uploads", responseStatus: 201, tags: ["Comments"] },
  "Query.auditEvents": { method: "GET", path: "/audit-events", responseStatus: 200, tags: ["Audit"] },
  "Query.verifyAuditTrail": { method: "GET", path: "/audit/verify", responseStatus: 200, tags: ["Audit"] },
  "Query.auditCheckpoints": { method: "GET", path: "/audit/checkpoints", responseStatus: 200, tags: ["Audit"] },
  "Mutation.createAuditCheckpoint": { method: "POST", path: "/audit/checkpoints", responseStatus: 201, tags: ["Audit"] },
  "Query.vendors": { method: "GET", path: "/vendors", responseStatus: 200, tags: ["Vendors"] },
  "Query.vendor": { method: "GET", path: "/vendors/:id", responseStatus: 200, tags: ["Vendors"] },
  "Mutation.updateVendor": { method: "PATCH", path: "/vendors/:id", responseStatus: 200, tags: ["Vendors"] },
  "Query.risks": { method: "GET", path: "/risks", responseStatus: 200, tags: ["Risks"] },
  "Query.risk": { method: "GET", path: "/risks/:id", responseStatus: 200, tags: ["Risks"] },
  "Mutation.updateRisk": { method: "PATCH", path: "/risks/:id", responseStatus: 200, tags: ["Risks"] },
  "Query.policies": { method: "GET", path: "/policies", responseStatus: 200, tags: ["Policies"] },
  "Mutation.updatePolicy": { method: "PATCH", path: "/policies/:id", responseStatus: 200, tags: ["Policies"] },
  "Mutation.submitPolicyVersion": {
    method: "POST",
    path: "/policies/:id/versions/:versionId/submit",
    responseStatus: 200,
    tags: ["Policies"],
  },
  "Mutation.approvePolicyVersion": {
    method: "POST",
    path: "/policies/:id/versions/:versionId/approve",
    responseStatus: 200,
    tags: ["Policies"],
  },
  "Mutation.rejectPolicyVersion": {
    method: "POST",
    path: "/policies/:id/versions/:versionId/reject",
    responseStatus: 200,
    tags: ["Policies"],
  },
  "Mutation.updateComment": { method: "PATCH", path: "/comments/:id", responseStatus: 200, tags: ["Comments"] },
  "Mutation.deleteComment": { method: "DELETE", path: "/comments/:id", responseStatus: 204, tags: ["Comments"] },
  "Mutation.deleteTaskItem": { method: "DELETE", path: "/task-management/:id", responseStatus: 204, tags: ["Task management"] },
  "Query.notifications": { method: "GET", path: "/notifications", responseStatus: 200, tags: ["Notifications"] },
  "Mutation.markNotificationsRead": { method: "POST", path: "/notifications/read", responseStatus: 200, tags: ["Notifications"] },
  "Query.notificationPreferences": {
    method: "GET",
    path: "/notifications/preferences",
    responseStatus: 200,
    tags: ["Notifications"],
  },
  "Mutation.updateNotificationPreferences": {
    method: "PATCH",
    path: "/notifications/preferences",
    responseStatus: 200,
    tags: ["Notifications"],
  },
  "Mutation.createWebhookEndpoint": { method: "POST", path: "/webhook-endpoints", responseStatus: 201, tags: ["Webhooks"] },
  "Query.webhookEndpoints": { method: "GET", path: "/webhook-endpoints", responseStatus: 200, tags: ["Webhooks"] },
  "Query.webhookEndpoint": { method: "GET", path: "/webhook-endpoints/:id", responseStatus: 200, tags: ["Webhooks"] },
  "Mutation.updateWebhookEndpoint": { method: "PATCH", path: "/webhook-endpoints/:id", responseStatus: 200, tags: ["Webhooks"] },
  "Mutation.deleteWebhookEndpoint": { method: "DELETE", path: "/webhook-endpoints/:id", responseStatus: 204, tags: ["Webhooks"] },
  "Mutation.rotateWebhookEndpointSecret": {
    method: "POST",
    path: "/webhook-endpoints/:id/rotate-secret",
    responseStatus: 200,
    tags: ["Webhooks"],
  },
  "Query.webhookDeliveries": {
    method: "GET",
    path: "/webhook-endpoints/:id/deliveries",
    responseStatus: 200,
    tags: ["Webhooks"],
  },
  "Mutation.redeliverWebhook": {
    method: "POST",
    path: "/webhook-deliveries/:id/redeliver",
    responseStatus: 202,
    tags: ["Webhooks"],
  },
  "Mutation.replayWebhookEndpoint": {
    method: "POST",
    path: "/webhook-endpoints/:id/replay",
    responseStatus: 202,
    tags: ["Webhooks"],
  },
  "Query.controls": { method: "GET", path: "/controls", responseStatus: 200, tags: ["Controls"] },
  "Query.control": { method: "GET", path: "/controls/:id", responseStatus: 200, tags: ["Controls"] },
  "Mutation.createControl": { method: "POST", path: "/controls", responseStatus: 201, tags: ["Controls"] },
  "Mutation.updateControl": { method: "PATCH", path: "/controls/:id", responseStatus: 200, tags: ["Controls"] },
  "Mutation.deleteControl": { method: "DELETE", path: "/controls/:id", responseStatus: 204, tags: ["Controls"] },
  "Mutation.mapControl": { method: "POST", path: "/controls/:controlId/requirements", responseStatus: 200, tags: ["Controls"] },
  "Mutation.unmapControl": {
    method: "DELETE",
    path: "/controls/:controlId/requirements/:requirementId",
    responseStatus: 200,
    tags: ["Controls"],
  },
  "Mutation.linkControl": { method: "POST", path: "/controls/:controlId/links", responseStatus: 200, tags: ["Controls"] },
  "Mutation.unlinkControl": {
    method: "DELETE",
    path: "/controls/:controlId/links",
    responseStatus: 200,
    tags: ["Controls"],
    bodyOnDelete: true,
  },
  "Query.controlEvidence": { method: "GET", path: "/controls/:controlId/evidence", responseStatus: 200, tags: ["Evidence"] },
  "Mutation.addEvidence": { method: "POST", path: "/controls/:controlId/evidence", responseStatus: 201, tags: ["Evidence"] },
  "Query.vendorEvidence": { method: "GET", path: "/vendors/:vendorId/evidence", responseStatus: 200, tags: ["Evidence"] },
  "Mutation.addVendorEvidence": { method: "POST", path: "/vendors/:vendorId/evidence", responseStatus: 201, tags: ["Evidence"] },
  "Query.evidence": { method: "GET", path: "/evidence/:id", responseStatus: 200, tags: ["Evidence"] },
  "Mutation.acceptEvidence": { method: "POST", path: "/evidence/:id/accept", responseStatus: 200, tags: ["Evidence"] },
  "Mutation.rejectEvidence": { method: "POST", path: "/evidence/:id/reject", responseStatus: 200, tags: ["Evidence"] },
  "Mutation.deleteEvidence": { method: "DELETE", path: "/evidence/:id", responseStatus: 204, tags: ["Evidence"] },
  "Mutation.sendTestWebhook": { method: "POST", path: "/webhook-endpoints/:id/test", responseStatus: 200, tags: ["Webhooks"] },
  "Query.frameworks": { method: "GET", path: "/frameworks", responseStatus: 200, tags: ["Frameworks"] },
  "Query.framework": { method: "GET", path: "/frameworks/:id", responseStatus: 200, tags: ["Frameworks"] },
  "Query.frameworkRequirements": {
    method: "GET",
    path: "/frameworks/:id/requirements",
    responseStatus: 200,
    tags: ["Frameworks"],
  },
  "Mutation.adoptFramework": {
    method: "POST",
    path: "/frameworks/:frameworkId/adoption",
    responseStatus: 200,
    tags: ["Frameworks"],
  },
  "Mutation.withdrawFramework": {
    method: "DELETE",
    path: "/frameworks/:frameworkId/adoption",
    responseStatus: 200,
    tags: ["Frameworks"],
  },
  "Mutation.setRequirementApplicability": {
    method: "PUT",
    path: "/requirements/:requirementId/applicability",
    responseStatus: 200,
    tags: ["Frameworks"],
  },
  // Before `/evidence-requests/:id`, which would take "current" for an id: the table's order is the match order.
  "Query.currentEvidenceRequest": {
    method: "GET",
    path: "/evidence-requests/current",
    responseStatus: 200,
    tags: ["Evidence requests"],
  },
  "Mutation.submitEvidenceRequest": {
    method: "POST",
    path: "/evidence-requests/current/submission",
    responseStatus: 200,
    tags: ["Evidence requests"],
  },
  "Mutation.createEvidenceRequest": {
    method: "POST",
    path: "/evidence-requests",
    responseStatus: 201,
    tags: ["Evidence requests"],
  },
  "Query.evidenceRequests": {
    method: "GET",
    path: "/evidence-requests",
    responseStatus: 200,
    tags: ["Evidence requests"],
    omit: ["EvidenceRequest.url"],
  },
  "Query.evidenceRequest": {
    method: "GET",
    path: "/evidence-requests/:id",
    responseStatus: 200,
    tags: ["Evidence requests"],
    omit: ["EvidenceRequest.url"],
  },
  "Mutation.cancelEvidenceRequest": {
    method: "POST",
    path: "/evidence-requests/:id/cancel",
    responseStatus: 200,
    tags: ["Evidence requests"],
    omit: ["EvidenceRequest.url"],
  },
  "Mutation.resendEvidenceRequest": {
    method: "POST",
    path: "/evidence-requests/:id/resend",
    responseStatus: 200,
    tags: ["Evidence requests"],
  },
  "Mutation.acceptEvidenceRequest": {
    method: "POST",
    path: "/evidence-requests/:id/accept",
    responseStatus: 200,
    tags: ["Evidence requests"],
    omit: ["EvidenceRequest.url"],
  },
  "Mutation.rejectEvidenceRequest": {
    method: "POST",
    path: "/evidence-requests/:id/reject",
    responseStatus: 200,
    tags: ["Evidence requests"],
    omit: ["EvidenceRequest.url"],
  },
};

/** The table as Sofa takes it: Sofa cannot send a 204 without a body, so the REST guard turns its 200 into one. */
export function sofaRoutes(): Record<string, RestRoute> {
  return Object.fromEntries(
    Object.entries(restRoutes).map(([field, route]) => [
      field,
      route.responseStatus === 204 ? { ...route, responseStatus: 200 } : route,
    ]),
  );
}

export const REST_BASE = "/v1";

/**
 * The REST facade's own routes, beside Sofa's (a stream or a PEM text is no GraphQL value), by
 * name. The REST guard serves them with the same authentication, rate limits and error envelope;
 * their handlers come from the modules (app.ts), and openapi.ts describes them from here.
 */
export type OwnRestRoute = {
  method: "GET";
  /** Relative to /v1; a `:name` segment is a path parameter the handler receives. */
  path: string;
  tags: string[];
  summary: string;
  description: string;
  /** Whether a credential is needed (the handler checks the permission). */
  credential: boolean;
  /** Query parameters: name, description and JSON Schema. */
  query: { name: string; description: string; schema: Record<string, unknown> }[];
  /** The 200 answer's media types. */
  contentTypes: string[];
  /** Statuses it can answer besides every credentialed route's (400, 401, 403, 429, 500, 503). */
  errors?: number[];
};

export const ownRestRoutes = {
  exportAuditEvents: {
    method: "GET",
    path: "/audit-events/export",
    tags: ["Audit"],
    summary: "Export the audit trail",
    description:
      "Streams the organization's audit events of a range of sequences in sequence order, as a file (Content-Disposition: attachment): jsonl (one export line per event, then a signed checkpoint line), csv (the same fields as columns) or ocsf (OCSF API Activity records, sequence and hash in unmapped). Needs `audit:read`.",
    credential: true,
    query: [
      {
        name: "from",
        description: "First sequence; the chain's first when absent",
        schema: { type: "integer", format: "int32", minimum: 1, maximum: 2147483647 },
      },
      {
        name: "to",
        description: "Last sequence; the chain's last when absent",
        schema: { type: "integer", format: "int32", minimum: 1, maximum: 2147483647 },
      },
      {
        name: "format",
        description: "jsonl (default), csv or ocsf",
        schema: { type: "string", enum: ["jsonl", "csv", "ocsf"], default: "jsonl" },
      },
    ],
    contentTypes: ["application/jsonl", "text/csv"],
  },
  getAuditPublicKey: {
    method: "GET",
    path: "/audit/public-key",
    tags: ["Audit"],
    summary: "The audit checkpoints' public key",
    description: "The Ed25519 public key that checks audit checkpoints: PEM text (SPKI). No credential needed.",
    credential: false,
    query: [],
    contentTypes: ["application/x-pem-file"],
  },
  getStatementOfApplicability: {
    method: "GET",
    path: "/frameworks/:id/statement-of-applicability",
    tags: ["Frameworks"],
    summary: "A framework's statement of applicability",
    description:
      "Streams, for an adopted framework, each assessable requirement in catalog order: ref, title, applicable, justification, controls (the codes of the organization's controls mapped to it; space-separated in CSV, an array in JSON) and state (readiness now). CSV cells that a spreadsheet would run as a formula are prefixed with '. Needs `framework:read`. 404 for a framework the organization does not see, 409 for one it has not adopted.",
    credential: true,
    query: [
      {
        name: "format",
        description: "json (default: an array of objects) or csv",
        schema: { type: "string", enum: ["json", "csv"], default: "json" },
      },
    ],
    contentTypes: ["application/json", "text/csv"],
    errors: [404, 409],
  },
} as const satisfies Record<string, OwnRestRoute>;

export type OwnRestRouteName = keyof typeof ownRestRoutes;
