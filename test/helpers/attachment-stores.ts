import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { type AttachmentStores, openAttachmentStores } from "../../src/platform/attachments/create-store.js";
import { createS3Store } from "../../src/platform/attachments/s3.js";
import type { AttachmentStore, StoreKind } from "../../src/platform/attachments/store.js";
import type { Db } from "../../src/platform/db/database.js";
import { type S3TestServer, startS3Server } from "./s3-server.js";

/**
 * The three stores of one test file, on real parts: the database store on the test's database, a
 * filesystem store in a temporary directory, and an s3 store on the tests' S3-compatible server
 * reached through a TCP relay. `outage(kind)` makes a store really unreachable until its `end()`:
 * the relay refuses every connection (s3), or the store's directory is swapped for a plain file
 * (filesystem: every operation fails with ENOTDIR).
 */
export type StoreFixture = {
  s3: S3TestServer;
  dir: string;
  /** The stores with `kind` as the one new objects go to. */
  storesFor(kind: StoreKind): AttachmentStores;
  outage(kind: "s3" | "filesystem"): { end(): void };
  close(): Promise<void>;
};

const timeoutMs = 2_000;
const urlSecret = "a-test-secret-of-at-least-32-characters!";

export async function storeFixture(db: Db): Promise<StoreFixture> {
  const s3 = await startS3Server();
  const dir = mkdtempSync(path.join(tmpdir(), "attachment-files-"));
  const relay = await tcpRelay(new URL(s3.endpoint));
  const s3Store = createS3Store({
    ...s3.settings,
    endpoint: `http://127.0.0.1:${relay.port}`,
    credentials: s3.credentials,
    timeoutMs,
  });
  const base = openAttachmentStores(
    { store: "database", dir, s3: undefined, publicUrl: undefined, timeoutMs, urlSecret },
    { db },
  );
  const storeOf = (kind: StoreKind): AttachmentStore | undefined => (kind === "s3" ? s3Store : base.storeOf(kind));
  return {
    s3,
    dir,
    storesFor: (kind) => ({ ...base, store: storeOf(kind) as AttachmentStore, storeOf }),
    outage(kind) {
      if (kind === "s3") {
        relay.down = true;
        // Connections kept alive go too: the store's next request finds nothing listening behind.
        for (const socket of relay.sockets) socket.destroy();
        return {
          end: () => {
            relay.down = false;
          },
        };
      }
      const away = `${dir}.away`;
      renameSync(dir, away);
      writeFileSync(dir, "not a directory");
      return {
        end: () => {
          rmSync(dir);
          renameSync(away, dir);
        },
      };
    },
    async close() {
      await new Promise((resolve) => relay.server.close(resolve));
      for (const socket of relay.sockets) socket.destroy();
      await s3.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A TCP relay to `target` on a free port; while `down`, it resets every connection at once. */
async function tcpRelay(target: URL): Promise<{ port: number; server: Server; sockets: Set<Socket>; down: boolean }> {
  const state = { port: 0, server: undefined as unknown as Server, sockets: new Set<Socket>(), down: false };
  state.server = createServer((client) => {
    if (state.down) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      state.sockets.add(socket);
      socket.on("close", () => state.sockets.delete(socket));
      socket.on("error", () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => state.server.listen(0, "127.0.0.1", resolve));
  state.port = (state.server.address() as { port: number }).port;
  return state;
}

/**
 * A TCP relay to `target` that fails on demand in the middle of an answer: once armed, after
 * `afterBytes` more bytes from the target it stops forwarding and keeps every connection open (a
 * server stopped, SIGSTOP) or resets them all and refuses new ones (a server killed, connections
 * cut). `heal()` passes everything again.
 */
export type FaultyRelay = {
  port: number;
  failAfter(afterBytes: number, how: "stall" | "reset"): void;
  heal(): void;
  close(): Promise<void>;
};

export async function faultyRelay(target: { host: string; port: number }): Promise<FaultyRelay> {
  const sockets = new Set<Socket>();
  const stalled: Socket[] = [];
  let fault: { left: number; how: "stall" | "reset" } | undefined;
  let refusing = false;
  const failNow = (_how: "reset") => {
    refusing = true;
    for (const socket of sockets) socket.resetAndDestroy();
  };
  const server = createServer((client) => {
    if (refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => {});
    }
    client.pipe(upstream);
    upstream.on("data", (chunk: Buffer) => {
      if (!fault) {
        client.write(chunk);
        return;
      }
      const passing = chunk.subarray(0, Math.max(0, fault.left));
      fault.left -= passing.length;
      if (passing.length) client.write(passing);
      if (fault.left > 0) return;
      if (fault.how === "reset") return failNow("reset");
      // Held, not dropped: healed, the connection goes on where it stopped.
      upstream.pause();
      if (passing.length < chunk.length) upstream.unshift(chunk.subarray(passing.length));
      stalled.push(upstream);
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    failAfter(afterBytes, how) {
      fault = { left: afterBytes, how };
    },
    heal() {
      fault = undefined;
      refusing = false;
      for (const socket of stalled.splice(0)) socket.resume();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
