import { z } from "zod";
import type { Actor } from "../../context.js";
import type { Db } from "../../db/database.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { newId } from "../../ids.js";
import { commonLimits, text } from "../../limits.js";
import { parseInput } from "../../validation.js";
import { auditEvent } from "../audit/audit.service.js";

type RiskQuery = { select?: Prisma.RiskSelect; include?: Prisma.RiskInclude };

const createInput = z.object({
  title: text(commonLimits.name),
  description: text(commonLimits.freeText).nullish(),
});

export type CreateRiskArgs = z.input<typeof createInput>;

export function createRiskService(db: Db) {
  return {
    async create(actor: Actor, args: CreateRiskArgs, query: RiskQuery) {
      const input = parseInput(createInput, args);
      return db.$transaction(async (tx) => {
        const risk = await tx.risk.create({
          ...query,
          data: {
            id: newId("rsk"),
            organizationId: actor.organizationId,
            title: input.title,
            description: input.description ?? null,
          },
        });
        await tx.auditEvent.create({
          data: auditEvent(actor, "risk.created", { type: "risk", id: risk.id }, { title: input.title }),
        });
        return risk;
      });
    },
  };
}
