import type { FastifyReply, FastifyRequest } from 'fastify';
import http from 'node:http';
import { PassThrough, type Readable } from 'node:stream';

/** Set on a forwarded request: the replica it reaches serves it or fails it, never forwards it again. */
export const FORWARDED_BY_HEADER = 'x-rollout-forwarded-by';

/** Hop-by-hop headers (RFC 9110 §7.6.1) a proxy must not pass on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** How a forward ended: the owner answered (or the client left), or the owner was unreachable. */
export type ForwardOutcome = { kind: 'answered' } | { kind: 'unreachable'; error: Error; body: Readable };

function passable(headers: http.IncomingHttpHeaders | http.OutgoingHttpHeaders): http.OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name, value]) => value !== undefined && !HOP_BY_HOP.has(name.toLowerCase())));
}

/**
 * Proxies a request to the replica at `target` (same method, path, query and headers), streaming
 * the body up and the answer (SSE included) down; a client that leaves drops the upstream request,
 * so the owner aborts the generation. Until the owner answers, the body read so far is kept: when
 * the owner cannot be reached (connection refused or reset before its answer), the outcome carries
 * the whole body again so this replica can serve the request itself (or forward it again).
 * `fresh` opens a new connection instead of reusing an idle keep-alive one.
 */
export function forwardRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: Readable,
  target: { url: string; via: string; fresh: boolean },
): Promise<ForwardOutcome> {
  return new Promise((resolve) => {
    const kept: Buffer[] = [];
    let answered = false;
    let ended = false;
    const upstream = http.request(new URL(request.raw.url ?? '/', target.url), {
      method: request.method,
      headers: { ...passable(request.headers), host: new URL(target.url).host, [FORWARDED_BY_HEADER]: target.via },
      agent: target.fresh ? false : undefined,
    });
    const onData = (chunk: Buffer): void => {
      if (!answered) kept.push(chunk);
      upstream.write(chunk);
    };
    const onEnd = (): void => {
      ended = true;
      upstream.end();
    };
    payload.on('data', onData);
    payload.once('end', onEnd);
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) upstream.destroy();
    });
    upstream.once('response', (response) => {
      answered = true;
      kept.length = 0;
      reply.hijack();
      reply.raw.writeHead(response.statusCode ?? 502, passable(response.headers));
      response.pipe(reply.raw);
      response.once('error', () => reply.raw.destroy());
      resolve({ kind: 'answered' });
    });
    upstream.once('error', (error) => {
      if (answered) return reply.raw.destroy();
      if (reply.raw.destroyed) return resolve({ kind: 'answered' });
      payload.off('data', onData);
      payload.off('end', onEnd);
      const body = new PassThrough();
      for (const chunk of kept) body.write(chunk);
      if (ended) body.end();
      else payload.pipe(body);
      resolve({ kind: 'unreachable', error, body });
    });
  });
}
