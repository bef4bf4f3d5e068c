import DataLoader from "dataloader";

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
