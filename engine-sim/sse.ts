import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/**
 * Takes `reply` over and starts a server-sent-events answer, with `headers` besides the stream's
 * own; the caller writes the `data:` events and ends it.
 */
export function startEventStream(reply: FastifyReply, headers: Record<string, string> = {}): ServerResponse {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...headers,
  });
  return res;
}
