-- CreateEnum
CREATE TYPE "NotificationOutcome" AS ENUM ('approved', 'rejected');

-- AlterTable
ALTER TABLE "Notification" ADD COLUMN     "outcome" "NotificationOutcome";
