import { HomePolicy } from './home-policy.js';
import { InstanceRegistry, REGISTRY_DEFAULTS, type InFlightCall, type RegisteredInstance, type RegistryOptions } from './registry.js';
import { IncrementalHasher, DEFAULT_BLOCK_SIZE } from './routing/block-hash.js';
import { KvGate, KV_GATE_DEFAULTS, type KvGateOptions } from './routing/kv-gate.js';
import { createPolicy, POLICY_NAMES, type PolicyName, type PolicyOptionsByName } from './routing/policies/index.js';
import { PrefixIndex } from './routing/prefix-index.js';
import { EventsOrEstimate, KvEventIndex, type KvBatchResult, type KvEventBatch, type KvEventIndexOptions } from './routing/kv-event-index.js';
import { VllmKvEventFeed } from './kv-events/vllm-feed.js';
import type { RouterMetrics } from '../telemetry/metrics.js';
import type { BlockHashes, InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from './routing/types.js';

/** What a prefix index may take from the router beyond lookups; the router feeds what it has. */
export interface PrefixIndexUpdates {
  /** `instance` now holds these blocks of `chainId` (a prompt routed there, or prompt + output once finished). */
  insert(instance: string, blocks: BlockHashes, chainId: string): void;
  /** The instance went down: its cache is gone (it may come back restarted). */
  dropInstance(instance: string): void;
}

export type RouterPrefixIndex = PrefixLookup & Partial<PrefixIndexUpdates>;

export interface RouterOptions {
  /** Tokens per block of the hashes `blockHashes` returns. Default 64. */
  blockSize?: number;
  /**
   * Chained block hashes of a chain's tokens, `tokens` then `tail` (its prompt, later prompt and
   * sampled ids); full blocks only. The answer is kept as it is (not copied): it must not change
   * afterwards. Default: none (`[]`), so prefix-aware policies see no matches.
   */
  blockHashes?: (chainId: string, tokens: ArrayLike<number>, tail?: ArrayLike<number>) => BlockHashes;
  /** Engines one generation may be sent to, the first included, before its failure is final. Default 3. */
  maxAttempts?: number;
  /**
   * Token-level admission (`acquire` holds a call that fits no instance's KV memory until one has
   * room). Default none: `acquire` places every call at once.
   */
  gate?: KvGateOptions;
  /** Clock in ms (the gate's waits and reservations). Default `Date.now`. */
  now?: () => number;
  /** Where placements, held calls and engine health are counted. Default none. */
  metrics?: RouterMetrics;
  /**
   * The engines' own KV events (routing/kv-event-index.ts), fed with `applyKvEvents`: lookups on
   * an instance whose feed is live come from them, the others from `prefix` (the estimate, still
   * fed). An index, or the options of a new one (of `blockSize`). Default none: `prefix` only.
   */
  kvEvents?: KvEventIndex | KvEventIndexOptions;
}

/** A subscription to one engine's KV events (kv-events/vllm-feed.ts), applying them to the router's index. */
export interface KvEventFeed {
  start(): void;
  close(): Promise<void>;
}

/** A call `admit` holds until the gate lets it through. */
interface Waiter {
  resolve: (placement: RequestPlacement | undefined) => void;
}

/** One model call to place. */
export interface RouteCall {
  /** The chain (trajectory) the call continues. */
  chainId: string;
  /** Read during the call, never copied (a view of the chain's token buffer is fine). */
  promptIds: ArrayLike<number>;
  /** Output tokens expected (the call's max_tokens). */
  expectedOutputTokens: number;
  /** The episode's home instance (admission's choice), if any. */
  home?: string;
}

/** A routed request placed on an instance and counted in its in-flight load until it ends. */
export interface RequestPlacement extends RouteDecision {
  readonly request: RouteRequest;
  readonly inFlight: InFlightCall;
}

/** A call placed on an instance; its prompt is kept to hash prompt + output when it finishes. */
export interface Placement extends RequestPlacement {
  readonly promptIds: ArrayLike<number>;
}

/**
 * What a generation needs from a router: the in-process `Router`, or `RemoteRouter`
 * (scheduler/placement) asking the placement service every gateway replica shares. A placement is
 * handed back only to the router that made it.
 */
export interface CallRouter {
  /** Engines one generation may be sent to, the first included, before its failure is final. */
  readonly maxAttempts: number;
  /** Engine health as placement sees it (episode admission asks it). */
  readonly registry: { readonly names: string[]; isHealthy(name: string): boolean };
  start(): void;
  close(): Promise<void>;
  /** The call's first placement; may wait for KV memory; undefined on abort or with no engine. */
  acquire(call: RouteCall, signal?: AbortSignal): Promise<{ readonly instance: string } | undefined>;
  /** A failover placement, at once, avoiding `exclude`. */
  place(call: RouteCall, exclude?: ReadonlySet<string>): { readonly instance: string } | undefined | Promise<{ readonly instance: string } | undefined>;
  finished(placement: { readonly instance: string }, sampledIds: ArrayLike<number>): void;
  /**
   * The call failed; `engineDown` when the engine did not answer, `timedOut` when that was a
   * timeout (slow, not refusing or failing: it takes out neither an engine answering streams nor
   * the last healthy one).
   */
  failed(placement: { readonly instance: string }, engineDown: boolean, timedOut?: boolean): void;
  /** The placement's engine delivered data on its generation stream (health checks' timeouts do not count against it meanwhile). */
  progressed?(placement: { readonly instance: string }): void;
  forgetSession(sessionId: string): void;
}

/**
 * Places model calls on engine instances: offers the healthy ones (with their load and memory) to
 * the policy, counts each call in flight until it ends, keeps the prefix index fed, and takes an
 * instance out when a call finds it dead. The retry elsewhere is the caller's (it knows whether
 * tokens already reached its client).
 */
export class Router implements CallRouter {
  readonly maxAttempts: number;
  private readonly blockSize: number;
  private readonly blockHashes: NonNullable<RouterOptions['blockHashes']>;
  private readonly gate: KvGate<Waiter> | undefined;
  private readonly now: () => number;
  private readonly metrics: RouterMetrics | undefined;
  /** Wakes the gate at its next deadline while calls wait. */
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  /** What policies look up: `prefix`, or it behind the engines' events. */
  private readonly prefix: RouterPrefixIndex;
  /** Set with `kvEvents`. */
  readonly kvLookup: EventsOrEstimate | undefined;
  /** Subscriptions to engines' KV events, started and closed with the router. */
  private readonly kvFeeds: KvEventFeed[] = [];

  constructor(
    readonly registry: InstanceRegistry,
    readonly policy: RoutingPolicy,
    prefix: RouterPrefixIndex,
    options: RouterOptions = {},
  ) {
    this.blockSize = options.blockSize ?? DEFAULT_BLOCK_SIZE;
    this.now = options.now ?? Date.now;
    if (options.kvEvents) {
      const events = options.kvEvents instanceof KvEventIndex ? options.kvEvents : new KvEventIndex(this.blockSize, options.kvEvents);
      this.kvLookup = new EventsOrEstimate(events, prefix, this.now);
    }
    this.prefix = this.kvLookup ?? prefix;
    this.blockHashes = options.blockHashes ?? (() => []);
    this.maxAttempts = options.maxAttempts ?? 3;
    this.gate = options.gate ? new KvGate(options.gate) : undefined;
    this.metrics = options.metrics;
    this.metrics?.watchEngines(() =>
      registry.names.map((instance) => {
        const scraped = registry.metrics(instance);
        return { instance, healthy: registry.isHealthy(instance), prefixHitRate: scraped?.prefixHitRate, kvUsage: scraped?.kvUsage };
      }),
    );
    registry.onDown((instance) => {
      this.metrics?.takenOut(instance);
      policy.onInstanceDown?.(instance);
      this.prefix.dropInstance?.(instance);
      this.gate?.dropInstance(instance);
    });
  }

  /**
   * One batch of `instance`'s KV events (its engine's publisher, converted to the engine-neutral
   * form by the subscriber). A result with a `gap` asks for those batches to be replayed.
   */
  applyKvEvents(instance: string, batch: KvEventBatch): KvBatchResult {
    if (!this.kvLookup) throw new Error('this router was made without kvEvents: it has no KV event index');
    return this.kvLookup.events.apply(instance, batch, this.now());
  }

  /** Starts `feed` with the router (now, if it has started) and closes it with the router. */
  addKvEventFeed(feed: KvEventFeed): void {
    if (!this.kvLookup) throw new Error('this router was made without kvEvents: it has no KV event index');
    this.kvFeeds.push(feed);
    if (this.started) feed.start();
  }

  /** Calls `acquire` holds for want of KV memory. */
  get waiting(): number {
    return this.gate?.waiting ?? 0;
  }

  /** Starts the registry's health checks and metrics scrapes. */
  start(): void {
    this.started = true;
    this.registry.start();
    for (const feed of this.kvFeeds) feed.start();
  }

  /** Stops the registry and the KV event feeds; calls still waiting get no instance. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    for (const held of [...(this.gate?.waitingCalls() ?? [])]) {
      this.gate!.cancel(held);
      held.payload.resolve(undefined);
    }
    await Promise.all(this.kvFeeds.map((feed) => feed.close()));
    await this.registry.close();
  }

  /**
   * A call's first placement. With a gate, a call that fits no healthy instance's KV memory waits
   * until one has room (a call ends, an idle chain's reservation lapses) or the gate's `maxWaitMs`
   * passes; an abort of `signal` ends the wait with undefined, as does having no healthy instance.
   */
  async acquire(call: RouteCall, signal?: AbortSignal): Promise<Placement | undefined> {
    const placement = await this.admit(this.request(call), signal);
    return placement && { ...placement, promptIds: call.promptIds };
  }

  /** `acquire` for a request already hashed into blocks (the placement service's callers). */
  admit(request: RouteRequest, signal?: AbortSignal): Promise<RequestPlacement | undefined> {
    const candidates = this.healthy(new Set());
    if (candidates.length === 0 || signal?.aborted) return Promise.resolve(undefined);
    const gate = this.gate;
    if (!gate) return Promise.resolve(this.commit(request, candidates));
    const fits = gate.admissible(request, candidates, this.now());
    if (fits.length > 0) return Promise.resolve(this.commit(request, fits));
    const heldAt = this.now();
    const waited = this.metrics?.hold();
    return new Promise((resolve) => {
      const onAbort = (): void => {
        if (!gate.cancel(held)) return;
        waited?.(this.now() - heldAt);
        resolve(undefined);
      };
      const held = gate.hold(request, heldAt, {
        resolve: (placement) => {
          signal?.removeEventListener('abort', onAbort);
          waited?.(this.now() - heldAt);
          resolve(placement);
        },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.arm();
    });
  }

  /**
   * Chooses a healthy instance not in `exclude` (those the call already failed on) and counts the
   * call there, at once (a failover: the call was admitted already); undefined when there is none.
   */
  place(call: RouteCall, exclude: ReadonlySet<string> = new Set()): Placement | undefined {
    const placement = this.placeRequest(this.request(call), exclude);
    return placement && { ...placement, promptIds: call.promptIds };
  }

  /** `place` for a request already hashed into blocks. */
  placeRequest(request: RouteRequest, exclude: ReadonlySet<string> = new Set()): RequestPlacement | undefined {
    const candidates = this.healthy(exclude);
    if (candidates.length === 0) return undefined;
    if (exclude.size > 0) this.metrics?.failover();
    return this.commit(request, candidates);
  }

  /** What token-level admission holds on an instance now (zero without a gate). */
  admission(instance: string): { reservedTokens: number; admittedChains: number } {
    return { reservedTokens: this.gate?.reservedTokens(instance) ?? 0, admittedChains: this.gate?.admittedChains(instance) ?? 0 };
  }

  private healthy(exclude: ReadonlySet<string>): InstanceView[] {
    return this.registry.views().filter((v) => v.healthy && !exclude.has(v.name));
  }

  private request(call: RouteCall): RouteRequest {
    return {
      chainId: call.chainId,
      blocks: this.blockHashes(call.chainId, call.promptIds),
      blockSize: this.blockSize,
      promptTokens: call.promptIds.length,
      expectedOutputTokens: call.expectedOutputTokens,
      home: call.home,
    };
  }

  private commit(request: RouteRequest, candidates: InstanceView[]): RequestPlacement {
    const decision = this.policy.route(request, candidates, this.prefix);
    if (!candidates.some((v) => v.name === decision.instance)) {
      throw new Error(`routing policy ${this.policy.name} chose ${decision.instance}, which it was not offered`);
    }
    this.prefix.insert?.(decision.instance, request.blocks, request.chainId);
    this.kvLookup?.placed(decision.instance, request.blocks, request.chainId);
    this.gate?.placed(request, decision.instance);
    const inFlight = this.registry.begin(decision.instance, request.promptTokens + request.expectedOutputTokens);
    this.metrics?.placed(decision.instance, request.promptTokens, decision.expectedCachedTokens, request.home !== undefined && request.home !== decision.instance);
    return { ...decision, request, inFlight };
  }

  /** The call ended on its instance (finished or aborted) with `sampledIds`, now cached there too. */
  finished(placement: Placement, sampledIds: ArrayLike<number>): void {
    const cached = this.prefix.insert && sampledIds.length > 0 ? this.blockHashes(placement.request.chainId, placement.promptIds, sampledIds) : [];
    this.ended(placement, sampledIds.length, cached);
  }

  /**
   * `finished` for a request already hashed: `outputTokens` were sampled, and `blocks` (prompt +
   * output, hashed by the caller) are now cached on the instance.
   */
  ended(placement: RequestPlacement, outputTokens: number, blocks: BlockHashes): void {
    this.release(placement, placement.request.promptTokens + outputTokens);
    if (blocks.length > 0) this.prefix.insert?.(placement.instance, blocks, placement.request.chainId);
  }

  /**
   * The call failed. When the engine did not answer (`engineDown`), the instance is taken out and
   * checked at once: a live engine that failed one request is back as soon as its check passes.
   * A timeout (`timedOut`) takes out neither an engine answering streams nor the last healthy one.
   */
  failed(placement: RequestPlacement, engineDown: boolean, timedOut = false): void {
    this.release(placement, 0);
    if (!engineDown) return;
    this.registry.markDown(placement.instance, timedOut);
    void this.registry.checkHealth(placement.instance);
  }

  progressed(placement: { readonly instance: string }): void {
    this.registry.progressed(placement.instance);
  }

  /**
   * The session's chains (ids `<sessionId>/<chain>`) will make no more calls: the policy releases
   * their sessions (policies counting live sessions per instance), admission frees the memory they
   * kept reserved for their next turn and lets waiting calls through.
   */
  forgetSession(sessionId: string): void {
    const prefix = routeChainId(sessionId, '');
    this.policy.onChainsClosed?.((chainId) => chainId.startsWith(prefix));
    if (!this.gate) return;
    this.gate.forgetChains(prefix);
    this.pump();
  }

  private release(placement: RequestPlacement, cachedTokens: number): void {
    this.registry.end(placement.inFlight);
    this.kvLookup?.ended(placement.instance, placement.request.chainId);
    this.policy.onFinished?.(placement.request, placement.instance);
    if (!this.gate) return;
    this.gate.ended(placement.request, placement.instance, this.now(), cachedTokens);
    this.pump();
  }

  /** Lets waiting calls through that fit now. */
  private pump(): void {
    const gate = this.gate!;
    if (gate.waiting === 0) return;
    gate.pump(
      this.now(),
      () => this.healthy(new Set()),
      (held, candidates) => held.payload.resolve(candidates.length > 0 ? this.commit(held.request, candidates) : undefined),
    );
    this.arm();
  }

  /** Sets the wake-up for the gate's next deadline while calls wait. */
  private arm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const deadline = this.gate!.waiting > 0 ? this.gate!.nextDeadline() : undefined;
    if (deadline === undefined) return;
    // At least 1 ms: a deadline rounded into the past must not spin.
    this.timer = setTimeout(() => this.pump(), Math.max(1, deadline - this.now()));
    this.timer.unref();
  }
}

/** The id a session's chain is routed under; sticky policies and admission key on it. */
export function routeChainId(sessionId: string, chainIndex: number | ''): string {
  return `${sessionId}/${chainIndex}`;
}

/** The benchmarked policies (scheduler/routing/policies) and `home` (scheduler/home-policy.ts). */
export const ROUTER_POLICY_NAMES: readonly [RouterPolicyName, ...RouterPolicyName[]] = ['home', ...POLICY_NAMES];
export type RouterPolicyName = PolicyName | 'home';

/** Configuration of the production router (`createRouter`); every key optional. */
export interface RoutingOptions extends Omit<RegistryOptions, 'now'> {
  /** The policy, by name (`ROUTER_POLICY_NAMES`). Default `ours`. */
  policy?: RouterPolicyName;
  /** The policy's thresholds (its `…Options`); unknown keys are ignored. Default `{}`: its defaults. */
  policyOptions?: Record<string, number>;
  /** Tokens per block of the prefix index. Default 64. */
  blockSize?: number;
  /** Engines one generation may be sent to, the first included, before its failure is final. Default 3. */
  maxAttempts?: number;
  /** Token-level admission of calls (routing/kv-gate.ts); every key optional. */
  admission?: AdmissionGateOptions;
  /**
   * Routing on the engines' own KV events where they publish them (`Router.applyKvEvents`),
   * the estimated index elsewhere. Default: on, with the index's defaults, when an instance has
   * `kvEvents` (its feed is subscribed to), else off. `mapping` is not configurable here: real
   * engines' blocks are mapped by their token ids.
   */
  kvEvents?: Omit<KvEventIndexOptions, 'mapping'>;
}

/** The router's token-level admission in configuration. */
export interface AdmissionGateOptions extends Omit<KvGateOptions, 'maxChains'> {
  /** Whether calls that fit no instance's KV memory wait in the router. Default true. */
  enabled?: boolean;
}

export const ROUTING_DEFAULTS = {
  ...REGISTRY_DEFAULTS,
  policy: 'ours',
  blockSize: DEFAULT_BLOCK_SIZE,
  maxAttempts: 3,
  admission: {
    enabled: true,
    fillFraction: KV_GATE_DEFAULTS.fillFraction,
    arrivalHeadroom: KV_GATE_DEFAULTS.arrivalHeadroom,
    idleTtlMs: KV_GATE_DEFAULTS.idleTtlMs,
    returnQuantile: KV_GATE_DEFAULTS.returnQuantile,
    maxWaitMs: KV_GATE_DEFAULTS.maxWaitMs,
  },
} as const satisfies Required<Omit<RoutingOptions, 'policyOptions' | 'kvEvents'>>;

/**
 * A router: the named policy, a prefix index bounded by each instance's KV capacity, token-level
 * admission (unless disabled), health checks and metrics, and a subscription to the KV events of
 * each instance that publishes them (`kvEvents.endpoint`), started and closed with the router.
 */
export function createRouter(instances: readonly RegisteredInstance[], options: RoutingOptions = {}, metrics?: RouterMetrics): Router {
  const { policy, policyOptions, blockSize, maxAttempts, admission, kvEvents, ...registryOptions } = { ...ROUTING_DEFAULTS, ...options };
  const { enabled, ...gate } = { ...ROUTING_DEFAULTS.admission, ...admission };
  const index = new PrefixIndex(blockSize);
  for (const i of instances) if (i.kvCapacityTokens !== undefined) index.setCapacity(i.name, i.kvCapacityTokens);
  const hasher = new IncrementalHasher({ blockSize });
  const publishing = instances.flatMap((i) => (i.kvEvents?.endpoint ? [{ name: i.name, source: { ...i.kvEvents, endpoint: i.kvEvents.endpoint } }] : []));
  const router = new Router(
    new InstanceRegistry(instances, registryOptions),
    policy === 'home' ? new HomePolicy() : createPolicy(policy, (policyOptions ?? {}) as PolicyOptionsByName[PolicyName]),
    index,
    {
      blockSize,
      maxAttempts,
      blockHashes: (chainId, ids, tail) => hasher.hashes(chainId, ids, tail),
      gate: enabled ? gate : undefined,
      metrics,
      kvEvents: kvEvents || publishing.length > 0 ? { ...kvEvents, mapping: 'tokens' } : undefined,
    },
  );
  for (const { name, source } of publishing) router.addKvEventFeed(new VllmKvEventFeed({ instance: name, source, apply: (batch) => router.applyKvEvents(name, batch) }));
  return router;
}
