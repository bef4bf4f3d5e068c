import type { Actor } from "../../auth/actor.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { Db } from "../../platform/db/database.js";

type Query<S, I> = { select?: S; include?: I };

/** What the caller may know about itself, whatever its permissions. */
export function createViewerService(db: Db) {
  return {
    organization(caller: Actor, query: Query<Prisma.OrganizationSelect, Prisma.OrganizationInclude>) {
      return db.organization.findUniqueOrThrow({ ...query, where: { id: caller.organizationId } });
    },

    async member(caller: Actor, query: Query<Prisma.MemberSelect, Prisma.MemberInclude>) {
      if (!caller.userId) return null;
      return db.member.findUnique({
        ...query,
        where: { organizationId_userId: { organizationId: caller.organizationId, userId: caller.userId } },
      });
    },

    async user(caller: Actor, query: Query<Prisma.UserSelect, Prisma.UserInclude>) {
      if (!caller.userId) return null;
      return db.user.findUnique({ ...query, where: { id: caller.userId } });
    },

    organizations(caller: Actor, query: Query<Prisma.OrganizationSelect, Prisma.OrganizationInclude>) {
      const where = caller.userId
        ? { members: { some: { userId: caller.userId, isActive: true } } }
        : { id: caller.organizationId };
      return db.organization.findMany({ ...query, where, orderBy: [{ name: "asc" }, { id: "asc" }], take: 100 });
    },
  };
}
