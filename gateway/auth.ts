import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The session key of a request: `/s/<key>/...` path prefix, `Authorization: Bearer <key>`, or
 * `x-api-key: <key>` (gateway spec, "Identity and routes").
 */
export function sessionKeyOf(request: FastifyRequest): string | undefined {
  const params = request.params as { key?: string } | undefined;
  if (params?.key) return params.key;
  const auth = request.headers.authorization;
  if (auth?.startsWith('Bearer ')) return auth.slice('Bearer '.length).trim();
  const apiKey = request.headers['x-api-key'];
  return typeof apiKey === 'string' ? apiKey : undefined;
}

/** An AbortSignal that fires when the client goes away before the answer is complete. */
export function disconnectSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  // 'close' also fires after a complete answer; only an unfinished one means the client left.
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
