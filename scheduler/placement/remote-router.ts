import type { z } from 'zod';
import type { RegisteredInstance } from '../registry.js';
import { commonPrefix, IncrementalHasher } from '../routing/block-hash.js';
import type { BlockHashes } from '../routing/types.js';
import { createRouter, ROUTING_DEFAULTS, type CallRouter, type Placement, type RouteCall, type Router, type RoutingOptions } from '../router.js';
import type { ChainBase } from './chain-blocks.js';
import { FinishedAnswer, InstancesAnswer, MAX_ENDED, PlacementAnswer, STALE_BASE_STATUS, type CallBody, type EndedCall, type PlacementPath } from './protocol.js';
import type { PlacementTransport } from './transport.js';

export interface RemoteRouterOptions {
  /** How the placement service is reached: `httpTransport(gateway.placementUrl, token)`, or `ipcTransport()` in a forked gateway process. */
  transport: PlacementTransport;
  /** The engines, for the local fallback router and the health view while the service is down. */
  engines: readonly RegisteredInstance[];
  /** The same `routing.*` as the service runs (block size, attempts, the fallback's policy). Default `{}`. */
  routing?: RoutingOptions;
  /** After the service failed a call, calls are routed locally for this long before it is asked again, ms. Default 5,000. */
  retryAfterMs?: number;
  /**
   * A call's end waits this long for a placement request to ride on before it is sent alone, ms:
   * under load most ends ride, so a model call costs the service one request instead of two, and
   * the service learns of an end at most this much later. Default 5.
   */
  endDelayMs?: number;
  /** Where degradation and recovery are reported. Default `console.warn`. */
  log?: (line: string) => void;
}

/** The service answered with an error status. */
export class PlacementServiceError extends Error {
  override name = 'PlacementServiceError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Chains whose last sent blocks are remembered (beyond it, a chain's next call sends all its blocks). */
const MAX_SENT_CHAINS = 4096;

/** A placement made by the service, or by the local fallback while the service was unreachable. */
type RemotePlacement =
  | { readonly instance: string; readonly via: 'service'; readonly id: string; readonly chainId: string; readonly promptIds: ArrayLike<number> }
  | { readonly instance: string; readonly via: 'local'; readonly placement: Placement };

/**
 * The router a gateway replica uses with `gateway.placementUrl`: every placement is asked of the
 * shared placement service (service.ts), so KV admission holds across replicas. Prompts are hashed
 * here, per chain and incrementally, exactly as `createRouter` does, and only the hashes and token
 * counts travel: of the hashes, those the service has not heard for the chain (its previous call
 * named the rest), and all of them again when the service answers that it lacks that prefix. A held acquire is one long-poll request: aborting it drops the held call in the
 * service. When the service cannot be reached (or fails), calls are routed by a local router over
 * the same engines and it is logged: degraded (each replica admits on its own) but never stalled.
 */
export class RemoteRouter implements CallRouter {
  readonly maxAttempts: number;
  readonly registry: CallRouter['registry'];
  private readonly local: Router;
  private readonly hasher: IncrementalHasher;
  private readonly blockSize: number;
  private readonly retryAfterMs: number;
  private readonly endDelayMs: number;
  private readonly log: (line: string) => void;
  /** Per chain, the blocks the service was last sent (insertion order is recency). */
  private readonly sent = new Map<string, BlockHashes>();
  /** Service placements in flight here, renewed so the service keeps them. */
  private readonly outstanding = new Set<string>();
  /** Engine health as the service last reported it. */
  private readonly health = new Map<string, boolean>();
  /** Ends not sent yet: they ride on the next placement request, or go alone after `endDelayMs`. */
  private ended: EndedCall[] = [];
  private endTimer: NodeJS.Timeout | undefined;
  private localUntil = 0;
  private degraded = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: RemoteRouterOptions) {
    const routing = { ...ROUTING_DEFAULTS, ...options.routing };
    this.maxAttempts = routing.maxAttempts;
    this.blockSize = routing.blockSize;
    this.retryAfterMs = options.retryAfterMs ?? 5_000;
    this.endDelayMs = options.endDelayMs ?? 5;
    this.log = options.log ?? ((line) => console.warn(line));
    this.hasher = new IncrementalHasher({ blockSize: this.blockSize });
    this.local = createRouter(options.engines, options.routing);
    const local = this.local;
    this.registry = {
      get names() {
        return local.registry.names;
      },
      isHealthy: (name) => (this.degraded ? local.registry.isHealthy(name) : (this.health.get(name) ?? local.registry.isHealthy(name))),
    };
  }

  /**
   * Starts the fallback's health checks, and every `healthIntervalMs` renews the service
   * placements in flight and reads engine health from the service (keep it below a third of the
   * service's lease).
   */
  start(): void {
    this.local.start();
    const interval = this.options.routing?.healthIntervalMs ?? ROUTING_DEFAULTS.healthIntervalMs;
    this.timer = setInterval(() => void this.tick(), interval);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.sendEnded();
    await this.local.close();
  }

  async acquire(call: RouteCall, signal?: AbortSignal): Promise<RemotePlacement | undefined> {
    if (this.serviceUp()) {
      try {
        return this.fromService(call, await this.withBase(call, (body) => this.call('/v1/acquire', body, PlacementAnswer, signal)));
      } catch (error) {
        if (signal?.aborted) return undefined;
        this.degrade(error);
      }
    }
    return this.fromLocal(await this.local.acquire(call, signal));
  }

  async place(call: RouteCall, exclude: ReadonlySet<string> = new Set()): Promise<RemotePlacement | undefined> {
    if (this.serviceUp()) {
      try {
        return this.fromService(call, await this.withBase(call, (body) => this.call('/v1/place', { ...body, exclude: [...exclude] }, PlacementAnswer)));
      } catch (error) {
        this.degrade(error);
      }
    }
    return this.fromLocal(this.local.place(call, exclude));
  }

  finished(placement: RemotePlacement, sampledIds: ArrayLike<number>): void {
    if (placement.via === 'local') return this.local.finished(placement.placement, sampledIds);
    this.outstanding.delete(placement.id);
    const delta = sampledIds.length > 0 ? this.delta(placement.chainId, this.hasher.hashes(placement.chainId, placement.promptIds, sampledIds), false) : { blocks: [] };
    this.queueEnded([{ id: placement.id, outputTokens: sampledIds.length, ...delta }]);
  }

  failed(placement: RemotePlacement, engineDown: boolean, timedOut = false): void {
    if (placement.via === 'local') return this.local.failed(placement.placement, engineDown, timedOut);
    this.outstanding.delete(placement.id);
    this.notify('/v1/failed', { id: placement.id, engineDown, timedOut });
  }

  /**
   * Stream progress reaches only the local fallback's registry (it keeps the engines it routes to
   * in while they answer): the service's own checks run on its own, unloaded event loop.
   */
  progressed(placement: RemotePlacement): void {
    this.local.progressed(placement);
  }

  forgetSession(sessionId: string): void {
    this.local.forgetSession(sessionId);
    if (this.serviceUp()) this.notify('/v1/sessions/forget', { sessionId });
  }

  /**
   * `send` with the call's new blocks and the ends waiting to be sent; again with all of its
   * blocks (the ends were applied) if the service lacks their base. When it fails otherwise, the
   * ends wait for the next request (one the service applied after all is skipped there).
   */
  private async withBase<T extends PlacementAnswer>(call: RouteCall, send: (body: CallBody) => Promise<T>): Promise<T> {
    const ended = this.takeEnded();
    try {
      return this.heardEnded(await send({ ...this.body(call, false), ended }));
    } catch (error) {
      if (!(error instanceof PlacementServiceError && error.status === STALE_BASE_STATUS)) {
        this.queueEnded(ended);
        throw error;
      }
      return send(this.body(call, true));
    }
  }

  private queueEnded(ended: EndedCall[]): void {
    this.ended.push(...ended);
    if (this.ended.length >= MAX_ENDED) void this.sendEnded();
    else this.endTimer ??= setTimeout(() => void this.sendEnded(), this.endDelayMs);
  }

  private takeEnded(): EndedCall[] {
    clearTimeout(this.endTimer);
    this.endTimer = undefined;
    return this.ended.splice(0, MAX_ENDED);
  }

  /** Sends the ends that found no request to ride on. */
  private async sendEnded(): Promise<void> {
    const ended = this.takeEnded();
    if (ended.length === 0) return;
    await this.call('/v1/finished', { ended }, FinishedAnswer).then(
      (answer) => this.heardEnded({ unknownEnded: answer.unknown }),
      (error: unknown) => this.log(`placement service /v1/finished failed: ${(error as Error).message}`),
    );
  }

  /** Ends the service no longer held were released by it already (their leases lapsed): said, not hidden. */
  private heardEnded<T extends { unknownEnded: string[] }>(answer: T): T {
    if (answer.unknownEnded.length > 0) this.log(`placement service did not hold ${answer.unknownEnded.length} ended placement(s) (lapsed unrenewed, or ended by a request whose answer was lost): ${answer.unknownEnded.slice(0, 3).join(', ')}`);
    return answer;
  }

  private body(call: RouteCall, all: boolean): CallBody {
    return {
      chainId: call.chainId,
      ...this.delta(call.chainId, this.hasher.hashes(call.chainId, call.promptIds), all),
      blockSize: this.blockSize,
      promptTokens: call.promptIds.length,
      expectedOutputTokens: call.expectedOutputTokens,
      home: call.home,
    };
  }

  /** `blocks` past what the chain last sent (all of them with `all`), and the base they continue; remembered as sent. */
  private delta(chainId: string, blocks: BlockHashes, all: boolean): { base?: ChainBase; blocks: number[] } {
    const last = this.sent.get(chainId);
    this.sent.delete(chainId);
    this.sent.set(chainId, blocks);
    if (this.sent.size > MAX_SENT_CHAINS) this.sent.delete(this.sent.keys().next().value!);
    const from = all || !last ? 0 : commonPrefix(last, blocks);
    const rest = Array.prototype.slice.call(blocks, from) as number[];
    return from > 0 ? { base: { blocks: from, hash: blocks[from - 1]! }, blocks: rest } : { blocks: rest };
  }

  private fromService(call: RouteCall, answer: PlacementAnswer): RemotePlacement | undefined {
    this.recovered();
    if (!answer.placement) return undefined;
    this.outstanding.add(answer.placement.id);
    return { via: 'service', instance: answer.placement.instance, id: answer.placement.id, chainId: call.chainId, promptIds: call.promptIds };
  }

  private fromLocal(placement: Placement | undefined): RemotePlacement | undefined {
    return placement && { via: 'local', instance: placement.instance, placement };
  }

  private serviceUp(): boolean {
    return Date.now() >= this.localUntil;
  }

  private degrade(error: unknown): void {
    this.localUntil = Date.now() + this.retryAfterMs;
    if (!this.degraded) this.log(`placement service at ${this.options.transport.name} failed (${(error as Error).message}): routing locally, admission per replica`);
    this.degraded = true;
  }

  private recovered(): void {
    if (this.degraded) this.log(`placement service at ${this.options.transport.name} is back: routing through it`);
    this.degraded = false;
  }

  /** A call whose answer nobody waits for (an end, a forget); a loss is repaired by the lease. */
  private notify(path: PlacementPath, body: object): void {
    this.send(path, body).catch((error: unknown) => this.log(`placement service ${path} failed: ${(error as Error).message}`));
  }

  private async tick(): Promise<void> {
    try {
      if (this.outstanding.size > 0) await this.send('/v1/renew', { ids: [...this.outstanding] });
      const answer = await this.call('/v1/instances', undefined, InstancesAnswer);
      for (const i of answer.instances) this.health.set(i.name, i.healthy);
      this.recovered();
    } catch (error) {
      this.degrade(error);
    }
  }

  private async call<T>(path: PlacementPath, body: object | undefined, schema: z.ZodType<T>, signal?: AbortSignal): Promise<T> {
    return schema.parse(await this.send(path, body, signal));
  }

  /** The answer's body; an error status throws. */
  private async send(path: PlacementPath, body: object | undefined, signal?: AbortSignal): Promise<unknown> {
    const answer = await this.options.transport.send(path, body, signal);
    if (answer.status < 200 || answer.status > 299) throw new PlacementServiceError(`${path} answered ${answer.status}: ${JSON.stringify(answer.body)?.slice(0, 300)}`, answer.status);
    return answer.body;
  }
}
