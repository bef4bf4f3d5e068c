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
    HttpHeaders: { Input: Record<string, string>; Output: Record<string, string> };
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

/**
 * The instants the database stores: years 1 to 9999. JavaScript dates reach 275,760 years either
 * side of 1970 and PostgreSQL has no year 0, so anything outside is refused here, for every
 * DateTime argument and filter at once, instead of failing in the database.
 */
const earliest = Date.parse("0001-01-01T00:00:00.000Z");
const latest = Date.parse("9999-12-31T23:59:59.999Z");
const dateTimeMessage = "DateTime must be an ISO 8601 string between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z";

function parseDateTime(value: unknown): Date {
  const date = typeof value === "string" ? new Date(value) : undefined;
  const time = date?.getTime();
  if (!date || time === undefined || Number.isNaN(time) || time < earliest || time > latest) {
    throw new GraphQLError(dateTimeMessage);
  }
  return date;
}

const twoDigits = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const threeDigits = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/**
 * A date's `toISOString()` (UTC, milliseconds) written here for years 1000 to 9999: V8's is a call
 * into its runtime, about 4 times the cost of these few additions, paid for every date-time of a page
 * (bench/results/2026-12-05.md). Other years, and an invalid date's error, are V8's.
 */
export function isoDateTime(date: Date): string {
  const year = date.getUTCFullYear();
  if (!(year >= 1000 && year <= 9999)) return date.toISOString();
  return `${year}-${twoDigits(date.getUTCMonth() + 1)}-${twoDigits(date.getUTCDate())}T${twoDigits(date.getUTCHours())}:${twoDigits(date.getUTCMinutes())}:${twoDigits(date.getUTCSeconds())}.${threeDigits(date.getUTCMilliseconds())}Z`;
}

/** The calendar date of `isoDateTime`: `toISOString().slice(0, 10)`. */
export function isoDate(date: Date): string {
  const year = date.getUTCFullYear();
  if (!(year >= 1000 && year <= 9999)) return date.toISOString().slice(0, 10);
  return `${year}-${twoDigits(date.getUTCMonth() + 1)}-${twoDigits(date.getUTCDate())}`;
}

builder.scalarType("DateTime", {
  description: "An ISO 8601 date-time in UTC, years 0001 to 9999, e.g. 2026-11-22T10:15:00.000Z",
  // A REST body's date-time reaches serialize as its text (Sofa writes the body's values into the
  // operation as literals): it is checked as an input would be.
  serialize: (value) => isoDateTime(value instanceof Date ? value : parseDateTime(value)),
  parseValue: parseDateTime,
  parseLiteral: (ast) => parseDateTime(ast.kind === Kind.STRING ? ast.value : undefined),
});

const calendarDate = /^\d{4}-\d{2}-\d{2}$/;
/** A real calendar date written YYYY-MM-DD (years 1 to 9999), e.g. not 2026-02-30. */
function parseCalendarDate(value: unknown): string {
  if (typeof value === "string" && calendarDate.test(value)) {
    const date = new Date(`${value}T00:00:00Z`);
    // Year 0000 is a valid ISO date, but PostgreSQL has no year 0.
    if (!value.startsWith("0000") && !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value) return value;
  }
  throw new GraphQLError("Date must be a calendar date written YYYY-MM-DD, years 0001 to 9999, e.g. 2026-12-31");
}

builder.scalarType("Date", {
  description: "A calendar date, YYYY-MM-DD (ISO 8601), with no time or time zone, e.g. 2026-12-31",
  serialize: (value) => (value instanceof Date ? isoDate(value) : value),
  parseValue: parseCalendarDate,
  parseLiteral: (ast) => parseCalendarDate(ast.kind === Kind.STRING ? ast.value : undefined),
});

builder.scalarType("JSON", {
  description: "Any JSON value",
  serialize: (value) => value,
  parseValue: (value) => value,
});

function parseHttpHeaders(value: unknown): Record<string, string> {
  if (value && typeof value === "object" && !Array.isArray(value) && Object.values(value).every((v) => typeof v === "string")) {
    return value as Record<string, string>;
  }
  throw new GraphQLError("HttpHeaders must be an object of header names to string values");
}

builder.scalarType("HttpHeaders", {
  description: 'HTTP headers to send: an object of header name to value, e.g. {"Content-Type": "application/pdf"}',
  serialize: (value) => value,
  parseValue: parseHttpHeaders,
});
