import { MapperKind, mapSchema } from "@graphql-tools/utils";
import { GraphQLNonNull, type GraphQLSchema, isNonNullType, type ObjectTypeDefinitionNode, parse, printType } from "graphql";
import type { Plugin } from "graphql-yoga";

/**
 * Field options of a GraphQL-only field (a relation, `totalCount`, a value the REST answers of
 * sections 3 and 5 do not carry). Sofa selects every field of a returned type, so without this a
 * relation would grow every REST answer and its cost. On an argument (Relay's `first`, `after`,
 * ...), the same: REST has no query parameter for it, so it stays an unknown parameter (400).
 */
export const graphOnly = { extensions: { graphOnly: true } } as const;

/**
 * Field options of a field that is nullable in the graph only because a permission of its own can
 * refuse it there (null with FORBIDDEN). REST answers such a refusal with 403 and never with null,
 * so its view of the field stays non-null, and REST clients generated from it do not change.
 */
export const nonNullOverRest = { extensions: { nonNullOverRest: true } } as const;

/**
 * The schema REST is generated from: the same types and resolvers without the graph-only fields.
 * Sofa builds its operations, and the OpenAPI document is built, from this view.
 */
export function restSchemaOf(schema: GraphQLSchema): GraphQLSchema {
  let view = views.get(schema);
  if (!view) {
    view = mapSchema(schema, {
      [MapperKind.COMPOSITE_FIELD]: (graphField) => {
        if (graphField.extensions?.graphOnly) return null;
        const args = Object.entries(graphField.args ?? {});
        const field = args.some(([, arg]) => arg.extensions?.graphOnly)
          ? { ...graphField, args: Object.fromEntries(args.filter(([, arg]) => !arg.extensions?.graphOnly)) }
          : graphField;
        if (field.extensions?.nonNullOverRest && !isNonNullType(field.type)) {
          return { ...field, type: new GraphQLNonNull(field.type) };
        }
        return field;
      },
    });
    describeRootTypes(view);
    views.set(schema, view);
  }
  return view;
}

const views = new WeakMap<GraphQLSchema, GraphQLSchema>();

/**
 * Gives the root types of a code-first schema the definition node it lacks, printed and parsed
 * once. Sofa reads the description of every route's arguments from it and, without one, prints
 * and parses the whole root type again for each argument of each route: 0.15 s of every start.
 */
function describeRootTypes(view: GraphQLSchema): void {
  for (const type of [view.getQueryType(), view.getMutationType(), view.getSubscriptionType()]) {
    if (type && !type.astNode) type.astNode = parse(printType(type)).definitions[0] as ObjectTypeDefinitionNode;
  }
}

/** Sofa's Yoga plugin, generating its routes from the REST view of the schema. */
export function withRestSchema(sofa: Plugin): Plugin {
  const { onSchemaChange } = sofa;
  return {
    ...sofa,
    onSchemaChange: (payload) => onSchemaChange?.({ ...payload, schema: restSchemaOf(payload.schema) }),
  };
}
