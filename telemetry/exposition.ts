/**
 * `GET /metrics` in the Prometheus text format, behind a bearer token (Prometheus scrapes with
 * `authorization: { credentials: <token> }`): a fastify route for the gateway and the batch API, and
 * a small HTTP listener for the worker, which has no server of its own.
 */
import type { FastifyInstance } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export const METRICS_PATH = '/metrics';

/** Whether an `authorization` header carries `Bearer <token>`, compared in constant time. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header ?? '');
  const expected = Buffer.from(`Bearer ${token}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const UNAUTHORIZED = JSON.stringify({ error: { type: 'unauthorized', message: 'metrics need the bearer token' } });

/** Adds `GET /metrics` for `registry` to `app`, answering 401 without `token`. */
export function registerMetricsRoute(app: FastifyInstance, registry: Registry, token: string): void {
  app.get(METRICS_PATH, async (request, reply) => {
    if (!bearerMatches(request.headers.authorization, token)) return reply.code(401).type('application/json').send(UNAUTHORIZED);
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

/** An HTTP server answering only `GET /metrics` (with `token`) on `host:port` (0: a free port). */
export function startMetricsListener(options: { host: string; port: number; registry: Registry; token: string }): Promise<MetricsListener> {
  const { registry, token } = options;
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== METRICS_PATH) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'not_found', message: 'only GET /metrics is served here' } }));
      return;
    }
    if (!bearerMatches(request.headers.authorization, token)) {
      response.writeHead(401, { 'content-type': 'application/json' }).end(UNAUTHORIZED);
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end((error as Error).message),
    );
  });
  // A scrape is one small request: nothing may hold the socket open.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      const { port } = server.address() as AddressInfo;
      const host = options.host.includes(':') ? `[${options.host}]` : options.host;
      resolve({
        url: `http://${host}:${port}`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}
