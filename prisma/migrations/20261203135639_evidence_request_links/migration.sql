-- AlterTable
ALTER TABLE "EvidenceRequest" ADD COLUMN     "linkGeneration" INTEGER NOT NULL DEFAULT 1;

-- CreateIndex
CREATE INDEX "EvidenceRequest_organizationId_title_id_idx" ON "EvidenceRequest"("organizationId", "title", "id");

-- CreateIndex
CREATE INDEX "EvidenceRequest_title_idx" ON "EvidenceRequest" USING GIN ("title" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "EvidenceRequest_recipientEmail_idx" ON "EvidenceRequest" USING GIN ("recipientEmail" gin_trgm_ops);
