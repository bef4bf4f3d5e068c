/**
 * Dates a caller can send, over the whole range a date string can express (JavaScript's ±275,760
 * years, ISO 8601's extended years, year 0000), in filters, writes and cursors, on both transports:
 * what the database stores (years 0001 to 9999) is accepted, anything else is a 400 naming the
 * field, never a 500 from the database (PostgreSQL's 22008).
 *
 * A property test in the integration tier, so that it runs on PostgreSQL too (the limit is its).
 * Replay: FUZZ_SEED=<seed printed at the start> npx vitest run test/integration/date-range.test.ts
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { announceSeed, fuzzParameters } from "../fuzz/arbitraries.js";
import { openFixture } from "../helpers/fixtures.js";

announceSeed("dates");
const { t, org } = await openFixture({ organizations: 1 });
const key = org.apiKey;

const earliest = Date.parse("0001-01-01T00:00:00.000Z");
const latest = Date.parse("9999-12-31T23:59:59.999Z");
const storable = (time: number) => time >= earliest && time <= latest;

/** Instants over JavaScript's whole range, weighted towards the edges of the database's. */
const instantArb = fc.oneof(
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }),
  fc.integer({ min: -2, max: 2 }).map((d) => new Date(earliest + d)),
  fc.integer({ min: -2, max: 2 }).map((d) => new Date(latest + d)),
  fc.date({ min: new Date("-000001-01-01T00:00:00Z"), max: new Date("0002-01-01T00:00:00Z"), noInvalidDate: true }),
  fc.date({ min: new Date("9998-01-01T00:00:00Z"), max: new Date("+010001-01-01T00:00:00Z"), noInvalidDate: true }),
);
/** A date-time as a caller writes it: ISO 8601 (extended years included) or with an offset. */
const dateTimeArb = fc.tuple(instantArb, fc.boolean()).map(([date, offset]) => {
  const iso = date.toISOString();
  return { time: date.getTime(), text: offset ? iso.replace("Z", "+00:00") : iso };
});
/** A calendar date YYYY-MM-DD (years 0000 to 9999), or an extended year JavaScript writes. */
const dateArb = instantArb.map((date) => {
  const text = date.toISOString().slice(0, date.toISOString().indexOf("T"));
  return { time: Date.parse(`${text}T00:00:00Z`), text };
});

const params = fuzzParameters<unknown>(40, 4000);

async function restList(query: string) {
  return t.rest("GET", `/v1/tasks?${query}`, { key });
}

function expectRefused(status: number, body: unknown, field: string) {
  expect(status).toBe(400);
  expect(JSON.stringify(body)).toContain(field);
}

describe("dates outside what the database stores are a 400 naming the field", () => {
  it("DateTime filters (createdAfter, updatedBefore), GraphQL and REST", async () => {
    await fc.assert(
      fc.asyncProperty(dateTimeArb, fc.constantFrom("createdAfter", "updatedBefore"), async ({ time, text }, field) => {
        const gql = await t.gql(
          "query($filter: TaskFilter) { tasks(filter: $filter) { totalCount } }",
          { filter: { [field]: text } },
          { key },
        );
        const rest = await restList(`${field}=${encodeURIComponent(text)}`);
        if (storable(time)) {
          expect(gql.body.errors).toBeUndefined();
          expect(rest.status).toBe(200);
        } else {
          expectRefused(gql.status, gql.body, field);
          expect(gql.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
          expectRefused(rest.status, rest.body, field);
          expect(rest.body.details[0].path).toBe(field);
        }
      }),
      params,
    );
  });

  it("Date filters (dueBefore) and writes (dueDate), GraphQL and REST", async () => {
    await fc.assert(
      fc.asyncProperty(dateArb, async ({ time, text }) => {
        const ok = /^\d{4}-\d{2}-\d{2}$/.test(text) && storable(time);
        const gql = await t.gql(
          "query($filter: TaskFilter) { tasks(filter: $filter) { totalCount } }",
          { filter: { dueBefore: text } },
          { key },
        );
        const rest = await restList(`dueBefore=${encodeURIComponent(text)}`);
        const write = await t.gql(
          'mutation($dueDate: Date) { createTask(title: "Dated", dueDate: $dueDate) { dueDate } }',
          { dueDate: text },
          { key },
        );
        const restWrite = await t.rest("POST", "/v1/tasks", { key, body: { title: "Dated", dueDate: text } });
        if (ok) {
          expect(gql.body.errors).toBeUndefined();
          expect(rest.status).toBe(200);
          expect(write.body.data.createTask.dueDate).toBe(text);
          expect(restWrite.status).toBe(201);
          expect(restWrite.body.dueDate).toBe(text);
        } else {
          expectRefused(gql.status, gql.body, "dueBefore");
          expectRefused(rest.status, rest.body, "dueBefore");
          expect(rest.body.details[0].path).toBe("dueBefore");
          expectRefused(write.status, write.body, "dueDate");
          expectRefused(restWrite.status, restWrite.body, "dueDate");
        }
      }),
      params,
    );
  });

  it("a forged cursor holding a date the database cannot store", async () => {
    await t.rest("POST", "/v1/tasks", { key, body: { title: "Due", dueDate: "2026-12-31" } });
    const page = async (field: string) => {
      const r = await t.gql(
        `{ tasks(first: 1, orderBy: {field: ${field}, direction: asc}) { pageInfo { endCursor } } }`,
        {},
        { key },
      );
      return JSON.parse(Buffer.from(r.body.data.tasks.pageInfo.endCursor, "base64url").toString()) as { v: string };
    };
    const forge = (cursor: { v: string }, year: string) =>
      Buffer.from(JSON.stringify({ ...cursor, v: year + cursor.v.slice(4) })).toString("base64url");
    const created = await page("createdAt");
    const due = await page("dueDate");
    for (const [field, cursor] of [
      ["createdAt", created],
      ["dueDate", due],
    ] as const) {
      for (const year of ["0000", "0001", "9999"]) {
        const forged = forge(cursor, year);
        const gql = await t.gql(
          `query($after: String) { tasks(first: 1, after: $after, orderBy: {field: ${field}, direction: asc}) { totalCount } }`,
          { after: forged },
          { key },
        );
        const rest = await restList(`sort=${field}&cursor=${forged}`);
        if (year === "0000") {
          expect(gql.body.errors[0].extensions.code, field).toBe("BAD_USER_INPUT");
          expect(gql.body.errors[0].message).toContain("after");
          expectRefused(rest.status, rest.body, "cursor");
        } else {
          expect(gql.body.errors, `${field} ${year}`).toBeUndefined();
          expect(rest.status).toBe(200);
        }
      }
    }
  });
});
