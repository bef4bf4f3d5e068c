import type { ServerResponse } from "node:http";

/**
 * Resets the connection of the request whose server context this is (RST, not FIN: the client
 * learns at once that the answer is cut short); undefined in process, where there is no socket.
 */
export function connectionAbort(serverContext: object): (() => void) | undefined {
  const res = (serverContext as { res?: ServerResponse }).res;
  if (!res || typeof res.destroy !== "function") return undefined;
  return () => {
    const socket = res.socket;
    if (socket && typeof socket.resetAndDestroy === "function" && !socket.destroyed) socket.resetAndDestroy();
    else res.destroy();
  };
}
