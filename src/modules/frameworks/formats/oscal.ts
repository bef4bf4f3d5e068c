import type { ValidateFunction } from "ajv";
import { badDocument, type Catalog, checkRequirements, keyFromTitle, MAX_REQUIREMENTS, type RawRequirement } from "./catalog.js";
import { pointer } from "./plain-json.js";

type Prop = { name: string; value: string; class?: string };
type Part = { name: string; prose?: string; props?: Prop[]; parts?: Part[] };
type Param = { id: string; label?: string; select?: { choice?: string[] } };
type Control = { id: string; title: string; props?: Prop[]; parts?: Part[]; params?: Param[]; controls?: Control[] };
type Group = { id?: string; title: string; props?: Prop[]; groups?: Group[]; controls?: Control[]; params?: Param[] };
type OscalCatalog = {
  metadata: { title: string; version: string; "oscal-version": string };
  groups?: Group[];
  controls?: Control[];
  params?: Param[];
};

let validator: Promise<ValidateFunction> | undefined;

/**
 * NIST's OSCAL catalog JSON schema (OSCAL 1.1.2, usnistgov/OSCAL, public domain), compiled on the
 * first OSCAL import rather than at start: the service pays for it only when it is used.
 */
function oscalValidator(): Promise<ValidateFunction> {
  validator ??= (async () => {
    const [{ Ajv }, schema] = await Promise.all([
      import("ajv"),
      import("./oscal-catalog-schema-1.1.2.json", { with: { type: "json" } }),
    ]);
    // Formats (date-time, email, uri) are for producers; what an import reads is checked below.
    return new Ajv({ strict: false, validateFormats: false, allErrors: false }).compile(schema.default);
  })();
  return validator;
}

const propOf = (item: { props?: Prop[] }, name: string) => item.props?.find((p) => p.name === name && !p.class)?.value;
const withdrawn = (item: { props?: Prop[] }) =>
  item.props?.some((p) => p.name === "status" && p.value.toLowerCase() === "withdrawn");

/** A statement's prose with its items ("a. ...", "1. ..."), parameters shown as [their label]. */
function statementText(control: Control, params: Map<string, Param>): string | null {
  const statement = control.parts?.find((p) => p.name === "statement");
  if (!statement) return null;
  const lines: string[] = [];
  const insert = (prose: string) =>
    prose.replace(/\{\{\s*insert:\s*param,\s*([^\s}]+)\s*\}\}/g, (_, id: string) => {
      const param = params.get(id);
      const label = param?.label ?? param?.select?.choice?.join("; ");
      return `[${label ?? id}]`;
    });
  const walk = (part: Part, depth: number) => {
    const label = propOf(part, "label");
    const prose = part.prose ? insert(part.prose).trim() : "";
    if (label || prose) lines.push(`${"  ".repeat(depth)}${label ? `${label} ` : ""}${prose}`.trimEnd());
    for (const child of part.parts ?? []) walk(child, label || prose ? depth + 1 : depth);
  };
  walk(statement, 0);
  const text = lines.join("\n").trim();
  return text || null;
}

/**
 * An OSCAL catalog in JSON (a resolved profile is one), checked against NIST's schema: groups are
 * requirements that are not assessed, controls and their enhancements are; refs are the labels
 * (AC-2(1)), else a control's id or a group's id in upper case (AC, as the shipped outlines have it); descriptions are the statements' prose; withdrawn controls
 * are left out. Key, name and version come from the metadata (the key made from the title).
 */
export async function readOscal(documentText: string): Promise<Catalog> {
  let value: unknown;
  try {
    value = JSON.parse(documentText);
  } catch (error) {
    throw badDocument("/", `not JSON: ${(error as Error).message}`);
  }
  const validate = await oscalValidator();
  if (!validate(value)) {
    const error = validate.errors?.[0];
    const at = error?.instancePath || "/";
    const extra = error?.params && "additionalProperty" in error.params ? ` (${error.params.additionalProperty})` : "";
    throw badDocument(at, `not an OSCAL catalog as NIST's schema (1.1.2) defines it: ${error?.message ?? "invalid"}${extra}`);
  }
  const catalog = (value as { catalog: OscalCatalog }).catalog;
  const params = new Map<string, Param>();
  const collect = (items: { params?: Param[]; controls?: Control[]; groups?: Group[] }[]) => {
    for (const item of items) {
      for (const param of item.params ?? []) params.set(param.id, param);
      collect([...(item.controls ?? []), ...(item.groups ?? [])]);
    }
  };
  collect([catalog]);

  const raw: RawRequirement[] = [];
  const full = () => raw.length > MAX_REQUIREMENTS;
  const visitControl = (control: Control, parentRef: string | null, path: PropertyKey[]) => {
    if (withdrawn(control) || full()) return;
    const ref = propOf(control, "label") ?? control.id;
    raw.push({
      ref,
      title: control.title,
      description: statementText(control, params),
      parentRef,
      assessable: true,
      at: (field) => pointer(field ? [...path, field === "ref" ? "id" : field] : path),
    });
    for (const [i, child] of (control.controls ?? []).entries()) visitControl(child, ref, [...path, "controls", i]);
  };
  const visitGroup = (group: Group, parentRef: string | null, path: PropertyKey[]) => {
    if (withdrawn(group) || full()) return;
    // As the shipped outlines write them: NIST's families carry no label, their ids are lower case (ac).
    const ref = propOf(group, "label") ?? group.id?.toUpperCase() ?? group.title;
    raw.push({
      ref,
      title: group.title,
      description: null,
      parentRef,
      assessable: false,
      at: (field) => pointer(field ? [...path, field === "ref" ? "id" : field] : path),
    });
    for (const [i, child] of (group.groups ?? []).entries()) visitGroup(child, ref, [...path, "groups", i]);
    for (const [i, child] of (group.controls ?? []).entries()) visitControl(child, ref, [...path, "controls", i]);
  };
  for (const [i, group] of (catalog.groups ?? []).entries()) visitGroup(group, null, ["catalog", "groups", i]);
  for (const [i, control] of (catalog.controls ?? []).entries()) visitControl(control, null, ["catalog", "controls", i]);

  return {
    key: keyFromTitle(catalog.metadata.title),
    name: catalog.metadata.title.trim().slice(0, 255),
    version: catalog.metadata.version.trim().slice(0, 64),
    requirements: checkRequirements(raw),
  };
}
