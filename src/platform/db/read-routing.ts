import { AsyncLocalStorage } from "node:async_hooks";
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { ReadReplicas } from "./read-replicas.js";
import { isDatabaseUnavailable } from "./unavailable.js";

type Scope = { replica: boolean };
const scope = new AsyncLocalStorage<Scope>();

/**
 * Runs `work` with its reads allowed on a replica. Everything else stays on the primary: code
 * outside such a scope (authentication, idempotency records, mutations), transactions, and every
 * statement of the scope after its first write (a read after a write may decide the next one).
 */
export function withReplicaReads<T>(work: () => T): T {
  return scope.run({ replica: true }, work);
}

/** Whether a read here may go to a replica (inside `withReplicaReads`, before any write of the scope). */
export function replicaReadsAllowed(): boolean {
  return scope.getStore()?.replica === true;
}

const readOperations = new Set([
  "findUnique",
  "findUniqueOrThrow",
  "findFirst",
  "findFirstOrThrow",
  "findMany",
  "count",
  "aggregate",
  "groupBy",
  "$queryRaw",
]);

const delegateOf = (model: string) => model.charAt(0).toLowerCase() + model.slice(1);

/**
 * The primary's client, extended so that reads inside `withReplicaReads` go to a replica that
 * `replicas.pick()` offers. A read the replica fails for want of the database (down, stopped,
 * restarting, too slow) is answered by the primary: reads are safe to run twice, and a `$queryRaw`
 * that writes is refused by a standby as read-only (25006), then runs on the primary.
 */
export function routeReads(primary: PrismaClient, replicas: ReadReplicas): PrismaClient {
  return primary.$extends({
    query: {
      async $allOperations(params) {
        const { args, model, operation, query } = params;
        const current = scope.getStore();
        const inTransaction = Boolean((params as { __internalParams?: { transaction?: unknown } }).__internalParams?.transaction);
        if (!current?.replica || inTransaction) return query(args);
        if (!readOperations.has(operation)) {
          current.replica = false;
          return query(args);
        }
        const replica = replicas.pick();
        if (!replica) return query(args);
        try {
          const target = (model ? replica.db[delegateOf(model) as keyof PrismaClient] : replica.db) as unknown as Record<
            string,
            (a: unknown) => Promise<unknown>
          >;
          const result = await (target[operation] as (a: unknown) => Promise<unknown>).call(target, args);
          replicas.served(replica);
          return result;
        } catch (error) {
          if (!isDatabaseUnavailable(error)) throw error;
          replicas.failed(replica, error);
          return query(args);
        }
      },
    },
  }) as unknown as PrismaClient;
}
