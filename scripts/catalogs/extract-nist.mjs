// Writes the shipped NIST outlines (src/modules/frameworks/catalogs/<key>.json) from NIST's own OSCAL
// files (usnistgov/oscal-content, public domain): facts only, each requirement's ref, title, parent
// and whether it is assessed, in catalog order; withdrawn controls left out; no statement, guidance
// or example. docs/frameworks.md names the files and the commit they were read from.
//
//   node scripts/catalogs/extract-nist.mjs \
//     --sp800-53 NIST_SP-800-53_rev5_catalog.json \
//     --low NIST_SP-800-53_rev5_LOW-baseline-resolved-profile_catalog.json \
//     --moderate NIST_SP-800-53_rev5_MODERATE-baseline-resolved-profile_catalog.json \
//     --csf NIST_CSF_v2.0_catalog.json   (or the OSCAL XML source, NIST_CSF_v2.0_catalog.xml)
//     [--out DIR]
//
// Then `node scripts/catalogs/migration.mjs` turns the data files into the migration's SQL.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const catalogDir = path.join(root, "src", "modules", "frameworks", "catalogs");

const publicDomain =
  "Public domain (NIST): a work of the United States Government, not subject to copyright in the United States";
const oscalContent = "https://github.com/usnistgov/oscal-content";

const propOf = (item, name) => (item.props ?? []).find((p) => p.name === name && !p.class)?.value;
const isWithdrawn = (item) => (item.props ?? []).some((p) => p.name === "status" && p.value.toLowerCase() === "withdrawn");
const bySortId = (items) =>
  items.every((item) => propOf(item, "sort-id") !== undefined)
    ? [...items].sort((a, b) => (propOf(a, "sort-id") < propOf(b, "sort-id") ? -1 : 1))
    : items;

/**
 * OSCAL's XML, read just far enough for an outline: groups and controls with their id, class,
 * title, props and parts (name, whether it holds prose). Enough for NIST's catalogs, which write
 * no CDATA or comments inside these elements.
 */
export function readOscalXml(text) {
  const root = { groups: [], controls: [], metadata: {} };
  const stack = [{ node: root, kind: "root" }];
  const tagPattern = /<!--[\s\S]*?-->|<(\/?)([A-Za-z:_-]+)((?:\s+[A-Za-z:_-]+\s*=\s*"[^"]*")*)\s*(\/?)>|([^<]+)/gy;
  const attributes = (source) =>
    Object.fromEntries([...source.matchAll(/([A-Za-z:_-]+)\s*=\s*"([^"]*)"/g)].map(([, k, v]) => [k, decode(v)]));
  const decode = (s) =>
    s.replace(/&(lt|gt|amp|quot|apos);/g, (_, e) => ({ lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" })[e]);
  const index = text.indexOf("<catalog");
  tagPattern.lastIndex = index;
  for (let match = tagPattern.exec(text); match; match = tagPattern.exec(text)) {
    const [, closing, name, attrs, selfClosing, body] = match;
    if (name === undefined && body === undefined) continue;
    if (name === "catalog") {
      if (closing) break;
      continue;
    }
    const top = stack[stack.length - 1];
    if (body !== undefined) {
      if (top.kind === "title" || top.kind === "version") top.text += decode(body);
      else if (top.kind === "part" && body.trim()) top.node.prose = true;
      continue;
    }
    if (closing) {
      const done = stack.pop();
      if (done.kind === "title") done.owner.title = done.text.replace(/\s+/g, " ").trim();
      if (done.kind === "version" && done.owner === root.metadata) root.metadata.version = done.text.trim();
      continue;
    }
    const attr = attributes(attrs);
    if (name === "group" || name === "control") {
      const node = { id: attr.id, class: attr.class, props: [], parts: [], groups: [], controls: [] };
      (name === "group" ? top.node.groups : top.node.controls).push(node);
      if (!selfClosing) stack.push({ node, kind: name });
    } else if (name === "metadata" && top.kind === "root") {
      stack.push({ node: root.metadata, kind: "metadata" });
    } else if ((name === "title" && top.kind !== "part") || (name === "version" && top.kind === "metadata")) {
      stack.push({ kind: name, owner: top.kind === "metadata" ? root.metadata : top.node, text: "" });
    } else if (name === "prop" && (top.kind === "group" || top.kind === "control")) {
      top.node.props.push({ name: attr.name, value: attr.value, ...(attr.class ? { class: attr.class } : {}) });
      if (!selfClosing) stack.push({ kind: "other" });
    } else if (name === "part" && (top.kind === "group" || top.kind === "control")) {
      const part = { name: attr.name, prose: false };
      top.node.parts.push(part);
      if (!selfClosing) stack.push({ node: part, kind: "part" });
    } else if (!selfClosing) {
      stack.push({ node: top.node, kind: top.kind === "part" ? "part" : "other" });
    }
  }
  return { catalog: root };
}

function readCatalog(file) {
  const text = readFileSync(file, "utf8");
  const document = file.endsWith(".xml") ? readOscalXml(text) : JSON.parse(text);
  if (!document.catalog) throw new Error(`${file}: not an OSCAL catalog (no "catalog" at the top)`);
  return document.catalog;
}

const statementProse = (item) =>
  (item.parts ?? []).some((p) => p.name === "statement" && (p.prose === true || typeof p.prose === "string" || p.parts?.length));
const hasExamples = (item) => (item.parts ?? []).some((p) => p.name === "example");

/** SP 800-53 (or a resolved baseline): families as groups, controls and enhancements assessed. */
function sp80053Requirements(catalog) {
  const requirements = [];
  const visit = (control, parent) => {
    if (isWithdrawn(control)) return;
    const ref = propOf(control, "label");
    if (!ref) throw new Error(`control ${control.id} has no label`);
    requirements.push({ ref, title: control.title, parent, assessable: true });
    for (const child of bySortId(control.controls ?? [])) visit(child, ref);
  };
  for (const group of catalog.groups ?? []) {
    const controls = (group.controls ?? []).filter((c) => !isWithdrawn(c));
    if (!controls.length) continue;
    const ref = group.id.toUpperCase();
    requirements.push({ ref, title: group.title, parent: null, assessable: false });
    for (const control of bySortId(group.controls ?? [])) visit(control, ref);
  }
  return requirements;
}

const titleCase = (title) => (title === title.toUpperCase() ? title.charAt(0) + title.slice(1).toLowerCase() : title);

/**
 * CSF 2.0: functions and categories as groups, subcategories assessed. CSF 2.0's catalog keeps
 * CSF 1.1's withdrawn categories and subcategories as placeholders: NIST's JSON (1.2.x) marks them
 * `status: withdrawn`; its first OSCAL publication (1.0.0) does not, and there a withdrawn category
 * has no statement and a withdrawn subcategory no implementation example (checked: 22 and 106).
 */
function csfRequirements(catalog) {
  const marked = JSON.stringify(catalog).includes('"withdrawn"');
  const withdrawn = (item, kind) => {
    if (marked) return isWithdrawn(item);
    return kind === "category" ? !statementProse(item) : !hasExamples(item);
  };
  const requirements = [];
  for (const fn of bySortId(catalog.groups ?? [])) {
    requirements.push({ ref: fn.id, title: titleCase(fn.title), parent: null, assessable: false });
    for (const category of bySortId(fn.controls ?? [])) {
      if (withdrawn(category, "category")) continue;
      requirements.push({ ref: category.id, title: category.title, parent: fn.id, assessable: false });
      for (const sub of bySortId(category.controls ?? [])) {
        if (withdrawn(sub, "subcategory")) continue;
        requirements.push({ ref: sub.id, title: sub.title, parent: category.id, assessable: true });
      }
    }
  }
  const count = (a) => requirements.filter((r) => r.assessable === a).length;
  if (!marked && (count(false) !== 6 + 22 || count(true) !== 106)) {
    throw new Error(`CSF 2.0 without withdrawn marks: expected 6 functions, 22 categories, 106 subcategories`);
  }
  return requirements;
}

/** A data file: the plain import format (docs/frameworks.md), one requirement a line, as Biome formats it. */
export function writeFramework(dir, framework) {
  const line = (r) =>
    `    { ${Object.entries(r)
      .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
      .join(", ")} }`;
  const head = Object.fromEntries(Object.entries(framework).filter(([k]) => k !== "requirements"));
  const text = `${JSON.stringify(head, null, 2).replace(/\n}$/, "")},\n  "requirements": [\n${framework.requirements.map(line).join(",\n")}\n  ]\n}\n`;
  const file = path.join(dir, `${framework.key}.json`);
  writeFileSync(file, text);
  execFileSync(path.join(root, "node_modules", ".bin", "biome"), ["format", "--write", file], { stdio: "ignore" });
}

function main() {
  const { values } = parseArgs({
    options: {
      "sp800-53": { type: "string" },
      low: { type: "string" },
      moderate: { type: "string" },
      csf: { type: "string" },
      out: { type: "string", default: catalogDir },
    },
  });
  for (const name of ["sp800-53", "low", "moderate", "csf"]) {
    if (!values[name]) throw new Error(`--${name} FILE is required (see the comment at the top of this script)`);
  }
  const full = readCatalog(values["sp800-53"]);
  const fullRefs = new Set(sp80053Requirements(full).map((r) => r.ref));
  const sp = (key, name, catalog, publication) => {
    const requirements = sp80053Requirements(catalog);
    const missing = requirements.filter((r) => !fullRefs.has(r.ref)).map((r) => r.ref);
    if (missing.length) throw new Error(`${key}: not in the full catalog: ${missing.join(", ")}`);
    return {
      key,
      name,
      version: catalog.metadata.version,
      source: `NIST, ${publication} (OSCAL catalog: ${oscalContent})`,
      license: publicDomain,
      requirements,
    };
  };
  const sp80053 = "https://csrc.nist.gov/pubs/sp/800/53/r5/upd1/final";
  const frameworks = [
    sp("nist-sp-800-53-rev5", "NIST SP 800-53 Rev. 5", full, sp80053),
    sp(
      "nist-sp-800-53-rev5-low",
      "NIST SP 800-53 Rev. 5 LOW baseline",
      readCatalog(values.low),
      "https://csrc.nist.gov/pubs/sp/800/53/b/upd1/final",
    ),
    sp(
      "nist-sp-800-53-rev5-moderate",
      "NIST SP 800-53 Rev. 5 MODERATE baseline",
      readCatalog(values.moderate),
      "https://csrc.nist.gov/pubs/sp/800/53/b/upd1/final",
    ),
  ];
  const csf = readCatalog(values.csf);
  frameworks.push({
    key: "nist-csf-2.0",
    name: "NIST Cybersecurity Framework 2.0",
    version: csf.metadata.version,
    source: `NIST, https://www.nist.gov/cyberframework (OSCAL catalog: ${oscalContent})`,
    license: publicDomain,
    requirements: csfRequirements(csf),
  });
  for (const framework of frameworks) {
    writeFramework(values.out, framework);
    const assessable = framework.requirements.filter((r) => r.assessable).length;
    process.stdout.write(
      `${framework.key} ${framework.version}: ${framework.requirements.length} requirements, ${assessable} assessable\n`,
    );
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
