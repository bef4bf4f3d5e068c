import { fileURLToPath } from "node:url";
import { printSchema } from "graphql";
import { schema } from "../schema.js";

export const schemaFilePath = fileURLToPath(new URL("../../schema.graphql", import.meta.url));

export function printSchemaFile(): string {
  return `${printSchema(schema)}\n`;
}
