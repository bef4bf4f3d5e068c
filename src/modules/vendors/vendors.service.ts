import { z } from "zod";
import type { Actor } from "../../context.js";
import type { Db } from "../../db/database.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { newId } from "../../ids.js";
import { commonLimits, text } from "../../limits.js";
import { parseInput } from "../../validation.js";
import { auditEvent } from "../audit/audit.service.js";

type VendorQuery = { select?: Prisma.VendorSelect; include?: Prisma.VendorInclude };

const createInput = z.object({
  name: text(commonLimits.name),
  description: text(commonLimits.freeText).nullish(),
});

export type CreateVendorArgs = z.input<typeof createInput>;

export function createVendorService(db: Db) {
  return {
    async create(actor: Actor, args: CreateVendorArgs, query: VendorQuery) {
      const input = parseInput(createInput, args);
      return db.$transaction(async (tx) => {
        const vendor = await tx.vendor.create({
          ...query,
          data: {
            id: newId("vnd"),
            organizationId: actor.organizationId,
            name: input.name,
            description: input.description ?? null,
          },
        });
        await tx.auditEvent.create({
          data: auditEvent(actor, "vendor.created", { type: "vendor", id: vendor.id }, { name: input.name }),
        });
        return vendor;
      });
    },
  };
}
