import type { Prisma } from "../../generated/prisma/client.js";

/** E-mail for notifications; absent when SMTP is not configured. */
export type NotificationMail = {
  /** In the caller's transaction, one e-mail job per notification given (the caller has left out the reasons each recipient switched off). */
  enqueue(tx: Prisma.TransactionClient, notificationIds: readonly string[]): Promise<void>;
};
