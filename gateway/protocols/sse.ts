import type { ServerResponse } from 'node:http';

/** How long an OpenAI stream may stay silent (a long prefill) before a keep-alive comment. */
const KEEP_ALIVE_MS = 5_000;

/**
 * The headers of every SSE answer. No `connection` header: Node sets it from the request, so a
 * `Connection: close` client gets `close` and the socket is closed after the stream.
 */
export const EVENT_STREAM_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } as const;

/**
 * Starts a server-sent-events answer. While nothing else is written for a while, an SSE comment
 * (`: keep-alive`, ignored by clients) keeps proxies and client read timeouts from cutting a long
 * prefill. Returns the writer; `end()` stops the timer and closes the answer.
 */
export function openEventStream(res: ServerResponse): { write(chunk: string): void; end(): void } {
  res.writeHead(200, EVENT_STREAM_HEADERS);
  let wrote = false;
  const timer = setInterval(() => {
    if (!wrote) res.write(': keep-alive\n\n');
    wrote = false;
  }, KEEP_ALIVE_MS);
  return {
    write(chunk) {
      wrote = true;
      res.write(chunk);
    },
    end() {
      clearInterval(timer);
      res.end();
    },
  };
}
