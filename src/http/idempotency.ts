import { createHash } from "node:crypto";
import { Kind, parse } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { Logger } from "pino";
import type { AuthState, Caller } from "../auth/caller.js";
import type { Prisma } from "../generated/prisma/client.js";
import type { Db } from "../platform/db/database.js";
import { inRequestTransaction, type RequestTransaction } from "../platform/db/request-transaction.js";
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

/** The `extensions.code` of each error of a GraphQL answer (empty for REST and for answers without errors). */
function graphqlErrorCodes(response: Response, body: Uint8Array): string[] {
  if (!response.headers.get("content-type")?.includes("json")) return [];
  try {
    const parsed = JSON.parse(Buffer.from(body).toString("utf8")) as { errors?: { extensions?: { code?: unknown } }[] };
    return Array.isArray(parsed?.errors) ? parsed.errors.map((e) => String(e?.extensions?.code ?? "")) : [];
  } catch {
    return [];
  }
}

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

type Tx = Prisma.TransactionClient;
type KeyRow = {
  id: string;
  requestHash: string;
  responseStatus: number | null;
  responseType: string | null;
  responseBody: Uint8Array | null;
  createdAt: Date;
  expiresAt: Date;
};

/** Thrown into a held transaction to roll it back. */
class RollBack extends Error {}

/** An interactive transaction kept open until `commit` or `rollBack`: the request's own (request-transaction.ts). */
type Held = { tx: Tx; commit(): Promise<void>; rollBack(): Promise<void> };
/** The request's transaction, with the key's row it inserted. */
type Claimed = Held &
  RequestTransaction & { keyId: string; organizationId: string; key: string; requestHash: string; expiresAt: Date };

function holdTransaction(db: Db): Promise<Held> {
  return new Promise((resolveHeld, rejectHeld) => {
    let finish: { commit(): void; rollBack(): void } | undefined;
    const done = db.$transaction(async (tx) => {
      const ended = new Promise<void>((resolve, reject) => {
        finish = { commit: resolve, rollBack: () => reject(new RollBack()) };
      });
      resolveHeld({
        tx,
        commit: async () => {
          finish?.commit();
          await done;
        },
        rollBack: async () => {
          finish?.rollBack();
          await done.catch((error) => {
            if (!(error instanceof RollBack)) throw error;
          });
        },
      });
      await ended;
    });
    // Before the transaction starts (no connection, BEGIN failed) the request fails with it.
    done.catch(rejectHeld);
  });
}

/**
 * Safe retries: a REST POST or a GraphQL mutation sent with `Idempotency-Key` runs once per
 * credential (with its permissions) and key; a retry within 24 hours gets the first answer (status and body) again,
 * also while the first is still running (it waits), and the same key with another request is 422.
 * Keys live in the database, so replicas agree.
 *
 * The request runs in one transaction of its own: the key's row is inserted first, every statement
 * of the execution joins the transaction (request-transaction.ts), and the answer is written into
 * the row before the commit. The change, its key and its answer commit together or not at all: a
 * crash (or a lost connection) at any point rolls all three back and frees the key at once, and a
 * committed change always has its answer. A retry meanwhile waits on the row (PostgreSQL makes a
 * second insert of an uncommitted key wait for the first transaction), then replays the answer.
 */
export function useIdempotency({ db, authenticate, logger }: Options): Plugin {
  const held = new WeakMap<Request, Claimed>();
  let lastCleanup = 0;

  function refuse(pathname: string, code: ErrorCode, message: string): Response {
    return transportErrorResponse(pathname, code, message);
  }

  /** Inserts the key's row in a new held transaction; or, when it exists (committed), ends that transaction and returns the row. */
  async function claim(organizationId: string, key: string, requestHash: string): Promise<Claimed | KeyRow> {
    const request = await holdTransaction(db);
    try {
      for (;;) {
        const keyId = newId("idk");
        const expiresAt = new Date(Date.now() + RETENTION_MS);
        const inserted = await request.tx.$executeRaw`
          INSERT INTO "IdempotencyKey" ("id", "organizationId", "key", "requestHash", "expiresAt")
          VALUES (${keyId}, ${organizationId}, ${key}, ${requestHash}, ${expiresAt})
          ON CONFLICT ("organizationId", "key") DO NOTHING`;
        if (inserted > 0) return { ...request, afterCommit: [], keyId, organizationId, key, requestHash, expiresAt };
        const [first] = await request.tx.$queryRaw<KeyRow[]>`
          SELECT "id", "requestHash", "responseStatus", "responseType", "responseBody", "createdAt", "expiresAt"
          FROM "IdempotencyKey" WHERE "organizationId" = ${organizationId} AND "key" = ${key}`;
        if (!first) continue;
        // Expired, or left without an answer by a version that recorded it after the commit.
        const abandoned = first.responseStatus === null && first.createdAt.getTime() < Date.now() - ABANDONED_MS;
        if (first.expiresAt <= new Date() || abandoned) {
          await request.tx.$executeRaw`DELETE FROM "IdempotencyKey" WHERE "id" = ${first.id}`;
          continue;
        }
        await request.rollBack();
        return first;
      }
    } catch (error) {
      await request.rollBack().catch(() => {});
      throw error;
    }
  }

  return {
    async onRequest({ request, url, endResponse }) {
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
        const claimed = await claim(organizationId, key, requestHash);
        if ("tx" in claimed) {
          held.set(request, claimed);
          return;
        }
        if (claimed.requestHash !== requestHash) {
          endResponse(refuse(url.pathname, "IDEMPOTENCY_KEY_REUSED", "This Idempotency-Key was used for another request"));
          return;
        }
        if (claimed.responseStatus !== null) {
          endResponse(
            new Response(claimed.responseBody ? Buffer.from(claimed.responseBody) : null, {
              status: claimed.responseStatus,
              headers: {
                "content-type": claimed.responseType ?? "application/json; charset=utf-8",
                "idempotent-replayed": "true",
              },
            }),
          );
          return;
        }
        // A row without an answer comes from a version that recorded answers after the commit.
        if (Date.now() > deadline) {
          endResponse(refuse(url.pathname, "CONFLICT", "A request with this Idempotency-Key is still running; retry later"));
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },

    onExecute({ args, executeFn, setExecuteFn }) {
      const request = (args.contextValue as { request?: Request }).request;
      const mine = request && held.get(request);
      if (mine) setExecuteFn((execution) => inRequestTransaction(mine, () => executeFn(execution)));
    },

    async onResponse({ request, response, setResponse }) {
      const mine = held.get(request);
      if (!mine) return;
      held.delete(request);
      const body = new Uint8Array(await response.clone().arrayBuffer());
      const errors = graphqlErrorCodes(response, body);
      if (notKept(response.status) || errors.some((code) => code === "SERVICE_UNAVAILABLE" || code === "INTERNAL_SERVER_ERROR")) {
        await mine.rollBack().catch((error) => logger.error({ err: error }, "could not roll back an idempotent request"));
        return;
      }
      const answer = { responseStatus: response.status, responseType: response.headers.get("content-type"), responseBody: body };
      try {
        await mine.tx.$executeRaw`
          UPDATE "IdempotencyKey"
          SET "responseStatus" = ${answer.responseStatus}, "responseType" = ${answer.responseType}, "responseBody" = ${answer.responseBody}
          WHERE "id" = ${mine.keyId}`;
        await mine.commit();
        // What the execution deferred to the commit (live events): now, never on a roll back.
        for (const effect of mine.afterCommit) {
          try {
            effect();
          } catch (error) {
            logger.error({ err: error }, "an effect after an idempotent request's commit failed");
          }
        }
        return;
      } catch (error) {
        await mine.rollBack().catch(() => {});
        // Nothing of the request committed: a statement failed (the operation's error is in the
        // answer), or the transaction timed out or lost the database. An answer that claims
        // success must not leave; a refusal is kept, as it is when nothing failed.
        if (response.status < 400 && errors.length === 0) {
          logger.error({ err: error }, "could not commit an idempotent request");
          setResponse(
            refuse(new URL(request.url).pathname, "SERVICE_UNAVAILABLE", "The change could not be committed; retry the request"),
          );
          return;
        }
      }
      try {
        await db.idempotencyKey.create({
          data: {
            id: mine.keyId,
            organizationId: mine.organizationId,
            key: mine.key,
            requestHash: mine.requestHash,
            expiresAt: mine.expiresAt,
            ...answer,
          },
        });
      } catch (error) {
        // A retry that ran meanwhile holds the key now: its answer stands.
        logger.warn({ err: error }, "could not record the refusal of an idempotent request");
      }
    },
  };
}
