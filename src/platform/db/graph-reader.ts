import { LRUCache } from "lru-cache";
import { getDatamodel } from "../../generated/pothos-types.js";
import type { PrismaClient as Db } from "../../generated/prisma/client.js";
import { type RowReader, readArrays } from "./row-by-id.js";

/**
 * The read path of the graph (issue 34): the records of one level of a request (a page of
 * comments, the vendors of `nodes`) with the relations plugin-prisma's selection asks for, in one
 * statement per to-many relation level, however many parents. To-one relations (an author and its
 * user, an approver) are joined into their level's statement, and a record they name is shaped once
 * however many rows name it. Rows come back flat and are shaped once into the nested objects the
 * resolvers read, as Prisma's `findMany` would answer them (a test compares the two on both
 * databases). A selection this reader does not plan (filters or limits on a relation, `_count`)
 * goes to Prisma's `findMany`.
 */

type Field = {
  name: string;
  kind: string;
  type: string;
  isList: boolean;
  relationName?: string;
  relationFromFields?: string[];
};
type Model = { fields: Field[]; byName: Map<string, Field> };

const models = new Map<string, Model>(
  Object.entries(
    (getDatamodel() as unknown as { datamodel: { models: Record<string, { fields: Field[] }> } }).datamodel.models,
  ).map(([name, { fields }]) => [name, { fields, byName: new Map(fields.map((f) => [f.name, f])) }]),
);

/** plugin-prisma's selection of a record or of one of its relations. */
type Args = { select?: Record<string, unknown>; include?: Record<string, unknown>; orderBy?: unknown; [arg: string]: unknown };

const isScalar = (f: Field) => f.kind === "scalar" || f.kind === "enum";
const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** How a relation field joins its model to the target: `parent.parentColumn = target.childColumn`. */
function joinOf(
  model: string,
  field: Field,
): { target: string; parentColumn: string; childColumn: string; many: boolean } | null {
  const from = field.relationFromFields ?? [];
  if (from.length === 1) return { target: field.type, parentColumn: from[0] as string, childColumn: "id", many: false };
  if (from.length > 1) return null;
  const target = models.get(field.type);
  const back = target?.fields.find(
    (f) => f.relationName === field.relationName && f !== field && (f.relationFromFields?.length ?? 0) === 1 && f.type === model,
  );
  if (!back) return null;
  return {
    target: field.type,
    parentColumn: "id",
    childColumn: (back.relationFromFields as string[])[0] as string,
    many: field.isList,
  };
}

/** `[[column, "ASC" | "DESC"], ...]` of a relation's `orderBy`, when it orders by the target's own columns alone. */
function orderOf(model: Model, orderBy: unknown): [string, string][] | null {
  if (orderBy === undefined) return [];
  const list = Array.isArray(orderBy) ? orderBy : [orderBy];
  const out: [string, string][] = [];
  for (const entry of list) {
    if (!entry || typeof entry !== "object") return null;
    for (const [name, direction] of Object.entries(entry)) {
      const field = model.byName.get(name);
      if (!field || !isScalar(field) || (direction !== "asc" && direction !== "desc")) return null;
      out.push([name, direction.toUpperCase()]);
    }
  }
  return out;
}

/** The scalar fields and relations a selection names, or null when it names something not planned here. */
function selectionOf(model: Model, args: Args | true): { scalars: Field[]; relations: [Field, Args | true][] } | null {
  const scalars: Field[] = [];
  const relations: [Field, Args | true][] = [];
  const pick = (entries: [string, unknown][], relationsOnly: boolean) => {
    for (const [name, value] of entries) {
      if (value === false || value === undefined) continue;
      const field = model.byName.get(name);
      if (!field) return false;
      if (isScalar(field)) {
        if (relationsOnly || value !== true) return false;
        scalars.push(field);
      } else if (value === true || (typeof value === "object" && value !== null)) {
        relations.push([field, value as Args | true]);
      } else return false;
    }
    return true;
  };
  if (args !== true && args.select) {
    if (args.include) return null;
    if (!pick(Object.entries(args.select), false)) return null;
  } else {
    scalars.push(...model.fields.filter(isScalar));
    if (args !== true && args.include && !pick(Object.entries(args.include), true)) return null;
  }
  return { scalars, relations };
}

/** One record of a level's statement: the root or a to-one relation joined into it. */
type Node = {
  /** The hidden key column (its index in the row): a joined node is null when its key is; shaped once per key. */
  key: number;
  scalars: { field: string; column: number; bytes: boolean }[];
  toOne: { field: string; node: Node }[];
  toMany: { field: string; anchor: number; plan: Level }[];
};

/** One statement: a model's rows (by key) with their to-one relations joined, and the to-many levels below. */
type Level = { text: string; root: Node; childKey?: number };

const argsAllowed = (args: Args | true, allowed: readonly string[]) =>
  args === true || Object.keys(args).every((k) => allowed.includes(k) || args[k] === undefined);

function planLevel(modelName: string, args: Args | true, where: (alias: string) => string, childColumn?: string): Level | null {
  const joins: string[] = [];
  const columns: string[] = [];
  let aliases = 0;
  const column = (alias: string, name: string, field?: Field) => {
    const cast = field?.isList && field.kind === "enum" ? "::text[]" : "";
    // Named apart, so that the object rows of `$queryRawUnsafe` keep every column.
    columns.push(`${alias}.${quoted(name)}${cast} AS c${columns.length}`);
    return columns.length - 1;
  };
  const constant = (alias: string) => {
    columns.push(`${alias} IS NOT NULL AS c${columns.length}`);
    return columns.length - 1;
  };
  const build = (name: string, nodeArgs: Args | true, alias: string, keyColumn: string): Node | null => {
    const model = models.get(name);
    if (!model) return null;
    const selection = selectionOf(model, nodeArgs);
    if (!selection) return null;
    // A join table (ControlRequirement) has no id: as a level's root it needs none, since roots are
    // shaped once per row; joined as a to-one relation it is not planned.
    if (!model.byName.has(keyColumn) && alias !== "t0") return null;
    const key = model.byName.has(keyColumn) ? column(alias, keyColumn) : constant(alias);
    const node: Node = { key, scalars: [], toOne: [], toMany: [] };
    for (const field of selection.scalars) {
      node.scalars.push({ field: field.name, column: column(alias, field.name, field), bytes: field.type === "Bytes" });
    }
    for (const [field, relationArgs] of selection.relations) {
      const join = joinOf(name, field);
      if (!join) return null;
      if (join.many) {
        if (!argsAllowed(relationArgs, ["select", "include", "orderBy"])) return null;
        const target = models.get(join.target);
        const order = target && orderOf(target, relationArgs === true ? undefined : relationArgs.orderBy);
        if (!order) return null;
        const child = planLevel(
          join.target,
          relationArgs === true ? true : { select: relationArgs.select, include: relationArgs.include },
          (a) => `${a}.${quoted(join.childColumn)} = ANY($1::text[])`,
          join.childColumn,
        );
        if (!child) return null;
        if (order.length) child.text += ` ORDER BY ${order.map(([c, d]) => `t0.${quoted(c)} ${d}`).join(", ")}`;
        node.toMany.push({ field: field.name, anchor: column(alias, join.parentColumn), plan: child });
      } else {
        if (!argsAllowed(relationArgs, ["select", "include"])) return null;
        const joined = `t${++aliases}`;
        joins.push(
          `LEFT JOIN ${quoted(join.target)} ${joined} ON ${joined}.${quoted(join.childColumn)} = ${alias}.${quoted(join.parentColumn)}`,
        );
        const child = build(join.target, relationArgs, joined, "id");
        if (!child) return null;
        node.toOne.push({ field: field.name, node: child });
      }
    }
    return node;
  };
  const root = build(modelName, args, "t0", "id");
  if (!root) return null;
  const childKey = childColumn === undefined ? undefined : column("t0", childColumn);
  const text = `SELECT ${columns.join(", ")} FROM ${quoted(modelName)} t0 ${joins.join(" ")} WHERE ${where("t0")}`;
  return { text, root, childKey };
}

type Row = unknown[];

/** `bytea` as Prisma answers it: a plain Uint8Array (pg's Buffer serializes otherwise). */
const bytesOf = (value: unknown) =>
  Buffer.isBuffer(value) ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : value;
type Shaped = Record<string, unknown>;

/** The level's rows, shaped; its to-many levels read below it, one statement each. */
async function readLevel(db: Db, level: Level, values: unknown[]): Promise<{ objects: Shaped[]; rows: Row[] }> {
  const rows = await readArrays(db, level.text, values);
  const anchors = new Map<Node, { object: Shaped; row: Row }[]>();
  const seen = new Map<Node, Map<unknown, Shaped>>();
  const shape = (node: Node, row: Row, isRoot: boolean): Shaped | null => {
    const key = row[node.key];
    if (!isRoot) {
      if (key === null || key === undefined) return null;
      const known = seen.get(node)?.get(key);
      if (known) return known;
    }
    const object: Shaped = {};
    for (const s of node.scalars) object[s.field] = s.bytes ? bytesOf(row[s.column]) : row[s.column];
    for (const o of node.toOne) object[o.field] = shape(o.node, row, false);
    if (node.toMany.length) {
      const list = anchors.get(node) ?? [];
      list.push({ object, row });
      anchors.set(node, list);
    }
    if (!isRoot) {
      const byKey = seen.get(node) ?? new Map<unknown, Shaped>();
      byKey.set(key, object);
      seen.set(node, byKey);
    }
    return object;
  };
  const objects = rows.map((row) => shape(level.root, row, true) as Shaped);
  await Promise.all(
    [...anchors].flatMap(([node, parents]) =>
      node.toMany.map(async (many) => {
        const keys = [...new Set(parents.map((p) => p.row[many.anchor]).filter((k) => k !== null && k !== undefined))];
        const byParent = new Map<unknown, Shaped[]>();
        if (keys.length) {
          const child = await readLevel(db, many.plan, [keys]);
          child.rows.forEach((row, i) => {
            const parentKey = row[many.plan.childKey as number];
            const list = byParent.get(parentKey) ?? [];
            list.push(child.objects[i] as Shaped);
            byParent.set(parentKey, list);
          });
        }
        for (const p of parents) p.object[many.field] = byParent.get(p.row[many.anchor]) ?? [];
      }),
    ),
  );
  return { objects, rows };
}

/** The planned statement of a selection, per model and key column; null: not planned here (Prisma reads it). */
const plans = new LRUCache<string, { level: Level | null }>({ max: 1000 });
const selectionKeys = new WeakMap<object, string>();

function planFor(model: string, keyColumn: string, query: Args | undefined): Level | null {
  let selection = "";
  if (query) {
    selection = selectionKeys.get(query) ?? JSON.stringify(query);
    selectionKeys.set(query, selection);
  }
  const name = `${model}\u0000${keyColumn}\u0000${selection}`;
  let plan = plans.get(name);
  if (!plan) {
    plan = {
      level: planLevel(model, query ?? {}, (a) => `${a}.${quoted(keyColumn)} = ANY($1::text[]) AND ${a}."organizationId" = $2`),
    };
    plans.set(name, plan);
  }
  return plan.level;
}

type Delegate = { findMany(args: object): PromiseLike<unknown[]> };

/**
 * A model's records of one organization by `keyColumn` (the id, or another unique text column), with
 * plugin-prisma's selection (`query`; absent: the scalar fields). Unknown keys are left out; the order
 * is none in particular.
 */
export function recordsByKey<T>(model: string, db: Db, organizationId: string, keyColumn = "id") {
  const delegate = (db as unknown as Record<string, Delegate>)[model.charAt(0).toLowerCase() + model.slice(1)] as Delegate;
  return async (keys: readonly string[], query?: object): Promise<T[]> => {
    const level = planFor(model, keyColumn, query as Args | undefined);
    if (!level) {
      return delegate.findMany({ ...(query ?? {}), where: { [keyColumn]: { in: [...keys] }, organizationId } }) as Promise<T[]>;
    }
    return (await readLevel(db, level, [[...keys], organizationId])).objects as T[];
  };
}

/**
 * A model's scalar fields as a statement reads them: the cast its column needs and how its value
 * becomes what Prisma answers (lists.ts reads a page's rows with its ids).
 */
export function scalarFields(model: string): { name: string; cast: string; read(value: unknown): unknown }[] {
  const fields = models.get(model)?.fields.filter(isScalar) ?? [];
  return fields.map((f) => ({
    name: f.name,
    cast: f.isList && f.kind === "enum" ? "::text[]" : "",
    read: f.type === "Bytes" ? bytesOf : (value: unknown) => value,
  }));
}

export type ScalarColumns<Row> = { select: string; rowOf(row: Record<string, unknown>): Row };
const scalarColumnsByKey = new Map<string, ScalarColumns<unknown>>();

/**
 * A model's scalar columns as one statement selects them (`alias."field"` with its cast), each
 * named as its field or, `numbered`, r0, r1... (beside other columns of those names), and the
 * record a row of them makes. Built once per model, alias and naming.
 */
export function scalarColumns<Row = Record<string, unknown>>(model: string, alias: string, numbered = false): ScalarColumns<Row> {
  const key = `${model}|${alias}|${numbered}`;
  let columns = scalarColumnsByKey.get(key);
  if (!columns) {
    const fields = scalarFields(model);
    const label = (name: string, i: number) => (numbered ? `r${i}` : name);
    columns = {
      select: fields.map((f, i) => `${alias}."${f.name}"${f.cast} AS "${label(f.name, i)}"`).join(", "),
      rowOf: (row) => {
        const record: Record<string, unknown> = {};
        fields.forEach((f, i) => {
          record[f.name] = f.read(row[label(f.name, i)]);
        });
        return record;
      },
    };
    scalarColumnsByKey.set(key, columns);
  }
  return columns as ScalarColumns<Row>;
}

/** Whether `recordsByKey` reads this selection itself (tests and the bench's A/B). */
export const planned = (model: string, query?: object, keyColumn = "id") => planFor(model, keyColumn, query as Args) !== null;

/** A Prisma selection as plugin-prisma builds it; absent or empty: the scalar fields alone. */
type Selection = { select?: object; include?: object } | undefined;

/**
 * A list's rows by id (the `hydrate` of `listPage` and `listLoader`, or a record loader's): a
 * selection of the scalar fields alone is read with the reader's fixed statement, any other
 * (relations, a narrowed `select`) by the graph's read path (graph-reader.ts).
 */
export function rowsByIds<Row>(reader: RowReader<Row>, db: Db, organizationId: string) {
  const withRelations = recordsByKey<Row>(reader.table, db, organizationId);
  return async (ids: string[], query: Selection): Promise<Row[]> =>
    selectsScalarsOnly(query) ? reader.byIds(db, ids, organizationId) : withRelations(ids, query);
}

/** Whether plugin-prisma's selection asks for the scalar columns alone (no relation, no narrowing). */
export const selectsScalarsOnly = (query: Selection) => !query || (query.select === undefined && query.include === undefined);
