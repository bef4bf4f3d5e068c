import { AsyncLocalStorage } from "node:async_hooks";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";

type Tx = Prisma.TransactionClient;

/** A request's own transaction, and what waits for it to commit (`afterCommit`). */
export type RequestTransaction = { tx: Tx; afterCommit: (() => void)[] };
const current = new AsyncLocalStorage<RequestTransaction>();

/**
 * Runs `work` with every statement of the database client (`joinRequestTransactions`) inside
 * `request.tx`: the idempotency plugin (src/http/idempotency.ts) runs a keyed mutation this way, so
 * that the change, its Idempotency-Key and its answer commit together or not at all. Whoever
 * commits it runs `request.afterCommit` then; on a roll back they never run.
 */
export function inRequestTransaction<T>(request: RequestTransaction, work: () => T): T {
  return current.run(request, work);
}

/** The transaction the current request's statements run in, if any. */
export function requestTransaction(): Tx | undefined {
  return current.getStore()?.tx;
}

/**
 * Runs `effect` once what the caller just wrote is committed: at once when its own transaction was
 * all (it has committed by now), or after the request's transaction commits when the caller's
 * joined one (a keyed request); never when that rolls back. For what others must not see before
 * the commit: live events.
 */
export function afterCommit(effect: () => void): void {
  const request = current.getStore();
  if (request) request.afterCommit.push(effect);
  else effect();
}

/**
 * The client as the services use it: outside `inRequestTransaction` the client itself; inside it,
 * its models and raw statements are the transaction's, and `$transaction` joins it (an interactive
 * transaction runs its function on it, a batch runs its statements on it in order). A service's
 * own transaction then commits with the request's, and its failure fails the request's.
 */
export function joinRequestTransactions(db: PrismaClient): PrismaClient {
  const bound = new Map<PropertyKey, unknown>();
  const joinedTransaction = async (work: unknown) => {
    const tx = (current.getStore() as RequestTransaction).tx;
    if (typeof work === "function") return (work as (tx: Tx) => Promise<unknown>)(tx);
    const results: unknown[] = [];
    for (const statement of work as PromiseLike<unknown>[]) results.push(await statement);
    return results;
  };
  return new Proxy(db, {
    get(target, property) {
      const tx = current.getStore()?.tx;
      if (tx) {
        if (property === "$transaction") return joinedTransaction;
        if (property in tx) return Reflect.get(tx, property);
      }
      const value = Reflect.get(target, property);
      if (typeof value !== "function") return value;
      // Prisma's methods expect the client itself as `this`, not the proxy.
      let method = bound.get(property);
      if (method === undefined) {
        method = value.bind(target);
        bound.set(property, method);
      }
      return method;
    },
  });
}
