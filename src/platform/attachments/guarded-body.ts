import type { Readable } from "node:stream";
import { StoreUnavailableError } from "./store.js";

/**
 * A store's stream as a response body that cannot hang: each read waits at most `timeoutMs` for
 * the store's next bytes (a store that stops sending, a server stopped mid-stream, a query that
 * never answers), and a store that fails or stalls ends the answer at once. The deadline runs only
 * while the client asks for bytes: a client that reads slowly holds no timer.
 *
 * On failure `abort` (the HTTP connection's reset, when the request came over a socket) cuts the
 * answer short, so the client sees fewer bytes than Content-Length promised and an ended
 * connection, and the body then closes quietly (an errored body would reach the server adapter,
 * which logs outside our format and leaves the socket open). Without `abort` (in process), the
 * body errors. `onFail` logs it, with the bytes sent.
 */
export function guardedBody(
  source: Readable,
  o: { timeoutMs: number; abort?: () => void; onFail: (error: unknown, sentBytes: number) => void },
): ReadableStream<Uint8Array> {
  const chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let sent = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let timer: NodeJS.Timeout | undefined;
        const next = chunks.next();
        next.catch(() => {});
        const stalled = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new StoreUnavailableError(
                  `The attachment store sent nothing for ${o.timeoutMs} ms in the middle of the file (ATTACHMENT_STORE_TIMEOUT_MS)`,
                ),
              ),
            o.timeoutMs,
          );
        });
        try {
          const chunk = await Promise.race([next, stalled]);
          if (chunk.done) return controller.close();
          sent += chunk.value.length;
          controller.enqueue(chunk.value);
        } catch (error) {
          source.destroy();
          o.onFail(error, sent);
          if (o.abort) {
            o.abort();
            controller.close();
          } else {
            controller.error(error);
          }
        } finally {
          clearTimeout(timer);
        }
      },
      cancel() {
        source.destroy();
      },
    },
    { highWaterMark: 0 },
  );
}
