import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from '../types.js';
import { argmin, decide } from './util.js';

/** Thresholds of Uni-Agent's KV-cache-aware balancer, as it ships them. */
export interface UniAgentKvAwareOptions {
  /**
   * KV cache usage (used / capacity) above which a session's replica counts as overloaded and the
   * session is placed again; also the capacity gate of that placement (a replica is eligible while
   * its free KV is at least `1 − loadThreshold` of its capacity). Uni-Agent's `load_threshold`,
   * default 0.9 (KVCAwareStrategyConfig and configs/agent_aware_router.yaml).
   */
  loadThreshold?: number;
  /** Session bindings remembered, least recently used forgotten beyond it (Uni-Agent's PerRequestStore). Default 10,000. */
  maxBindings?: number;
}

/**
 * Uni-Agent's `KVCAwareBalancer` with its default strategy (`KVCacheAwareStrategy`, slow cut
 * `capacity-token-aware`, overload mode `kv_cache_usage_perc`), read in verl-project/uni-agent at
 * commit f7842723c8d0 (`uni_agent/agent_aware_router/strategies/kvc_aware.py`, the defaults in
 * `config/strategy.py` and `configs/agent_aware_router.yaml` at 98d797746256, the session table in
 * `store/per_request_store.py` and `collectors/parse/basic/sticky.py`); the issue cites it as PR #141.
 *
 * - A session whose bound replica is offered and not overloaded (KV usage ≤ `loadThreshold`) stays.
 * - A session's first call (no binding) goes to the replica with the fewest tokens in flight.
 * - Otherwise (bound replica overloaded or not offered) the call goes to the replica with the most
 *   KV room left after it — free KV minus the prompt tokens not already cached there — among
 *   replicas whose free KV is at least `1 − loadThreshold` of capacity (all replicas when none is).
 * - Every placement binds (or rebinds) the session to the replica chosen; bindings outlive calls
 *   (an LRU of `maxBindings`) and are dropped when their replica leaves the pool.
 *
 * Ties go to the earliest instance, as Python's `min`/`max` do. Inputs: Uni-Agent reads vLLM's
 * `kv_cache_usage_perc` from /metrics and the prefix hit from vLLM's KV events; here they are
 * `kvUsedTokens / kvCapacityTokens` and the prefix index (the hit is matched full blocks over the
 * prompt's full blocks, applied to the whole prompt length, as Uni-Agent does). Two differences we
 * cannot remove: Uni-Agent's in-flight tokens count prompts only where our `inFlightTokens` adds the
 * expected output, and it takes one capacity for every replica where we use each instance's own.
 */
export class UniAgentKvAwarePolicy implements RoutingPolicy {
  readonly name = 'uni-agent-kv-aware';
  private readonly threshold: number;
  private readonly maxBindings: number;
  /** chain → instance; insertion order is recency. */
  private readonly binding = new Map<string, string>();

  constructor(options: UniAgentKvAwareOptions = {}) {
    this.threshold = options.loadThreshold ?? 0.9;
    this.maxBindings = options.maxBindings ?? 10_000;
    if (!(this.threshold > 0 && this.threshold < 1)) throw new Error(`loadThreshold must be in (0, 1), got ${this.threshold}`);
  }

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const bound = this.binding.get(request.chainId);
    const home = bound === undefined ? undefined : instances.find((v) => v.name === bound);
    let pick: string;
    if (home !== undefined && usage(home) <= this.threshold) {
      pick = home.name;
    } else if (bound === undefined) {
      pick = instances[argmin(instances, (v) => v.inFlightTokens)]!.name;
    } else {
      pick = instances[this.mostRoom(request, instances, prefix)]!.name;
    }
    this.binding.delete(request.chainId);
    this.binding.set(request.chainId, pick);
    if (this.binding.size > this.maxBindings) this.binding.delete(this.binding.keys().next().value!);
    return decide(request, pick, prefix);
  }

  onInstanceDown(instance: string): void {
    for (const [chain, bound] of this.binding) if (bound === instance) this.binding.delete(chain);
  }

  /** Index of the eligible instance with the most KV left after the request (of all of them when none is eligible). */
  private mostRoom(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): number {
    const blocks = request.blocks.length;
    let best = -1;
    let bestRemaining = -Infinity;
    let fallback = 0;
    let fallbackRemaining = -Infinity;
    for (let i = 0; i < instances.length; i++) {
      const v = instances[i]!;
      const avail = v.kvCapacityTokens * (1 - usage(v));
      const hit = blocks > 0 ? prefix.matchedBlocks(v.name, request.blocks) / blocks : 0;
      const remaining = avail - request.promptTokens * (1 - hit);
      if (remaining > fallbackRemaining) {
        fallback = i;
        fallbackRemaining = remaining;
      }
      if (avail >= v.kvCapacityTokens * (1 - this.threshold) && remaining > bestRemaining) {
        best = i;
        bestRemaining = remaining;
      }
    }
    return best >= 0 ? best : fallback;
  }
}

/** KV cache usage as vLLM's `kv_cache_usage_perc` reports it (a fraction). */
function usage(v: InstanceView): number {
  return v.kvCapacityTokens > 0 ? v.kvUsedTokens / v.kvCapacityTokens : 1;
}
