import { AsyncLocalStorage } from "node:async_hooks";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";

type Tx = Prisma.TransactionClient;
const current = new AsyncLocalStorage<Tx>();

/**
 * Runs `work` with every statement of the database client (`joinRequestTransactions`) inside `tx`:
 * the idempotency plugin (src/http/idempotency.ts) runs a keyed mutation this way, so that the
 * change, its Idempotency-Key and its answer commit together or not at all.
 */
export function inRequestTransaction<T>(tx: Tx, work: () => T): T {
  return current.run(tx, work);
}

/** The transaction the current request's statements run in, if any. */
export function requestTransaction(): Tx | undefined {
  return current.getStore();
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
    const tx = current.getStore() as Tx;
    if (typeof work === "function") return (work as (tx: Tx) => Promise<unknown>)(tx);
    const results: unknown[] = [];
    for (const statement of work as PromiseLike<unknown>[]) results.push(await statement);
    return results;
  };
  return new Proxy(db, {
    get(target, property) {
      const tx = current.getStore();
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
