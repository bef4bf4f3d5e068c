import type { Db } from "./db/database.js";
import { createEvents, type Events } from "./events.js";
import { createAuditService } from "./modules/audit/audit.service.js";
import { createCommentService } from "./modules/comments/comments.service.js";
import type { DeviceManagement } from "./modules/members/device-management.js";
import { createMemberService } from "./modules/members/members.service.js";
import { createPolicyService } from "./modules/policies/policies.service.js";
import { createRiskService } from "./modules/risks/risks.service.js";
import { createTaskItemService } from "./modules/task-items/task-items.service.js";
import { createTaskService } from "./modules/tasks/tasks.service.js";
import { createVendorService } from "./modules/vendors/vendors.service.js";
import { createViewerService } from "./modules/viewer/viewer.service.js";

export type ServiceOptions = { deviceManagement?: DeviceManagement; events?: Events };

export function createServices(db: Db, options: ServiceOptions = {}) {
  const events = options.events ?? createEvents();
  return {
    events,
    /** For plugin-prisma's relation loading only; resolvers call the services. */
    db,
    audit: createAuditService(db),
    comments: createCommentService(db, events),
    members: createMemberService(db, options.deviceManagement),
    policies: createPolicyService(db),
    taskItems: createTaskItemService(db),
    tasks: createTaskService(db),
    risks: createRiskService(db),
    vendors: createVendorService(db),
    viewer: createViewerService(db),
  };
}

export type Services = ReturnType<typeof createServices>;
