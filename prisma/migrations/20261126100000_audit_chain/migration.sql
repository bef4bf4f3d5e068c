-- The audit chain (docs/audit.md). The columns start nullable: the migrator's step for this
-- migration (src/platform/db/migration-steps.ts) gives existing events their sequence and hash in
-- their order (createdAt, id), in this migration's transaction; the next migration makes them required.

-- AlterTable
ALTER TABLE "AuditEvent" ADD COLUMN     "hash" TEXT,
ADD COLUMN     "sequence" INTEGER;

-- CreateTable
CREATE TABLE "AuditChainHead" (
    "organizationId" TEXT NOT NULL,
    "sequence" INTEGER NOT NULL,
    "hash" TEXT NOT NULL,

    CONSTRAINT "AuditChainHead_pkey" PRIMARY KEY ("organizationId")
);

-- CreateTable
CREATE TABLE "AuditCheckpoint" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "sequence" INTEGER NOT NULL,
    "hash" TEXT NOT NULL,
    "signedAt" TIMESTAMP(3) NOT NULL,
    "signature" TEXT NOT NULL,
    "keyId" TEXT NOT NULL,
    "purgedEvents" INTEGER,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AuditCheckpoint_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "AuditCheckpoint_organizationId_sequence_idx" ON "AuditCheckpoint"("organizationId", "sequence");

-- CreateIndex
CREATE INDEX "AuditCheckpoint_organizationId_createdAt_id_idx" ON "AuditCheckpoint"("organizationId", "createdAt", "id");

-- AddForeignKey
ALTER TABLE "AuditChainHead" ADD CONSTRAINT "AuditChainHead_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AuditCheckpoint" ADD CONSTRAINT "AuditCheckpoint_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
