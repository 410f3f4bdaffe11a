/**
 * The placement service's calls, apart from how they arrive: over HTTP (service.ts, for replicas on
 * other machines) or over the IPC channel of a forked gateway process (ipc-server.ts, for
 * `gateway.processes` on one host). Every body is parsed here, whatever carried it.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { createMetrics, type RolloutMetrics } from '../../telemetry/metrics.js';
import type { RegisteredInstance } from '../registry.js';
import { createRouter, ROUTING_DEFAULTS, type RequestPlacement, type Router, type RoutingOptions } from '../router.js';
import type { RouteRequest } from '../routing/types.js';
import { ChainBlocks } from './chain-blocks.js';
import {
  AcquireBody,
  FailedBody,
  FinishedBody,
  ForgetBody,
  PlaceBody,
  RenewBody,
  STALE_BASE_STATUS,
  type CallBody,
  type EndedCall,
  type InstancesAnswer,
  type PlacementAnswer,
  type PlacementPath,
} from './protocol.js';

export interface PlacementOptions {
  engines: readonly RegisteredInstance[];
  /** The router's configuration (`routing.*`), as a gateway would run it in-process. Default `{}`. */
  routing?: RoutingOptions;
  /** A placement whose caller stops renewing it (a gateway that died) is released after this, ms. Default 15,000. */
  leaseMs?: number;
  /** Chains whose block hashes the service keeps, so callers send only new blocks. Default 16,384. */
  maxChains?: number;
  /** Where the router counts placements, held calls and engine health. Default: a registry of its own. */
  metrics?: RolloutMetrics;
}

export const PLACEMENT_DEFAULTS = { leaseMs: 15_000, maxChains: 16_384 } as const;

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

/** How an error thrown by `SharedPlacement.call` is answered, over any transport: its `status` (500 when it has none) and the error envelope. */
export function errorAnswer(error: Error): { status: number; body: { error: { message: string; type: string } } } {
  const status = (error as { status?: number; statusCode?: number }).status ?? (error as { statusCode?: number }).statusCode ?? 500;
  return { status, body: { error: { message: error.message, type: error.name } } };
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new PlacementRequestError(z.prettifyError(parsed.error));
  return parsed.data;
}

/** Placements handed out and not ended yet, each released unless its caller renews it. */
class PlacementBook {
  private readonly held = new Map<string, { placement: RequestPlacement; expiresAt: number; caller: string | undefined }>();

  constructor(
    private readonly router: Router,
    private readonly leaseMs: number,
  ) {}

  add(placement: RequestPlacement, caller: string | undefined): string {
    const id = randomUUID();
    this.held.set(id, { placement, expiresAt: Date.now() + this.leaseMs, caller });
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

  /** Releases lapsed placements (and with `caller`, all of that caller's) as failed calls that did not take their engine down; returns how many. */
  sweep(caller?: string): number {
    const now = Date.now();
    let released = 0;
    for (const [id, entry] of this.held) {
      if (caller === undefined ? entry.expiresAt > now : entry.caller !== caller) continue;
      this.held.delete(id);
      this.router.failed(entry.placement, false);
      released++;
    }
    return released;
  }
}

/**
 * The router of scheduler/router.ts (health checks, metrics scrapes, prefix index, token-level KV
 * admission) as the one placement several gateways ask, so the working sets admitted to an engine
 * fit its memory however many gateways send calls. Placements are leased: those of a caller that
 * died are released after `leaseMs`.
 */
export class SharedPlacement {
  readonly router: Router;
  readonly leaseMs: number;
  private readonly blockSize: number;
  private readonly book: PlacementBook;
  private readonly chains: ChainBlocks;
  private readonly sweeper: NodeJS.Timeout;

  /** Starts the router's health checks and the lease sweep; `close()` stops them. */
  constructor(options: PlacementOptions) {
    const { leaseMs, maxChains } = { ...PLACEMENT_DEFAULTS, ...options };
    this.leaseMs = leaseMs;
    this.blockSize = options.routing?.blockSize ?? ROUTING_DEFAULTS.blockSize;
    this.router = createRouter(options.engines, options.routing, (options.metrics ?? createMetrics()).router);
    this.book = new PlacementBook(this.router, leaseMs);
    this.chains = new ChainBlocks(maxChains);
    this.sweeper = setInterval(() => this.book.sweep(), Math.max(1, Math.floor(leaseMs / 3)));
    this.sweeper.unref();
    this.router.start();
  }

  /**
   * Answers one call: its answer body, or undefined for none (HTTP 204). `gone` fires when the
   * caller goes away before its answer (an aborted acquire: the held call is dropped). `caller`
   * names who asked, so `releaseCaller` can end its placements at once. Throws the named errors
   * above, each with its `status`.
   */
  call(path: PlacementPath, body: unknown, gone: AbortSignal, caller?: string): Promise<object | undefined> | object | undefined {
    switch (path) {
      case '/v1/acquire':
        return this.acquire(parse(AcquireBody, body), gone, caller);
      case '/v1/place': {
        const { exclude, ...call } = parse(PlaceBody, body);
        const unknownEnded = this.applyEnded(call.ended);
        return this.answer(this.router.placeRequest(this.requestOf(call), new Set(exclude)), unknownEnded, caller);
      }
      case '/v1/finished':
        return { unknown: this.applyEnded(parse(FinishedBody, body).ended) };
      case '/v1/failed': {
        const failed = parse(FailedBody, body);
        this.router.failed(this.book.take(failed.id), failed.engineDown, failed.timedOut);
        return undefined;
      }
      case '/v1/renew':
        return { unknown: this.book.renew(parse(RenewBody, body).ids) };
      case '/v1/sessions/forget':
        this.router.forgetSession(parse(ForgetBody, body).sessionId);
        return undefined;
      case '/v1/instances':
        return this.instances();
    }
  }

  /**
   * Ends every placement `caller` holds, as failed calls that did not take their engine down: a
   * caller known to be gone (a gateway process that died) frees its KV reservations now, not a
   * lease later. Returns how many it held.
   */
  releaseCaller(caller: string): number {
    return this.book.sweep(caller);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.router.close();
  }

  private async acquire(body: z.output<typeof AcquireBody>, gone: AbortSignal, caller: string | undefined): Promise<PlacementAnswer | undefined> {
    const unknownEnded = this.applyEnded(body.ended);
    const placement = await this.router.admit(this.requestOf(body), gone);
    // The caller left as the call was let through: nobody will end it, so it ends here.
    if (placement && gone.aborted) {
      this.router.failed(placement, false);
      return undefined;
    }
    return this.answer(placement, unknownEnded, caller);
  }

  private requestOf(call: CallBody): RouteRequest {
    if (call.blockSize !== this.blockSize) {
      throw new PlacementRequestError(`blockSize ${call.blockSize} differs from the service's ${this.blockSize} (routing.blockSize)`);
    }
    const blocks = this.chains.resolve(call.chainId, call.base, call.blocks);
    if (!blocks) throw new StaleChainBaseError(`chain ${call.chainId}: no ${call.base!.blocks}-block prefix ending in ${call.base!.hash}; send every block`);
    const { chainId, blockSize, promptTokens, expectedOutputTokens, home } = call;
    return { chainId, blocks, blockSize, promptTokens, expectedOutputTokens, home };
  }

  private answer(placement: RequestPlacement | undefined, unknownEnded: string[], caller: string | undefined): PlacementAnswer {
    return {
      placement: placement ? { id: this.book.add(placement, caller), instance: placement.instance } : null,
      unknownEnded,
      leaseMs: this.leaseMs,
    };
  }

  /** Applies the ends a request carries (first: they free what the call may be admitted to); returns the ids not held. */
  private applyEnded(ended: readonly EndedCall[]): string[] {
    return ended.flatMap((end) => {
      const placement = this.book.takeHeld(end.id);
      if (!placement) return [end.id];
      this.router.ended(placement, end.outputTokens, this.chains.resolve(placement.request.chainId, end.base, end.blocks) ?? []);
      return [];
    });
  }

  private instances(): InstancesAnswer {
    const router = this.router;
    return {
      blockSize: this.blockSize,
      maxAttempts: router.maxAttempts,
      waiting: router.waiting,
      instances: router.registry.views().map((v) => ({
        name: v.name,
        healthy: v.healthy,
        kvCapacityTokens: Number.isFinite(v.kvCapacityTokens) ? v.kvCapacityTokens : 2 ** 31,
        inFlightRequests: v.inFlightRequests,
        ...router.admission(v.name),
      })),
    };
  }
}
