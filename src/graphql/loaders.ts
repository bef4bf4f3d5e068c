import DataLoader from "dataloader";
import { Prisma } from "../generated/prisma/client.js";
import type { Db } from "../platform/db/database.js";
import { type Page, type PageArgs, pageQuery, toPage } from "./pagination.js";

/** plugin-prisma's selection for a field, or none when the caller has none to give. */
export type RecordQuery = { select?: object; include?: object } | undefined;

/** The selection as text, once per selection object (every key of a batch names it again). */
const queryKeys = new WeakMap<object, string>();
function queryKey(query: RecordQuery): string {
  if (!query) return "";
  let key = queryKeys.get(query);
  if (key === undefined) {
    key = JSON.stringify(query);
    queryKeys.set(query, key);
  }
  return key;
}

/** The query with `columns` selected too, where it selects. */
function selecting(query: RecordQuery, columns: readonly string[]): RecordQuery {
  if (!query?.select) return query;
  return { ...query, select: { ...query.select, ...Object.fromEntries(columns.map((c) => [c, true])) } };
}

/**
 * Records by id, one statement per batch and selection: `find` must restrict to the caller's
 * organization. Keys differing only in selection (two paths selecting different fields) make
 * one statement each.
 */
export function recordLoader<T extends Record<string, unknown>>(
  find: (ids: string[], query: RecordQuery) => Promise<T[]>,
  keyColumn = "id",
) {
  return new DataLoader<{ id: string; query?: RecordQuery }, T | null, string>(
    async (keys) => {
      const groups = new Map<string, { query: RecordQuery; ids: Set<string> }>();
      for (const key of keys) {
        const name = queryKey(key.query);
        const group = groups.get(name) ?? { query: key.query, ids: new Set() };
        group.ids.add(key.id);
        groups.set(name, group);
      }
      const found = new Map<string, T>();
      await Promise.all(
        [...groups].map(async ([name, { query, ids }]) => {
          for (const row of await find([...ids], selecting(query, [keyColumn]))) found.set(`${name}\u0000${row[keyColumn]}`, row);
        }),
      );
      return keys.map((key) => found.get(`${queryKey(key.query)}\u0000${key.id}`) ?? null);
    },
    { cacheKeyFn: (key) => `${queryKey(key.query)}\u0000${key.id}` },
  );
}

/** A column of a windowed page: its name and the SQL type its values are cast to. */
type Column = { name: string; sqlType: string };

export type PageOf = {
  /** The table (a Prisma model name). */
  table: string;
  /** The columns that name a parent, e.g. entityType and entityId. */
  parent: Column[];
  /** The keyset of the list, newest first: as in the root query, so cursors work in both. */
  keys: (Column & { name: "createdAt" | "id" | "version" })[];
  /** An optional equality filter a key may carry, e.g. a status. */
  filter?: Column;
};

export type PageKey = PageArgs & { parent: string[]; filter?: string | null; query: RecordQuery };

/**
 * Pages of many parents in two statements, whatever their number: one LATERAL join picks each
 * parent's ids (its own limit, cursor and filter, newest first, the organization in the WHERE
 * clause), then `hydrate` reads those rows with the GraphQL selection.
 */
export function pageLoader<T extends Record<string, unknown> & { id: string }>(
  db: Db,
  organizationId: string,
  spec: PageOf,
  hydrate: (ids: string[], query: RecordQuery) => Promise<T[]>,
) {
  const keyNames = spec.keys.map((k) => k.name);
  const cacheKey = (key: PageKey) =>
    JSON.stringify([key.parent, key.limit ?? null, key.cursor ?? null, key.filter ?? null, queryKey(key.query)]);
  return new DataLoader<PageKey, Page<T>, string>(
    async (keys) => {
      // Validates limit and cursor exactly as the root lists do (a bad one fails only its own key).
      const plans = keys.map((key) => {
        try {
          return pageQuery(key, keyNames);
        } catch (error) {
          return error as Error;
        }
      });
      const valid = keys.flatMap((key, index) => (plans[index] instanceof Error ? [] : [{ key, index }]));
      const idsByIndex = new Map<number, string[]>();
      if (valid.length > 0) {
        const cast = (value: unknown, sqlType: string) => Prisma.sql`${value}::${Prisma.raw(sqlType)}`;
        const rows = valid.map(({ key, index }) => {
          const plan = plans[index] as Exclude<(typeof plans)[number], Error>;
          const after = plan.after as Record<string, unknown> | null;
          return Prisma.sql`(${Prisma.join([
            cast(index, "int"),
            ...spec.parent.map((column, i) => cast(key.parent[i], column.sqlType)),
            cast(plan.limit + 1, "int"),
            ...spec.keys.map((column) => {
              const value = after?.[column.name] ?? null;
              return cast(value instanceof Date ? value.toISOString() : value, column.sqlType);
            }),
            ...(spec.filter ? [cast(key.filter ?? null, spec.filter.sqlType)] : []),
          ])})`;
        });
        const q = (name: string) => Prisma.raw(`"${name}"`);
        const columns = [
          "idx",
          ...spec.parent.map((_, i) => `p${i}`),
          "take",
          ...spec.keys.map((_, i) => `a${i}`),
          ...(spec.filter ? ["f"] : []),
        ];
        const parentMatch = spec.parent.map((column, i) => Prisma.sql`t.${q(column.name)} = k.${q(`p${i}`)}`);
        const tuple = (prefix: string, names: string[]) => Prisma.raw(`(${names.map((n) => `${prefix}."${n}"`).join(", ")})`);
        const afterMatch = Prisma.sql`(k."a0" IS NULL OR ${tuple("t", keyNames)} < ${tuple(
          "k",
          spec.keys.map((_, i) => `a${i}`),
        )})`;
        const filterMatch = spec.filter ? Prisma.sql`AND (k."f" IS NULL OR t.${q(spec.filter.name)} = k."f")` : Prisma.empty;
        const orderBy = Prisma.raw(keyNames.map((n) => `t."${n}" DESC`).join(", "));
        const picked = await db.$queryRaw<{ idx: number; id: string }[]>`
          SELECT k."idx", w."id"
          FROM (VALUES ${Prisma.join(rows)}) AS k(${Prisma.raw(columns.map((c) => `"${c}"`).join(", "))})
          CROSS JOIN LATERAL (
            SELECT t."id" FROM ${q(spec.table)} t
            WHERE t."organizationId" = ${organizationId} AND ${Prisma.join(parentMatch, " AND ")} AND ${afterMatch} ${filterMatch}
            ORDER BY ${orderBy}
            LIMIT k."take"
          ) w`;
        for (const { idx, id } of picked) {
          const list = idsByIndex.get(Number(idx)) ?? [];
          list.push(id);
          idsByIndex.set(Number(idx), list);
        }
      }
      // One read of all picked rows per selection (normally one: the same field at every parent).
      const byQuery = new Map<string, { query: RecordQuery; ids: string[] }>();
      for (const { key, index } of valid) {
        const group = byQuery.get(queryKey(key.query)) ?? { query: key.query, ids: [] };
        group.ids.push(...(idsByIndex.get(index) ?? []));
        byQuery.set(queryKey(key.query), group);
      }
      const rowsById = new Map<string, T>();
      await Promise.all(
        [...byQuery].map(async ([name, { query, ids }]) => {
          if (ids.length === 0) return;
          for (const row of await hydrate(ids, selecting(query, ["id", ...keyNames])))
            rowsById.set(`${name}\u0000${row.id}`, row);
        }),
      );
      return keys.map((key, index) => {
        const plan = plans[index] as (typeof plans)[number];
        if (plan instanceof Error) return plan;
        const rows = (idsByIndex.get(index) ?? []).flatMap((id) => rowsById.get(`${queryKey(key.query)}\u0000${id}`) ?? []);
        return toPage(rows, plan);
      });
    },
    { cacheKeyFn: cacheKey },
  );
}

/** Creates each loader on first use: a request pays only for the loaders its fields need. */
export function lazily<T extends Record<string, () => unknown>>(factories: T): { [K in keyof T]: ReturnType<T[K]> } {
  const made: Partial<Record<keyof T, unknown>> = {};
  const result = {} as { [K in keyof T]: ReturnType<T[K]> };
  for (const name of Object.keys(factories) as (keyof T)[]) {
    Object.defineProperty(result, name, {
      enumerable: true,
      get: () => {
        if (!(name in made)) made[name] = factories[name]?.();
        return made[name];
      },
    });
  }
  return result;
}
