// What the commands run, imported by run.ts only once a command line is valid: it pulls in graphql
// (through the errors), which help and usage errors have no use for.

export { readFileSync } from "node:fs";
export {
  createApiKey,
  createOrganization,
  createUser,
  parseDuration,
  parseScopes,
  revokeApiKey,
} from "../admin/admin.service.js";
export { moveAttachments, verifyAttachments } from "../admin/attachments.js";
export { seedDemo } from "../admin/seed.js";
export {
  checkDocuments,
  checkLabel,
  documentEntries,
  listDocuments,
  publishDocuments,
} from "../admin/trusted-documents.js";
export { createSession } from "../auth/sessions.js";
export { createAuditTrail } from "../modules/audit/audit.trail.js";
export { createFrameworkImportService } from "../modules/frameworks/frameworks.import.js";
export { AppError } from "../platform/errors.js";
export { failedJobs, QUEUES, retryFailedJobs } from "../platform/jobs.js";
export { schema } from "../schema.js";
