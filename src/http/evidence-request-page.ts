import { type DocumentNode, type FragmentDefinitionNode, getOperationAST, Kind, type SelectionNode } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { RecipientActor } from "../auth/actor.js";
import type { AuthState } from "../auth/caller.js";
import { LINK_PATH, LINK_TOKEN_HEADER } from "../auth/evidence-request-links.js";
import { UnauthenticatedError } from "../platform/errors.js";
import { requestIdOf } from "./request-id.js";

/** Where the page's own script and stylesheet are served. */
export const PAGE_ASSETS_PATH = "/evidence-request-page/";

/** What the route needs of the evidence requests module (evidence-requests.page.ts). */
export type EvidenceRequestPage = {
  /** The page of a live link, and the origin its uploads go to (the store's, for the CSP). */
  render(recipient: RecipientActor, origin: string): Promise<{ html: string; uploadOrigin: string }>;
  /** The one page every dead link answers. */
  gone(): string;
  /** The page's script and stylesheet by file name. */
  asset(name: string): { type: string; body: string } | undefined;
};

/**
 * What the page and every call made with its token answer with: nothing cached or framed, no
 * Referer (the page's URL holds the token), no other type sniffed, and a CSP that lets the page run
 * only the service's own script and style and talk only to the service and the store it uploads to.
 */
export function pageHeaders(connect: readonly string[] = []): Record<string, string> {
  return {
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "content-security-policy": [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self'",
      `connect-src ${["'self'", ...connect].join(" ")}`,
      "form-action 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join("; "),
  };
}

const html = (status: number, body: string, headers: Record<string, string>) =>
  new Response(body, { status, headers: { "content-type": "text/html; charset=utf-8", ...headers } });

/**
 * `GET /requests/<token>`: the page an evidence request's recipient opens, outside `/v1` and the
 * schema like /unsubscribe. The token in the path is the credential (authenticate.ts reads it, so
 * its guesses count against the address's failure limit like any credential's); a live link gets
 * its page, every other token the same 410 page. Also serves the page's script and stylesheet, and
 * gives the page's calls (X-Evidence-Request-Token) the page's headers.
 */
export function useEvidenceRequestPage(options: {
  page: EvidenceRequestPage;
  authenticate: (request: Request) => Promise<AuthState>;
}): { page: Plugin; callHeaders: Plugin } {
  const { page } = options;
  const serving: Plugin = {
    async onRequest({ request, url, serverContext, endResponse }) {
      if (url.pathname.startsWith(PAGE_ASSETS_PATH)) {
        const name = url.pathname.slice(PAGE_ASSETS_PATH.length);
        const asset = request.method === "GET" || request.method === "HEAD" ? page.asset(name) : undefined;
        endResponse(
          asset
            ? new Response(asset.body, {
                headers: {
                  "content-type": asset.type,
                  "cache-control": "public, max-age=300",
                  "x-content-type-options": "nosniff",
                },
              })
            : new Response("Not found\n", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } }),
        );
        return;
      }
      if (!url.pathname.startsWith(LINK_PATH)) return;
      if (request.method !== "GET" && request.method !== "HEAD") {
        endResponse(html(405, page.gone(), { ...pageHeaders(), allow: "GET, HEAD" }));
        return;
      }
      const auth = await options.authenticate(request);
      if ("recipient" in auth) {
        const recipient = { ...auth.recipient, requestId: requestIdOf(serverContext as object) };
        const rendered = await page.render(recipient, url.origin);
        endResponse(html(200, rendered.html, pageHeaders([rendered.uploadOrigin])));
        return;
      }
      const limited = "error" in auth && auth.error.code === "RATE_LIMITED";
      endResponse(html(limited ? 429 : 410, page.gone(), { ...pageHeaders(), ...(limited ? { "retry-after": "60" } : {}) }));
    },
  };
  // Last, once the answer is final (the REST guard's ETag included).
  const callHeaders: Plugin = {
    onResponse({ request, response }) {
      if (!request.headers.has(LINK_TOKEN_HEADER)) return;
      // A call of the page's: its answer is the recipient's alone, never kept (no ETag revalidation either).
      response.headers.delete("etag");
      for (const [name, value] of Object.entries(pageHeaders())) response.headers.set(name, value);
    },
  };
  return { page: serving, callHeaders };
}

/** The root fields an evidence request's link token may run: the page's three operations. */
const RECIPIENT_FIELDS = new Set(["currentEvidenceRequest", "createAttachmentUpload", "submitEvidenceRequest"]);

function rootFields(document: DocumentNode, operationName: string | null | undefined): string[] {
  const operation = getOperationAST(document, operationName);
  if (!operation) return [];
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const names: string[] = [];
  const seen = new Set<string>();
  const walk = (selections: readonly SelectionNode[]) => {
    for (const selection of selections) {
      if (selection.kind === Kind.FIELD) names.push(selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet.selections);
      else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        walk(fragments.get(selection.name.value)?.selectionSet.selections ?? []);
      }
    }
  };
  walk(operation.selectionSet.selections);
  return names;
}

/**
 * A link token runs the page's three operations and nothing else, on both transports: a document
 * with any other root field (introspection and `__typename` included) is refused whole, 401 in
 * GraphQL's terms (UNAUTHENTICATED), before a resolver runs.
 */
export function useRecipientOperations(): Plugin {
  const refuse = (args: { contextValue: unknown; document: DocumentNode; operationName?: string | null }) => {
    const auth = (args.contextValue as { auth?: AuthState }).auth;
    if (!auth || !("recipient" in auth)) return undefined;
    const other = rootFields(args.document, args.operationName).find((name) => !RECIPIENT_FIELDS.has(name));
    if (other === undefined) return undefined;
    return {
      errors: [
        new UnauthenticatedError(
          `An evidence request's link token is accepted only by the page's own operations, not by ${other}`,
        ),
      ],
    };
  };
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const refused = refuse(args);
      if (refused) setResultAndStopExecution(refused);
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const refused = refuse(args);
      if (refused) setResultAndStopExecution(refused);
    },
  };
}
