import { MapperKind, mapSchema } from "@graphql-tools/utils";
import type { GraphQLSchema } from "graphql";
import type { Plugin } from "graphql-yoga";

/**
 * Field options of a GraphQL-only field (a relation, `totalCount`, a value the REST answers of
 * sections 3 and 5 do not carry). Sofa selects every field of a returned type, so without this a
 * relation would grow every REST answer and its cost.
 */
export const graphOnly = { extensions: { graphOnly: true } } as const;

/**
 * The schema REST is generated from: the same types and resolvers without the graph-only fields.
 * Sofa builds its operations, and the OpenAPI document is built, from this view.
 */
export function restSchemaOf(schema: GraphQLSchema): GraphQLSchema {
  let view = views.get(schema);
  if (!view) {
    view = mapSchema(schema, {
      [MapperKind.COMPOSITE_FIELD]: (field) => (field.extensions?.graphOnly ? null : field),
    });
    views.set(schema, view);
  }
  return view;
}

const views = new WeakMap<GraphQLSchema, GraphQLSchema>();

/** Sofa's Yoga plugin, generating its routes from the REST view of the schema. */
export function withRestSchema(sofa: Plugin): Plugin {
  const { onSchemaChange } = sofa;
  return {
    ...sofa,
    onSchemaChange: (payload) => onSchemaChange?.({ ...payload, schema: restSchemaOf(payload.schema) }),
  };
}
