-- Each due delivery is carried by a pg-boss job (queue webhook-delivery); the relay fills this in.
ALTER TABLE "WebhookDelivery" ADD COLUMN "jobId" TEXT;
