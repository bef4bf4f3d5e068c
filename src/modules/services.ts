import { randomBytes } from "node:crypto";
import type { Db } from "../platform/db/database.js";
import { createEvents, type Events } from "../platform/events.js";
import type { AuditSigner } from "./audit/audit.keys.js";
import { createAuditService } from "./audit/audit.service.js";
import { type AttachmentSettings, createAttachmentService } from "./comments/attachments.service.js";
import { createCommentService } from "./comments/comments.service.js";
import { createControlService } from "./controls/controls.service.js";
import { createEvidenceService, evidenceFileReadable } from "./evidence/evidence.service.js";
import { createEvidenceRequestService } from "./evidence-requests/evidence-requests.service.js";
import { type LinkTokens, linkTokens } from "./evidence-requests/evidence-requests.token.js";
import { createFrameworkImportService } from "./frameworks/frameworks.import.js";
import { createFrameworkService } from "./frameworks/frameworks.service.js";
import type { DeviceManagement } from "./members/device-management.js";
import { createMemberService } from "./members/members.service.js";
import {
  createNotificationService,
  createNotifier,
  type DeepLinks,
  type NotificationMail,
} from "./notifications/notifications.service.js";
import { createPolicyService } from "./policies/policies.service.js";
import { createRiskService } from "./risks/risks.service.js";
import { createTaskItemService } from "./task-items/task-items.service.js";
import { createTaskService } from "./tasks/tasks.service.js";
import { createVendorService } from "./vendors/vendors.service.js";
import { createViewerService } from "./viewer/viewer.service.js";
import { createWebhookService, type WebhookServiceOptions } from "./webhooks/webhooks.service.js";

export type ServiceOptions = {
  deviceManagement?: DeviceManagement;
  events?: Events;
  mail?: NotificationMail;
  /** APP_URL and CORS_ORIGINS, for the deep links of notifications. */
  links?: DeepLinks;
  /** Webhook target rules and timeouts (WEBHOOK_*), and the resolver (tests inject one). */
  webhooks?: Partial<WebhookServiceOptions>;
  /** Signs the audit trail's checkpoints (AUDIT_SIGNING_KEY); a key of its own when absent (tests). */
  auditSigner?: AuditSigner;
  /** The attachment store and its settings (ATTACHMENT_*): uploads, inline bytes and downloads. */
  attachments: AttachmentSettings;
  /** Evidence requests' links: how their tokens are derived, and PUBLIC_URL (the request's origin when unset). */
  evidenceRequests?: { links?: LinkTokens; publicUrl?: string };
};

export function createServices(db: Db, options: ServiceOptions) {
  const events = options.events ?? createEvents();
  const notifier = createNotifier({ links: options.links ?? {}, mail: options.mail, events });
  const attachments = createAttachmentService(db, options.attachments, evidenceFileReadable(db));
  return {
    events,
    /** Writes notifications in a change's transaction: for changes made outside a request (the webhook worker's). */
    notifier,
    /** For plugin-prisma's relation loading only; resolvers call the services. */
    db,
    audit: createAuditService(db, options.auditSigner),
    frameworkImports: createFrameworkImportService(db),
    comments: createCommentService(db, events, notifier, attachments),
    controls: createControlService(db, notifier),
    evidence: createEvidenceService(db, notifier, attachments),
    frameworks: createFrameworkService(db),
    /** Uploads, stored files and their URLs: for comments, evidence and evidence requests' links. */
    attachments,
    evidenceRequests: createEvidenceRequestService(db, notifier, {
      // Without a secret of the caller's (tests), one of this process's own: its links die with it.
      links: options.evidenceRequests?.links ?? linkTokens(randomBytes(32).toString("base64url")),
      publicUrl: options.evidenceRequests?.publicUrl,
      mail: options.mail,
      attachments,
    }),
    members: createMemberService(db, options.deviceManagement),
    notifications: createNotificationService(db, events),
    policies: createPolicyService(db, events, notifier),
    taskItems: createTaskItemService(db, notifier),
    tasks: createTaskService(db, notifier),
    risks: createRiskService(db, notifier),
    vendors: createVendorService(db, notifier),
    viewer: createViewerService(db),
    webhooks: createWebhookService(db, options.webhooks),
  };
}

export type Services = ReturnType<typeof createServices>;
