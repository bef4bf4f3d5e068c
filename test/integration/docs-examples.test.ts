/**
 * Every example of the README and docs/ runs here: each `sh` block with a `curl` command and each
 * `graphql` block, read from the Markdown, against the app through `app.fetch`, with real ids of a
 * seeded organization in place of the placeholders (`tsk_...`, `$KEY`, ...). A command must answer
 * 2xx (GraphQL: no `errors`), and the JSON a page shows after it (`# {...}` lines) gives the keys
 * its answer must have: exactly those keys, or at least those where the sample ends in `...`.
 * The convention, the placeholders and the markers are in docs/development.md ("Examples in the
 * docs"). A page whose example drifts fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type OperationDefinitionNode, parse, print } from "graphql";
import { SignJWT } from "jose";
import type { Code, Html, Root, RootContent } from "mdast";
import { remark } from "remark";
import { describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createSession } from "../../src/auth/sessions.js";
import { adopt, makeFramework } from "../helpers/frameworks.js";
import { createTestApp, testJwtSecret } from "../helpers/test-app.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const pages = [
  "README.md",
  ...readdirSync(path.join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`),
];

type Example = { page: string; line: number; lang: "sh" | "graphql"; text: string; marker: Marker };
type Marker = { skip?: string; as?: User };
type User = "ada" | "grace";

const markerPattern = /^<!--\s*example:\s*(.*?)\s*-->$/s;

/** `<!-- example: skip <reason> -->` or `<!-- example: as grace -->` right before a block. */
function parseMarker(html: string, where: string): Marker {
  const body = markerPattern.exec(html.trim())?.[1] ?? "";
  const skip = /^skip\b\s*[-:—]?\s*(.*)$/s.exec(body);
  if (skip) {
    if (!skip[1]) throw new Error(`${where}: a skipped example needs its reason: <!-- example: skip <reason> -->`);
    return { skip: skip[1] };
  }
  const as = /^as (ada|grace)$/.exec(body);
  if (as) return { as: as[1] as User };
  throw new Error(`${where}: unknown example marker "${body}" (skip <reason>, as ada, as grace)`);
}

/** The examples of a page, in order: curl commands in `sh`/`bash` blocks, and `graphql` blocks. */
function examplesOf(page: string): Example[] {
  const tree = remark().parse(readFileSync(path.join(root, page), "utf8")) as Root;
  const nodes: (Code | Html)[] = [];
  const walk = (node: Root | RootContent) => {
    if (node.type === "code" || node.type === "html") nodes.push(node);
    if ("children" in node) for (const child of node.children) walk(child);
  };
  walk(tree);
  const examples: Example[] = [];
  let pending: { marker: Marker; endLine: number } | undefined;
  for (const node of nodes) {
    const line = node.position?.start.line ?? 0;
    if (node.type === "html") {
      if (markerPattern.test(node.value.trim())) {
        pending = { marker: parseMarker(node.value, `${page}:${line}`), endLine: node.position?.end.line ?? 0 };
      }
      continue;
    }
    // A marker belongs to the block right after it (a blank line between them at most).
    const marker = pending && line - pending.endLine <= 2 ? pending.marker : {};
    if (pending && line - pending.endLine > 2)
      throw new Error(`${page}:${pending.endLine}: an example marker with no block after it`);
    pending = undefined;
    const lang = node.lang === "bash" ? "sh" : node.lang;
    if (lang === "graphql" || (lang === "sh" && /(^|\n)\s*curl\s/.test(node.value))) {
      examples.push({ page, line, lang, text: node.value, marker });
    }
  }
  return examples;
}

// The world an example runs in ---------------------------------------------------------------

const t = await createTestApp({ jwt: { secret: testJwtSecret } });

type World = {
  org: SeedResult;
  sessions: Record<User, string>;
  jwt: string;
  /** Grace's notification: Ada mentioned her on a task (so `ntf_...` and an unread mention exist). */
  notificationId: string;
  commentId: string;
  attachmentId: string;
  /** Ids the block's answers named so far, by prefix: a later placeholder of that prefix takes the last. */
  answered: Map<string, string>;
  /** The previous answer's nextCursor, for `$CURSOR`. */
  cursor: string | null;
  /** The last upload URL answered (createAttachmentUpload), for `$UPLOAD_URL`. */
  uploadUrl: string | null;
  /** A custom framework of the organization, adopted, and its first assessable requirement (`fw_...`, `req_...`). */
  frameworkId: string;
  requirementId: string;
};

/** A fresh organization per example: examples write (versions, reviews, read marks) and must not meet. */
async function newWorld(): Promise<World> {
  const org = await t.seedOrg();
  const [ada, grace] = org.userIds as [string, string];
  const sessions = {
    ada: (await createSession(t.db, ada, 3_600_000)).token,
    grace: (await createSession(t.db, grace, 3_600_000)).token,
  };
  const jwt = await new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(grace)
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(testJwtSecret));
  const comment = await t.rest("POST", "/v1/comments", {
    key: org.apiKey,
    body: {
      content: `@[Grace Admin](${org.memberIds[1]}) the SOC 2 report is in, can you review?`,
      entityId: org.taskIds[0],
      entityType: "task",
      userId: ada,
      attachments: [{ fileName: "soc2.pdf", fileType: "application/pdf", fileData: "JVBERi0xLjcK" }],
    },
  });
  expect(comment.status, comment.text).toBe(201);
  const framework = await makeFramework(t.db, {
    organizationId: org.organizationId,
    groups: 2,
    perGroup: 3,
    name: "Security baseline",
  });
  await adopt(t.db, org.organizationId, framework.id);
  const notification = await t.db.notification.findFirstOrThrow({
    where: { organizationId: org.organizationId, recipientId: org.memberIds[1] },
  });
  return {
    org,
    sessions,
    jwt,
    notificationId: notification.id,
    commentId: comment.body.id,
    attachmentId: comment.body.attachments[0].id,
    answered: new Map(),
    cursor: null,
    uploadUrl: null,
    frameworkId: framework.id,
    requirementId: framework.requirements[0] as string,
  };
}

/** Whether an example writes: it gets an organization of its own, the others share one. */
function writes(example: Example): boolean {
  return example.lang === "sh"
    ? /\s(-X\s+(POST|PATCH|PUT|DELETE)|-d|--data|--data-binary)\s/.test(example.text)
    : /\bmutation\b/.test(example.text);
}

let shared: Promise<World> | undefined;
/** The world an example runs in: its own when it writes, else the one the read-only examples share. */
async function worldFor(example: Example): Promise<World> {
  if (writes(example)) return newWorld();
  shared ??= newWorld();
  return { ...(await shared), answered: new Map(), cursor: null, uploadUrl: null };
}

/** A new version of the policy: a draft, or (for a review step) submitted to Grace. */
async function policyVersion(world: World, inReview: boolean): Promise<string> {
  const policyId = world.org.policyIds[0] as string;
  const draft = await t.rest("POST", `/v1/policies/${policyId}/versions`, { key: world.org.apiKey, body: {} });
  expect(draft.status, draft.text).toBe(201);
  if (inReview) {
    const submitted = await t.rest("POST", `/v1/policies/${policyId}/versions/${draft.body.versionId}/submit`, {
      key: world.org.apiKey,
      body: { approverId: world.org.memberIds[1] },
    });
    expect(submitted.status, submitted.text).toBe(200);
  }
  return draft.body.versionId;
}

const placeholder = /\b([a-z]+)_([a-z]*)(?:\.\.\.|…)/g;

/**
 * The text with its placeholders replaced: `<prefix>_...` (also `…`, and `mem_grace...`) by an id
 * of the world, `$KEY`, `$TOKEN`, `$JWT`, `$GRACE_TOKEN`, `$ORG` and `$CURSOR` by credentials and
 * the previous answer's cursor.
 */
async function fill(world: World, text: string): Promise<string> {
  const { org } = world;
  // A review step (approve, reject) needs a version in review; any other a draft, unless an answer named one.
  const reviewStep = /\/(approve|reject)\b|(approve|reject)PolicyVersion/.test(text);
  let version: string | undefined;
  const ids: Record<string, () => Promise<string> | string> = {
    tsk: () => org.taskIds[0] as string,
    tski: () => org.taskItemIds[0] as string,
    vnd: () => org.vendorIds[0] as string,
    rsk: () => org.riskIds[0] as string,
    pol: () => org.policyIds[0] as string,
    mem: () => org.memberIds[1] as string,
    usr: () => org.userIds[0] as string,
    org: () => org.organizationId,
    cwk: () => org.apiKey,
    ntf: () => world.notificationId,
    cmt: () => world.commentId,
    att: () => world.attachmentId,
    upl: () => {
      throw new Error("upl_... needs an upload answered before it (createAttachmentUpload)");
    },
    fw: () => world.frameworkId,
    req: () => world.requirementId,
    ctl: () => {
      throw new Error("ctl_... needs a control answered before it (createControl)");
    },
    evd: () => {
      throw new Error("evd_... needs evidence answered before it (addEvidence)");
    },
    pv: async () => {
      version ??= reviewStep
        ? await policyVersion(world, true)
        : (world.answered.get("pv") ?? (await policyVersion(world, false)));
      return version;
    },
  };
  let filled = "";
  let last = 0;
  for (const match of text.matchAll(placeholder)) {
    const [whole, prefix] = match as unknown as [string, string];
    const id = ids[prefix];
    if (!id) throw new Error(`unknown placeholder ${whole}`);
    const fromAnswer = prefix !== "pv" ? world.answered.get(prefix) : undefined;
    filled += text.slice(last, match.index) + (fromAnswer ?? (await id()));
    last = (match.index ?? 0) + whole.length;
  }
  filled += text.slice(last);
  const variables: Record<string, string> = {
    KEY: org.apiKey,
    TOKEN: world.sessions.grace,
    GRACE_TOKEN: world.sessions.grace,
    JWT: world.jwt,
    ORG: org.organizationId,
    CURSOR: world.cursor ?? "",
    // The service's own URL (filesystem and database stores), on the examples' origin.
    UPLOAD_URL: world.uploadUrl
      ? `http://127.0.0.1:4000${new URL(world.uploadUrl).pathname}${new URL(world.uploadUrl).search}`
      : "",
  };
  return filled.replace(/\$([A-Z_]+)\b/g, (whole, name: string) => variables[name] ?? whole);
}

/** Remembers the ids and the cursor an answer names, for the placeholders of later commands. */
function remember(world: World, body: unknown) {
  const walk = (value: unknown) => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (!value || typeof value !== "object") return;
    for (const [key, v] of Object.entries(value)) {
      if (key === "nextCursor") world.cursor = (v as string | null) ?? null;
      if (key === "uploadUrl" && typeof v === "string") world.uploadUrl = v;
      if (key === "id" && typeof v === "string" && /^(upl|ctl|evd)_/.test(v)) world.answered.set(v.slice(0, 3), v);
      if ((key === "id" || key === "versionId") && typeof v === "string" && /^pv_/.test(v)) world.answered.set("pv", v);
      else walk(v);
    }
  };
  walk(body);
}

// Shell: curl commands and the JSON shown after them ----------------------------------------

type Command = { line: string; expected?: string };

/** The curl commands of a block (continuation lines joined) with the `# {...}` sample after each. */
function commandsOf(text: string): Command[] {
  const commands: Command[] = [];
  const lines = text.replace(/\\\n\s*/g, " ").split("\n");
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] as string).trim();
    // A quoted argument may span lines (a JSON body): the command goes on until its quotes close.
    while (/^curl\s/.test(line) && !quotesClosed(line) && i + 1 < lines.length) line += `\n${lines[++i]}`;
    if (/^curl\s/.test(line)) commands.push({ line });
    else if (/^#\s*[{[]/.test(line) && commands.length) {
      // A sample may continue on the following comment lines.
      let sample = line.replace(/^#\s*/, "");
      while (i + 1 < lines.length && /^#\s+\S/.test((lines[i + 1] as string).trim()) && !parses(sample)) {
        sample += (lines[++i] as string).trim().replace(/^#\s*/, "");
      }
      (commands.at(-1) as Command).expected = sample;
    }
  }
  return commands;
}

function quotesClosed(line: string): boolean {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === '"' && c === "\\") i++;
    else if (quote && c === quote) quote = null;
    else if (!quote && (c === "'" || c === '"')) quote = c;
  }
  return quote === null;
}

function parses(sample: string): boolean {
  return sampleShape(sample) !== undefined;
}

/** Words of a shell command line: single and double quotes, backslash escapes in double quotes. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unclosed quote in: ${line}`);
      word = (word ?? "") + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let value = "";
      for (i++; i < line.length && line[i] !== '"'; i++) {
        if (line[i] === "\\" && i + 1 < line.length) i++;
        value += line[i];
      }
      word = (word ?? "") + value;
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else word = (word ?? "") + c;
  }
  if (word !== null) words.push(word);
  return words;
}

function curlRequest(line: string): Request {
  const words = shellWords(line).slice(1);
  let method: string | undefined;
  let url: string | undefined;
  let body: string | undefined;
  const headers = new Headers();
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    if (word === "-X") method = words[++i];
    else if (word === "-H") {
      const header = words[++i] as string;
      const colon = header.indexOf(":");
      headers.append(header.slice(0, colon).trim(), header.slice(colon + 1).trim());
    } else if (word === "-d" || word === "--data" || word === "--data-binary") body = words[++i];
    else if (word === "--cookie" || word === "-b") headers.append("cookie", words[++i] as string);
    else if (word === "-N" || word === "-s" || word === "-i") continue;
    else if (/^https?:\/\//.test(word)) url = word;
    else throw new Error(`curl option the docs test does not know: ${word}`);
  }
  if (!url) throw new Error(`no URL in: ${line}`);
  const target = new URL(url);
  expect(`${target.hostname}:${target.port}`, "examples call the local server").toBe("127.0.0.1:4000");
  return new Request(`http://test${target.pathname}${target.search}`, {
    method: method ?? (body ? "POST" : "GET"),
    headers,
    body,
  });
}

type Shape = { keys: Record<string, Shape | null>; open: boolean } | { items: Shape | null } | null;

/** The keys a sample shows (`...` as a key: more may follow), or undefined when it is not JSON yet. */
function sampleShape(sample: string): Shape | undefined {
  const open = new Set<unknown>();
  const marked = sample
    .replace(/,\s*(?:\.\.\.|…)\s*(?=[}\]])/g, ',"__more__":0')
    .replace(/\{\s*(?:\.\.\.|…)\s*\}/g, '{"__more__":0}');
  let value: unknown;
  try {
    value = JSON.parse(marked);
  } catch {
    return undefined;
  }
  const shape = (v: unknown): Shape => {
    if (Array.isArray(v)) return { items: v.length ? shape(v[0]) : null };
    if (!v || typeof v !== "object") return null;
    const entries = Object.entries(v).filter(([key]) => key !== "__more__");
    if ("__more__" in v) open.add(v);
    return { keys: Object.fromEntries(entries.map(([key, child]) => [key, shape(child)])), open: "__more__" in v };
  };
  return shape(value);
}

function expectShape(actual: unknown, shape: Shape, where: string) {
  if (!shape) return;
  if ("items" in shape) {
    expect(Array.isArray(actual), `${where}: an array`).toBe(true);
    const list = actual as unknown[];
    if (shape.items) {
      expect(list.length, `${where}: the sample shows an element`).toBeGreaterThan(0);
      expectShape(list[0], shape.items, `${where}[0]`);
    }
    return;
  }
  expect(actual && typeof actual === "object", `${where}: an object`).toBeTruthy();
  const keys = Object.keys(actual as object).sort();
  const shown = Object.keys(shape.keys).sort();
  if (shape.open) expect(keys, `${where}: the keys the page shows`).toEqual(expect.arrayContaining(shown));
  else expect(keys, `${where}: exactly the keys the page shows`).toEqual(shown);
  for (const [key, child] of Object.entries(shape.keys)) {
    const value = (actual as Record<string, unknown>)[key];
    if (child && value !== null) expectShape(value, child, `${where}.${key}`);
  }
}

/** Sends a request; an event stream answers its headers and is closed at once. */
async function send(request: Request): Promise<{ status: number; type: string; body: unknown; text: string }> {
  const controller = new AbortController();
  const response = await t.app.fetch(new Request(request, { signal: controller.signal }));
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("text/event-stream")) {
    controller.abort();
    await response.body?.cancel().catch(() => {});
    return { status: response.status, type, body: undefined, text: "" };
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, type, body, text };
}

async function runShell(example: Example) {
  const world = await worldFor(example);
  const commands = commandsOf(example.text);
  expect(commands.length).toBeGreaterThan(0);
  for (const command of commands) {
    const request = curlRequest(await fill(world, command.line));
    const where = `${example.page}:${example.line} ${request.method} ${new URL(request.url).pathname}`;
    const streams = (request.headers.get("accept") ?? "").includes("text/event-stream");
    const answer = await send(request);
    expect(answer.status, `${where}: ${answer.text}`).toBeGreaterThanOrEqual(200);
    expect(answer.status, `${where}: ${answer.text}`).toBeLessThan(300);
    if (streams) expect(answer.type, where).toContain("text/event-stream");
    if (new URL(request.url).pathname === "/graphql" && !streams) {
      expect((answer.body as { errors?: unknown }).errors, `${where}: ${answer.text}`).toBeUndefined();
    }
    if (command.expected !== undefined) {
      const shape = sampleShape(command.expected);
      expect(shape, `${where}: the sample after it is not JSON: ${command.expected}`).toBeDefined();
      expectShape(answer.body, shape as Shape, where);
    }
    remember(world, answer.body);
  }
}

// GraphQL blocks: each operation on its own ---------------------------------------------------

/** Variables an operation declares, by name: the world's ids (`taskId`, `vendorId`, `policyId`), else null. */
function variablesOf(world: World, operation: OperationDefinitionNode): Record<string, unknown> {
  const byName: Record<string, string> = {
    taskId: world.org.taskIds[0] as string,
    vendorId: world.org.vendorIds[0] as string,
    riskId: world.org.riskIds[0] as string,
    policyId: world.org.policyIds[0] as string,
    memberId: world.org.memberIds[1] as string,
    frameworkId: world.frameworkId,
    requirementId: world.requirementId,
    id: world.org.taskIds[0] as string,
  };
  return Object.fromEntries(
    (operation.variableDefinitions ?? []).map((v) => [v.variable.name.value, byName[v.variable.name.value] ?? null]),
  );
}

async function runGraphql(example: Example) {
  const world = await worldFor(example);
  const operations = parse(example.text).definitions.filter(
    (d): d is OperationDefinitionNode => d.kind === "OperationDefinition",
  );
  expect(operations.length).toBeGreaterThan(0);
  for (const operation of operations) {
    const query = await fill(world, print(operation));
    const where = `${example.page}:${example.line} ${operation.operation} ${operation.name?.value ?? ""}`;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (example.marker.as) {
      headers.authorization = `Bearer ${world.sessions[example.marker.as]}`;
      headers["x-organization-id"] = world.org.organizationId;
    } else headers["x-api-key"] = world.org.apiKey;
    if (operation.operation === "subscription") headers.accept = "text/event-stream";
    const answer = await send(
      new Request("http://test/graphql", {
        method: "POST",
        headers,
        body: JSON.stringify({ query, variables: variablesOf(world, operation) }),
      }),
    );
    expect(answer.status, `${where}: ${answer.text}`).toBe(200);
    if (operation.operation === "subscription") {
      expect(answer.type, where).toContain("text/event-stream");
      continue;
    }
    const body = answer.body as { data?: Record<string, unknown> | null; errors?: unknown };
    expect(body.errors, `${where}: ${answer.text}`).toBeUndefined();
    for (const [field, value] of Object.entries(body.data ?? {})) expect(value, `${where}: ${field}`).not.toBeNull();
    remember(world, body.data);
  }
}

// The pages ------------------------------------------------------------------------------------

const all = pages.flatMap(examplesOf);

describe("the examples of the docs run", () => {
  it("finds the examples (curl and GraphQL) of the README and the pages that have them", () => {
    const counted = new Set(all.map((e) => e.page));
    for (const page of [
      "README.md",
      "docs/operations.md",
      "docs/notifications.md",
      "docs/graph.md",
      "docs/lists.md",
      "docs/auth.md",
      "docs/policy-review.md",
    ]) {
      expect(counted.has(page), page).toBe(true);
    }
    expect(all.length).toBeGreaterThan(15);
  });

  for (const example of all) {
    const name = `${example.page}:${example.line} (${example.lang})`;
    if (example.marker.skip) {
      it.skip(`${name}: ${example.marker.skip}`, () => {});
      continue;
    }
    it(name, () => (example.lang === "sh" ? runShell(example) : runGraphql(example)));
  }
});

describe("the docs test itself", () => {
  it("reads a sample's keys, exact or open, and fails on a key the answer lacks or adds", () => {
    const exact = sampleShape('{"items":[{"id":"ntf_…","readAt":null}],"nextCursor":null}') as Shape;
    expect(() => expectShape({ items: [{ id: "x", readAt: null }], nextCursor: null }, exact, "x")).not.toThrow();
    expect(() => expectShape({ items: [{ id: "x", readAt: null, outcome: null }], nextCursor: null }, exact, "x")).toThrow();
    const open = sampleShape('{"id":"pv_...","status":"in_review",...}') as Shape;
    expect(() => expectShape({ id: "pv_1", status: "draft", version: 3 }, open, "x")).not.toThrow();
    expect(() => expectShape({ id: "pv_1" }, open, "x")).toThrow();
    expect(sampleShape('{"items":[{"id":"ntf_…",')).toBeUndefined();
  });

  it("reads the markers: a skip needs its reason, an unknown marker fails", () => {
    expect(parseMarker("<!-- example: skip starts the server -->", "x")).toEqual({ skip: "starts the server" });
    expect(parseMarker("<!-- example: as grace -->", "x")).toEqual({ as: "grace" });
    expect(() => parseMarker("<!-- example: skip -->", "x")).toThrow(/reason/);
    expect(() => parseMarker("<!-- example: as mallory -->", "x")).toThrow(/unknown example marker/);
  });

  it("parses curl as a shell would: quotes, continuation lines, headers, cookies", () => {
    const [command] = commandsOf(
      `curl -X POST http://127.0.0.1:4000/v1/x \\\n  -H "X-API-Key: k" -H 'Content-Type: application/json' \\\n  --cookie "a=b" -d '{"a": "b c"}'\n# {"ok":true}`,
    );
    const request = curlRequest((command as Command).line);
    expect(request.method).toBe("POST");
    expect(request.headers.get("x-api-key")).toBe("k");
    expect(request.headers.get("cookie")).toBe("a=b");
    expect((command as Command).expected).toBe('{"ok":true}');
    expect(shellWords(`a "b \\"c\\"" 'd e'`)).toEqual(["a", 'b "c"', "d e"]);
  });
});
