-- Attachments' bytes leave the Attachment row for a store (issue 44). Existing bytes move to the
-- database store's tables below, in parts of 1 MiB, under a new random key (128 bits, hex).
ALTER TABLE "Attachment" ADD COLUMN "objectKey" TEXT,
ADD COLUMN     "sha256" TEXT,
ADD COLUMN     "store" TEXT;

UPDATE "Attachment"
   SET "store" = 'database',
       "objectKey" = replace(gen_random_uuid()::text, '-', ''),
       "sha256" = encode(sha256("data"), 'hex');

-- CreateTable
CREATE TABLE "AttachmentObject" (
    "objectKey" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "sha256" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AttachmentObject_pkey" PRIMARY KEY ("objectKey")
);

-- CreateTable
CREATE TABLE "AttachmentObjectPart" (
    "objectKey" TEXT NOT NULL,
    "part" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "AttachmentObjectPart_pkey" PRIMARY KEY ("objectKey","part")
);

-- CreateTable
CREATE TABLE "AttachmentUpload" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "memberId" TEXT,
    "apiKeyId" TEXT,
    "fileName" TEXT NOT NULL,
    "fileType" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "sha256" TEXT NOT NULL,
    "store" TEXT NOT NULL,
    "objectKey" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "attachmentId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AttachmentUpload_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AttachmentDeletion" (
    "id" TEXT NOT NULL,
    "store" TEXT NOT NULL,
    "objectKey" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AttachmentDeletion_pkey" PRIMARY KEY ("id")
);

-- Move the existing bytes: the object row, then its parts (an empty file is one empty part).
INSERT INTO "AttachmentObject" ("objectKey", "size", "sha256", "type", "createdAt")
SELECT "objectKey", length("data"), "sha256", "type", "createdAt" FROM "Attachment";

INSERT INTO "AttachmentObjectPart" ("objectKey", "part", "data")
SELECT a."objectKey", p.part, substring(a."data" FROM p.part * 1048576 + 1 FOR 1048576)
  FROM "Attachment" a
 CROSS JOIN LATERAL generate_series(0, greatest(length(a."data") - 1, 0) / 1048576) AS p(part);

ALTER TABLE "Attachment" DROP COLUMN "data",
ALTER COLUMN "objectKey" SET NOT NULL,
ALTER COLUMN "sha256" SET NOT NULL,
ALTER COLUMN "store" SET NOT NULL;

-- CreateTable
CREATE TABLE "ServiceSecret" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ServiceSecret_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "AttachmentUpload_organizationId_memberId_attachmentId_idx" ON "AttachmentUpload"("organizationId", "memberId", "attachmentId");

-- CreateIndex
CREATE INDEX "AttachmentUpload_organizationId_apiKeyId_attachmentId_idx" ON "AttachmentUpload"("organizationId", "apiKeyId", "attachmentId");

-- CreateIndex
CREATE INDEX "AttachmentUpload_expiresAt_idx" ON "AttachmentUpload"("expiresAt");

-- CreateIndex
CREATE UNIQUE INDEX "AttachmentUpload_store_objectKey_key" ON "AttachmentUpload"("store", "objectKey");

-- CreateIndex
CREATE INDEX "AttachmentDeletion_nextAttemptAt_idx" ON "AttachmentDeletion"("nextAttemptAt");

-- CreateIndex
CREATE UNIQUE INDEX "Attachment_store_objectKey_key" ON "Attachment"("store", "objectKey");

-- AddForeignKey
ALTER TABLE "AttachmentUpload" ADD CONSTRAINT "AttachmentUpload_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
