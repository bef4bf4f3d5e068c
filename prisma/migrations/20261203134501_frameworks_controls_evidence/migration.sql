-- CreateEnum
CREATE TYPE "EvidenceStatus" AS ENUM ('submitted', 'accepted', 'rejected');

-- CreateEnum
CREATE TYPE "MappingRelationship" AS ENUM ('equal', 'subset', 'superset', 'intersect');

-- CreateEnum
CREATE TYPE "EvidenceRequestStatus" AS ENUM ('open', 'submitted', 'accepted', 'rejected', 'cancelled', 'expired');

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "NotificationReason" ADD VALUE 'control_not_ready';
ALTER TYPE "NotificationReason" ADD VALUE 'evidence_due';
ALTER TYPE "NotificationReason" ADD VALUE 'evidence_submitted';

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "NotificationEntityType" ADD VALUE 'control';
ALTER TYPE "NotificationEntityType" ADD VALUE 'evidence_request';

-- AlterTable
ALTER TABLE "Attachment" ALTER COLUMN "commentId" DROP NOT NULL,
ALTER COLUMN "uploaderId" DROP NOT NULL;

-- AlterTable
ALTER TABLE "AttachmentUpload" ADD COLUMN     "evidenceRequestId" TEXT;

-- AlterTable
ALTER TABLE "NotificationPreference" ADD COLUMN     "emailControlNotReady" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "emailEvidenceDue" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "emailEvidenceSubmitted" BOOLEAN NOT NULL DEFAULT true;

-- CreateTable
CREATE TABLE "Framework" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT,
    "key" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "version" TEXT NOT NULL,
    "source" TEXT,
    "license" TEXT,
    "requirementCount" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Framework_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Requirement" (
    "id" TEXT NOT NULL,
    "frameworkId" TEXT NOT NULL,
    "ref" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "description" TEXT,
    "parentId" TEXT,
    "assessable" BOOLEAN NOT NULL DEFAULT true,
    "position" INTEGER NOT NULL,

    CONSTRAINT "Requirement_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "FrameworkAdoption" (
    "organizationId" TEXT NOT NULL,
    "frameworkId" TEXT NOT NULL,
    "adoptedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "FrameworkAdoption_pkey" PRIMARY KEY ("organizationId","frameworkId")
);

-- CreateTable
CREATE TABLE "RequirementApplicability" (
    "organizationId" TEXT NOT NULL,
    "requirementId" TEXT NOT NULL,
    "applicable" BOOLEAN NOT NULL,
    "justification" TEXT,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "RequirementApplicability_pkey" PRIMARY KEY ("organizationId","requirementId")
);

-- CreateTable
CREATE TABLE "RequirementMapping" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT,
    "sourceId" TEXT NOT NULL,
    "targetId" TEXT NOT NULL,
    "relationship" "MappingRelationship" NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RequirementMapping_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Control" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "code" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "ownerId" TEXT,
    "evidenceEveryDays" INTEGER,
    "recordedState" TEXT,
    "dueNoticeFor" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Control_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ControlRequirement" (
    "organizationId" TEXT NOT NULL,
    "controlId" TEXT NOT NULL,
    "requirementId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ControlRequirement_pkey" PRIMARY KEY ("controlId","requirementId")
);

-- CreateTable
CREATE TABLE "ControlPolicy" (
    "organizationId" TEXT NOT NULL,
    "controlId" TEXT NOT NULL,
    "policyId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ControlPolicy_pkey" PRIMARY KEY ("controlId","policyId")
);

-- CreateTable
CREATE TABLE "ControlTask" (
    "organizationId" TEXT NOT NULL,
    "controlId" TEXT NOT NULL,
    "taskId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ControlTask_pkey" PRIMARY KEY ("controlId","taskId")
);

-- CreateTable
CREATE TABLE "Evidence" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "controlId" TEXT,
    "vendorId" TEXT,
    "attachmentId" TEXT NOT NULL,
    "description" TEXT,
    "collectedAt" TIMESTAMP(3) NOT NULL,
    "validUntil" TIMESTAMP(3),
    "status" "EvidenceStatus" NOT NULL,
    "submittedById" TEXT,
    "submittedByEmail" TEXT,
    "reviewedById" TEXT,
    "reviewedAt" TIMESTAMP(3),
    "rejectionReason" TEXT,
    "evidenceRequestId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Evidence_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "EvidenceRequest" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "controlId" TEXT,
    "vendorId" TEXT,
    "title" TEXT NOT NULL,
    "instructions" TEXT,
    "recipientEmail" TEXT NOT NULL,
    "recipientName" TEXT,
    "dueAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "status" "EvidenceRequestStatus" NOT NULL DEFAULT 'open',
    "tokenHash" TEXT NOT NULL,
    "createdById" TEXT,
    "createdByApiKeyId" TEXT,
    "note" TEXT,
    "openedAt" TIMESTAMP(3),
    "submittedAt" TIMESTAMP(3),
    "remindedAt" TIMESTAMP(3),
    "rejectionReason" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "EvidenceRequest_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Framework_key_idx" ON "Framework"("key");

-- CreateIndex
CREATE UNIQUE INDEX "Framework_organizationId_key_key" ON "Framework"("organizationId", "key");

-- CreateIndex
CREATE INDEX "Requirement_frameworkId_position_idx" ON "Requirement"("frameworkId", "position");

-- CreateIndex
CREATE INDEX "Requirement_parentId_idx" ON "Requirement"("parentId");

-- CreateIndex
CREATE UNIQUE INDEX "Requirement_frameworkId_ref_key" ON "Requirement"("frameworkId", "ref");

-- CreateIndex
CREATE INDEX "FrameworkAdoption_frameworkId_idx" ON "FrameworkAdoption"("frameworkId");

-- CreateIndex
CREATE INDEX "RequirementApplicability_requirementId_idx" ON "RequirementApplicability"("requirementId");

-- CreateIndex
CREATE INDEX "RequirementMapping_sourceId_idx" ON "RequirementMapping"("sourceId");

-- CreateIndex
CREATE INDEX "RequirementMapping_targetId_idx" ON "RequirementMapping"("targetId");

-- CreateIndex
CREATE UNIQUE INDEX "RequirementMapping_organizationId_sourceId_targetId_key" ON "RequirementMapping"("organizationId", "sourceId", "targetId");

-- CreateIndex
CREATE INDEX "Control_organizationId_createdAt_id_idx" ON "Control"("organizationId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "Control_organizationId_updatedAt_id_idx" ON "Control"("organizationId", "updatedAt", "id");

-- CreateIndex
CREATE INDEX "Control_organizationId_name_id_idx" ON "Control"("organizationId", "name", "id");

-- CreateIndex
CREATE INDEX "Control_organizationId_ownerId_idx" ON "Control"("organizationId", "ownerId");

-- CreateIndex
CREATE INDEX "Control_ownerId_idx" ON "Control"("ownerId");

-- CreateIndex
CREATE INDEX "Control_name_idx" ON "Control" USING GIN ("name" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "Control_code_idx" ON "Control" USING GIN ("code" gin_trgm_ops);

-- CreateIndex
CREATE UNIQUE INDEX "Control_organizationId_code_key" ON "Control"("organizationId", "code");

-- CreateIndex
CREATE INDEX "ControlRequirement_organizationId_requirementId_idx" ON "ControlRequirement"("organizationId", "requirementId");

-- CreateIndex
CREATE INDEX "ControlRequirement_requirementId_idx" ON "ControlRequirement"("requirementId");

-- CreateIndex
CREATE INDEX "ControlPolicy_policyId_idx" ON "ControlPolicy"("policyId");

-- CreateIndex
CREATE INDEX "ControlPolicy_organizationId_idx" ON "ControlPolicy"("organizationId");

-- CreateIndex
CREATE INDEX "ControlTask_taskId_idx" ON "ControlTask"("taskId");

-- CreateIndex
CREATE INDEX "ControlTask_organizationId_idx" ON "ControlTask"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "Evidence_attachmentId_key" ON "Evidence"("attachmentId");

-- CreateIndex
CREATE INDEX "Evidence_controlId_status_validUntil_idx" ON "Evidence"("controlId", "status", "validUntil");

-- CreateIndex
CREATE INDEX "Evidence_vendorId_createdAt_id_idx" ON "Evidence"("vendorId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "Evidence_organizationId_createdAt_id_idx" ON "Evidence"("organizationId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "Evidence_evidenceRequestId_idx" ON "Evidence"("evidenceRequestId");

-- CreateIndex
CREATE INDEX "Evidence_submittedById_idx" ON "Evidence"("submittedById");

-- CreateIndex
CREATE INDEX "Evidence_reviewedById_idx" ON "Evidence"("reviewedById");

-- CreateIndex
CREATE UNIQUE INDEX "EvidenceRequest_tokenHash_key" ON "EvidenceRequest"("tokenHash");

-- CreateIndex
CREATE INDEX "EvidenceRequest_organizationId_createdAt_id_idx" ON "EvidenceRequest"("organizationId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "EvidenceRequest_organizationId_updatedAt_id_idx" ON "EvidenceRequest"("organizationId", "updatedAt", "id");

-- CreateIndex
CREATE INDEX "EvidenceRequest_organizationId_status_id_idx" ON "EvidenceRequest"("organizationId", "status", "id");

-- CreateIndex
CREATE INDEX "EvidenceRequest_organizationId_dueAt_id_idx" ON "EvidenceRequest"("organizationId", "dueAt", "id");

-- CreateIndex
CREATE INDEX "EvidenceRequest_controlId_idx" ON "EvidenceRequest"("controlId");

-- CreateIndex
CREATE INDEX "EvidenceRequest_vendorId_idx" ON "EvidenceRequest"("vendorId");

-- CreateIndex
CREATE INDEX "EvidenceRequest_createdById_idx" ON "EvidenceRequest"("createdById");

-- CreateIndex
CREATE INDEX "EvidenceRequest_status_dueAt_idx" ON "EvidenceRequest"("status", "dueAt");

-- CreateIndex
CREATE INDEX "EvidenceRequest_status_expiresAt_idx" ON "EvidenceRequest"("status", "expiresAt");

-- CreateIndex
CREATE INDEX "AttachmentUpload_evidenceRequestId_attachmentId_idx" ON "AttachmentUpload"("evidenceRequestId", "attachmentId");

-- AddForeignKey
ALTER TABLE "AttachmentUpload" ADD CONSTRAINT "AttachmentUpload_evidenceRequestId_fkey" FOREIGN KEY ("evidenceRequestId") REFERENCES "EvidenceRequest"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Framework" ADD CONSTRAINT "Framework_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Requirement" ADD CONSTRAINT "Requirement_frameworkId_fkey" FOREIGN KEY ("frameworkId") REFERENCES "Framework"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Requirement" ADD CONSTRAINT "Requirement_parentId_fkey" FOREIGN KEY ("parentId") REFERENCES "Requirement"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FrameworkAdoption" ADD CONSTRAINT "FrameworkAdoption_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FrameworkAdoption" ADD CONSTRAINT "FrameworkAdoption_frameworkId_fkey" FOREIGN KEY ("frameworkId") REFERENCES "Framework"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RequirementApplicability" ADD CONSTRAINT "RequirementApplicability_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RequirementApplicability" ADD CONSTRAINT "RequirementApplicability_requirementId_fkey" FOREIGN KEY ("requirementId") REFERENCES "Requirement"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RequirementMapping" ADD CONSTRAINT "RequirementMapping_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RequirementMapping" ADD CONSTRAINT "RequirementMapping_sourceId_fkey" FOREIGN KEY ("sourceId") REFERENCES "Requirement"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RequirementMapping" ADD CONSTRAINT "RequirementMapping_targetId_fkey" FOREIGN KEY ("targetId") REFERENCES "Requirement"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Control" ADD CONSTRAINT "Control_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Control" ADD CONSTRAINT "Control_ownerId_fkey" FOREIGN KEY ("ownerId") REFERENCES "Member"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ControlRequirement" ADD CONSTRAINT "ControlRequirement_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ControlRequirement" ADD CONSTRAINT "ControlRequirement_controlId_fkey" FOREIGN KEY ("controlId") REFERENCES "Control"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ControlRequirement" ADD CONSTRAINT "ControlRequirement_requirementId_fkey" FOREIGN KEY ("requirementId") REFERENCES "Requirement"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ControlPolicy" ADD CONSTRAINT "ControlPolicy_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ControlPolicy" ADD CONSTRAINT "ControlPolicy_controlId_fkey" FOREIGN KEY ("controlId") REFERENCES "Control"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ControlPolicy" ADD CONSTRAINT "ControlPolicy_policyId_fkey" FOREIGN KEY ("policyId") REFERENCES "Policy"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ControlTask" ADD CONSTRAINT "ControlTask_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ControlTask" ADD CONSTRAINT "ControlTask_controlId_fkey" FOREIGN KEY ("controlId") REFERENCES "Control"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ControlTask" ADD CONSTRAINT "ControlTask_taskId_fkey" FOREIGN KEY ("taskId") REFERENCES "Task"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Evidence" ADD CONSTRAINT "Evidence_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Evidence" ADD CONSTRAINT "Evidence_controlId_fkey" FOREIGN KEY ("controlId") REFERENCES "Control"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Evidence" ADD CONSTRAINT "Evidence_vendorId_fkey" FOREIGN KEY ("vendorId") REFERENCES "Vendor"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Evidence" ADD CONSTRAINT "Evidence_attachmentId_fkey" FOREIGN KEY ("attachmentId") REFERENCES "Attachment"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Evidence" ADD CONSTRAINT "Evidence_submittedById_fkey" FOREIGN KEY ("submittedById") REFERENCES "Member"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Evidence" ADD CONSTRAINT "Evidence_reviewedById_fkey" FOREIGN KEY ("reviewedById") REFERENCES "Member"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Evidence" ADD CONSTRAINT "Evidence_evidenceRequestId_fkey" FOREIGN KEY ("evidenceRequestId") REFERENCES "EvidenceRequest"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EvidenceRequest" ADD CONSTRAINT "EvidenceRequest_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EvidenceRequest" ADD CONSTRAINT "EvidenceRequest_controlId_fkey" FOREIGN KEY ("controlId") REFERENCES "Control"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EvidenceRequest" ADD CONSTRAINT "EvidenceRequest_vendorId_fkey" FOREIGN KEY ("vendorId") REFERENCES "Vendor"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EvidenceRequest" ADD CONSTRAINT "EvidenceRequest_createdById_fkey" FOREIGN KEY ("createdById") REFERENCES "Member"("id") ON DELETE SET NULL ON UPDATE CASCADE;
