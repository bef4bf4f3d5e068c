import { createHash } from "node:crypto";
import { Kind, parse } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { Logger } from "pino";
import type { AuthState, Caller } from "../auth/caller.js";
import { Prisma } from "../generated/prisma/client.js";
import type { Db } from "../platform/db/database.js";
import type { ErrorCode } from "../platform/errors.js";
import { newId } from "../platform/ids.js";
import { transportErrorResponse } from "./error-response.js";

const RETENTION_MS = 24 * 60 * 60 * 1000;
const WAIT_FOR_FIRST_MS = 15_000;
/** A first request without an answer after this long died on the way (crash, lost connection). */
const ABANDONED_MS = 60_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** Answers that are not kept: the retry should run again (failures, refusals before execution). */
const notKept = (status: number) => status >= 500 || status === 401 || status === 403 || status === 429;

function isMutation(body: string): boolean {
  try {
    const { query, operationName } = JSON.parse(body) as { query?: unknown; operationName?: unknown };
    if (typeof query !== "string") return false;
    const operations = parse(query).definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
    const chosen = operations.length === 1 ? operations[0] : operations.find((op) => op.name?.value === operationName);
    return chosen?.operation === "mutation";
  } catch {
    return false;
  }
}

/**
 * The stored key: the client's key bound to who sent it and what they may do. Another credential
 * of the organization (or the same one after its permissions changed) never meets a stored answer:
 * its request runs, and is authorized, as a new one.
 */
function scopedKey(caller: Caller, clientKey: string): string {
  const who = caller.apiKeyId ? `key:${caller.apiKeyId}` : `user:${caller.userId}`;
  const may = [...caller.permissions].sort().join(",");
  return createHash("sha256").update(`${who}\n${may}\n${clientKey}`).digest("hex");
}

type Options = { db: Db; authenticate: (request: Request) => Promise<AuthState>; logger: Logger };

/**
 * Safe retries: a REST POST or a GraphQL mutation sent with `Idempotency-Key` runs once per
 * credential (with its permissions) and key; a retry within 24 hours gets the first answer (status and body) again,
 * also while the first is still running (it waits), and the same key with another request is 422.
 * Keys live in the database, so replicas agree.
 */
export function useIdempotency({ db, authenticate, logger }: Options): Plugin {
  const running = new WeakMap<object, string>();
  let lastCleanup = 0;

  function refuse(pathname: string, code: ErrorCode, message: string): Response {
    return transportErrorResponse(pathname, code, message);
  }

  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      const clientKey = request.headers.get("idempotency-key");
      if (clientKey === null || request.method !== "POST") return;
      const rest = url.pathname.startsWith("/v1/");
      if (!rest && url.pathname !== "/graphql") return;
      if (!KEY_PATTERN.test(clientKey)) {
        endResponse(refuse(url.pathname, "BAD_USER_INPUT", "Idempotency-Key must be 1 to 255 visible ASCII characters"));
        return;
      }
      // The credential first: nothing of an unknown caller's body is read (and the guards before
      // this plugin have read it within the limits by now, so this text is bounded).
      const auth = await authenticate(request);
      if (!("caller" in auth)) return;
      const body = await request.clone().text();
      if (!rest && !isMutation(body)) return;
      const organizationId = auth.caller.organizationId;
      const key = scopedKey(auth.caller, clientKey);
      const requestHash = createHash("sha256").update(`${request.method} ${url.pathname}${url.search}\n${body}`).digest("hex");

      if (Date.now() - lastCleanup > 10 * 60_000) {
        lastCleanup = Date.now();
        db.idempotencyKey
          .deleteMany({ where: { expiresAt: { lt: new Date() } } })
          .catch((error) => logger.warn({ err: error }, "idempotency cleanup"));
      }

      const deadline = Date.now() + WAIT_FOR_FIRST_MS;
      for (;;) {
        try {
          const id = newId("idk");
          await db.idempotencyKey.create({
            data: { id, organizationId, key, requestHash, expiresAt: new Date(Date.now() + RETENTION_MS) },
          });
          running.set(serverContext, id);
          return;
        } catch (error) {
          if (!(error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002")) throw error;
        }
        const first = await db.idempotencyKey.findUnique({ where: { organizationId_key: { organizationId, key } } });
        if (!first) continue;
        const abandoned = first.responseStatus === null && first.createdAt.getTime() < Date.now() - ABANDONED_MS;
        if (first.expiresAt <= new Date() || abandoned) {
          await db.idempotencyKey.deleteMany({ where: { id: first.id } });
          continue;
        }
        if (first.requestHash !== requestHash) {
          endResponse(refuse(url.pathname, "IDEMPOTENCY_KEY_REUSED", "This Idempotency-Key was used for another request"));
          return;
        }
        if (first.responseStatus !== null) {
          endResponse(
            new Response(first.responseBody ? Buffer.from(first.responseBody) : null, {
              status: first.responseStatus,
              headers: { "content-type": first.responseType ?? "application/json; charset=utf-8", "idempotent-replayed": "true" },
            }),
          );
          return;
        }
        if (Date.now() > deadline) {
          endResponse(refuse(url.pathname, "CONFLICT", "A request with this Idempotency-Key is still running; retry later"));
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },

    async onResponse({ serverContext, response }) {
      const id = running.get(serverContext);
      if (!id) return;
      running.delete(serverContext);
      try {
        if (notKept(response.status)) {
          await db.idempotencyKey.delete({ where: { id } });
          return;
        }
        const body = new Uint8Array(await response.clone().arrayBuffer());
        await db.idempotencyKey.update({
          where: { id },
          data: { responseStatus: response.status, responseType: response.headers.get("content-type"), responseBody: body },
        });
      } catch (error) {
        logger.error({ err: error }, "could not record the answer of an idempotent request");
      }
    },
  };
}
