-- AlterEnum
ALTER TYPE "PolicyStatus" ADD VALUE 'needs_review';

-- AlterEnum
ALTER TYPE "PolicyVersionStatus" ADD VALUE 'in_review';

-- AlterTable
ALTER TABLE "Task" ADD COLUMN     "assigneeId" TEXT;

-- AlterTable
ALTER TABLE "TaskItem" ADD COLUMN     "assigneeId" TEXT;

-- AlterTable
ALTER TABLE "PolicyVersion" ADD COLUMN     "approverId" TEXT,
ADD COLUMN     "publishedAt" TIMESTAMP(3),
ADD COLUMN     "rejectionReason" TEXT;

-- CreateIndex
CREATE INDEX "Task_assigneeId_idx" ON "Task"("assigneeId");

-- CreateIndex
CREATE INDEX "TaskItem_assigneeId_idx" ON "TaskItem"("assigneeId");

-- CreateIndex
CREATE INDEX "PolicyVersion_approverId_idx" ON "PolicyVersion"("approverId");

-- AddForeignKey
ALTER TABLE "Task" ADD CONSTRAINT "Task_assigneeId_fkey" FOREIGN KEY ("assigneeId") REFERENCES "Member"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TaskItem" ADD CONSTRAINT "TaskItem_assigneeId_fkey" FOREIGN KEY ("assigneeId") REFERENCES "Member"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PolicyVersion" ADD CONSTRAINT "PolicyVersion_approverId_fkey" FOREIGN KEY ("approverId") REFERENCES "Member"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Versions published before the review workflow existed were published when they were created.
UPDATE "PolicyVersion" SET "publishedAt" = "createdAt" WHERE "status" = 'published';
