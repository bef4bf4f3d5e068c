import { getOperationAST } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { AuthState } from "../auth/caller.js";
import { withReplicaReads } from "../platform/db/read-routing.js";
import type { RecentWriters } from "../platform/recent-writers.js";

/** Whose writes a read must see: the member for a user's credentials, else the API key. */
function writerOf(auth: AuthState | undefined): string | undefined {
  if (!auth || !("caller" in auth)) return undefined;
  const { organizationId, userId, apiKeyId } = auth.caller;
  return `${organizationId}:${userId ?? `key:${apiKeyId}`}`;
}

/**
 * Sends the reads of a query to a replica unless its caller wrote within the window (on any
 * service replica), and records every mutation's caller as a writer once it ends (committed or
 * not: a mutation that timed out may still have committed). Mutations read on the primary, since
 * what they read decides what they write. Both transports execute here, REST through Sofa.
 */
export function useReadRouting(writers: RecentWriters): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const type = getOperationAST(args.document, args.operationName)?.operation;
      const writer = writerOf((args.contextValue as { auth?: AuthState }).auth);
      if (type === "mutation" && writer) {
        setExecuteFn(async (execution) => {
          try {
            return await executeFn(execution);
          } finally {
            await writers.wrote(writer);
          }
        });
      } else if (type === "query") {
        setExecuteFn(async (execution) =>
          writer && (await writers.wroteRecently(writer)) ? executeFn(execution) : withReplicaReads(() => executeFn(execution)),
        );
      }
    },
  };
}
