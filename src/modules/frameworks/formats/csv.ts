import { CsvError, parse } from "csv-parse/sync";
import { BadUserInputError } from "../../../platform/errors.js";
import { badDocument, type Catalog, checkRequirements, MAX_REQUIREMENTS, type RawRequirement } from "./catalog.js";

export const CSV_COLUMNS = ["ref", "title", "description", "parent", "assessable"] as const;

const truth: Record<string, boolean> = { "": true, true: true, yes: true, "1": true, false: false, no: false, "0": false };

/**
 * The plain format in CSV (RFC 4180: commas, double quotes, CRLF or LF): a header line
 * `ref,title,description,parent,assessable` (these columns in any order; `ref` and `title`
 * required), then a requirement a line. `assessable` is true, false, yes, no, 1, 0 or empty (true).
 * The framework's key, name and version are the import's arguments.
 */
export function readCsv(documentText: string): Catalog {
  let rows: { record: string[]; info: { lines: number } }[];
  try {
    rows = parse(documentText, { bom: true, info: true, skip_empty_lines: true, relax_column_count: false }) as never;
  } catch (error) {
    if (error instanceof CsvError) {
      const { lines: line, record } = error as CsvError & { lines?: number; record?: string[] };
      const message =
        error.code === "CSV_RECORD_INCONSISTENT_FIELDS_LENGTH"
          ? `has ${record?.length ?? "another number of"} columns where the header line has another number`
          : error.message.replace(/ at line \d+$/, "");
      throw badDocument(line ? `line ${line}` : "CSV", message);
    }
    throw error;
  }
  const [header, ...records] = rows;
  if (!header) throw badDocument("line 1", `the header line is missing: ${CSV_COLUMNS.join(",")}`);
  const columns = header.record.map((name) => name.trim().toLowerCase());
  const unknown = columns.find((name) => !(CSV_COLUMNS as readonly string[]).includes(name));
  if (unknown !== undefined) {
    throw badDocument("line 1", `unknown column ${JSON.stringify(unknown)}; the columns are ${CSV_COLUMNS.join(",")}`);
  }
  for (const required of ["ref", "title"]) {
    if (!columns.includes(required)) throw badDocument("line 1", `the header has no ${required} column`);
  }
  const repeated = columns.find((name, i) => columns.indexOf(name) !== i);
  if (repeated !== undefined) throw badDocument("line 1", `the column ${repeated} appears twice`);
  if (records.length > MAX_REQUIREMENTS) {
    throw new BadUserInputError(`document: at most ${MAX_REQUIREMENTS} requirements are accepted`, [
      { path: "requirements", message: `at most ${MAX_REQUIREMENTS}` },
    ]);
  }
  const cell = (record: string[], name: string) => {
    const i = columns.indexOf(name);
    return i === -1 ? "" : (record[i] ?? "");
  };
  const raw: RawRequirement[] = records.map(({ record, info }) => {
    const at = (field?: string) => (field ? `line ${info.lines} (${field})` : `line ${info.lines}`);
    const assessable = truth[cell(record, "assessable").trim().toLowerCase()];
    if (assessable === undefined) throw badDocument(at("assessable"), "must be true, false, yes, no, 1, 0 or empty");
    return {
      ref: cell(record, "ref"),
      title: cell(record, "title"),
      description: cell(record, "description") || null,
      parentRef: cell(record, "parent") || null,
      assessable,
      at,
    };
  });
  return { requirements: checkRequirements(raw) };
}
