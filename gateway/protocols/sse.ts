import type { ServerResponse } from 'node:http';

/** How long an OpenAI stream may stay silent (a long prefill) before a keep-alive comment. */
const KEEP_ALIVE_MS = 5_000;

/**
 * Starts a server-sent-events answer. While nothing else is written for a while, an SSE comment
 * (`: keep-alive`, ignored by clients) keeps proxies and client read timeouts from cutting a long
 * prefill. Returns the writer; `end()` stops the timer and closes the answer.
 */
export function openEventStream(res: ServerResponse): { write(chunk: string): void; end(): void } {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
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
