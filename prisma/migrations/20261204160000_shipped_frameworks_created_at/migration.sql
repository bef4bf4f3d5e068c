-- The shipped frameworks were inserted with their catalog's date as "updatedAt" and the time of the
-- migration as "createdAt", so that they answered a creation after their last change. Their creation
-- is the catalog's date too, the same on every database.
UPDATE "Framework" SET "createdAt" = "updatedAt" WHERE "organizationId" IS NULL AND "createdAt" > "updatedAt";
