/**
 * The differential harness of the read path (issue 46): a document answered through today's path
 * and through the reference path (`readPath.reference`, the selection planned for every parent as
 * before) must give the same status and the same bytes: data, errors with their paths and codes,
 * nulls where a field is refused. `differential.test.ts` runs a short form on every database;
 * `scripts/differential.ts` the long form with thousands of generated documents.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import {
  type DocumentNode,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
  type GraphQLOutputType,
  getNamedType,
  getNullableType,
  isAbstractType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  parse,
  print,
  separateOperations,
  typeFromAST,
  validate,
  visit,
} from "graphql";
import { SignJWT } from "jose";
import type { SeedResult } from "../../src/admin/seed.js";
import { type Permission, permissions, rolePermissions } from "../../src/auth/permissions.js";
import { readPath } from "../../src/graphql/read-path.js";
import { schema } from "../../src/schema.js";
import { type TestApp, testJwtSecret } from "./test-app.js";

const root = path.resolve(import.meta.dirname, "../..");

export type Credential = { name: string; headers: Record<string, string> };

/** Every role (a member's JWT), the full-scope key, a key per role's permissions and a key per single scope. */
export async function credentialsOf(t: TestApp, org: SeedResult): Promise<Credential[]> {
  const out: Credential[] = [{ name: "key: every scope", headers: { "x-api-key": org.apiKey } }];
  const roles = ["owner", "admin", "auditor", "employee"] as const;
  for (const [i, role] of roles.entries()) {
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(org.userIds[i] as string)
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(testJwtSecret));
    out.push({ name: `jwt: ${role}`, headers: { authorization: `Bearer ${jwt}`, "x-organization-id": org.organizationId } });
  }
  const key = async (scopes: readonly Permission[]) => (await t.keyWith(org.organizationId, [...scopes])).key;
  out.push({ name: "key: contractor's permissions", headers: { "x-api-key": await key(rolePermissions.contractor) } });
  for (const scope of permissions.filter((p) => p.endsWith(":read"))) {
    out.push({ name: `key: ${scope} alone`, headers: { "x-api-key": await key([scope]) } });
  }
  return out;
}

export type Case = { source: string; query: string; variables: Record<string, unknown> };

/** The ids variables are filled from: the organization's records, one of each kind. */
export type Ids = {
  task: string;
  vendor: string;
  risk: string;
  policy: string;
  member: string;
  user: string;
  comment?: string;
  /** An adopted framework with controls mapped, and one of its requirements. */
  framework?: string;
  requirement?: string;
};

export function idsOf(org: SeedResult, comment?: string, framework?: { id: string; requirement: string }): Ids {
  return {
    task: org.taskIds[0] as string,
    vendor: org.vendorIds[0] as string,
    risk: org.riskIds[0] as string,
    policy: org.policyIds[0] as string,
    member: org.memberIds[0] as string,
    user: org.userIds[0] as string,
    comment,
    framework: framework?.id,
    requirement: framework?.requirement,
  };
}

/** An id for an argument or variable by its name (taskId, vendorId, entityId, id ...), else the task's. */
function idFor(name: string, ids: Ids): string {
  const n = name.toLowerCase();
  if (n.includes("framework") && ids.framework) return ids.framework;
  if (n.includes("requirement") && ids.requirement) return ids.requirement;
  if (n.includes("vendor")) return ids.vendor;
  if (n.includes("risk")) return ids.risk;
  if (n.includes("polic")) return ids.policy;
  if (n.includes("member") || n.includes("assignee") || n.includes("approver")) return ids.member;
  if (n.includes("user") || n.includes("author")) return ids.user;
  if (n.includes("comment") && ids.comment) return ids.comment;
  return ids.task;
}

/** A value for an input of this type, or undefined when none can be made up (the case is left out). */
function valueFor(name: string, type: GraphQLInputType, ids: Ids): unknown {
  const inner = getNullableType(type);
  if (isListType(inner)) {
    if (name === "ids") return [ids.vendor, ids.task, ids.risk, ids.policy, ids.member, ids.comment ?? ids.task];
    const item = valueFor(name, inner.ofType, ids);
    return item === undefined ? undefined : [item];
  }
  if (isEnumType(inner)) {
    const values = inner.getValues().map((v) => v.value as string);
    if (name === "entityType") return values.includes("task") ? "task" : "vendor";
    return values[0];
  }
  if (isScalarType(inner)) {
    if (inner.name === "ID") return idFor(name, ids);
    if (inner.name === "Int") return 3;
    if (inner.name === "Boolean") return true;
    if (!isNonNullType(type)) return null;
    if (inner.name === "String") return "a";
  }
  if (isInputObjectType(inner) && !isNonNullType(type)) return null;
  return undefined;
}

/** Variables for a document's operation, or null when one cannot be made up. */
function variablesFor(document: DocumentNode, ids: Ids): Record<string, unknown> | null {
  const operation = document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION);
  if (!operation || operation.kind !== Kind.OPERATION_DEFINITION) return null;
  // A variable named `id` takes the kind of the field it is an argument of: vendor(id: $id) a vendor's.
  const fieldOf = new Map<string, string>();
  const fields: string[] = [];
  visit(document, {
    Field: { enter: (node) => void fields.push(node.name.value), leave: () => void fields.pop() },
    Argument: (node) => {
      if (node.value.kind === Kind.VARIABLE && node.name.value === "id") fieldOf.set(node.value.name.value, fields.at(-1) ?? "");
    },
  });
  const variables: Record<string, unknown> = {};
  for (const definition of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type as never) as GraphQLInputType | undefined;
    if (!type) return null;
    const name = definition.variable.name.value;
    const value = valueFor(fieldOf.has(name) ? `${fieldOf.get(name)}Id` : name, type, ids);
    if (value === undefined) return null;
    variables[definition.variable.name.value] = value;
  }
  return variables;
}

function filesUnder(dir: string, test: (file: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === "node_modules") continue;
    const file = path.join(dir, entry);
    if (statSync(file).isDirectory()) out.push(...filesUnder(file, test));
    else if (test(file)) out.push(file);
  }
  return out;
}

/** The query documents written in a text: template literals and strings that parse as a query, and `graphql` blocks. */
function queriesIn(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/`(\s*(?:query\b|\{)[^`$]*)`/g)) found.add(m[1] as string);
  for (const m of text.matchAll(/"((?:query\b|\{ )(?:[^"\\]|\\.)*)"/g)) {
    // A string literal's escapes (Relay's compiled documents are JSON strings with \n).
    try {
      found.add(JSON.parse(`"${m[1]}"`) as string);
    } catch {
      found.add(m[1] as string);
    }
  }
  for (const m of text.matchAll(/```graphql\n([\s\S]*?)```/g)) found.add(m[1] as string);
  return [...found];
}

/**
 * The read documents of the test suite (test/**), of the docs (docs/*.md, README.md) and of the
 * client tests' codegen documents, each with variables made up from `ids`: only those that parse,
 * are queries and validate (a refused document is refused before the read path).
 */
export function collectedCases(ids: Ids): Case[] {
  const sources = [
    ...filesUnder(path.join(root, "test"), (f) => /\.(ts|graphql)$/.test(f)),
    ...filesUnder(path.join(root, "docs"), (f) => f.endsWith(".md")),
    path.join(root, "README.md"),
    ...filesUnder(path.join(root, "bench"), (f) => f.endsWith(".mjs")),
  ];
  const cases: Case[] = [];
  const seen = new Set<string>();
  for (const file of sources) {
    const text = readFileSync(file, "utf8");
    // A .graphql file (the codegen documents) is documents as it stands; elsewhere they are quoted.
    for (const written of file.endsWith(".graphql") ? [text] : queriesIn(text)) {
      let parsed: DocumentNode;
      try {
        parsed = parse(written);
      } catch {
        continue;
      }
      // Each operation with the fragments it spreads.
      for (const document of Object.values(separateOperations(parsed))) {
        const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
        if (operations.length !== 1 || operations[0]?.operation !== "query") continue;
        if (validate(schema, document).length) continue;
        const query = print(document);
        const variables = variablesFor(document, ids);
        if (!variables) continue;
        const key = JSON.stringify([query, variables]);
        if (seen.has(key)) continue;
        seen.add(key);
        cases.push({ source: path.relative(root, file), query, variables });
      }
    }
  }
  return cases;
}

/** A small deterministic random source (mulberry32), so a generated document is named by its seed. */
function randomOf(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A generated read document: one root field the ids can answer, every readable field below it to
 * `depth` levels (objects and lists with their arguments), some of them behind aliases, inline and
 * named fragments, and `@include` / `@skip` on variables.
 */
/** How many root fields generated documents take turns over. */
export const generatedRoots = () =>
  Object.values((schema.getQueryType() as GraphQLObjectType).getFields()).filter(
    (f) => isObjectType(getNamedType(f.type)) || isAbstractType(getNamedType(f.type)),
  ).length;

export function generatedCase(seed: number, ids: Ids, depth = 4): Case | null {
  const random = randomOf(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)] as T;
  const queryType = schema.getQueryType() as GraphQLObjectType;
  const roots = Object.values(queryType.getFields()).filter(
    (f) => isObjectType(getNamedType(f.type)) || isAbstractType(getNamedType(f.type)),
  );
  // Every root field in turn, so that a run of as many seeds as there are root fields reads each one.
  const field = roots[seed % roots.length] as GraphQLField<unknown, unknown>;
  const variables: Record<string, unknown> = { on: random() < 0.5, off: random() < 0.5 };
  const declared: string[] = [];
  const used = new Set<string>();
  const fragments: string[] = [];
  let aliases = 0;
  let directives = 0;
  const argsOf = (f: GraphQLField<unknown, unknown>): string | null => {
    const parts: string[] = [];
    for (const arg of f.args) {
      if (arg.name === "limit") {
        parts.push(`limit: ${1 + Math.floor(random() * 3)}`);
        continue;
      }
      if (!isNonNullType(arg.type)) continue;
      // An entity reference names a vendor where the kinds it takes have no task (task item statistics).
      const entityType = f.args.find((a) => a.name === "entityType");
      const onVendor = entityType && !valueFor("entityType", entityType.type, ids)?.toString().startsWith("task");
      const name0 = arg.name === "id" ? `${f.name}Id` : arg.name === "entityId" && onVendor ? "vendorId" : arg.name;
      const value = valueFor(name0, arg.type, ids);
      if (value === undefined) return null;
      const name = `v${Object.keys(variables).length}`;
      variables[name] = value;
      declared.push(`$${name}: ${String(arg.type)}`);
      parts.push(`${arg.name}: $${name}`);
    }
    return parts.length ? `(${parts.join(", ")})` : "";
  };
  const selectionOf = (type: GraphQLOutputType, level: number): string => {
    const named = getNamedType(type);
    if (isAbstractType(named)) {
      const possible = schema.getPossibleTypes(named);
      // One possible type: two could select one name with types that conflict (DateTime! and DateTime).
      const chosen = pick(possible);
      return `{ __typename ... on ${chosen.name} ${selectionOf(chosen, level)} }`;
    }
    if (!isObjectType(named)) return "";
    const parts: string[] = [];
    for (const f of Object.values(named.getFields())) {
      const inner = getNamedType(f.type);
      let head = f.name;
      let selection = "";
      if (isObjectType(inner) || isAbstractType(inner)) {
        if (level >= depth || random() < 0.25) continue;
        const args = argsOf(f);
        if (args === null) continue;
        head = `${f.name}${args}`;
        selection = ` ${selectionOf(f.type, level + 1)}`;
      } else if (f.args.some((a) => isNonNullType(a.type))) continue;
      if (aliases < 6 && random() < 0.1) {
        aliases++;
        head = `a${aliases}: ${head}`;
      }
      const r = random();
      let part = `${head}${selection}`;
      if (r < 0.08 && directives < 8) {
        directives++;
        used.add("on");
        part = `${head} @include(if: $on)${selection}`;
      } else if (r < 0.16 && directives < 8) {
        directives++;
        used.add("off");
        part = `${head} @skip(if: $off)${selection}`;
      } else if (r < 0.22) part = `... on ${named.name} { ${part} }`;
      else if (r < 0.26) {
        const name = `F${fragments.length}`;
        fragments.push(`fragment ${name} on ${named.name} { ${part} }`);
        part = `...${name}`;
      }
      parts.push(part);
    }
    return `{ __typename ${parts.join(" ")} }`;
  };
  const args = argsOf(field);
  if (args === null) return null;
  const body = `${field.name}${args} ${selectionOf(field.type, 1)}`;
  for (const flag of ["on", "off"]) {
    if (used.has(flag)) declared.push(`$${flag}: Boolean!`);
    else delete variables[flag];
  }
  const query = `query Generated${seed}${declared.length ? `(${declared.join(", ")})` : ""} { ${body} } ${fragments.join(" ")}`;
  return { source: `generated #${seed}`, query, variables };
}

export type Difference = { case: Case; credential: string; reference: string; current: string };

/** The answer of one request, status and body, through the reference path or today's. */
async function answer(t: TestApp, c: Case, credential: Credential, reference: boolean): Promise<string> {
  readPath.reference = reference;
  try {
    const response = await t.app.fetch(
      new Request("http://test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", ...credential.headers },
        body: JSON.stringify({ query: c.query, variables: c.variables }),
      }),
    );
    return `${response.status} ${await response.text()}`;
  } finally {
    readPath.reference = false;
  }
}

/** Every case with every credential through both paths; the differences, and how many answers carried data. */
export async function differences(t: TestApp, cases: Case[], credentials: Credential[]) {
  const found: Difference[] = [];
  let withData = 0;
  for (const c of cases) {
    for (const credential of credentials) {
      const reference = await answer(t, c, credential, true);
      const current = await answer(t, c, credential, false);
      if (reference.includes('"data":{"') && !reference.includes('"data":{"__typename"')) withData++;
      if (reference !== current) found.push({ case: c, credential: credential.name, reference, current });
    }
  }
  return { found, answers: cases.length * credentials.length, withData };
}
