import SchemaBuilder from "@pothos/core";
import PrismaPlugin from "@pothos/plugin-prisma";
import { GraphQLError, Kind } from "graphql";
import type PrismaTypes from "../generated/pothos-types.js";
import { getDatamodel } from "../generated/pothos-types.js";
import type { Context } from "./context.js";

export const builder = new SchemaBuilder<{
  PrismaTypes: PrismaTypes;
  Context: Context;
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: false;
  Scalars: {
    ID: { Input: string; Output: string };
    DateTime: { Input: Date; Output: Date };
    Date: { Input: string; Output: Date | string };
    JSON: { Input: unknown; Output: unknown };
  };
}>({
  plugins: [PrismaPlugin],
  defaultFieldNullability: false,
  prisma: {
    client: (ctx) => ctx.services.db,
    dmmf: getDatamodel(),
    exposeDescriptions: false,
    onUnusedQuery: null,
  },
});

builder.queryType({ description: "Reads. Every field needs a credential and the permission its description names." });
builder.mutationType({
  description:
    "Writes. Every field needs a credential and the permission its description names; send Idempotency-Key to make retries safe.",
});

builder.scalarType("DateTime", {
  description: "An ISO 8601 date-time in UTC, e.g. 2026-11-22T10:15:00.000Z",
  serialize: (value) => value.toISOString(),
  parseValue: (value) => {
    const date = typeof value === "string" ? new Date(value) : undefined;
    if (!date || Number.isNaN(date.getTime())) throw new GraphQLError("DateTime must be an ISO 8601 string");
    return date;
  },
  parseLiteral: (ast) => {
    const date = ast.kind === Kind.STRING ? new Date(ast.value) : undefined;
    if (!date || Number.isNaN(date.getTime())) throw new GraphQLError("DateTime must be an ISO 8601 string");
    return date;
  },
});

const calendarDate = /^\d{4}-\d{2}-\d{2}$/;
/** A real calendar date written YYYY-MM-DD (years 1 to 9999), e.g. not 2026-02-30. */
function parseCalendarDate(value: unknown): string {
  if (typeof value === "string" && calendarDate.test(value)) {
    const date = new Date(`${value}T00:00:00Z`);
    if (!Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value) return value;
  }
  throw new GraphQLError("Date must be a calendar date written YYYY-MM-DD, e.g. 2026-12-31");
}

builder.scalarType("Date", {
  description: "A calendar date, YYYY-MM-DD (ISO 8601), with no time or time zone, e.g. 2026-12-31",
  serialize: (value) => (value instanceof Date ? value.toISOString().slice(0, 10) : value),
  parseValue: parseCalendarDate,
  parseLiteral: (ast) => parseCalendarDate(ast.kind === Kind.STRING ? ast.value : undefined),
});

builder.scalarType("JSON", {
  description: "Any JSON value",
  serialize: (value) => value,
  parseValue: (value) => value,
});
