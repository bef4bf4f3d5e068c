import { type ExecutionResult, getOperationAST } from "graphql";
import type { Plugin } from "graphql-yoga";
import { Gauge, type Registry } from "prom-client";
import type { AuthState } from "../auth/caller.js";
import { AppError } from "../platform/errors.js";

export type WriteGateOptions = {
  /** Mutations of one organization executed at once; 0: no gate. */
  perOrganization: number;
  /** Longest a mutation waits for its turn before it is answered 503 (as long as for a pooled connection). */
  maxWaitMs: number;
};

type Queue = { running: number; waiting: (() => void)[] };

/**
 * The changes of one organization commit one at a time, in the order of its audit chain (the
 * chain head's row lock, contract section 14): beyond a few at once, more of them in PostgreSQL
 * only wait there on that lock, each holding a pooled connection and a backend that every other
 * request needs, and the backends' waits and re-checks cost the database's cores. So at most
 * `perOrganization` mutations of an organization execute at once; the next ones wait here, in
 * arrival order, holding nothing. Other organizations and every read go on as before. A mutation
 * that waits longer than `maxWaitMs` is answered 503 with Retry-After, as one that waits too long
 * for a connection is. Both transports execute here (REST's writes through the same executor).
 */
export function createWriteGate(options: WriteGateOptions) {
  const queues = new Map<string, Queue>();

  /** The place of a mutation that finished: to the next waiting one, else given back. */
  const release = (organizationId: string) => {
    const queue = queues.get(organizationId) as Queue;
    const next = queue.waiting.shift();
    if (next) return next();
    queue.running--;
    if (queue.running === 0) queues.delete(organizationId);
  };

  /** Resolves once the organization has a free place (taken); false when none came within maxWaitMs. */
  const enter = (organizationId: string): boolean | Promise<boolean> => {
    let queue = queues.get(organizationId);
    if (!queue) {
      queue = { running: 0, waiting: [] };
      queues.set(organizationId, queue);
    }
    if (queue.running < options.perOrganization) {
      queue.running++;
      return true;
    }
    const waiting = queue.waiting;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        const index = waiting.indexOf(admit);
        if (index >= 0) waiting.splice(index, 1);
        resolve(false);
      }, options.maxWaitMs);
      // Handed the place of the mutation that finished (running stays as it was).
      function admit() {
        clearTimeout(timer);
        resolve(true);
      }
      waiting.push(admit);
    });
  };

  const plugin: Plugin = {
    onExecute({ args, executeFn, setExecuteFn }) {
      if (options.perOrganization <= 0) return;
      if (getOperationAST(args.document, args.operationName)?.operation !== "mutation") return;
      const auth = (args.contextValue as { auth?: AuthState }).auth;
      const organizationId = auth && "caller" in auth ? auth.caller.organizationId : undefined;
      if (!organizationId) return;
      setExecuteFn(async (execution) => {
        if (!(await enter(organizationId))) {
          const busy = new AppError(
            "SERVICE_UNAVAILABLE",
            "The organization's changes are queued beyond the wait allowed; retry the request shortly",
          );
          return { errors: [busy] } as ExecutionResult;
        }
        try {
          return await executeFn(execution);
        } finally {
          release(organizationId);
        }
      });
    },
  };

  return {
    plugin,
    /** Mutations waiting for their organization's turn now (for /metrics and the tests). */
    waiting: () => {
      let n = 0;
      for (const queue of queues.values()) n += queue.waiting.length;
      return n;
    },
  };
}

/** `write_gate_waiting`: mutations waiting for their organization's turn on this replica. */
export function writeGateMetrics(registry: Registry, gate: Pick<ReturnType<typeof createWriteGate>, "waiting">): void {
  new Gauge({
    name: "write_gate_waiting",
    help: "Mutations waiting for their organization's turn (DATABASE_WRITES_PER_ORGANIZATION at once) on this replica",
    registers: [registry],
    collect() {
      this.set(gate.waiting());
    },
  });
}
