-- CreateTable
CREATE TABLE "TrustedDocument" (
    "id" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "app" TEXT NOT NULL,
    "version" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TrustedDocument_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "TrustedDocument_app_version_idx" ON "TrustedDocument"("app", "version");
