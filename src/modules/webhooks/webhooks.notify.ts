import type { Prisma } from "../../generated/prisma/client.js";
import type { Notifier } from "../notifications/notifications.service.js";

export type DisabledEndpoint = { id: string; organizationId: string; url: string };

/**
 * Tells the organization's active owners and admins that an endpoint was disabled (reason
 * webhook_disabled: the inbox, and e-mail where it is on), in the disabling transaction; the
 * returned function announces it to their live streams once that has committed.
 */
export function notifyDisabled(notifier: Notifier) {
  return async (tx: Prisma.TransactionClient, endpoint: DisabledEndpoint): Promise<() => void> => {
    const members = await tx.member.findMany({
      where: { organizationId: endpoint.organizationId, isActive: true, role: { in: ["owner", "admin"] } },
      select: { id: true },
    });
    const written = await notifier.write(tx, { organizationId: endpoint.organizationId }, [
      {
        reason: "webhook_disabled",
        recipientIds: members.map((m) => m.id),
        entity: { type: "webhook_endpoint", id: endpoint.id },
      },
    ]);
    return () => notifier.announce(written);
  };
}
