import { createHash } from "node:crypto";
import { usePersistedOperations } from "@graphql-yoga/plugin-persisted-operations";
import { type DocumentNode, Kind, parse } from "graphql";
import { createGraphQLError, type FetchAPI, type Plugin } from "graphql-yoga";
import type { AuthState } from "../auth/caller.js";
import type { Db } from "../platform/db/database.js";
import { documentIdOf, normalizeDocumentId } from "../platform/document-ids.js";

/** TRUSTED_DOCUMENTS: who may send GraphQL text instead of a stored document's id. */
export type TrustedDocumentsPolicy = "allow" | "sessions" | "all";

type Stored = { text: string; app: string; version: string };

/** What the request log and the metrics learn of a request's document (on the server context). */
export type DocumentOutcome =
  | { outcome: "stored"; id: string; app: string; version: string }
  | { outcome: "unknown"; id: string }
  | { outcome: "refused" };

type DocumentState = { trustedDocument?: { seen?: DocumentOutcome } };

export function documentOutcomeOf(serverContext: object): DocumentOutcome | undefined {
  return (serverContext as DocumentState).trustedDocument?.seen;
}

/** Tallies for /metrics, read when it is scraped. */
export type TrustedDocumentCounts = {
  /** Runs of stored documents by app and version. */
  readonly runs: Map<string, { app: string; version: string; count: number }>;
  refused: number;
  unknown: number;
  /** Stored documents parsed: once each per process, then kept by id. */
  parsed: number;
};

/** How long an unknown id is answered from memory before the database is asked again. */
export const UNKNOWN_ID_RETRY_MS = 2_000;
/** Unknown ids remembered at once: random ids must not grow the process. */
const MAX_UNKNOWN_IDS = 10_000;

/** Refusals before execution answer as the other ones do: 400 with graphql-response+json, 200 with application/json. */
function refusal(message: string, code: string) {
  return createGraphQLError(message, { extensions: { code, http: { spec: true, status: 400 } } });
}
const badRequest = (message: string) =>
  createGraphQLError(message, { extensions: { code: "BAD_USER_INPUT", http: { status: 400 } } });

/**
 * The stored documents, read through from the database: a document once found is kept for the
 * process (its id is its text: it never changes); an unknown id is remembered briefly, so that a
 * document published meanwhile runs within seconds on a replica that was asked for it before.
 */
function documentStore(db: Db, unknownRetryMs: number) {
  const found = new Map<string, Stored & { document?: DocumentNode }>();
  const unknownUntil = new Map<string, number>();
  const pending = new Map<string, Promise<Stored | null>>();
  return {
    found,
    get(id: string): Stored | null | Promise<Stored | null> {
      const hit = found.get(id);
      if (hit) return hit;
      const until = unknownUntil.get(id);
      if (until !== undefined) {
        if (until > performance.now()) return null;
        unknownUntil.delete(id);
      }
      let lookup = pending.get(id);
      if (!lookup) {
        lookup = db.trustedDocument
          .findUnique({ where: { id }, select: { text: true, app: true, version: true } })
          .then((row) => {
            if (row) found.set(id, row);
            else {
              if (unknownUntil.size >= MAX_UNKNOWN_IDS) unknownUntil.clear();
              unknownUntil.set(id, performance.now() + unknownRetryMs);
            }
            return row;
          })
          .finally(() => pending.delete(id));
        pending.set(id, lookup);
      }
      return lookup;
    },
  };
}

const introspectionFields = new Set(["__schema", "__type", "__typename"]);

/** Text that asks only for the schema (GraphiQL's introspection): no policy refuses it. */
function onlyIntrospection(text: string): boolean {
  let document: DocumentNode;
  try {
    document = parse(text, { maxTokens: 5_000 });
  } catch {
    return false;
  }
  return document.definitions.every(
    (definition) =>
      definition.kind === Kind.FRAGMENT_DEFINITION ||
      (definition.kind === Kind.OPERATION_DEFINITION &&
        definition.operation === "query" &&
        definition.selectionSet.selections.every(
          (selection) => selection.kind === Kind.FIELD && introspectionFields.has(selection.name.value),
        )),
  );
}

/** The id a request names, in any of its three forms, or null; a malformed one is a 400. */
function requestedId(params: { extensions?: Record<string, unknown> } & Record<string, unknown>, request: Request) {
  const raw = request.method === "GET" ? new URL(request.url).searchParams.get("documentId") : params.documentId;
  const apollo = params.extensions?.persistedQuery as { version?: unknown; sha256Hash?: unknown } | undefined;
  if (raw === undefined || raw === null) {
    if (!apollo) return null;
    const id = apollo.version === 1 ? normalizeDocumentId(apollo.sha256Hash) : null;
    if (!id) throw badRequest("extensions.persistedQuery must be { version: 1, sha256Hash: <64 hex digits> }");
    return id;
  }
  const id = normalizeDocumentId(raw);
  if (!id) throw badRequest('documentId must be "sha256:" followed by the 64 hex digits of the document\'s SHA-256');
  return id;
}

/** A stored document's answer over GET: an ETag of its bytes, revalidated every time, 304 when the caller has them. */
async function conditional(request: Request, response: Response, fetchAPI: FetchAPI): Promise<Response> {
  const body = await response.text();
  const etag = `"${createHash("sha1").update(body).digest("base64url")}"`;
  const headers = new fetchAPI.Headers(response.headers);
  headers.set("etag", etag);
  headers.set("cache-control", "private, no-cache");
  const known = request.headers.get("if-none-match");
  if (known && known.length <= 1_024 && known.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)) {
    headers.delete("content-type");
    headers.delete("content-length");
    return new fetchAPI.Response(null, { status: 304, headers });
  }
  return new fetchAPI.Response(body, { status: response.status, headers });
}

/**
 * Trusted documents (contract section 13) on /graphql: a request may name a stored document by
 * its id instead of sending text; the policy decides who may still send text. The stored text
 * then goes through parse and validation like any other, so every document limit applies; it is
 * parsed once per process and its validation is cached on that parse (Yoga's cache, by document).
 */
export function useTrustedDocuments(options: {
  db: Db;
  policy: TrustedDocumentsPolicy;
  authenticate: (request: Request) => Promise<AuthState>;
  unknownRetryMs?: number;
}): { plugin: Plugin; parsing: Plugin; counts: TrustedDocumentCounts } {
  const store = documentStore(options.db, options.unknownRetryMs ?? UNKNOWN_ID_RETRY_MS);
  const counts: TrustedDocumentCounts = { runs: new Map(), refused: 0, unknown: 0, parsed: 0 };
  const slotOf = (context: object) => (context as DocumentState).trustedDocument;
  const see = (context: object, outcome: DocumentOutcome) => {
    const slot = slotOf(context);
    if (slot) slot.seen = outcome;
  };
  /** The id a request named (onParams reads it once), by its context. */
  const requested = new WeakMap<object, string | null>();
  /** The stored document a request runs, by its context, for onParse. */
  const running = new WeakMap<object, string>();

  /** Whether the policy lets this request send text: a promise only when the caller must be looked at. */
  function textAllowed(request: Request, text: string): boolean | Promise<boolean> {
    if (options.policy === "allow") return true;
    if (options.policy === "all") return onlyIntrospection(text);
    return options
      .authenticate(request)
      .then((auth) => ("caller" in auth && auth.caller.kind === "apiKey") || onlyIntrospection(text));
  }

  const persisted = usePersistedOperations({
    // A request without an id carries text: the policy decides (Yoga answers a request with neither).
    extractPersistedOperationId: (params, request, context) =>
      requested.has(context) ? (requested.get(context) as string | null) : requestedId(params as never, request),
    allowArbitraryOperations: true,
    getPersistedOperation(id, _request, context) {
      const stored = store.get(id);
      const use = (found: Stored | null) => {
        if (!found) {
          counts.unknown++;
          see(context, { outcome: "unknown", id });
          return null;
        }
        see(context, { outcome: "stored", id, app: found.app, version: found.version });
        running.set(context, id);
        const key = `${found.app}\u0000${found.version}`;
        const tally = counts.runs.get(key) ?? { app: found.app, version: found.version, count: 0 };
        tally.count++;
        counts.runs.set(key, tally);
        return found.text;
      };
      return stored instanceof Promise ? stored.then(use) : use(stored);
    },
    customErrors: {
      notFound: () => refusal("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND"),
      keyNotFound: () => badRequest("Send a query, or the documentId of a stored document"),
    },
  });

  const plugin: Plugin = {
    onRequest({ url, serverContext }) {
      if (url.pathname === "/graphql") (serverContext as DocumentState).trustedDocument = {};
    },
    // Synchronous unless the policy or the store must wait: a promise per request costs CPU.
    onParams(payload) {
      const { params, request, context } = payload;
      const id = requestedId(params as never, request);
      requested.set(context, id);
      if (params.query) {
        if (id && documentIdOf(params.query) !== id) {
          throw badRequest("The documentId is not the SHA-256 of the query sent beside it: send one or the other");
        }
        // Text sent beside its own id runs as text: clients never add documents.
        const allowed = textAllowed(request, params.query);
        const decide = (yes: boolean) => {
          if (yes) return;
          counts.refused++;
          see(context, { outcome: "refused" });
          throw refusal(
            "This caller may run only the service's trusted documents: send the documentId of a published document, not its text",
            "PERSISTED_QUERY_REQUIRED",
          );
        };
        return allowed instanceof Promise ? allowed.then(decide) : decide(allowed);
      }
      if (id === null) return;
      return persisted.onParams?.(payload as never);
    },
    onResponse({ request, response, serverContext, setResponse, fetchAPI }) {
      if (request.method !== "GET" || response.status !== 200) return;
      if (documentOutcomeOf(serverContext)?.outcome !== "stored") return;
      // One JSON answer only: an event stream (a subscription) is never read to its end here.
      if (!/^application\/(graphql-response\+)?json/.test(response.headers.get("content-type") ?? "")) return;
      return conditional(request, response, fetchAPI).then(setResponse);
    },
  };
  /** After the document limits' plugin, whose parser (with its token limit) it counts and keeps. */
  const parsing: Plugin = {
    onParse({ context, parseFn, setParseFn, setParsedDocument }) {
      const id = running.get(context);
      if (!id) return;
      const stored = store.found.get(id);
      if (stored?.document) {
        setParsedDocument(stored.document);
        return;
      }
      // The parser in place is the document limits' (graphql-armor's token count): it still applies.
      setParseFn((source, parseOptions) => {
        counts.parsed++;
        return parseFn(source, parseOptions);
      });
      return ({ result }) => {
        if (stored && result && !(result instanceof Error)) stored.document = result;
      };
    },
  };
  return { plugin, parsing, counts };
}
