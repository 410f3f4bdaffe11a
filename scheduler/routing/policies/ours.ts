import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from '../types.js';
import { matchedTokens } from './util.js';

/** Thresholds of our policy; defaults measured with the simulator (bench/routing.ts). */
export interface OursOptions {
  /**
   * Fraction of its KV capacity the instance holding a chain's longest prefix must still have free
   * for the chain to stay there. Default 0.1.
   */
  minFreeFraction?: number;
  /** Cost of one prompt token to recompute, in tokens of queued load. Default 2. */
  prefillWeight?: number;
  /**
   * Share of the prompt the longest prefix must cover to bind: a chain's own context does, a task
   * prompt shared by siblings does not, so siblings spread by cost instead of piling up where the
   * first one went. Default 0.5.
   */
  minReuseFraction?: number;
  /**
   * Weight of the KV tokens the router's admission reserves for other chains on an instance
   * (`kvReservedTokens`), in tokens of queued load: a chain that must be placed goes where
   * memory is least claimed, so it is less likely to have to move again as contexts grow. Default 1.
   */
  reservedWeight?: number;
}

/**
 * Ours (spec "ours"): keep a chain on the instance holding its longest reusable prefix (when it is a
 * real share of the prompt) while that instance has free KV memory above a threshold — or, behind
 * the router's admission (kv-gate.ts), while admission offers it, since admission has checked the
 * memory; otherwise, or for a new chain, the instance of lowest cost — prompt tokens to recompute
 * there plus the token load in flight plus the memory other admitted chains claim — among
 * instances with room for the request (all of them if none has). Load and memory are counted in
 * tokens, not requests, because agent contexts differ by 100×.
 */
export class OursPolicy implements RoutingPolicy {
  readonly name = 'ours';
  private readonly minFree: number;
  private readonly prefillWeight: number;
  private readonly minReuse: number;
  private readonly reservedWeight: number;

  constructor(options: OursOptions = {}) {
    this.minFree = options.minFreeFraction ?? 0.1;
    this.prefillWeight = options.prefillWeight ?? 2;
    this.minReuse = options.minReuseFraction ?? 0.5;
    this.reservedWeight = options.reservedWeight ?? 1;
  }

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const matched = matchedTokens(request, instances, prefix);
    const need = request.promptTokens + request.expectedOutputTokens;
    let holder = -1;
    for (let i = 0; i < instances.length; i++) if (matched[i]! > 0 && (holder < 0 || matched[i]! > matched[holder]!)) holder = i;
    if (holder >= 0 && matched[holder]! >= this.minReuse * request.promptTokens) {
      const v = instances[holder]!;
      // An instance the router's admission offers has room for the chain already.
      if (v.kvReservedTokens !== undefined) return this.decision(instances, holder, matched);
      const freeAfter = free(v) - (need - matched[holder]!);
      if (freeAfter >= this.minFree * v.kvCapacityTokens) return this.decision(instances, holder, matched);
    }
    let best = -1;
    let bestCost = Infinity;
    let fallback = 0;
    let fallbackCost = Infinity;
    for (let i = 0; i < instances.length; i++) {
      const v = instances[i]!;
      const cost = this.prefillWeight * (request.promptTokens - matched[i]!) + v.inFlightTokens + this.reservedWeight * (v.kvReservedTokens ?? 0);
      if (cost < fallbackCost) {
        fallback = i;
        fallbackCost = cost;
      }
      if (free(v) >= need - matched[i]! && cost < bestCost) {
        best = i;
        bestCost = cost;
      }
    }
    return this.decision(instances, best >= 0 ? best : fallback, matched);
  }

  private decision(instances: readonly InstanceView[], i: number, matched: number[]): RouteDecision {
    return { instance: instances[i]!.name, expectedCachedTokens: matched[i]! };
  }
}

/**
 * KV tokens still free: the engine's usage misses requests queued but not yet admitted, the
 * router's in-flight count misses nothing it sent, so the larger of the two is the better estimate.
 */
function free(v: InstanceView): number {
  return v.kvCapacityTokens - Math.max(v.kvUsedTokens, v.inFlightTokens);
}
