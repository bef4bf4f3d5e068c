import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export type Received = {
  path: string;
  id: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The message as the official verifier returned it, or null when verification threw. */
  verified: unknown;
  /** Which of the secrets given for the path verified it. */
  verifiedWith: string[];
};

type Behaviour = (res: ServerResponse, nth: number) => void;

/**
 * A real HTTP receiver on 127.0.0.1 that checks every message with the official `standardwebhooks`
 * verifier, against the secrets a test registers for a path; each path answers as the test says.
 */
export async function startWebhookReceiver() {
  const received: Received[] = [];
  const secrets = new Map<string, string[]>();
  const behaviours = new Map<string, Behaviour>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      const body = Buffer.concat(chunks).toString("utf8");
      const verifiedWith: string[] = [];
      let verified: unknown = null;
      for (const secret of secrets.get(path) ?? []) {
        try {
          verified = new Webhook(secret).verify(body, req.headers as Record<string, string>);
          verifiedWith.push(secret);
        } catch {}
      }
      received.push({ path, id: String(req.headers["webhook-id"]), headers: req.headers, body, verified, verifiedWith });
      const nth = received.filter((r) => r.path === path).length;
      const behaviour = behaviours.get(path) ?? ((r) => r.writeHead(200).end("ok"));
      behaviour(res, nth);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    received,
    at: (path: string) => received.filter((r) => r.path === path),
    secret(path: string, ...values: string[]) {
      secrets.set(path, values);
    },
    on(path: string, behaviour: Behaviour) {
      behaviours.set(path, behaviour);
    },
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Waits until `check` returns a truthy value (polling), or fails after `timeoutMs`. */
export async function until<T>(
  check: () => Promise<T> | T,
  timeoutMs = 10_000,
  what = "the condition",
): Promise<Exclude<T, false | 0 | "" | null | undefined>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as Exclude<T, false | 0 | "" | null | undefined>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
