/**
 * Shared pieces of the fuzz suites (test/fuzz/*.fuzz.test.ts): the seeded world the requests aim
 * at, the credentials they carry, value arbitraries derived from a JSON-schema-like shape (OpenAPI
 * schemas as served, GraphQL input types converted), and the response checks.
 *
 * Replay: every suite prints its seed; `FUZZ_SEED=<seed> npx vitest run test/fuzz -t '<test name>'`
 * runs the same inputs again (add `FUZZ_PATH=<path>` from fast-check's report to jump straight to
 * the shrunk counterexample). `FUZZ_RUNS=<n>` sets the runs of every property (and lifts the time
 * budget), e.g. `FUZZ_RUNS=2000` for a long soak. `FUZZ_SKIP=<regex>` skips generated requests whose
 * JSON form matches, to look past a known bug (e.g. FUZZ_SKIP='\\ud[89a-f]' for lone surrogates).
 */

import fc from "fast-check";
import { type GraphQLOutputType, getNamedType, isAbstractType, isNonNullType, isObjectType } from "graphql";
import { SignJWT } from "jose";
import { createSession } from "../../src/auth/sessions.js";
import { type TestApp, testJwtSecret } from "../helpers/test-app.js";

// ---------------------------------------------------------------------------------------------
// Parameters

const envSeed = process.env.FUZZ_SEED;
/** One seed per suite run: printed up front, passed to every property. */
export const fuzzSeed =
  envSeed !== undefined && envSeed !== "" ? Number(envSeed) : (Date.now() ^ (Math.random() * 0x1_0000_0000)) | 0;

/** fast-check parameters for one property: `defaultRuns` runs unless FUZZ_RUNS says otherwise, within `timeLimitMs`. */
export function fuzzParameters<T>(defaultRuns: number, timeLimitMs: number): fc.Parameters<T> {
  const runs = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : undefined;
  const path = process.env.FUZZ_PATH;
  return {
    seed: fuzzSeed,
    numRuns: runs ?? defaultRuns,
    // A time budget keeps a slow machine within the suite's limit; runs are cut short, never failed.
    ...(runs === undefined ? { interruptAfterTimeLimit: timeLimitMs } : {}),
    ...(path ? { path, endOnFailure: true } : {}),
  };
}

const skipPattern = process.env.FUZZ_SKIP ? new RegExp(process.env.FUZZ_SKIP, "i") : null;
/** True when FUZZ_SKIP says to leave this generated request out (it is then discarded, not counted as a run). */
export function skipped(generated: unknown): boolean {
  return skipPattern?.test(JSON.stringify(generated)) ?? false;
}

/** Requests per property, to print how far each got within its time budget. */
export class RequestTally {
  private readonly byProperty = new Map<string, number>();
  private readonly started = Date.now();
  total = 0;

  count(property: string | undefined) {
    this.total++;
    const name = property ?? "?";
    this.byProperty.set(name, (this.byProperty.get(name) ?? 0) + 1);
  }

  summary(): string {
    const seconds = ((Date.now() - this.started) / 1000).toFixed(1);
    const sorted = [...this.byProperty].sort(([, a], [, b]) => a - b);
    const [fewestName, fewest] = sorted[0] ?? ["-", 0];
    const median = sorted[Math.floor(sorted.length / 2)]?.[1] ?? 0;
    const most = sorted.at(-1)?.[1] ?? 0;
    if (process.env.FUZZ_TALLY) for (const [name, n] of sorted) console.info(`[fuzz] ${n}\t${name.replace(/^.*> /, "")}`);
    return (
      `${this.total} requests in ${seconds} s over ${this.byProperty.size} properties ` +
      `(per property: median ${median}, most ${most}, fewest ${fewest}, ${fewestName.replace(/^.*> /, "")})`
    );
  }
}

export function announceSeed(suite: string) {
  console.info(
    `[fuzz] ${suite}: seed ${fuzzSeed} — replay with FUZZ_SEED=${fuzzSeed} (and -t '<test name>'); FUZZ_RUNS=<n> scales the runs`,
  );
}

// ---------------------------------------------------------------------------------------------
// The world the requests aim at

export type IdKind =
  | "user"
  | "member"
  | "task"
  | "vendor"
  | "risk"
  | "policy"
  | "policyVersion"
  | "taskItem"
  | "comment"
  | "attachment";

export const credentials = [
  "apiKey",
  "readOnlyKey",
  "none",
  "badKey",
  "malformedKey",
  "session",
  "sessionCookie",
  "jwt",
  "jwtExpired",
  "jwtWrongSecret",
  "jwtNone",
  "garbageAuth",
  "malformedCookie",
  "jwtNoExp",
  "jwtForever",
] as const;
export type Credential = (typeof credentials)[number];

/** Valid credentials of the organization's owner: mostly the all-scopes API key. */
export const validCredentialArb: fc.Arbitrary<Credential> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Credential>("apiKey") },
  { weight: 1, arbitrary: fc.constantFrom<Credential>("session", "sessionCookie", "jwt") },
);

/** Mostly the all-scopes API key (so handlers go deep), now and then every other kind, none included. */
export const credentialArb: fc.Arbitrary<Credential> = fc.oneof(
  { weight: 30, arbitrary: fc.constant<Credential>("apiKey") },
  { weight: 3, arbitrary: fc.constant<Credential>("session") },
  { weight: 3, arbitrary: fc.constant<Credential>("jwt") },
  { weight: 2, arbitrary: fc.constant<Credential>("none") },
  { weight: 1, arbitrary: fc.constantFrom<Credential>(...credentials) },
);

export type FuzzWorld = {
  organizationId: string;
  otherOrganizationId: string;
  ids: Record<IdKind, string[]>;
  allIds: string[];
  /** Ids and e-mail addresses of the other organization: none may appear in an answer unless the request named it. */
  foreignMarkers: string[];
  foreignIds: string[];
  credentialHeaders(credential: Credential): Record<string, string>;
  /** Puts back what fuzzed updates may have taken: the owner (whose session and JWT the runs use) active and owner. */
  restore(): Promise<void>;
};

function b64url(value: unknown) {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/**
 * Two seeded organizations: the fuzzed one (with a comment, an attachment and a second policy
 * version, so every kind of id exists) and another whose ids are thrown in now and then.
 */
export async function createFuzzWorld(t: TestApp): Promise<FuzzWorld> {
  const org = await t.seedOrg();
  const other = await t.seedOrg();
  const organizationId = org.organizationId;
  for (const s of [org, other]) {
    const made = await t.rest("POST", "/v1/comments", {
      key: s.apiKey,
      body: {
        content: "Evidence attached",
        entityId: s.vendorIds[0],
        entityType: "vendor",
        userId: s.userIds[0],
        attachments: [
          { fileName: "soc2.pdf", fileType: "application/pdf", fileData: Buffer.from("%PDF-1.7\n").toString("base64") },
        ],
      },
    });
    if (made.status !== 201) throw new Error(`fuzz world: cannot create a comment (${made.status} ${made.text})`);
    const version = await t.rest("POST", `/v1/policies/${s.policyIds[0]}/versions`, {
      key: s.apiKey,
      body: { changelog: "Draft" },
    });
    if (version.status !== 201) throw new Error(`fuzz world: cannot create a policy version (${version.status} ${version.text})`);
  }
  const rowsOf = async (organization: string) => ({
    comment: (await t.db.comment.findMany({ where: { organizationId: organization }, select: { id: true } })).map((r) => r.id),
    attachment: (await t.db.attachment.findMany({ where: { organizationId: organization }, select: { id: true } })).map(
      (r) => r.id,
    ),
    policyVersion: (await t.db.policyVersion.findMany({ where: { organizationId: organization }, select: { id: true } })).map(
      (r) => r.id,
    ),
    emails: (
      await t.db.user.findMany({ where: { memberships: { some: { organizationId: organization } } }, select: { email: true } })
    ).map((u) => u.email),
  });
  const mine = await rowsOf(organizationId);
  const theirs = await rowsOf(other.organizationId);
  const ids: Record<IdKind, string[]> = {
    user: org.userIds,
    member: org.memberIds,
    task: org.taskIds,
    vendor: org.vendorIds,
    risk: org.riskIds,
    policy: org.policyIds,
    policyVersion: mine.policyVersion,
    taskItem: org.taskItemIds,
    comment: mine.comment,
    attachment: mine.attachment,
  };
  const foreignIds = [
    ...other.userIds,
    ...other.memberIds,
    ...other.taskIds,
    ...other.vendorIds,
    ...other.riskIds,
    ...other.policyIds,
    ...other.taskItemIds,
    ...theirs.comment,
    ...theirs.attachment,
    ...theirs.policyVersion,
  ];

  const owner = org.userIds[0] as string;
  const session = await createSession(t.db, owner, 3_600_000);
  const secret = new TextEncoder().encode(testJwtSecret);
  const jwt = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(owner).setExpirationTime("2h").sign(secret);
  const jwtExpired = await new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(owner)
    .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
    .sign(secret);
  const jwtWrongSecret = await new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(owner)
    .setExpirationTime("2h")
    .sign(new TextEncoder().encode("another-secret-of-at-least-32-characters!"));
  const jwtNone = `${b64url({ alg: "none", typ: "JWT" })}.${b64url({ sub: owner, exp: Math.floor(Date.now() / 1000) + 3600 })}.`;
  // Tokens that never expire, or only in ten years: refused (exp is required, lifetime bounded).
  const jwtNoExp = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(owner).sign(secret);
  const jwtForever = await new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(owner)
    .setExpirationTime("3650d")
    .sign(secret);
  const readOnlyKey = (await t.keyWith(organizationId, ["task:read"])).key;
  const lookup = org.apiKey.split("_")[1];

  const headers: Record<Credential, Record<string, string>> = {
    apiKey: { "x-api-key": org.apiKey },
    readOnlyKey: { "x-api-key": readOnlyKey },
    none: {},
    // A real key id with a wrong secret, and something that is not a key at all.
    badKey: { "x-api-key": `cwk_${lookup}_${"A".repeat(43)}` },
    malformedKey: { "x-api-key": "cwk_not-a-key" },
    session: { authorization: `Bearer ${session.token}` },
    sessionCookie: { cookie: `theme=dark; session_token=${session.token}` },
    jwt: { authorization: `Bearer ${jwt}` },
    jwtExpired: { authorization: `Bearer ${jwtExpired}` },
    jwtWrongSecret: { authorization: `Bearer ${jwtWrongSecret}` },
    jwtNone: { authorization: `Bearer ${jwtNone}` },
    garbageAuth: { authorization: "Basic Zm9vOmJhcg==" },
    malformedCookie: { cookie: "session_token=%E0%A4%A" },
    jwtNoExp: { authorization: `Bearer ${jwtNoExp}` },
    jwtForever: { authorization: `Bearer ${jwtForever}` },
  };
  return {
    organizationId,
    otherOrganizationId: other.organizationId,
    ids,
    allIds: Object.values(ids).flat(),
    foreignIds,
    foreignMarkers: [...foreignIds, ...theirs.emails, other.organizationId],
    credentialHeaders: (credential) => ({ ...headers[credential] }),
    async restore() {
      await t.db.member.update({ where: { id: org.memberIds[0] }, data: { role: "owner", isActive: true } });
    },
  };
}

/** The kind of id an argument most likely names, from its name and the operation (REST path or GraphQL field). */
export function idKindsFor(argName: string, operation: string): IdKind[] {
  if (argName === "entityId") return ["task", "vendor", "risk", "policy"];
  if (argName === "userId") return ["user"];
  if (argName === "sourceVersionId" || argName === "versionId") return ["policyVersion"];
  if (argName === "approverId" || argName === "assigneeId") return ["member"];
  if (argName === "taskId") return ["task"];
  if (argName === "id") {
    if (/people|member|unlinkDevice/i.test(operation)) return ["member"];
    if (/task-management|taskItem/i.test(operation)) return ["taskItem"];
    if (/polic/i.test(operation)) return ["policy"];
    if (/attachment/i.test(operation)) return ["attachment"];
    if (/vendor/i.test(operation)) return ["vendor"];
    if (/risk/i.test(operation)) return ["risk"];
    if (/comment/i.test(operation)) return ["comment"];
    if (/task/i.test(operation)) return ["task"];
  }
  return [];
}

/** A real id of the fuzzed organization (mostly of the right kind), or of the other organization, or a made-up one. */
export function idArb(world: FuzzWorld, argName: string, operation: string): fc.Arbitrary<string> {
  const preferred = idKindsFor(argName, operation).flatMap((kind) => world.ids[kind]);
  return fc.oneof(
    ...(preferred.length ? [{ weight: 8, arbitrary: fc.constantFrom(...preferred) }] : []),
    { weight: 2, arbitrary: fc.constantFrom(...world.allIds) },
    { weight: 1, arbitrary: fc.constantFrom(...world.foreignIds) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom("tsk", "mem", "usr", "pol", "pv", "vnd", "rsk", "tski", "att", "cmt", "x"),
          fc.string({ unit: hexChar }),
        )
        .map(([prefix, rest]) => `${prefix}_${rest}`),
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Strings

const hexChar = fc.constantFrom(..."0123456789abcdef");
const printableAscii = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c));
/** A value a header can carry (printable ASCII). */
export const headerValueArb = fc.string({ unit: printableAscii, maxLength: 60 });

/** The nastiest characters: NUL and other controls, lone surrogates, bidi overrides, joiners, emoji, combining marks. */
export const oddCharacters = [
  "\u0000",
  "\u0001",
  "\u001f",
  "\u007f",
  "\ud800",
  "\udfff",
  "\udbff",
  "\ud83d\ude00",
  "\u202e",
  "\u200f",
  "\u200d",
  "\ufeff",
  "👩‍👩‍👧‍👦",
  "e\u0301\u0302\u0303\u0304\u0305",
];

/** Other characters and snippets that break naive code: separators, escapes, injections, look-alike values. */
export const oddPieces = [
  "\u200e",
  "\u2066",
  "\u200b",
  "\ufffe",
  "\uffff",
  "\u2028",
  "\u0085",
  "\u00a0",
  "🏳️‍🌈",
  "Z̷̢̛͓a̸l̵g̶o̴",
  "مرحبا",
  "עברית",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
  "ﷺ",
  "\n",
  "\r\n",
  "\t",
  " ",
  "\\",
  '"',
  "'",
  "`",
  "/",
  "../",
  "..\\",
  "%00",
  "%",
  "%zz",
  "&",
  "?",
  "#",
  "{{",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template placeholder, as text, is the point
  "${x}",
  "<script>alert(1)</script>",
  "' OR '1'='1",
  '\'; DROP TABLE "Task"; --',
  "null",
  "undefined",
  "NaN",
  "true",
  "0",
  "-1",
  "1e309",
  "0x10",
  "__proto__",
  "constructor",
];

export const oddStringArb: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      { weight: 2, arbitrary: fc.constantFrom(...oddCharacters) },
      { weight: 2, arbitrary: fc.constantFrom(...oddPieces) },
      { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 6 }) },
      { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
    ),
    { minLength: 1, maxLength: 12 },
  )
  .map((parts) => parts.join(""));

/** Strings from 1,000 to about 100,000 UTF-16 units, of one repeated (possibly odd) piece. */
export const hugeStringArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom("a", " ", "é", "😀", "\u202e", "x\u0301", "\u0000", "\ud800", "ab ", "<", "0"),
    fc.integer({ min: 1_000, max: 100_000 }),
  )
  .map(([piece, length]) => piece.repeat(Math.ceil(length / piece.length)));

/** Plausible text, boundary lengths included (255/256, 2000/2001, 10,000/10,001 characters). */
const textArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 40 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "Quarterly access review",
      "  padded  ",
      "",
      " ",
      "\t\n",
      "x".repeat(255),
      "x".repeat(256),
      "😀".repeat(255),
      "😀".repeat(256),
      "x".repeat(2000),
      "x".repeat(2001),
      "😀".repeat(2000),
      "x".repeat(10_000),
      "x".repeat(10_001),
    ),
  },
);

const base64Of = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const fileDataArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 64 }).map(base64Of) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "JVBERi0xLjcK",
      "TVqQAAMAAAAEAAAA", // MZ
      "f0VMRgIBAQAAAAAAAAAAAA==", // ELF
      "IyEvYmluL3NoCg==", // #!/bin/sh
      "yv66vgAAADQ=", // CAFEBABE
      "",
      "=",
      "abc",
      "ab=c",
      "####",
      "data:application/pdf;base64,JVBERi0=",
      "JVBE Ri0x",
      "JVBERi0xLjcK\n",
      "-_-_",
    ),
  },
);
const fileTypeArb = fc.constantFrom(
  "application/pdf",
  "application/x-shellscript",
  "application/x-ms-dos-executable",
  "text/csv",
  "image/png",
  "text/plain",
  "text/html",
  "image/svg+xml",
  "application/x-msdownload",
  "APPLICATION/X-MSDOWNLOAD",
  "application/javascript",
  "text/x-shellscript",
  "application/pdf; charset=binary",
  "a/b/c",
  "pdf",
  "",
  "*/*",
);
const fileNameArb = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom("report.pdf", "evidence.PNG", "notes.txt") },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "a.exe",
      "x.PDF.exe",
      "a.jse",
      "a.wsc",
      "run.command",
      "app.msix",
      "types.ps1xml",
      "tool.py",
      "help.chm",
      "disk.iso",
      "shell.scf",
      "link.url",
      "page.html",
      "image.svg",
      "macro.docm",
      "noextension",
      "script.sh ",
      "archive.tar.gz",
      "../../etc/passwd",
      "a\\b.txt",
      "a/b.txt",
      ".",
      "..",
      '"quoted".pdf',
      "rtl\u202egpj.exe",
      " leading.pdf",
      "nul\u0000.pdf",
      "new\nline.pdf",
      "x".repeat(255),
      "x".repeat(256),
      "😀".repeat(255),
      "CON",
      "",
    ),
  },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 30 }) },
);
const emailArb = fc.oneof(
  fc.emailAddress(),
  fc.constantFrom("  Mixed.Case@Example.COM  ", "no-at-sign", "a@b", "@example.com", "a@@example.com", "ünïcode@exämple.com", ""),
);
const urlArb = fc.oneof(
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  fc.constantFrom(
    "https://app.example.com/vendors/1",
    "javascript:alert(1)",
    "ftp://example.com/x",
    "//example.com",
    "/relative",
    "http://",
    "https://[::1]:99999/",
    `https://example.com/${"a".repeat(2100)}`,
    "",
  ),
);
const dateTextArb = fc.oneof(
  fc.date().map((d) => (Number.isNaN(d.getTime()) ? "Invalid Date" : d.toISOString())),
  fc.constantFrom(
    "-271821-04-20T00:00:00.000Z",
    "+275760-09-13T00:00:00.000Z",
    "0000-01-01T00:00:00.000Z",
    "1969-12-31T23:59:59.999Z",
    "2020-02-30",
    "not a date",
    "",
  ),
);
/** Cursors shaped like ours ([{d: date}, id] or [version]) with edge values, and junk. */
export const cursorArb: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(dateTextArb, fc.oneof(fc.string(), oddStringArb))
      .map(([d, id]) => Buffer.from(JSON.stringify([{ d }, id])).toString("base64url")),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(fc.integer(), fc.constantFrom(2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 1, -(2 ** 53) + 1, 0, -1, 1.5))
      .map((n) => Buffer.from(JSON.stringify([n])).toString("base64url")),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v)).toString("base64url")) },
  { weight: 1, arbitrary: fc.oneof(fc.string(), oddStringArb, fc.constantFrom("", "=", "WyJ", "W10", "bnVsbA")) },
);

/**
 * How far a generated request strays from a valid one:
 * - `plausible`: right types and plausible values (real ids, ordinary texts): handlers run to the end;
 * - `typed`: right JSON types, but odd, huge and boundary values (NUL, lone surrogates, 100 KB, 2^31...);
 * - `wild`: anything: wrong types, nulls, missing and extra fields, malformed bodies, odd headers.
 */
export type Mode = "plausible" | "typed" | "wild";
export const modeArb: fc.Arbitrary<Mode> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Mode>("plausible") },
  { weight: 3, arbitrary: fc.constant<Mode>("typed") },
  { weight: 4, arbitrary: fc.constant<Mode>("wild") },
);

/** A string that suits the argument: ids, e-mails, URLs, file fields, cursors, texts; beyond `plausible`, odd ones too. */
export function stringArb(name: string, operation: string, world: FuzzWorld, mode: Mode = "wild"): fc.Arbitrary<string> {
  let plausible: fc.Arbitrary<string> = textArb;
  if (name === "id" || name === "entityId" || /Id$/.test(name)) plausible = idArb(world, name, operation);
  else if (/email/i.test(name)) plausible = emailArb;
  else if (/url/i.test(name)) plausible = urlArb;
  else if (name === "fileData") plausible = fileDataArb;
  else if (name === "fileType") plausible = fileTypeArb;
  else if (name === "fileName") plausible = fileNameArb;
  else if (name === "cursor") plausible = cursorArb;
  if (mode === "plausible") return plausible;
  return fc.oneof(
    { weight: 4, arbitrary: plausible },
    { weight: 4, arbitrary: oddStringArb },
    { weight: 1, arbitrary: fc.string({ unit: "binary" }) },
    { weight: 1, arbitrary: hugeStringArb },
  );
}

// ---------------------------------------------------------------------------------------------
// Other values

export const intArb: fc.Arbitrary<number> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -2, max: 120 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      0,
      1,
      20,
      100,
      101,
      -1,
      2 ** 31 - 1,
      2 ** 31,
      -(2 ** 31),
      -(2 ** 31) - 1,
      2 ** 53,
      -(2 ** 53),
      1e308,
    ),
  },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
);

/** Arrays or objects nested up to 3,000 levels deep. */
export const deepNestedArb: fc.Arbitrary<unknown> = fc
  .record({
    depth: fc.integer({ min: 2, max: 3_000 }),
    kind: fc.constantFrom("array", "object", "mixed"),
    leaf: fc.jsonValue({ maxDepth: 0 }),
  })
  .map(({ depth, kind, leaf }) => {
    let value: unknown = leaf;
    for (let i = 0; i < depth; i++) {
      const asArray = kind === "array" || (kind === "mixed" && i % 2 === 0);
      value = asArray ? [value] : { a: value };
    }
    // fast-check prints counterexamples recursively: name the value instead (a symbol key, so JSON ignores it).
    const name = `/* ${kind === "array" ? "[" : kind === "object" ? '{"a":' : '[{"a":'}… nested ${depth} deep around ${JSON.stringify(leaf)} */`;
    Object.defineProperty(value, fc.toStringMethod, { value: () => name, enumerable: false });
    return value;
  });

/** Any JSON, strings odd and long included, now and then deeply nested. */
export const anyJsonArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  {
    weight: 2,
    arbitrary: fc.dictionary(fc.oneof(fc.string(), oddStringArb), fc.oneof(oddStringArb, fc.jsonValue({ maxDepth: 2 })), {
      maxKeys: 5,
    }),
  },
  { weight: 1, arbitrary: deepNestedArb },
  { weight: 1, arbitrary: hugeStringArb },
  // Longer than any list may be: refused before it is coerced.
  { weight: 1, arbitrary: fc.integer({ min: 10_001, max: 12_000 }).map((n) => new Array(n).fill(0)) },
);

/** A value of the wrong type for wherever it goes: null, numbers, numeric strings, booleans, arrays, objects, odd and huge strings. */
export const wrongValueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.boolean() },
  { weight: 2, arbitrary: intArb },
  {
    weight: 2,
    arbitrary: fc.constantFrom("123", "-1", "1.5", "1e3", "0x1F", " 42 ", "NaN", "Infinity", "true", "false", "null", ""),
  },
  { weight: 2, arbitrary: oddStringArb },
  { weight: 2, arbitrary: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }) },
  { weight: 2, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }) },
  { weight: 1, arbitrary: deepNestedArb },
  { weight: 1, arbitrary: hugeStringArb },
  // Longer than any list may be: refused before it is coerced.
  { weight: 1, arbitrary: fc.integer({ min: 10_001, max: 12_000 }).map((n) => new Array(n).fill(0)) },
);

/** Numbers become strings, numeric strings numbers, booleans strings: the "almost right" payload. */
export function swapScalarTypes(value: unknown, depth = 0): unknown {
  if (depth > 100) return value;
  if (typeof value === "number") return String(value);
  if (typeof value === "boolean") return String(value);
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) return Number(value);
  if (typeof value === "string" && (value === "true" || value === "false")) return value === "true";
  if (Array.isArray(value)) return value.map((v) => swapScalarTypes(v, depth + 1));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, swapScalarTypes(v, depth + 1)]));
  return value;
}

// ---------------------------------------------------------------------------------------------
// Values from a JSON-schema-like shape (OpenAPI 3.1 schemas; GraphQL input types are converted to it)

export type Shape = {
  type?: string | string[];
  enum?: unknown[];
  $ref?: string;
  anyOf?: Shape[];
  oneOf?: Shape[];
  properties?: Record<string, Shape>;
  required?: string[];
  items?: Shape;
  format?: string;
  additionalProperties?: boolean | Shape;
  minProperties?: number;
};

export type ShapeContext = {
  world: FuzzWorld;
  /** The REST path or GraphQL field, to pick the right kind of id. */
  operation: string;
  resolve: (ref: string) => Shape;
  mode: Mode;
};

const ABSENT = Symbol("absent");

function enumArb(values: unknown[], mode: Mode): fc.Arbitrary<unknown> {
  if (mode !== "wild") return fc.constantFrom(...values);
  const strings = values.filter((v): v is string => typeof v === "string");
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...values) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom(...strings.map((s) => s.toUpperCase()), ...strings.map((s) => ` ${s}`), "", "unknown", "__proto__"),
        oddStringArb,
      ),
    },
  );
}

const plausibleIntArb = fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constantFrom(0, 1, 20, 100, 101, 2_000));

/** A value of the shape's type (null included where it is nullable), as odd as the mode allows. */
export function typedValue(shape: Shape, name: string, ctx: ShapeContext, depth = 0): fc.Arbitrary<unknown> {
  if (shape.$ref) return typedValue(ctx.resolve(shape.$ref), name, ctx, depth);
  const alternatives = shape.anyOf ?? shape.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => typedValue(s, name, ctx, depth)));
  if (shape.enum) return enumArb(shape.enum, ctx.mode);
  const types = shape.type === undefined ? [] : Array.isArray(shape.type) ? shape.type : [shape.type];
  if (types.length === 0) {
    // {}: any JSON value
    return ctx.mode === "plausible" ? fc.jsonValue({ maxDepth: 3 }) : anyJsonArb;
  }
  const byType = (type: string): fc.Arbitrary<unknown> => {
    switch (type) {
      case "string":
        return stringArb(name, ctx.operation, ctx.world, ctx.mode);
      case "integer":
        return ctx.mode === "plausible" ? plausibleIntArb : intArb;
      case "number":
        return ctx.mode === "plausible" ? plausibleIntArb : fc.oneof(intArb, fc.double());
      case "boolean":
        return fc.boolean();
      case "array": {
        const item = shape.items ? fuzzValue(shape.items, name, ctx, depth + 1) : anyJsonArb;
        const list = fc.array(item, { maxLength: depth > 1 ? 3 : ctx.mode === "plausible" ? 3 : 12 });
        // A single value where a list belongs: GraphQL accepts it, REST must not.
        return ctx.mode === "wild" ? fc.oneof({ weight: 6, arbitrary: list }, { weight: 1, arbitrary: item }) : list;
      }
      case "object":
        return objectArb(shape, ctx, depth + 1);
      default:
        return anyJsonArb;
    }
  };
  const nonNull = types.filter((t) => t !== "null");
  if (nonNull.length === 0) return fc.constant(null);
  const arbs = nonNull.map(byType);
  // Keep null rare: it is one choice in several.
  return types.includes("null")
    ? fc.oneof({ weight: 6, arbitrary: fc.oneof(...arbs) }, { weight: 1, arbitrary: fc.constant(null) })
    : fc.oneof(...arbs);
}

/** A value for the shape; in `wild` mode now and then one of the wrong type. */
export function fuzzValue(shape: Shape, name: string, ctx: ShapeContext, depth = 0): fc.Arbitrary<unknown> {
  const typed = typedValue(shape, name, ctx, depth);
  return ctx.mode === "wild" ? fc.oneof({ weight: 5, arbitrary: typed }, { weight: 1, arbitrary: wrongValueArb }) : typed;
}

const extraKeyArb = fc.oneof(
  fc.constantFrom(
    "__proto__",
    "constructor",
    "prototype",
    "organizationId",
    "id",
    "createdAt",
    "apiKeyId",
    "authorId",
    "data",
    "",
  ),
  fc.string({ maxLength: 12 }),
  oddStringArb,
);

/** An object of the shape: required fields present (in `wild` mode mostly), optional ones often absent, in `wild` mode extra fields now and then. */
export function objectArb(shape: Shape, ctx: ShapeContext, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const required = new Set(shape.required ?? []);
  const fields = Object.entries(shape.properties ?? {}).map(([key, s]) => {
    const entry = fuzzValue(s, key, ctx, depth).map((v) => [key, v] as [string, unknown]);
    if (required.has(key) && ctx.mode !== "wild") return entry;
    return fc.option(entry, { freq: required.has(key) ? 15 : 2, nil: ABSENT });
  });
  const extras =
    ctx.mode === "wild"
      ? fc.option(fc.array(fc.tuple(extraKeyArb, wrongValueArb), { minLength: 1, maxLength: 3 }), {
          freq: 5,
          nil: [] as [string, unknown][],
        })
      : fc.constant([] as [string, unknown][]);
  return fc.tuple(fc.tuple(...fields), extras).map(([present, extra]) => {
    const out: Record<string, unknown> = {};
    for (const entry of [...present.filter((e): e is [string, unknown] => e !== ABSENT), ...extra]) {
      // defineProperty: "__proto__" becomes an own key, as JSON.parse makes it on the server.
      Object.defineProperty(out, entry[0], { value: entry[1], enumerable: true, writable: true, configurable: true });
    }
    return out;
  });
}

// ---------------------------------------------------------------------------------------------
// Raw bodies

export const malformedJsonArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "{",
    "}",
    "[",
    '{"a":}',
    "{'a':1}",
    '{"a":1,}',
    "[1,]",
    "nul",
    "NaN",
    "undefined",
    "\ufeff{}",
    '{"title":"x"}garbage',
    "\u0000",
    '{"a":1e999}',
    '{"a":123456789012345678901234567890}',
    '{"a":"\\ud800"}',
    '{"a":"\\u0000"}',
    '{"a":"\\x41"}',
    '{"a" "b"}',
    "a=1&b=2",
    '--boundary\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--boundary--',
    "<xml/>",
    " ",
  ),
  fc.tuple(fc.jsonValue({ maxDepth: 3 }), fc.nat()).map(([v, n]) => {
    const text = JSON.stringify(v);
    return text.slice(0, n % Math.max(1, text.length));
  }),
  fc.string({ unit: "binary", maxLength: 40 }),
  // Nesting far deeper than any input: refused before it is parsed (it used to overflow the stack).
  fc
    .record({ depth: fc.integer({ min: 65, max: 25_000 }), open: fc.constantFrom("[", '{"a":', '{"input":') })
    .map(({ depth, open }) => `${open.repeat(depth)}1${(open === "[" ? "]" : "}").repeat(depth)}`),
);

export const oddContentTypeArb = fc.constantFrom(
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=boundary",
  "application/json; charset=utf-16",
  "application/json;charset=latin1",
  "APPLICATION/JSON",
  "application/jsonx",
  "application/vnd.api+json",
  "application/merge-patch+json",
  "application/graphql",
  "application/graphql-response+json",
  "application/xml",
  "*/*",
  "",
  "json",
  "application/json, text/plain",
);

// ---------------------------------------------------------------------------------------------
// Checks

/** A selection of every scalar of a GraphQL result type, and of the objects inside it down to `depth` levels. */
export function selectionOf(type: GraphQLOutputType, depth = 0): string {
  const named = getNamedType(type);
  if (isAbstractType(named)) return "{ __typename }";
  if (!isObjectType(named)) return "";
  const parts = ["__typename"];
  for (const f of Object.values(named.getFields())) {
    if (f.args.some((a) => isNonNullType(a.type) && a.defaultValue === undefined)) continue;
    // The relations of the graph multiply a query's cost; their tenancy has its own tests (graph.test.ts).
    if (f.extensions?.graphOnly) continue;
    if (isObjectType(getNamedType(f.type))) {
      if (depth < 2) parts.push(`${f.name} ${selectionOf(f.type, depth + 1)}`);
    } else parts.push(f.name);
  }
  return `{ ${parts.join(" ")} }`;
}

export const errorCodePattern = /^[A-Z_]+$/;
const envelopeKeys = new Set(["statusCode", "error", "message", "code", "details"]);

export class ResponseProblem extends Error {}

/** The REST error envelope, exactly: statusCode = status, error and message strings, code in capitals, details [{path, message}]. */
export function envelopeProblems(body: unknown, status: number): string[] {
  const problems: string[] = [];
  if (!body || typeof body !== "object" || Array.isArray(body)) return ["the body is not a JSON object"];
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) if (!envelopeKeys.has(key)) problems.push(`unexpected key ${JSON.stringify(key)}`);
  if (b.statusCode !== status) problems.push(`statusCode ${JSON.stringify(b.statusCode)} is not the HTTP status ${status}`);
  if (typeof b.error !== "string") problems.push("error is not a string");
  if (typeof b.message !== "string") problems.push("message is not a string");
  if (typeof b.code !== "string" || !errorCodePattern.test(b.code))
    problems.push(`code ${JSON.stringify(b.code)} is not /^[A-Z_]+$/`);
  if ("details" in b) {
    if (!Array.isArray(b.details)) problems.push("details is not an array");
    else
      for (const d of b.details) {
        const ok =
          d &&
          typeof d === "object" &&
          !Array.isArray(d) &&
          Object.keys(d).every((k) => k === "path" || k === "message") &&
          typeof (d as Record<string, unknown>).path === "string" &&
          typeof (d as Record<string, unknown>).message === "string";
        if (!ok) problems.push(`details item ${JSON.stringify(d)?.slice(0, 200)} is not {path, message} strings`);
      }
  }
  return problems;
}

export function snippet(text: string, max = 600): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

/** Foreign ids the fuzzing itself has sent (and may have stored, e.g. in a free-text field): their echo is no leak. */
const sentMarkers = new Set<string>();

/**
 * Foreign ids or e-mail addresses in an answer that no request named: call for every request in
 * order, so that a value stored by an earlier request and listed later is not taken for a leak.
 */
export function leakedMarkers(world: FuzzWorld, responseText: string, requestText: string): string[] {
  for (const m of world.foreignMarkers) if (requestText.includes(m)) sentMarkers.add(m);
  return world.foreignMarkers.filter((m) => responseText.includes(m) && !sentMarkers.has(m));
}
