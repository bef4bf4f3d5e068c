import { MapperKind, mapSchema } from "@graphql-tools/utils";
import {
  defaultFieldResolver,
  type GraphQLFieldResolver,
  type GraphQLSchema,
  getNullableType,
  isInputObjectType,
  isListType,
} from "graphql";
import { BadUserInputError } from "../platform/errors.js";
import { anyDate, anyDateTime, anyId, anyText, commonLimits, type Input, inputLimit } from "../platform/limits.js";

/** The lengths this layer enforces for every field: IDs and cursors (other limits are the services'). */
function enforcedMaxLength(input: Input): number | undefined {
  const limit = inputLimit(input);
  const enforced = [anyId, anyDateTime, anyDate, anyText, commonLimits.id, commonLimits.cursor];
  if (limit && enforced.includes(limit)) return limit.maxLength;
  return undefined;
}

const codePoints = (text: string) => (text.length <= 1 ? text.length : [...text].length);

/** The first value in `value` (of `type`) longer than its enforced maximum, as a detail. */
function overLong(value: unknown, input: Input, path: string): { path: string; message: string } | null {
  if (value === null || value === undefined) return null;
  const type = getNullableType(input.type);
  if (isListType(type)) {
    if (!Array.isArray(value)) return overLong(value, { ...input, type: type.ofType }, path);
    for (const [i, item] of value.entries()) {
      const found = overLong(item, { ...input, type: type.ofType }, `${path}.${i}`);
      if (found) return found;
    }
    return null;
  }
  if (isInputObjectType(type)) {
    if (typeof value !== "object") return null;
    for (const field of Object.values(type.getFields())) {
      const found = overLong((value as Record<string, unknown>)[field.name], field, `${path}.${field.name}`);
      if (found) return found;
    }
    return null;
  }
  const max = enforcedMaxLength(input);
  if (max !== undefined && typeof value === "string" && value.length > max && codePoints(value) > max) {
    return { path, message: `must be at most ${max} characters` };
  }
  return null;
}

/**
 * Refuses, before the resolver runs, an ID or cursor argument (also inside input objects) longer
 * than its limit, with 400 BAD_USER_INPUT on both transports: REST runs the same resolvers.
 */
export function boundInputs(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field) => {
      const args = Object.entries(field.args ?? {}).filter(([, arg]) => mentionsBoundedInput(arg));
      if (!args.length) return field;
      const guard = <F extends GraphQLFieldResolver<unknown, unknown>>(resolve: F): F =>
        ((source, values, context, info) => {
          for (const [name, arg] of args) {
            const found = overLong(values[name], arg, name);
            if (found) throw new BadUserInputError(`${found.path} ${found.message}`, [found]);
          }
          return resolve(source, values, context, info);
        }) as F;
      return {
        ...field,
        resolve: guard(field.resolve ?? defaultFieldResolver),
        ...(field.subscribe ? { subscribe: guard(field.subscribe) } : {}),
      };
    },
  });
}

/** Whether an input of this type can hold a bounded value (an ID, a cursor, or an input object with one). */
function mentionsBoundedInput(input: Input, seen = new Set<string>()): boolean {
  if (enforcedMaxLength(input) !== undefined) return true;
  let type = getNullableType(input.type);
  while (isListType(type)) type = getNullableType(type.ofType);
  if (!isInputObjectType(type) || seen.has(type.name)) return false;
  seen.add(type.name);
  return Object.values(type.getFields()).some((field) => mentionsBoundedInput(field, seen));
}
