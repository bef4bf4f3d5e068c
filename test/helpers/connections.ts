import { request } from "node:http";

/**
 * Opens `count` connections to 127.0.0.1:`port` at once (no agent: one connection each), sends one
 * GET `path` on each, and once every answer has begun, closes them all.
 */
export async function openAndClose(port: number, count: number, path = "/"): Promise<void> {
  const requests = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<{ destroy(): void }>((resolve, reject) => {
          const req = request({ host: "127.0.0.1", port, path, agent: false }, (res) => {
            res.resume();
            resolve(req);
          });
          req.on("error", reject);
          req.end();
        }),
    ),
  );
  for (const req of requests) req.destroy();
}
