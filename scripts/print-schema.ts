// Writes schema.graphql, the sorted SDL that frontends generate their types from.
// `--check` exits 1 instead of writing when the file is out of date.
import { readFileSync, writeFileSync } from "node:fs";
import { printSchemaFile, schemaFilePath } from "../src/graphql/schema-file.js";

const printed = printSchemaFile();
if (process.argv.includes("--check")) {
  const current = readFileSync(schemaFilePath, "utf8");
  if (current !== printed) {
    console.error("schema.graphql is out of date: run npm run schema:print");
    process.exit(1);
  }
} else {
  writeFileSync(schemaFilePath, printed);
  console.log(`wrote ${schemaFilePath}`);
}
