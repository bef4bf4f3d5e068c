import {
  type GraphQLNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  isUnionType,
} from "graphql";
import { describe, expect, it } from "vitest";
import { schema } from "../../src/schema.js";

/** Every schema coordinate (type, field, argument, input field, enum value) without a description. */
function undescribed(type: GraphQLNamedType): string[] {
  const missing: string[] = [];
  const need = (coordinate: string, description: string | null | undefined) => {
    if (!description?.trim()) missing.push(coordinate);
  };
  need(type.name, type.description);
  if (isObjectType(type) || isInterfaceType(type)) {
    for (const field of Object.values(type.getFields())) {
      need(`${type.name}.${field.name}`, field.description);
      for (const arg of field.args) need(`${type.name}.${field.name}(${arg.name}:)`, arg.description);
    }
  }
  if (isInputObjectType(type)) {
    for (const field of Object.values(type.getFields())) need(`${type.name}.${field.name}`, field.description);
  }
  if (isEnumType(type)) for (const value of type.getValues()) need(`${type.name}.${value.name}`, value.description);
  return missing;
}

describe("schema descriptions", () => {
  it("describes every type, field, argument, input field and enum value", () => {
    const types = Object.values(schema.getTypeMap()).filter(
      (type) => !type.name.startsWith("__") && !(isScalarType(type) && isSpecifiedScalarType(type)),
    );
    expect(types.some((type) => isEnumType(type))).toBe(true);
    expect(types.some((type) => isUnionType(type) || isObjectType(type))).toBe(true);
    expect(types.flatMap(undescribed)).toEqual([]);
  });
});
