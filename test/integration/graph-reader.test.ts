import { describe, expect, it } from "vitest";
import { planned, recordsByKey } from "../../src/platform/db/graph-reader.js";
import { openFixture } from "../helpers/fixtures.js";

const { t, org, other } = await openFixture();

// The graph's read path (src/platform/db/graph-reader.ts) must answer what Prisma's findMany answers
// for the same selection, value for value and type for type, on both databases: every relation of
// every screen is read through it.

const byId = <T extends { id?: unknown }>(rows: T[]) => rows.toSorted((a, b) => String(a.id).localeCompare(String(b.id)));

async function commentWithAttachments(entityType: string, entityId: string, userId: string, files: number) {
  const res = await t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: {
      content: `with ${files} files`,
      entityType,
      entityId,
      userId,
      attachments: Array.from({ length: files }, (_, i) => ({
        fileName: `f${i}.txt`,
        fileType: "text/plain",
        fileData: "YQ==",
        ...(i % 2 ? { description: "odd" } : {}),
      })),
    },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

const authorSelection = { select: { userId: true, isActive: true, user: { select: { name: true, email: true, image: true } } } };
const attachmentSelection = {
  orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  select: { id: true, name: true, type: true, size: true, createdAt: true, description: true },
};

describe("the graph's read path", () => {
  it("answers comments with their authors (joined) and attachments (one statement) as findMany does", async () => {
    const ids = [
      await commentWithAttachments("vendor", org.vendorIds[0] as string, org.userIds[0] as string, 3),
      await commentWithAttachments("task", org.taskIds[0] as string, org.userIds[1] as string, 0),
      await commentWithAttachments("vendor", org.vendorIds[1] as string, org.userIds[0] as string, 2),
    ];
    const selections = [
      undefined,
      { include: { author: authorSelection, attachments: attachmentSelection } },
      { include: { author: true } },
      { select: { id: true, content: true, createdAt: true, author: authorSelection } },
      { select: { id: true, attachments: true } },
    ];
    for (const query of selections) {
      expect(planned("Comment", query), JSON.stringify(query)).toBe(true);
      const read = recordsByKey<{ id: string }>("Comment", t.db, org.organizationId);
      const ours = byId(await read([...ids, "cmt_unknown"], query));
      const prisma = byId(
        await t.db.comment.findMany({ ...(query as object), where: { id: { in: ids }, organizationId: org.organizationId } }),
      );
      expect(ours, JSON.stringify(query)).toEqual(prisma);
      expect(ours).toHaveLength(3);
    }
  });

  it("answers optional to-one relations (null or joined) and to-many lists in their order, as findMany does", async () => {
    await t.db.vendor.update({ where: { id: org.vendorIds[0] }, data: { assigneeId: org.memberIds[1] } });
    await t.db.vendor.update({ where: { id: org.vendorIds[1] }, data: { assigneeId: null } });
    const cases: [string, object, string[]][] = [
      ["Vendor", { include: { assignee: { include: { user: true } } } }, org.vendorIds as string[]],
      ["Policy", { include: { currentVersion: true, versions: { orderBy: { version: "desc" } } } }, org.policyIds as string[]],
      [
        "Member",
        { select: { id: true, role: true, user: { select: { name: true, lastLogin: true } } } },
        org.memberIds as string[],
      ],
      ["Task", { include: { assignee: true } }, org.taskIds as string[]],
    ];
    for (const [model, query, ids] of cases) {
      expect(planned(model, query), `${model} ${JSON.stringify(query)}`).toBe(true);
      const ours = byId(await recordsByKey<{ id: string }>(model, t.db, org.organizationId)(ids, query));
      const delegate = (t.db as unknown as Record<string, { findMany(a: object): Promise<{ id: string }[]> }>)[
        model.charAt(0).toLowerCase() + model.slice(1)
      ];
      const prisma = byId(await delegate!.findMany({ ...query, where: { id: { in: ids }, organizationId: org.organizationId } }));
      expect(ours, `${model} ${JSON.stringify(query)}`).toEqual(prisma);
      expect(ours.length).toBe(ids.length);
    }
  });

  it("reads by another unique key (a member by user id) and keeps to the caller's organization", async () => {
    const query = { include: { user: true } };
    const read = recordsByKey<{ userId: string }>("Member", t.db, org.organizationId, "userId");
    const ours = await read([...(org.userIds as string[]), ...(other.userIds as string[])], query);
    const prisma = await t.db.member.findMany({
      ...query,
      where: { userId: { in: [...org.userIds, ...other.userIds] as string[] }, organizationId: org.organizationId },
    });
    expect(byId(ours as never[])).toEqual(byId(prisma));
    expect(ours.every((m) => (org.userIds as string[]).includes(m.userId))).toBe(true);
    const foreign = await recordsByKey("Vendor", t.db, other.organizationId)(org.vendorIds as string[], undefined);
    expect(foreign).toEqual([]);
  });

  it("leaves to findMany what it does not plan (filters and limits on a relation, counts), with the same answer", async () => {
    const unplanned = [
      { include: { attachments: { where: { size: { gt: 0 } } } } },
      { include: { attachments: { take: 1 } } },
      { include: { _count: { select: { attachments: true } } } },
    ];
    const [id] = await t.db.comment.findMany({ where: { organizationId: org.organizationId }, select: { id: true }, take: 1 });
    for (const query of unplanned) {
      expect(planned("Comment", query)).toBe(false);
      const ours = await recordsByKey("Comment", t.db, org.organizationId)([id?.id as string], query);
      const prisma = await t.db.comment.findMany({
        ...(query as object),
        where: { id: { in: [id?.id as string] }, organizationId: org.organizationId },
      });
      expect(ours).toEqual(prisma);
    }
  });

  it("reads a level and each to-many level below it in one statement each, for 2 parents as for 20", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(await commentWithAttachments("risk", org.riskIds[0] as string, org.userIds[i % 2] as string, 1));
    }
    const query = { include: { author: authorSelection, attachments: attachmentSelection } };
    const read = recordsByKey("Comment", t.db, org.organizationId);
    await read(ids.slice(0, 1), query);
    const two = await t.countQueries(() => read(ids.slice(0, 2), query));
    const twenty = await t.countQueries(() => read(ids, query));
    expect(two.count, two.statements.join("\n")).toBe(2);
    expect(twenty.statements.toSorted()).toEqual(two.statements.toSorted());
  });
});
