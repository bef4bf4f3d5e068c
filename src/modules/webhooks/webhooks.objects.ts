import type { Db } from "../../platform/db/database.js";
import { urlOrigin } from "./webhooks.http.js";

/** The largest message body that carries `object`; past it, `object` is null. */
export const OBJECT_BODY_LIMIT_BYTES = 20 * 1024;

const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

/**
 * The record an event is about, as the REST facade answers it (the Comment as `POST /v1/comments`,
 * the Task as `GET /v1/tasks/{id}`), or null when it no longer exists or has no REST shape.
 */
export async function restObjectOf(db: Db, organizationId: string, entity: { type: string; id: string }): Promise<unknown> {
  const where = { id: entity.id, organizationId };
  switch (entity.type) {
    case "comment": {
      const comment = await db.comment.findFirst({
        where,
        select: {
          id: true,
          content: true,
          createdAt: true,
          author: { select: { userId: true, isActive: true, user: { select: { name: true, email: true, image: true } } } },
          attachments: {
            select: { id: true, name: true, type: true, size: true, createdAt: true },
            orderBy: { createdAt: "asc" },
          },
        },
      });
      if (!comment) return null;
      const { author, ...rest } = comment;
      return json({
        ...rest,
        author: {
          id: author.userId,
          name: author.user.name,
          email: author.user.email,
          image: author.user.image,
          deactivated: !author.isActive,
        },
      });
    }
    case "task":
      return json(
        await db.task.findFirst({
          where,
          select: {
            id: true,
            title: true,
            description: true,
            status: true,
            taskTemplateId: true,
            createdAt: true,
            updatedAt: true,
          },
        }),
      );
    case "vendor":
      return json(
        await db.vendor.findFirst({
          where,
          select: {
            id: true,
            name: true,
            description: true,
            status: true,
            category: true,
            website: true,
            assigneeId: true,
            createdAt: true,
            updatedAt: true,
          },
        }),
      );
    case "risk":
      return json(
        await db.risk.findFirst({
          where,
          select: {
            id: true,
            title: true,
            description: true,
            category: true,
            status: true,
            likelihood: true,
            impact: true,
            score: true,
            treatment: true,
            assigneeId: true,
            createdAt: true,
            updatedAt: true,
          },
        }),
      );
    case "policy":
      return json(
        await db.policy.findFirst({
          where,
          select: {
            id: true,
            name: true,
            description: true,
            status: true,
            currentVersionId: true,
            createdAt: true,
            updatedAt: true,
          },
        }),
      );
    case "member":
      return json(
        await db.member.findFirst({
          where,
          select: {
            id: true,
            organizationId: true,
            userId: true,
            role: true,
            department: true,
            jobTitle: true,
            deviceLabelId: true,
            isActive: true,
            createdAt: true,
            user: {
              select: {
                id: true,
                name: true,
                email: true,
                emailVerified: true,
                image: true,
                lastLogin: true,
                createdAt: true,
                updatedAt: true,
              },
            },
          },
        }),
      );
    case "control":
      return json(
        await db.control.findFirst({
          where,
          select: {
            id: true,
            code: true,
            name: true,
            description: true,
            ownerId: true,
            evidenceEveryDays: true,
            createdAt: true,
            updatedAt: true,
          },
        }),
      );
    case "framework": {
      // Shipped frameworks belong to no organization: every organization sees them.
      const framework = await db.framework.findFirst({
        where: { id: entity.id, OR: [{ organizationId: null }, { organizationId }] },
        select: {
          id: true,
          key: true,
          name: true,
          version: true,
          source: true,
          license: true,
          organizationId: true,
          requirementCount: true,
          createdAt: true,
          updatedAt: true,
        },
      });
      if (!framework) return null;
      const { organizationId: owner, ...rest } = framework;
      return json({ ...rest, custom: owner !== null });
    }
    case "requirement":
      return json(
        await db.requirement.findFirst({
          where: { id: entity.id, framework: { OR: [{ organizationId: null }, { organizationId }] } },
          select: {
            id: true,
            frameworkId: true,
            ref: true,
            title: true,
            description: true,
            parentId: true,
            assessable: true,
            position: true,
          },
        }),
      );
    case "evidence":
      return json(
        await db.evidence.findFirst({
          where,
          select: {
            id: true,
            controlId: true,
            vendorId: true,
            description: true,
            collectedAt: true,
            validUntil: true,
            status: true,
            submittedById: true,
            submittedByEmail: true,
            reviewedById: true,
            reviewedAt: true,
            rejectionReason: true,
            createdAt: true,
            attachment: { select: { id: true, name: true, type: true, size: true, sha256: true, createdAt: true } },
          },
        }),
      );
    case "task_item":
      return json(
        await db.taskItem.findFirst({
          where,
          select: {
            id: true,
            title: true,
            description: true,
            status: true,
            priority: true,
            entityType: true,
            entityId: true,
            assigneeId: true,
            createdAt: true,
            updatedAt: true,
          },
        }),
      );
    case "webhook_endpoint": {
      const endpoint = await db.webhookEndpoint.findFirst({
        where,
        select: {
          id: true,
          url: true,
          description: true,
          eventTypes: true,
          enabled: true,
          disabledReason: true,
          createdAt: true,
          updatedAt: true,
        },
      });
      // Its URL's origin only, as in its audit events: the token a path or query carries stays with webhook:manage.
      return endpoint && json({ ...endpoint, url: urlOrigin(endpoint.url) });
    }
    default:
      return null;
  }
}
