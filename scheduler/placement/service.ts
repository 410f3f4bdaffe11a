import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { registerMetricsRoute } from '../../telemetry/exposition.js';
import { createMetrics, type RolloutMetrics } from '../../telemetry/metrics.js';
import type { RegisteredInstance } from '../registry.js';
import { createRouter, ROUTING_DEFAULTS, type RequestPlacement, type Router, type RoutingOptions } from '../router.js';
import type { RouteRequest } from '../routing/types.js';
import { ChainBlocks } from './chain-blocks.js';
import {
  AcquireBody,
  BODY_LIMIT_BYTES,
  FailedBody,
  FinishedBody,
  ForgetBody,
  PlaceBody,
  RenewBody,
  STALE_BASE_STATUS,
  type CallBody,
  type EndedCall,
  type FinishedAnswer,
  type InstancesAnswer,
  type PlacementAnswer,
} from './protocol.js';

export interface PlacementServiceOptions {
  engines: readonly RegisteredInstance[];
  /** The router's configuration (`routing.*`), as a gateway would run it in-process. Default `{}`. */
  routing?: RoutingOptions;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
  /** Bearer token every caller sends (the gateways' admin token). */
  token: string;
  /** A placement whose caller stops renewing it (a gateway that died) is released after this, ms. Default 15,000. */
  leaseMs?: number;
  /** Log requests (pino). Default false. */
  logger?: boolean;
  /** Chains whose block hashes the service keeps, so callers send only new blocks. Default 16,384. */
  maxChains?: number;
  /**
   * Where the router counts placements, held calls and engine health; `GET /metrics` (with `token`)
   * serves its registry. Default: metrics on a registry of the service's own.
   */
  metrics?: RolloutMetrics;
}

export interface PlacementService {
  url: string;
  /** The router every gateway replica places through. */
  router: Router;
  close(): Promise<void>;
}

export const PLACEMENT_DEFAULTS = { host: '127.0.0.1', port: 0, leaseMs: 15_000, maxChains: 16_384 } as const;

export class PlacementAuthError extends Error {
  override name = 'PlacementAuthError';
  readonly status = 401;
}

export class PlacementRequestError extends Error {
  override name = 'PlacementRequestError';
  readonly status = 400;
}

export class UnknownPlacementError extends Error {
  override name = 'UnknownPlacementError';
  readonly status = 404;
}

/** The service does not hold the prefix a call's blocks continue (`base`): the caller sends them all. */
export class StaleChainBaseError extends Error {
  override name = 'StaleChainBaseError';
  readonly status = STALE_BASE_STATUS;
}

type PlacementErrors = PlacementAuthError | PlacementRequestError | UnknownPlacementError | StaleChainBaseError;

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new PlacementRequestError(z.prettifyError(parsed.error));
  return parsed.data;
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

/** Placements handed out and not ended yet, each released unless its caller renews it. */
class PlacementBook {
  private readonly held = new Map<string, { placement: RequestPlacement; expiresAt: number }>();

  constructor(
    private readonly router: Router,
    private readonly leaseMs: number,
  ) {}

  add(placement: RequestPlacement): string {
    const id = randomUUID();
    this.held.set(id, { placement, expiresAt: Date.now() + this.leaseMs });
    return id;
  }

  /** Ends a placement; throws for one unknown (ended already, or lapsed). */
  take(id: string): RequestPlacement {
    const placement = this.takeHeld(id);
    if (!placement) throw new UnknownPlacementError(`no placement ${id} (ended, or lapsed unrenewed)`);
    return placement;
  }

  /** Ends a placement; undefined for one unknown. */
  takeHeld(id: string): RequestPlacement | undefined {
    const entry = this.held.get(id);
    this.held.delete(id);
    return entry?.placement;
  }

  /** Extends the given placements; returns the ids it does not hold. */
  renew(ids: readonly string[]): string[] {
    const expiresAt = Date.now() + this.leaseMs;
    return ids.filter((id) => {
      const entry = this.held.get(id);
      if (entry) entry.expiresAt = expiresAt;
      return !entry;
    });
  }

  /** Releases lapsed placements as failed calls that did not take their engine down. */
  sweep(): void {
    const now = Date.now();
    for (const [id, entry] of this.held) {
      if (entry.expiresAt > now) continue;
      this.held.delete(id);
      this.router.failed(entry.placement, false);
    }
  }
}

/** The service's routes, an encapsulated plugin with its own auth and error envelope. */
function placementRoutes(router: Router, book: PlacementBook, chains: ChainBlocks, token: string, options: { blockSize: number; leaseMs: number }) {
  return async (app: FastifyInstance) => {
    app.setErrorHandler((error: PlacementErrors | Error, _request: FastifyRequest, reply: FastifyReply) => {
      const status = 'status' in error ? error.status : ((error as { statusCode?: number }).statusCode ?? 500);
      return reply.code(status).send({ error: { message: error.message, type: error.name } });
    });
    app.addHook('onRequest', async (request) => {
      if (!sameSecret(request.headers.authorization ?? '', `Bearer ${token}`)) throw new PlacementAuthError('placement token required');
    });
    const requestOf = (call: CallBody): RouteRequest => {
      if (call.blockSize !== options.blockSize) {
        throw new PlacementRequestError(`blockSize ${call.blockSize} differs from the service's ${options.blockSize} (routing.blockSize)`);
      }
      const blocks = chains.resolve(call.chainId, call.base, call.blocks);
      if (!blocks) throw new StaleChainBaseError(`chain ${call.chainId}: no ${call.base!.blocks}-block prefix ending in ${call.base!.hash}; send every block`);
      const { chainId, blockSize, promptTokens, expectedOutputTokens, home } = call;
      return { chainId, blocks, blockSize, promptTokens, expectedOutputTokens, home };
    };
    const answer = (placement: RequestPlacement | undefined, unknownEnded: string[]): PlacementAnswer => ({
      placement: placement ? { id: book.add(placement), instance: placement.instance } : null,
      unknownEnded,
      leaseMs: options.leaseMs,
    });
    /** Applies the ends a request carries (first: they free what the call may be admitted to); returns the ids not held. */
    const applyEnded = (ended: readonly EndedCall[]): string[] =>
      ended.flatMap((end) => {
        const placement = book.takeHeld(end.id);
        if (!placement) return [end.id];
        router.ended(placement, end.outputTokens, chains.resolve(placement.request.chainId, end.base, end.blocks) ?? []);
        return [];
      });

    app.post('/v1/acquire', async (request, reply) => {
      const body = parse(AcquireBody, request.body);
      const unknownEnded = applyEnded(body.ended);
      const call = requestOf(body);
      const gone = callerGone(reply);
      const placement = await router.admit(call, gone);
      // The caller left as the call was let through: nobody will end it, so it ends here.
      if (placement && gone.aborted) {
        router.failed(placement, false);
        return reply;
      }
      return answer(placement, unknownEnded);
    });
    app.post('/v1/place', async (request) => {
      const { exclude, ...call } = parse(PlaceBody, request.body);
      const unknownEnded = applyEnded(call.ended);
      return answer(router.placeRequest(requestOf(call), new Set(exclude)), unknownEnded);
    });
    app.post('/v1/finished', async (request): Promise<FinishedAnswer> => ({ unknown: applyEnded(parse(FinishedBody, request.body).ended) }));
    app.post('/v1/failed', async (request, reply) => {
      const body = parse(FailedBody, request.body);
      router.failed(book.take(body.id), body.engineDown, body.timedOut);
      return reply.code(204).send();
    });
    app.post('/v1/renew', async (request) => ({ unknown: book.renew(parse(RenewBody, request.body).ids) }));
    app.post('/v1/sessions/forget', async (request, reply) => {
      router.forgetSession(parse(ForgetBody, request.body).sessionId);
      return reply.code(204).send();
    });
    app.get('/v1/instances', async (): Promise<InstancesAnswer> => ({
      blockSize: options.blockSize,
      maxAttempts: router.maxAttempts,
      waiting: router.waiting,
      instances: router.registry.views().map((v) => ({
        name: v.name,
        healthy: v.healthy,
        kvCapacityTokens: Number.isFinite(v.kvCapacityTokens) ? v.kvCapacityTokens : 2 ** 31,
        inFlightRequests: v.inFlightRequests,
        ...router.admission(v.name),
      })),
    }));
  };
}

/**
 * The one placement every gateway replica asks (`gateway.placementUrl`): the router of
 * scheduler/router.ts (health checks, metrics scrapes, prefix index, token-level KV admission)
 * behind HTTP, so the working sets admitted to an engine fit its memory however many gateways
 * send calls. Placements are leased: those of a gateway that died are released after `leaseMs`.
 */
export async function startPlacementService(options: PlacementServiceOptions): Promise<PlacementService> {
  const { host, port, leaseMs, maxChains } = { ...PLACEMENT_DEFAULTS, ...options };
  const metrics = options.metrics ?? createMetrics();
  const router = createRouter(options.engines, options.routing, metrics.router);
  const book = new PlacementBook(router, leaseMs);
  const app = Fastify({ logger: options.logger ?? false, bodyLimit: BODY_LIMIT_BYTES });
  registerMetricsRoute(app, metrics.registry, options.token);
  await app.register(placementRoutes(router, book, new ChainBlocks(maxChains), options.token, { blockSize: options.routing?.blockSize ?? ROUTING_DEFAULTS.blockSize, leaseMs }));
  const sweeper = setInterval(() => book.sweep(), Math.max(1, Math.floor(leaseMs / 3)));
  sweeper.unref();
  app.addHook('onClose', async () => {
    clearInterval(sweeper);
    await router.close();
  });
  router.start();
  await app.listen({ host, port });
  const address = app.server.address();
  const url = `http://${host}:${typeof address === 'object' && address ? address.port : port}`;
  return { url, router, close: () => app.close() };
}
