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

// What each open transaction runs just before its COMMIT (`lastBeforeCommit`), by its client.
const beforeCommit = new WeakMap<Tx, (() => Promise<unknown>)[]>();

/**
 * Runs `statement` as the last statement of `tx`, just before its COMMIT, after whatever the change
 * still does: for a statement that takes a lock every other write of its scope waits for (the
 * audit chain's head row, audit.chain.ts), so that it is held for that statement and the COMMIT
 * only, whatever the service does after it, and, in a keyed request (src/http/idempotency.ts),
 * after the answer is written too. Statements deferred so run in the order they were given; a
 * failure of one fails the transaction (the change rolls back). `tx` must be a transaction of the
 * client `joinRequestTransactions` returns; any other runs the statement at once.
 */
export async function lastBeforeCommit(tx: Tx, statement: () => Promise<unknown>): Promise<void> {
  const deferred = beforeCommit.get(tx);
  if (deferred) deferred.push(statement);
  else await statement();
}

/** Runs `work` in `tx`, then the statements it deferred to the commit (`lastBeforeCommit`). */
async function endingWithDeferred<T>(tx: Tx, work: (tx: Tx) => Promise<T>): Promise<T> {
  const deferred: (() => Promise<unknown>)[] = [];
  beforeCommit.set(tx, deferred);
  const result = await work(tx);
  // One at a time, in order (a statement deferred meanwhile runs too).
  for (let statement = deferred.shift(); statement; statement = deferred.shift()) await statement();
  beforeCommit.delete(tx);
  return result;
}

/**
 * The client as the services use it: outside `inRequestTransaction` the client itself; inside it,
 * its models and raw statements are the transaction's, and `$transaction` joins it (an interactive
 * transaction runs its function on it, a batch runs its statements on it in order). A service's
 * own transaction then commits with the request's, and its failure fails the request's. Every
 * interactive transaction ends with the statements its work deferred to the commit
 * (`lastBeforeCommit`); a joined one leaves them to the request's transaction.
 */
export function joinRequestTransactions(db: PrismaClient): PrismaClient {
  const bound = new Map<PropertyKey, unknown>();
  const transaction = (work: unknown, ...options: unknown[]) =>
    typeof work === "function"
      ? db.$transaction((tx) => endingWithDeferred(tx, work as (tx: Tx) => Promise<unknown>), ...(options as []))
      : db.$transaction(work as never, ...(options as []));
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
      if (property === "$transaction") return transaction;
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
