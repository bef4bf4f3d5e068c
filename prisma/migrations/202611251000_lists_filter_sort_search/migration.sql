-- Search on titles and names uses trigram indexes (also on the embedded database, which loads the extension).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- CreateEnum
CREATE TYPE "VendorStatus" AS ENUM ('not_assessed', 'in_progress', 'assessed');

-- CreateEnum
CREATE TYPE "VendorCategory" AS ENUM ('cloud', 'infrastructure', 'software_as_a_service', 'finance', 'marketing', 'hr', 'other');

-- CreateEnum
CREATE TYPE "RiskStatus" AS ENUM ('open', 'pending', 'closed', 'archived');

-- CreateEnum
CREATE TYPE "RiskCategory" AS ENUM ('operations', 'technology', 'legal', 'finance', 'people', 'other');

-- CreateEnum
CREATE TYPE "RiskTreatment" AS ENUM ('accept', 'mitigate', 'transfer', 'avoid');

-- AlterTable
ALTER TABLE "Task" ADD COLUMN     "dueDate" DATE;

-- AlterTable
ALTER TABLE "Vendor" ADD COLUMN     "assigneeId" TEXT,
ADD COLUMN     "category" "VendorCategory" NOT NULL DEFAULT 'other',
ADD COLUMN     "status" "VendorStatus" NOT NULL DEFAULT 'not_assessed',
ADD COLUMN     "website" TEXT;

-- AlterTable
ALTER TABLE "Risk" ADD COLUMN     "assigneeId" TEXT,
ADD COLUMN     "category" "RiskCategory" NOT NULL DEFAULT 'other',
ADD COLUMN     "impact" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "likelihood" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "score" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "status" "RiskStatus" NOT NULL DEFAULT 'open',
ADD COLUMN     "treatment" "RiskTreatment";

-- CreateIndex
CREATE INDEX "User_name_idx" ON "User" USING GIN ("name" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "User_email_idx" ON "User" USING GIN ("email" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "Member_organizationId_updatedAt_id_idx" ON "Member"("organizationId", "updatedAt", "id");

-- CreateIndex
CREATE INDEX "Member_organizationId_role_idx" ON "Member"("organizationId", "role");

-- CreateIndex
CREATE INDEX "Member_organizationId_department_idx" ON "Member"("organizationId", "department");

-- CreateIndex
CREATE INDEX "Member_organizationId_isActive_idx" ON "Member"("organizationId", "isActive");

-- CreateIndex
CREATE INDEX "Task_organizationId_updatedAt_id_idx" ON "Task"("organizationId", "updatedAt", "id");

-- CreateIndex
CREATE INDEX "Task_organizationId_title_id_idx" ON "Task"("organizationId", "title", "id");

-- CreateIndex
CREATE INDEX "Task_organizationId_status_id_idx" ON "Task"("organizationId", "status", "id");

-- CreateIndex
CREATE INDEX "Task_organizationId_dueDate_id_idx" ON "Task"("organizationId", "dueDate", "id");

-- CreateIndex
CREATE INDEX "Task_organizationId_assigneeId_status_dueDate_idx" ON "Task"("organizationId", "assigneeId", "status", "dueDate");

-- CreateIndex
CREATE INDEX "Task_title_idx" ON "Task" USING GIN ("title" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "Task_description_idx" ON "Task" USING GIN ("description" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "TaskItem_organizationId_entityType_entityId_updatedAt_id_idx" ON "TaskItem"("organizationId", "entityType", "entityId", "updatedAt", "id");

-- CreateIndex
CREATE INDEX "TaskItem_organizationId_entityType_entityId_title_id_idx" ON "TaskItem"("organizationId", "entityType", "entityId", "title", "id");

-- CreateIndex
CREATE INDEX "TaskItem_organizationId_entityType_entityId_status_id_idx" ON "TaskItem"("organizationId", "entityType", "entityId", "status", "id");

-- CreateIndex
CREATE INDEX "TaskItem_organizationId_entityType_entityId_priority_id_idx" ON "TaskItem"("organizationId", "entityType", "entityId", "priority", "id");

-- CreateIndex
CREATE INDEX "TaskItem_organizationId_entityType_entityId_assigneeId_idx" ON "TaskItem"("organizationId", "entityType", "entityId", "assigneeId");

-- CreateIndex
CREATE INDEX "TaskItem_title_idx" ON "TaskItem" USING GIN ("title" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "Vendor_organizationId_createdAt_id_idx" ON "Vendor"("organizationId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "Vendor_organizationId_updatedAt_id_idx" ON "Vendor"("organizationId", "updatedAt", "id");

-- CreateIndex
CREATE INDEX "Vendor_organizationId_name_id_idx" ON "Vendor"("organizationId", "name", "id");

-- CreateIndex
CREATE INDEX "Vendor_organizationId_status_id_idx" ON "Vendor"("organizationId", "status", "id");

-- CreateIndex
CREATE INDEX "Vendor_organizationId_category_id_idx" ON "Vendor"("organizationId", "category", "id");

-- CreateIndex
CREATE INDEX "Vendor_organizationId_assigneeId_idx" ON "Vendor"("organizationId", "assigneeId");

-- CreateIndex
CREATE INDEX "Vendor_assigneeId_idx" ON "Vendor"("assigneeId");

-- CreateIndex
CREATE INDEX "Vendor_name_idx" ON "Vendor" USING GIN ("name" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "Risk_organizationId_createdAt_id_idx" ON "Risk"("organizationId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "Risk_organizationId_updatedAt_id_idx" ON "Risk"("organizationId", "updatedAt", "id");

-- CreateIndex
CREATE INDEX "Risk_organizationId_title_id_idx" ON "Risk"("organizationId", "title", "id");

-- CreateIndex
CREATE INDEX "Risk_organizationId_status_id_idx" ON "Risk"("organizationId", "status", "id");

-- CreateIndex
CREATE INDEX "Risk_organizationId_category_id_idx" ON "Risk"("organizationId", "category", "id");

-- CreateIndex
CREATE INDEX "Risk_organizationId_score_id_idx" ON "Risk"("organizationId", "score", "id");

-- CreateIndex
CREATE INDEX "Risk_organizationId_assigneeId_idx" ON "Risk"("organizationId", "assigneeId");

-- CreateIndex
CREATE INDEX "Risk_assigneeId_idx" ON "Risk"("assigneeId");

-- CreateIndex
CREATE INDEX "Risk_title_idx" ON "Risk" USING GIN ("title" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "Policy_organizationId_updatedAt_id_idx" ON "Policy"("organizationId", "updatedAt", "id");

-- CreateIndex
CREATE INDEX "Policy_organizationId_name_id_idx" ON "Policy"("organizationId", "name", "id");

-- CreateIndex
CREATE INDEX "Policy_organizationId_status_id_idx" ON "Policy"("organizationId", "status", "id");

-- CreateIndex
CREATE INDEX "Policy_name_idx" ON "Policy" USING GIN ("name" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "PolicyVersion_approverId_status_idx" ON "PolicyVersion"("approverId", "status");

-- CreateIndex
CREATE INDEX "PolicyVersion_policyId_status_version_idx" ON "PolicyVersion"("policyId", "status", "version");

-- CreateIndex
CREATE INDEX "PolicyVersion_policyId_createdAt_id_idx" ON "PolicyVersion"("policyId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "Comment_authorId_createdAt_id_idx" ON "Comment"("authorId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "AuditEvent_organizationId_entityType_entityId_createdAt_id_idx" ON "AuditEvent"("organizationId", "entityType", "entityId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "AuditEvent_organizationId_actorUserId_createdAt_id_idx" ON "AuditEvent"("organizationId", "actorUserId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "AuditEvent_organizationId_action_createdAt_id_idx" ON "AuditEvent"("organizationId", "action", "createdAt", "id");

-- AddForeignKey
ALTER TABLE "Vendor" ADD CONSTRAINT "Vendor_assigneeId_fkey" FOREIGN KEY ("assigneeId") REFERENCES "Member"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Risk" ADD CONSTRAINT "Risk_assigneeId_fkey" FOREIGN KEY ("assigneeId") REFERENCES "Member"("id") ON DELETE SET NULL ON UPDATE CASCADE;
