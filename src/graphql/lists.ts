import { createHash } from "node:crypto";
import DataLoader from "dataloader";
import { Prisma } from "../generated/prisma/client.js";
import type { Db } from "../platform/db/database.js";
import { type ScalarColumns, scalarColumns, selectsScalarsOnly } from "../platform/db/graph-reader.js";
import { readRows } from "../platform/db/row-by-id.js";
import { BadUserInputError } from "../platform/errors.js";
import { listLimits, text } from "../platform/limits.js";
import type { RecordQuery } from "./loaders.js";
import { type Edge, type Page, pageSizeOf } from "./pagination.js";

/**
 * Filtered, sorted, counted lists, root and relation alike, in SQL the indexes of the migrations
 * serve. A list is declared once (`ListSpec`: its table, the columns naming its parent, its filter
 * rules and its sortable columns); `listPage` answers a root field, `listLoader` the same list under
 * many parents in one statement (a LATERAL join), and both count with the same filter.
 */

export type Direction = "asc" | "desc";
export type Order = { field: string; direction: Direction };

/** A column a list sorts by: its SQL (table alias `t`), its SQL type and what its values look like. */
export type SortKey = {
  sql: Prisma.Sql;
  sqlType: string;
  kind: "timestamp" | "date" | "int" | "text" | "enum";
  nullable?: boolean;
  /** An enum's values, in their SQL order. */
  values?: readonly string[];
};

/** The SQL condition (table alias `t`) for one filter field's value, or null for "no condition". */
export type FilterRule = (value: never, scope: { organizationId: string }) => Prisma.Sql | null;

export type ListSpec = {
  /** The table, a Prisma model name. */
  table: string;
  /** The columns that name the list's parent (e.g. entityType, entityId); none for a root list. */
  parent: { name: string; sqlType: string }[];
  /**
   * A list through a join table (a control's policies, a task's controls): the parent columns are
   * the join table's (alias `j`), and `column` is its column naming the list's row.
   */
  through?: { table: string; column: string };
  filters: Record<string, FilterRule>;
  orders: Record<string, SortKey>;
  defaultOrder: Order;
  /**
   * The rows (table alias `t`) the organization may see; its own rows (`t."organizationId"`) when
   * absent. For tables whose rows are shared or belong to the organization through another table
   * (shipped frameworks, a framework's requirements).
   */
  scope?: (organizationId: string) => Prisma.Sql;
  /**
   * A list of a model whose rows are read as they are stored (no hydrate rule of its own): a page
   * whose selection is the scalar fields alone is read in the statement that picks it (a root
   * list's keyset walk, or the LATERAL that picks every parent's page), not by a second statement.
   */
  rowsInline?: boolean;
};

export type ListArgs = {
  limit?: number | null;
  cursor?: string | null;
  /** Relay's arguments: `first`/`after` page forward, `last`/`before` backward; never mixed with limit/cursor. */
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
  filter?: Record<string, unknown> | null;
  orderBy?: { field: string; direction: Direction } | null;
};
export type ListKey = ListArgs & { parent?: readonly unknown[]; query?: RecordQuery };

/**
 * The page selections (itemsQuery's, one object per list field and request) whose list's
 * `totalCount` is selected too: a root list's page then reads its count in the same statement
 * instead of a second one (listPage).
 */
const totalCountAsked = new WeakSet<object>();
/** Marks `query` as the selection of a page whose `totalCount` is selected (see totalCountAsked). */
export function countWithPage(query: RecordQuery): void {
  if (query) totalCountAsked.add(query);
}

const searchText = text(listLimits.search);

const { raw, sql, join, empty } = Prisma;
const q = (name: string) => raw(`"${name}"`);
/** The column `name` of the list's table. */
export const column = (name: string) => raw(`t."${name}"`);
const typed = (value: unknown, sqlType: string) => sql`${value}::${raw(sqlType)}`;
/**
 * One parameter holding every value, as an array of `sqlType`. It is bound as `text[]` and cast in
 * the SQL: the embedded database serializes a parameter by its type, and it knows the array type
 * of an enum only from its next start after the migration that made it (until then it sent an
 * enum array's one value as a bare string).
 */
const typedArray = (values: unknown[], sqlType: string) =>
  sql`${values.map((v) => (v === null || v === undefined ? null : String(v)))}::text[]::${raw(sqlType)}[]`;

// Filter rules ---------------------------------------------------------------------------------

/** The column is one of the values (an empty list matches nothing). */
export function oneOf(name: string, sqlType: string): FilterRule {
  return ((values: readonly string[]) =>
    values.length ? sql`${column(name)} IN (${join(values.map((v) => typed(v, sqlType)))})` : sql`FALSE`) as FilterRule;
}

/** One of the ids; a null among them also matches rows where the column is null ("unassigned"). */
export function idOrNone(name: string): FilterRule {
  return ((values: readonly (string | null)[]) => {
    const ids = values.filter((v): v is string => v !== null);
    const parts = [
      ...(ids.length ? [sql`${column(name)} IN (${join(ids.map((v) => typed(v, "text")))})`] : []),
      ...(values.includes(null) ? [sql`${column(name)} IS NULL`] : []),
    ];
    return parts.length ? sql`(${join(parts, " OR ")})` : sql`FALSE`;
  }) as FilterRule;
}

export function equals(name: string, sqlType: string): FilterRule {
  return ((value: unknown) => sql`${column(name)} = ${typed(value, sqlType)}`) as FilterRule;
}

/** Bounds are exclusive: `createdAfter` is strictly after. */
export function bound(name: string, sqlType: string, side: "after" | "before"): FilterRule {
  return ((value: Date | string) => {
    const v = value instanceof Date ? value.toISOString() : value;
    return sql`${column(name)} ${raw(side === "after" ? ">" : "<")} ${typed(v, sqlType)}`;
  }) as FilterRule;
}

export function atLeast(name: string): FilterRule {
  return ((value: number) => sql`${column(name)} >= ${typed(value, "int")}`) as FilterRule;
}

/** `%term%` for ILIKE, the term's own wildcards taken literally. */
export function containsPattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, "\\$&")}%`;
}

/** Case-insensitive, anywhere in any of the columns (served by their trigram indexes). */
export function search(...names: string[]): FilterRule {
  return ((term: string) => {
    const pattern = containsPattern(term);
    return sql`(${join(
      names.map((n) => sql`${column(n)} ILIKE ${pattern}`),
      " OR ",
    )})`;
  }) as FilterRule;
}

// Sort keys ------------------------------------------------------------------------------------

export const sortBy = {
  timestamp: (name: string): SortKey => ({ sql: column(name), sqlType: "timestamp(3)", kind: "timestamp" }),
  date: (name: string): SortKey => ({ sql: column(name), sqlType: "date", kind: "date", nullable: true }),
  int: (name: string): SortKey => ({ sql: column(name), sqlType: "int", kind: "int" }),
  text: (name: string): SortKey => ({ sql: column(name), sqlType: "text", kind: "text" }),
  enum: (name: string, sqlType: string, values: readonly string[]): SortKey => ({
    sql: column(name),
    sqlType,
    kind: "enum",
    values,
  }),
};

// Keyset -----------------------------------------------------------------------------------------

/** The direction rows are read in: the list's own, or its opposite when a backward page reads it back to front. */
const readingDirection = (direction: Direction, reversed: boolean): Direction =>
  reversed ? (direction === "asc" ? "desc" : "asc") : direction;

/**
 * The ORDER BY and the "after this row" condition of an order: the key's direction, nulls last in
 * both directions, ties broken on id in the same direction, so the order is total and a page after
 * a cursor is exact however rows are inserted meanwhile. `after.valueIsNull` is true or false when
 * known, or an SQL boolean when it varies per row of a batch. A backward page reads the list back
 * to front: the same keyset with the direction flipped and nulls first (`reversed`), so that "after
 * this row" there means "before it" in the list's order.
 */
export function keyset(
  key: SortKey,
  direction: Direction,
  after?: { value: Prisma.Sql; id: Prisma.Sql; valueIsNull: boolean | Prisma.Sql },
  reversed = false,
) {
  const readAs = readingDirection(direction, reversed);
  const dir = raw(readAs === "asc" ? "ASC" : "DESC");
  const nulls = key.nullable ? raw(reversed ? " NULLS FIRST" : " NULLS LAST") : empty;
  const orderBy = sql`${key.sql} ${dir}${nulls}, t."id" ${dir}`;
  if (!after) return { orderBy, where: sql`TRUE` };
  const op = raw(readAs === "asc" ? ">" : "<");
  const beyond = sql`(${key.sql}, t."id") ${op} (${after.value}, ${after.id})`;
  if (!key.nullable) return { orderBy, where: beyond };
  const sameNull = sql`(${key.sql} IS NULL AND t."id" ${op} ${after.id})`;
  // Nulls last: after a value come the later values and every null; after a null, only nulls with a later id.
  // Nulls first (reading backward): after a value come only later values; after a null, later nulls and every value.
  const whenValue = reversed ? beyond : sql`(${beyond} OR ${key.sql} IS NULL)`;
  const whenNull = reversed ? sql`(${sameNull} OR ${key.sql} IS NOT NULL)` : sameNull;
  if (after.valueIsNull === true) return { orderBy, where: whenNull };
  if (after.valueIsNull === false) return { orderBy, where: whenValue };
  return { orderBy, where: sql`((${after.valueIsNull} AND ${whenNull}) OR (NOT ${after.valueIsNull} AND ${whenValue}))` };
}

// Cursors --------------------------------------------------------------------------------------

type Cursor = { o: string; d: Direction; f: string; v: string | null; i: string };

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString("base64url");
}

const validValue: Record<SortKey["kind"], (v: string, key: SortKey) => boolean> = {
  timestamp: (v) => /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?$/.test(v) && validDate(v.slice(0, 10)),
  date: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && validDate(v),
  int: (v) => /^-?\d{1,10}$/.test(v) && Math.abs(Number(v)) <= 2_147_483_647,
  text: (v) => v.length <= 100_000,
  enum: (v, key) => key.values?.includes(v) ?? false,
};

/** A real calendar date, years 1 to 9999 (what PostgreSQL's date and timestamp accept). */
export function validDate(v: string): boolean {
  const date = new Date(`${v}T00:00:00Z`);
  return !v.startsWith("0000") && !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === v;
}

function decodeCursor(raw: string, expected: { order: Order; digest: string }, key: SortKey, name: string): Cursor {
  const invalid = () =>
    new BadUserInputError(`${name} is not a cursor from this list`, [{ path: name, message: "is not valid" }]);
  let cursor: Partial<Cursor>;
  try {
    cursor = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  if (!cursor || typeof cursor !== "object" || typeof cursor.i !== "string" || cursor.i.length > 255) throw invalid();
  if (cursor.o !== expected.order.field || cursor.d !== expected.order.direction || cursor.f !== expected.digest) {
    throw new BadUserInputError(`${name} was made for another order or filter: ask for the first page again without it`, [
      { path: name, message: "belongs to another order or filter" },
    ]);
  }
  const value = cursor.v;
  if (value === null ? !key.nullable : typeof value !== "string" || !validValue[key.kind](value, key)) throw invalid();
  return cursor as Cursor;
}

// Plans ----------------------------------------------------------------------------------------

/** How a key pages: its size, the cursor it starts from, and whether it reads the list backward. */
type Paging = { limit: number; cursor: string | null; cursorName: string; backward: boolean };

const given = (value: unknown) => value !== undefined && value !== null;

/**
 * The page a key asks for: `limit`/`cursor`, or Relay's `first`/`after` (forward) or
 * `last`/`before` (backward), never two of those ways at once. Null counts as not given, as
 * clients send `after: null` for a first page.
 */
export function pagingOf(args: ListArgs): Paging {
  const refuse = (message: string, path: string) => new BadUserInputError(message, [{ path, message }]);
  const classic = (["limit", "cursor"] as const).filter((n) => given(args[n]));
  const relay = (["first", "after", "last", "before"] as const).filter((n) => given(args[n]));
  if (classic.length && relay.length) {
    throw refuse(
      `${classic.join(" and ")} cannot be combined with ${relay.join(" and ")}: page either with limit and cursor or with Relay's first/after or last/before`,
      relay[0] as string,
    );
  }
  for (const [a, b] of [
    ["first", "last"],
    ["after", "last"],
    ["before", "first"],
    ["after", "before"],
  ] as const) {
    if (given(args[a]) && given(args[b])) {
      throw refuse(`${a} cannot be combined with ${b}: page forward with first and after, or backward with last and before`, b);
    }
  }
  if (given(args.last) || given(args.before)) {
    return { limit: pageSizeOf(args.last, "last"), cursor: args.before ?? null, cursorName: "before", backward: true };
  }
  if (relay.length) {
    return { limit: pageSizeOf(args.first, "first"), cursor: args.after ?? null, cursorName: "after", backward: false };
  }
  return { limit: pageSizeOf(args.limit), cursor: args.cursor ?? null, cursorName: "cursor", backward: false };
}

type Plan = {
  limit: number;
  /** Reads the list back to front, from before `after` (the cursor given as `before`). */
  backward: boolean;
  order: Order;
  key: SortKey;
  /** The filter and parent, as cursors carry it. */
  digest: string;
  /** The filter alone: keys sharing it share a statement. */
  group: string;
  conditions: Prisma.Sql[];
  after: Cursor | null;
  parent: readonly unknown[];
};

/** The filter's given fields, in a stable order, dates as text: what the digest and the SQL see. */
function normalized(filter: ListArgs["filter"]): [string, unknown][] {
  return Object.entries(filter ?? {})
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]): [string, unknown] => [k, v instanceof Date ? v.toISOString() : v])
    .sort(([a], [b]) => (a < b ? -1 : 1));
}

function plan(spec: ListSpec, key: ListKey, organizationId: string): Plan {
  const { limit, cursor, cursorName, backward } = pagingOf(key);
  const order = key.orderBy ?? spec.defaultOrder;
  const sortKey = spec.orders[order.field];
  if (!sortKey || (order.direction !== "asc" && order.direction !== "desc")) {
    throw new BadUserInputError(`orderBy: ${order.field} ${order.direction} is not an order of this list`, [
      { path: "orderBy", message: "is not an order of this list" },
    ]);
  }
  const fields = normalized(key.filter);
  const conditions: Prisma.Sql[] = [];
  for (const [name, value] of fields) {
    const rule = spec.filters[name];
    if (!rule) throw new Error(`${spec.table} lists have no filter rule for ${name}`);
    if (Array.isArray(value) && value.length > (listLimits.values.maxItems as number)) {
      throw new BadUserInputError(`filter.${name}: must have at most ${listLimits.values.maxItems} values`, [
        { path: `filter.${name}`, message: `must have at most ${listLimits.values.maxItems} values` },
      ]);
    }
    if (name === "search") {
      const checked = searchText.safeParse(value);
      if (!checked.success) {
        const message = checked.error.issues[0]?.message ?? "is not a valid search term";
        throw new BadUserInputError(`filter.search: ${message}`, [{ path: "filter.search", message }]);
      }
    }
    const condition = rule(value as never, { organizationId });
    if (condition) conditions.push(condition);
  }
  const parent = key.parent ?? [];
  const digest = createHash("sha256")
    .update(JSON.stringify([parent, fields]))
    .digest("base64url")
    .slice(0, 16);
  const after = cursor ? decodeCursor(cursor, { order, digest }, sortKey, cursorName) : null;
  return { limit, backward, order, key: sortKey, digest, group: JSON.stringify(fields), conditions, after, parent };
}

const whereAll = (parts: Prisma.Sql[]) => join(parts, " AND ");
/** The alias of the parent's columns: the list's table, or the join table it is read through. */
const parentAlias = (spec: ListSpec) => (spec.through ? "j" : "t");
const joinThrough = (spec: ListSpec) =>
  spec.through ? raw(` JOIN "${spec.through.table}" j ON j."${spec.through.column}" = t."id"`) : empty;

const scopeOf = (spec: ListSpec, organizationId: string) =>
  spec.scope ? sql`(${spec.scope(organizationId)})` : sql`t."organizationId" = ${organizationId}`;

/** The columns a page reads beside its ids when it reads its rows inline (numbered: beside "id" and "v"), and the record of a picked row. */
type InlineColumns = ScalarColumns<Record<string, unknown>>;
const inlineColumns = (table: string): InlineColumns => scalarColumns(table, "t", true);
/** The inline columns as the rest of a select list: nothing when the rows are read by a second statement. */
const inlineSelect = (inline: InlineColumns | undefined) => raw(inline ? `, ${inline.select}` : "");

/** Ids (and sort values, as text) of each key's page; one statement per group of keys sharing a filter and order. */
async function pickRows(db: Db, organizationId: string, spec: ListSpec, plans: Plan[], inline?: InlineColumns, countToo = false) {
  const picked = new Map<number, { id: string; v: string | null; total?: number }[]>();
  const groups = new Map<string, number[]>();
  plans.forEach((p, index) => {
    const name = `${p.group}|${p.order.field}|${p.order.direction}|${p.backward}`;
    const group = groups.get(name);
    if (group) group.push(index);
    else groups.set(name, [index]);
  });
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const first = plans[indexes[0] as number] as Plan;
      const { key, order, backward } = first;
      const base = [scopeOf(spec, organizationId), ...first.conditions];
      if (spec.parent.length === 0) {
        for (const index of indexes) {
          const p = plans[index] as Plan;
          const after = p.after
            ? { value: typed(p.after.v, key.sqlType), id: typed(p.after.i, "text"), valueIsNull: p.after.v === null }
            : undefined;
          // The count of the whole list with its filter (the cursor aside), when asked, as a column
          // of the page's own statement (computed once); an empty page leaves it to countRows.
          const counted = countToo ? sql`(SELECT count(*)::int FROM ${q(spec.table)} t WHERE ${whereAll(base)})` : undefined;
          const statement = rootPage(spec, key, order.direction, base, p.limit + 1, after, backward, inline, counted);
          picked.set(index, await readRows<{ id: string; v: string | null; total?: number }>(db, statement));
        }
        return;
      }
      // One array per column, not one parameter per value: the text (and its prepared statement) is the
      // same for 5 parents as for 50, and the driver binds 6 + n arrays instead of (6 + n) × parents values.
      const ps = indexes.map((index) => plans[index] as Plan);
      const columns = [
        typedArray(indexes, "int"),
        typedArray(
          ps.map((p) => p.limit + 1),
          "int",
        ),
        typedArray(
          ps.map((p) => p.after !== null),
          "boolean",
        ),
        typedArray(
          ps.map((p) => p.after?.v === null),
          "boolean",
        ),
        typedArray(
          ps.map((p) => p.after?.v ?? null),
          key.sqlType,
        ),
        typedArray(
          ps.map((p) => p.after?.i ?? null),
          "text",
        ),
        ...spec.parent.map((c, i) =>
          typedArray(
            ps.map((p) => p.parent[i]),
            c.sqlType,
          ),
        ),
      ];
      const names = ["idx", "take", "hc", "cn", "cv", "ci", ...spec.parent.map((_, i) => `p${i}`)];
      const ks = keyset(key, order.direction, { value: sql`k."cv"`, id: sql`k."ci"`, valueIsNull: sql`k."cn"` }, backward);
      const parentMatch = spec.parent.map((c, i) => sql`${raw(parentAlias(spec))}.${q(c.name)} = k.${q(`p${i}`)}`);
      const rows = await readRows<{ idx: number; id: string; v: string | null }>(
        db,
        sql`
        SELECT k."idx", w.*
        FROM unnest(${join(columns)}) AS k(${raw(names.map((n) => `"${n}"`).join(", "))})
        CROSS JOIN LATERAL (
          SELECT t."id", (${key.sql})::text AS "v"${inlineSelect(inline)} FROM ${q(spec.table)} t${joinThrough(spec)}
          WHERE ${whereAll([...base, ...parentMatch, sql`(NOT k."hc" OR ${ks.where})`])}
          ORDER BY ${ks.orderBy}
          LIMIT k."take"
        ) w`,
      );
      for (const row of rows) {
        const list = picked.get(Number(row.idx)) ?? [];
        list.push(inline ? row : { id: row.id, v: row.v });
        picked.set(Number(row.idx), list);
      }
    }),
  );
  return picked;
}

/**
 * The statement picking a root page: one keyset walk, or over a nullable key two index walks in one
 * statement: the rows with a value (ordered by the key without a NULLS clause, which an index on the
 * key serves in both directions) and the rows without one (by the key, all null there, then id:
 * the same index's order, so that walk stops at the page's size instead of sorting every null row),
 * the null part last (or first, read backward). One `ORDER BY key DESC NULLS LAST` would need an
 * index in that order, which schema.prisma cannot declare. An ascending list's first page (or its
 * last, read backward) is the one walk: `ASC NULLS LAST` is a B-tree index's own order (read
 * backward, `DESC NULLS FIRST`), and without a cursor no condition breaks the walk in two.
 */
function rootPage(
  spec: ListSpec,
  key: SortKey,
  direction: Direction,
  base: Prisma.Sql[],
  take: number,
  after: { value: Prisma.Sql; id: Prisma.Sql; valueIsNull: boolean } | undefined,
  reversed: boolean,
  inline?: InlineColumns,
  count?: Prisma.Sql,
): Prisma.Sql {
  const rowColumns = inlineSelect(inline);
  const countColumn = count ? sql`, ${count} AS "total"` : empty;
  if (!key.nullable || (!after && direction === "asc")) {
    const ks = keyset(key, direction, after, reversed);
    return sql`SELECT t."id", (${key.sql})::text AS "v"${rowColumns}${countColumn} FROM ${q(spec.table)} t
      WHERE ${whereAll([...base, ks.where])}
      ORDER BY ${ks.orderBy}
      LIMIT ${take}`;
  }
  const readAs = readingDirection(direction, reversed);
  const dir = raw(readAs === "asc" ? "ASC" : "DESC");
  const op = raw(readAs === "asc" ? ">" : "<");
  // The part the cursor's row is in continues after it; the part read after that one is whole; the part read before it is done.
  const nullsFirst = reversed;
  const valued = !after
    ? sql`TRUE`
    : after.valueIsNull
      ? raw(nullsFirst ? "TRUE" : "FALSE")
      : sql`(${key.sql}, t."id") ${op} (${after.value}, ${after.id})`;
  const nulls = !after ? sql`TRUE` : after.valueIsNull ? sql`t."id" ${op} ${after.id}` : raw(nullsFirst ? "FALSE" : "TRUE");
  const table = q(spec.table);
  return sql`SELECT u.*${countColumn} FROM (
    (SELECT t."id", (${key.sql})::text AS "v", ${key.sql} AS "k", ${raw(nullsFirst ? "1" : "0")} AS "part"${rowColumns} FROM ${table} t
      WHERE ${whereAll([...base, sql`${key.sql} IS NOT NULL`, valued])}
      ORDER BY ${key.sql} ${dir}, t."id" ${dir} LIMIT ${take})
    UNION ALL
    (SELECT t."id", NULL::text AS "v", ${key.sql} AS "k", ${raw(nullsFirst ? "0" : "1")} AS "part"${rowColumns} FROM ${table} t
      WHERE ${whereAll([...base, sql`${key.sql} IS NULL`, nulls])}
      ORDER BY ${key.sql} ${dir}, t."id" ${dir} LIMIT ${take})
  ) u ORDER BY u."part", u."k" ${dir}, u."id" ${dir} LIMIT ${take}`;
}

/** How many rows each key's list has over all pages, with its filter; one statement per filter. */
async function countRows(db: Db, organizationId: string, spec: ListSpec, plans: Plan[]): Promise<number[]> {
  const counts = new Array<number>(plans.length).fill(0);
  const groups = new Map<string, number[]>();
  plans.forEach((p, index) => {
    groups.set(p.group, [...(groups.get(p.group) ?? []), index]);
  });
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const first = plans[indexes[0] as number] as Plan;
      const base = [scopeOf(spec, organizationId), ...first.conditions];
      if (spec.parent.length === 0) {
        const [row] = await readRows<{ n: number }>(
          db,
          sql`SELECT count(*)::int AS "n" FROM ${q(spec.table)} t WHERE ${whereAll(base)}`,
        );
        for (const index of indexes) counts[index] = Number(row?.n ?? 0);
        return;
      }
      const tuple = raw(`(${spec.parent.map((c) => `${parentAlias(spec)}."${c.name}"`).join(", ")})`);
      const parents = spec.parent.map((c, i) =>
        typedArray(
          indexes.map((index) => (plans[index] as Plan).parent[i]),
          c.sqlType,
        ),
      );
      const rows = await readRows<{ n: number } & Record<string, string>>(
        db,
        sql`
        SELECT ${raw(spec.parent.map((c, i) => `${parentAlias(spec)}."${c.name}"::text AS "p${i}"`).join(", "))}, count(*)::int AS "n"
        FROM ${q(spec.table)} t${joinThrough(spec)}
        WHERE ${whereAll([...base, sql`${tuple} IN (SELECT * FROM unnest(${join(parents)}))`])}
        GROUP BY ${tuple}`,
      );
      const byParent = new Map(rows.map((r) => [JSON.stringify(spec.parent.map((_, i) => r[`p${i}`])), Number(r.n)]));
      for (const index of indexes) {
        const p = plans[index] as Plan;
        counts[index] = byParent.get(JSON.stringify(p.parent.map((v) => String(v)))) ?? 0;
      }
    }),
  );
  return counts;
}

/** The query with `columns` selected too, where it selects. */
function selecting(query: RecordQuery, columns: readonly string[]): RecordQuery {
  if (!query?.select) return query;
  return { ...query, select: { ...query.select, ...Object.fromEntries(columns.map((c) => [c, true])) } };
}

const queryNames = new WeakMap<object, string>();
function queryName(query: RecordQuery): string {
  if (!query) return "";
  let name = queryNames.get(query);
  if (name === undefined) {
    name = JSON.stringify(query);
    queryNames.set(query, name);
  }
  return name;
}

/** An edge whose cursor is written when a client selects it: a page read as `items` needs none. */
class ListEdge<T> implements Edge<T> {
  #cursor: string | undefined;
  constructor(
    readonly node: T,
    private readonly writeCursor: () => string,
  ) {}
  get cursor(): string {
    this.#cursor ??= this.writeCursor();
    return this.#cursor;
  }
}

type Hydrate<T> = (ids: string[], query: RecordQuery) => Promise<T[]>;
/** A page before its totalCount is attached, with its count when the statement that picked it read it. */
type CountedPage<T> = Omit<Page<T>, "totalCount"> & { counted: number | undefined };

/** Each key's page (or its error): ids picked by SQL, then the rows read with the GraphQL selection. */
async function pages<T extends { id: string }>(
  db: Db,
  organizationId: string,
  spec: ListSpec,
  keys: readonly ListKey[],
  hydrate: Hydrate<T>,
  countToo = false,
): Promise<(CountedPage<T> | Error)[]> {
  const plans = keys.map((key) => {
    try {
      return plan(spec, key, organizationId);
    } catch (error) {
      return error as Error;
    }
  });
  const valid = plans.flatMap((p, index) => (p instanceof Error ? [] : [{ p, index }]));
  const inline = spec.rowsInline && keys.every((key) => selectsScalarsOnly(key.query)) ? inlineColumns(spec.table) : undefined;
  const picked = valid.length
    ? await pickRows(
        db,
        organizationId,
        spec,
        valid.map(({ p }) => p),
        inline,
        countToo,
      )
    : new Map();
  const byQuery = new Map<string, { query: RecordQuery; ids: string[] }>();
  valid.forEach(({ p, index }, i) => {
    const query = keys[index]?.query;
    const group = byQuery.get(queryName(query)) ?? { query, ids: [] };
    // The rows the page shows: not the one read beyond it, which only says whether the list goes on.
    group.ids.push(...(picked.get(i) ?? []).slice(0, p.limit).map((r: { id: string }) => r.id));
    byQuery.set(queryName(query), group);
  });
  // Rows by selection, then by id: a key made of the selection's text and the id would build (and
  // hash) a long string per row.
  const rows = new Map<string, Map<string, T>>();
  if (inline) {
    const byId = new Map<string, T>();
    for (const list of picked.values()) for (const r of list) byId.set(r.id, inline.rowOf(r) as T);
    for (const name of byQuery.keys()) rows.set(name, byId);
  }
  await Promise.all(
    [...byQuery].map(async ([name, { query, ids }]) => {
      if (ids.length === 0 || inline) return;
      const byId = new Map<string, T>();
      for (const row of await hydrate([...new Set(ids)], selecting(query, ["id"]))) byId.set(row.id, row);
      rows.set(name, byId);
    }),
  );
  const validIndex = new Map(valid.map(({ index }, i) => [index, i]));
  return keys.map((key, index) => {
    const p = plans[index] as Plan | Error;
    if (p instanceof Error) return p;
    const found = (picked.get(validIndex.get(index) as number) ?? []) as { id: string; v: string | null; total?: number }[];
    // One row more than the page was read, to know whether the list goes on in the direction read.
    const more = found.length > p.limit;
    const shown = found.slice(0, p.limit);
    if (p.backward) shown.reverse();
    const cursorOf = (r: { id: string; v: string | null }) =>
      encodeCursor({ o: p.order.field, d: p.order.direction, f: p.digest, v: r.v, i: r.id });
    const byId = rows.get(queryName(key.query));
    const edges = shown.flatMap((r): Edge<T>[] => {
      const node = byId?.get(r.id);
      return node ? [new ListEdge(node, () => cursorOf(r))] : [];
    });
    const first = shown[0];
    const last = shown[shown.length - 1];
    // Away from the cursor the answer is cheap, not counted: a page that starts from a cursor had
    // that cursor's row beside it (docs/lists.md).
    const hasNextPage = p.backward ? p.after !== null : more;
    const hasPreviousPage = p.backward ? more : p.after !== null;
    // Cursors are written when a client selects them: a page read as `items` alone needs none.
    const startEdge = edges[0];
    const endEdge = edges.at(-1);
    const endCursor = () => (last ? (endEdge?.node.id === last.id ? endEdge.cursor : cursorOf(last)) : null);
    return {
      items: edges.map((e) => e.node),
      // The list's count when the statement that picked the page read it (asked for, a page not empty).
      counted: found[0]?.total === undefined ? undefined : Number(found[0].total),
      edges,
      pageInfo: {
        hasNextPage,
        hasPreviousPage,
        get startCursor() {
          return first ? (startEdge?.node.id === first.id ? startEdge.cursor : cursorOf(first)) : null;
        },
        get endCursor() {
          return endCursor();
        },
      },
      get nextCursor() {
        return hasNextPage ? endCursor() : null;
      },
    };
  });
}

/** One page of a root list, with its count (counted only when asked for). */
export async function listPage<T extends { id: string }>(
  db: Db,
  organizationId: string,
  spec: ListSpec,
  key: ListKey,
  hydrate: Hydrate<T>,
): Promise<Page<T>> {
  // Counted with the page when its totalCount is selected (a root list: one statement, not two).
  const countToo = spec.parent.length === 0 && key.query !== undefined && totalCountAsked.has(key.query);
  const [page] = await pages(db, organizationId, spec, [key], hydrate, countToo);
  if (page instanceof Error || !page) throw page;
  const plans = [plan(spec, key, organizationId)];
  // Assigned, not spread: a spread would write the page's lazy cursors.
  return Object.assign(page, {
    totalCount: async () => page.counted ?? ((await countRows(db, organizationId, spec, plans))[0] as number),
  });
}

const keyName = (key: ListKey) =>
  JSON.stringify([
    key.parent ?? [],
    key.limit ?? null,
    key.cursor ?? null,
    key.first ?? null,
    key.after ?? null,
    key.last ?? null,
    key.before ?? null,
    normalized(key.filter),
    key.orderBy ?? null,
    queryName(key.query),
  ]);

/**
 * Pages of one list under many parents, for one request of one organization: one statement picks
 * every parent's page (each with its own limit, cursor, filter and order), one reads the rows, and
 * the counts, when selected, are one grouped statement.
 */
export function listLoader<T extends { id: string }>(db: Db, organizationId: string, spec: ListSpec, hydrate: Hydrate<T>) {
  const counts = new DataLoader<ListKey, number, string>(
    async (keys) => {
      const plans = keys.map((key) => plan(spec, key, organizationId));
      return countRows(db, organizationId, spec, plans);
    },
    { cacheKeyFn: (key) => JSON.stringify([key.parent ?? [], normalized(key.filter)]) },
  );
  return new DataLoader<ListKey, Page<T>, string>(
    async (keys) => {
      const found = await pages(db, organizationId, spec, keys, hydrate);
      return found.map((page, index) =>
        page instanceof Error ? page : Object.assign(page, { totalCount: () => counts.load(keys[index] as ListKey) }),
      );
    },
    { cacheKeyFn: keyName },
  );
}

/** The rules of `createdAfter`/`createdBefore` (and `updatedAfter`/`updatedBefore`). */
export function dateBoundRules(updated: boolean): Record<string, FilterRule> {
  return {
    createdAfter: bound("createdAt", "timestamp(3)", "after"),
    createdBefore: bound("createdAt", "timestamp(3)", "before"),
    ...(updated
      ? {
          updatedAfter: bound("updatedAt", "timestamp(3)", "after"),
          updatedBefore: bound("updatedAt", "timestamp(3)", "before"),
        }
      : {}),
  };
}

/** `createdAt` (and `updatedAt`) as sort keys. */
export function dateSortKeys(updated: boolean): Record<string, SortKey> {
  return {
    createdAt: sortBy.timestamp("createdAt"),
    ...(updated ? { updatedAt: sortBy.timestamp("updatedAt") } : {}),
  };
}

export const newestFirst: Order = { field: "createdAt", direction: "desc" };
