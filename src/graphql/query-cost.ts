import {
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  getOperationAST,
  isCompositeType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type SelectionSetNode,
  type ValueNode,
} from "graphql";
import type { Plugin } from "graphql-yoga";
import { AppError } from "../platform/errors.js";
import { pageLimits } from "./pagination.js";

/**
 * The cost rule: the most objects a query could return, multiplying through nested lists. A page's
 * items (or edges) count as its `limit`, `first` or `last` (20 when absent), `nodes` as its ids, a
 * list with a declared maximum (`extensions.listMax`, e.g. attachments) as that maximum, any other
 * list as the largest page. An edge and its node are one record: the node adds nothing.
 */
export const costLimits = { maxObjects: 10_000, unboundedList: pageLimits.max };

export class QueryTooComplexError extends AppError {
  constructor(cost: number) {
    super(
      "QUERY_TOO_COMPLEX",
      `The query could return up to ${cost} objects; at most ${costLimits.maxObjects} are allowed. Ask for smaller pages (limit) or fewer nested lists.`,
    );
    // A refusal before execution, like a validation error: Yoga answers 400 to a client that
    // accepts application/graphql-response+json and 200 to one that accepts only application/json
    // (`spec`), as the GraphQL-over-HTTP specification says. REST maps the code to 400.
    this.extensions.http = { status: 400, spec: true };
  }
}

type Variables = Record<string, unknown> | null | undefined;

/** The fields of a page that list its records, and the arguments that set its size. */
const pageItems = new Set(["items", "edges"]);
const pageSizeArgs = ["limit", "first", "last"];
const isEdge = (type: GraphQLNamedType) => isObjectType(type) && type.name.endsWith("Edge") && "node" in type.getFields();

/** Set when an estimate read a variable: its cost is the request's, not the document's. */
type Reads = { variables: boolean };

function argumentValue(node: ValueNode | undefined, variables: Variables, reads?: Reads): unknown {
  if (!node) return undefined;
  if (node.kind === Kind.VARIABLE) {
    if (reads) reads.variables = true;
    return variables?.[node.name.value];
  }
  if (node.kind === Kind.INT) return Number(node.value);
  if (node.kind === Kind.LIST) return node.values;
  return undefined;
}

/** The worst-case number of objects the operation can return. */
export function estimateCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Variables,
  operationName?: string | null,
  reads?: Reads,
): number {
  const operation = getOperationAST(document, operationName);
  if (!operation) return 0;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const root = schema.getRootType(operation.operation);
  if (!root) return 0;

  const visit = (set: SelectionSetNode, type: GraphQLNamedType, multiplier: number, pageLimit: number | undefined): number => {
    let total = 0;
    for (const selection of set.selections) {
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        const on = selection.typeCondition ? (schema.getType(selection.typeCondition.name.value) ?? type) : type;
        total += visit(selection.selectionSet, on, multiplier, pageLimit);
        continue;
      }
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        const on = fragment && schema.getType(fragment.typeCondition.name.value);
        if (fragment && on) total += visit(fragment.selectionSet, on, multiplier, pageLimit);
        continue;
      }
      if (selection.name.value.startsWith("__") || !selection.selectionSet) continue;
      if (!isObjectType(type) && !isInterfaceType(type)) continue;
      const field: GraphQLField<unknown, unknown> | undefined = type.getFields()[selection.name.value];
      if (!field || !isCompositeType(getNamedType(field.type))) continue;
      const argument = (name: string) =>
        argumentValue(selection.arguments?.find((a) => a.name.value === name)?.value, variables, reads) ??
        field.args.find((a) => a.name === name)?.defaultValue;
      let factor = 1;
      if (isListType(getNullableType(field.type))) {
        const ids = field.args.some((a) => a.name === "ids") ? argument("ids") : undefined;
        const declared = field.extensions?.listMax;
        if (typeof declared === "number") factor = declared;
        else if (Array.isArray(ids)) factor = ids.length;
        else if (pageItems.has(selection.name.value) && pageLimit !== undefined) factor = pageLimit;
        else factor = costLimits.unboundedList;
      }
      let childLimit: number | undefined;
      if (field.args.some((a) => a.name === "limit")) {
        const limit = pageSizeArgs.map(argument).find((value) => value !== undefined && value !== null);
        childLimit =
          typeof limit === "number" && Number.isFinite(limit)
            ? Math.min(Math.max(Math.trunc(limit), 1), pageLimits.max)
            : pageLimits.default;
      }
      const count = multiplier * factor;
      const own = selection.name.value === "node" && isEdge(type) ? 0 : count;
      total += own + visit(selection.selectionSet, getNamedType(field.type), count, childLimit);
    }
    return total;
  };
  return visit(operation.selectionSet, root, 1, undefined);
}

/**
 * The cost of the operations whose cost no variable sets, by parsed document, schema and operation
 * name (`""`: the document's only operation). Parsed documents are kept by text in a bounded cache
 * (document-cache.ts), REST's are fixed: an entry goes with its document. An operation that takes a
 * page size, ids or a list from its variables is estimated at every request, with them.
 */
const documentOnlyCosts = new WeakMap<DocumentNode, WeakMap<GraphQLSchema, Map<string, number>>>();

/** The operation's worst case: kept for its document when it depends on nothing else. */
export function costOf(schema: GraphQLSchema, document: DocumentNode, variables: Variables, operationName?: string | null) {
  const key = operationName ?? "";
  let bySchema = documentOnlyCosts.get(document);
  const known = bySchema?.get(schema)?.get(key);
  if (known !== undefined) return known;
  const reads: Reads = { variables: false };
  const cost = estimateCost(schema, document, variables, operationName, reads);
  // Kept only for a name the document defines (or none): unknown names must not grow the map.
  const named = operationName == null || getOperationAST(document, operationName) !== null;
  if (!reads.variables && named) {
    if (!bySchema) {
      bySchema = new WeakMap();
      documentOnlyCosts.set(document, bySchema);
    }
    let byName = bySchema.get(schema);
    if (!byName) {
      byName = new Map();
      bySchema.set(schema, byName);
    }
    byName.set(key, cost);
  }
  return cost;
}

/** Refuses, before any resolver runs, an operation whose worst case is over the limit. */
export function useQueryCost(): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const cost = costOf(args.schema, args.document, args.variableValues, args.operationName);
      if (cost > costLimits.maxObjects) setResultAndStopExecution({ errors: [new QueryTooComplexError(cost)] });
    },
  };
}
