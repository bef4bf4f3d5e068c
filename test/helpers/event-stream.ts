import type { TestApp } from "./test-app.js";

/**
 * A GraphQL subscription over SSE (`POST /graphql`, `Accept: text/event-stream`) on `app`, with no
 * socket: the response, the payloads of its `next` events as they arrive, and how to close it.
 */
export async function openEventStream(
  app: Pick<TestApp, "app">,
  body: { query: string; variables?: Record<string, unknown> },
  headers: Record<string, string>,
) {
  const controller = new AbortController();
  const response = await app.app.fetch(
    new Request("http://test/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
      body: JSON.stringify(body),
      signal: controller.signal,
    }),
  );
  // biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary JSON
  const events: any[] = [];
  const reader = response.body?.getReader();
  let buffer = "";
  const pump = (async () => {
    const decoder = new TextDecoder();
    for (;;) {
      const chunk = await reader?.read().catch(() => ({ done: true, value: undefined }));
      if (!chunk || chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const data = block.split("\n").find((line) => line.startsWith("data:"));
        if (data && block.includes("event: next")) events.push(JSON.parse(data.slice(5)));
      }
    }
  })();
  return {
    response,
    events,
    async close() {
      controller.abort();
      await reader?.cancel().catch(() => {});
      await pump;
    },
  };
}
