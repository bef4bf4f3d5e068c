-- AlterTable
ALTER TABLE "PolicyVersion" ADD COLUMN     "submittedByKeyId" TEXT,
ADD COLUMN     "submittedByUserId" TEXT;

-- Versions submitted before this migration: the submitter is the actor of their latest
-- policy.version_submitted audit event (written in the same transaction as the submit).
UPDATE "PolicyVersion" AS v
SET "submittedByUserId" = e."actorUserId", "submittedByKeyId" = e."actorApiKeyId"
FROM (
  SELECT DISTINCT ON ("data"->>'versionId') "data"->>'versionId' AS "versionId", "actorUserId", "actorApiKeyId"
  FROM "AuditEvent"
  WHERE "action" = 'policy.version_submitted'
  ORDER BY "data"->>'versionId', "createdAt" DESC, "id" DESC
) AS e
WHERE e."versionId" = v."id" AND v."approverId" IS NOT NULL;
