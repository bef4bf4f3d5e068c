import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { arrivedWhole } from "../../src/http/body-admission.js";

/** What arrivedWhole gave a handler that first awaited, as the service's hooks do, for a body sent in `pieces`. */
async function takenAtOnce(pieces: (head: string, body: string) => string[]): Promise<string> {
  const server = createServer(async (req, res) => {
    await Promise.resolve();
    const bytes = arrivedWhole(req, Number(req.headers["content-length"]));
    req.resume();
    res.end(bytes === undefined ? "not yet" : bytes.toString());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const body = JSON.stringify({ query: "{ __typename }" });
    const head = `POST / HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: ${body.length}\r\n\r\n`;
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
    let answer = "";
    socket.on("data", (chunk) => {
      answer += chunk;
    });
    const closed = new Promise((resolve) => socket.on("close", resolve));
    for (const piece of pieces(head, body)) {
      socket.write(piece);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await closed;
    return answer.slice(answer.indexOf("\r\n\r\n") + 4);
  } finally {
    server.close();
  }
}

describe("a body that arrived with its headers (body-admission.ts arrivedWhole)", () => {
  it("is taken whole from Node's buffer, though the message is not yet marked complete", async () => {
    expect(await takenAtOnce((head, body) => [head + body])).toBe('{"query":"{ __typename }"}');
  });

  it("is left to the stream's events while part of it is still on its way", async () => {
    expect(await takenAtOnce((head, body) => [head + body.slice(0, 5), body.slice(5)])).toBe("not yet");
    expect(await takenAtOnce((head, body) => [head, body])).toBe("not yet");
  });
});
