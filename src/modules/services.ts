import type { Db } from "../platform/db/database.js";
import { createEvents, type Events } from "../platform/events.js";
import { createAuditService } from "./audit/audit.service.js";
import { createCommentService } from "./comments/comments.service.js";
import type { DeviceManagement } from "./members/device-management.js";
import { createMemberService } from "./members/members.service.js";
import type { NotificationMail } from "./notifications/notifications.service.js";
import { createPolicyService } from "./policies/policies.service.js";
import { createRiskService } from "./risks/risks.service.js";
import { createTaskItemService } from "./task-items/task-items.service.js";
import { createTaskService } from "./tasks/tasks.service.js";
import { createVendorService } from "./vendors/vendors.service.js";
import { createViewerService } from "./viewer/viewer.service.js";

export type ServiceOptions = { deviceManagement?: DeviceManagement; events?: Events; mail?: NotificationMail };

export function createServices(db: Db, options: ServiceOptions = {}) {
  const events = options.events ?? createEvents();
  return {
    events,
    /** For plugin-prisma's relation loading only; resolvers call the services. */
    db,
    audit: createAuditService(db),
    comments: createCommentService(db, events),
    members: createMemberService(db, options.deviceManagement),
    policies: createPolicyService(db, events),
    taskItems: createTaskItemService(db),
    tasks: createTaskService(db),
    risks: createRiskService(db),
    vendors: createVendorService(db),
    viewer: createViewerService(db),
  };
}

export type Services = ReturnType<typeof createServices>;
