import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";

export type ReceivedMail = ParsedMail & { envelopeTo: string[] };

/**
 * A real SMTP server on loopback (smtp-server), keeping what it receives parsed (mailparser).
 * `stop()` and `start()` again on the same port make a mail server that is down for a while.
 */
export async function startSmtpServer(
  options: {
    /** A reply code (4xx: try later, 5xx: never) to refuse a message with after reading it; accepted when undefined. */
    refuse?: (mail: ReceivedMail) => number | undefined;
    /** How long it takes to accept each message, as a real server does; none when absent. */
    delayMs?: number;
  } = {},
) {
  const received: ReceivedMail[] = [];
  /** Messages read in full and then refused (options.refuse). */
  const refused: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  let port = 0;
  let server: SMTPServer | undefined;

  function create() {
    return new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS", "AUTH"],
      logger: false,
      onData(stream, session, callback) {
        simpleParser(stream)
          .then((parsed) => {
            const mail = { ...parsed, envelopeTo: session.envelope.rcptTo.map((r) => r.address) };
            const code = options.refuse?.(mail);
            if (code) {
              refused.push(mail);
              for (const wake of waiters) wake();
              callback(Object.assign(new Error("refused by the test"), { responseCode: code }));
              return;
            }
            const accept = () => {
              received.push(mail);
              for (const wake of waiters) wake();
              callback();
            };
            if (options.delayMs) setTimeout(accept, options.delayMs);
            else accept();
          })
          .catch(callback);
      },
    });
  }

  async function start() {
    const next = create();
    await new Promise<void>((resolve, reject) => {
      next.once("error", reject);
      next.listen(port, "127.0.0.1", () => {
        next.off("error", reject);
        resolve();
      });
    });
    next.on("error", () => {});
    port = (next.server.address() as { port: number }).port;
    server = next;
  }

  await start();
  return {
    received,
    refused,
    get port() {
      return port;
    },
    get url() {
      return `smtp://127.0.0.1:${port}`;
    },
    start,
    async stop() {
      const current = server;
      server = undefined;
      if (!current) return;
      // Drop the pooled connections of the sender too, as a crashed server would.
      for (const connection of [...(current as unknown as { connections: Set<{ close(): void }> }).connections])
        connection.close();
      await new Promise<void>((resolve) => current.close(() => resolve()));
    },
    /** Resolves once `predicate` holds for what arrived, or rejects after `timeoutMs`. */
    async waitFor(
      predicate: (mails: ReceivedMail[]) => boolean,
      timeoutMs = 15_000,
      what = "the expected mail",
    ): Promise<ReceivedMail[]> {
      if (predicate(received)) return received;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`not within ${timeoutMs} ms: ${what} (received ${received.length})`));
        }, timeoutMs);
        function check() {
          if (!predicate(received)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(received);
        }
        waiters.add(check);
      });
    },
  };
}

export type SmtpServer = Awaited<ReturnType<typeof startSmtpServer>>;
