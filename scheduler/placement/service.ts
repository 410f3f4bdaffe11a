import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import { registerMetricsRoute } from '../../telemetry/exposition.js';
import { createMetrics } from '../../telemetry/metrics.js';
import type { Router } from '../router.js';
import { errorAnswer, SharedPlacement, type PlacementOptions } from './shared-placement.js';
import { BODY_LIMIT_BYTES, PLACEMENT_PATHS } from './protocol.js';

export interface PlacementServiceOptions extends PlacementOptions {
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
  /** Bearer token every caller sends (the gateways' admin token). */
  token: string;
  /** Log requests (pino). Default false. */
  logger?: boolean;
}

export interface PlacementService {
  url: string;
  /** The router every gateway replica places through. */
  router: Router;
  close(): Promise<void>;
}

export const PLACEMENT_SERVICE_DEFAULTS = { host: '127.0.0.1', port: 0 } as const;

export class PlacementAuthError extends Error {
  override name = 'PlacementAuthError';
  readonly status = 401;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Fires when the caller goes away before its answer was sent (an aborted acquire). */
function callerGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** The service's routes, an encapsulated plugin with its own auth and error envelope. */
function placementRoutes(placement: SharedPlacement, token: string) {
  return async (app: FastifyInstance) => {
    app.setErrorHandler((error: Error, _request: FastifyRequest, reply: FastifyReply) => {
      const { status, body } = errorAnswer(error);
      return reply.code(status).send(body);
    });
    app.addHook('onRequest', async (request) => {
      if (!sameSecret(request.headers.authorization ?? '', `Bearer ${token}`)) throw new PlacementAuthError('placement token required');
    });
    for (const path of PLACEMENT_PATHS) {
      app.route({
        method: path === '/v1/instances' ? 'GET' : 'POST',
        url: path,
        handler: async (request, reply) => {
          const gone = callerGone(reply);
          const answer = await placement.call(path, request.body, gone);
          if (gone.aborted) return reply;
          return answer ?? reply.code(204).send();
        },
      });
    }
  };
}

/**
 * The one placement every gateway replica asks (`gateway.placementUrl`): shared-placement.ts behind HTTP
 * and the gateways' admin token, with the router's metrics on `GET /metrics`.
 */
export async function startPlacementService(options: PlacementServiceOptions): Promise<PlacementService> {
  const { host, port } = { ...PLACEMENT_SERVICE_DEFAULTS, ...options };
  const metrics = options.metrics ?? createMetrics();
  const placement = new SharedPlacement({ ...options, metrics });
  const app = Fastify({ logger: options.logger ?? false, bodyLimit: BODY_LIMIT_BYTES });
  app.addHook('onClose', () => placement.close());
  registerMetricsRoute(app, metrics.registry, options.token);
  await app.register(placementRoutes(placement, options.token));
  await app.listen({ host, port }).catch(async (error: unknown) => {
    await app.close();
    throw error;
  });
  const address = app.server.address();
  const url = `http://${host}:${typeof address === 'object' && address ? address.port : port}`;
  return { url, router: placement.router, close: () => app.close() };
}
