import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from '../types.js';
import { argmin, decide, matchedTokens } from './util.js';

/**
 * Thresholds of SGLang's cache-aware router. Defaults are the spec's (32, 1.1, 0.5); sgl-router's
 * own have moved over releases (0.5 / 32 / 1.0001 in early versions, 0.3 / 64 / 1.5 now).
 */
export interface SglangCacheAwareOptions {
  /** Load gap (in-flight requests, max − min) above which the system counts as imbalanced. Default 32. */
  balanceAbsThreshold?: number;
  /** Load ratio (max / min) above which the system counts as imbalanced. Default 1.1. */
  balanceRelThreshold?: number;
  /** Matched fraction of the prompt above which the best-matching instance is taken. Default 0.5. */
  cacheThreshold?: number;
}

/**
 * SGLang's router: when loads are imbalanced (both thresholds exceeded) the least loaded instance;
 * otherwise the instance with the longest matched prefix if it covers more than `cacheThreshold`
 * of the prompt, else the least loaded (the spec's rule: sgl-router sends low matches to the
 * instance with the smallest tree, which our index approximates poorly). Load is requests in
 * flight; the prefix is our index in place of SGLang's approximate radix tree (both are fed by
 * routing decisions only).
 */
export class SglangCacheAwarePolicy implements RoutingPolicy {
  readonly name: string = 'sglang-cache-aware';
  private readonly abs: number;
  private readonly rel: number;
  private readonly cache: number;

  constructor(options: SglangCacheAwareOptions = {}) {
    this.abs = options.balanceAbsThreshold ?? 32;
    this.rel = options.balanceRelThreshold ?? 1.1;
    this.cache = options.cacheThreshold ?? 0.5;
  }

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const loads = instances.map((v) => v.inFlightRequests);
    const max = Math.max(...loads);
    const min = Math.min(...loads);
    const leastLoaded = instances[argmin(instances, (v) => v.inFlightRequests)]!.name;
    if (max - min > this.abs && max > this.rel * min) return decide(request, leastLoaded, prefix);
    const matched = matchedTokens(request, instances, prefix);
    let best = 0;
    for (let i = 1; i < instances.length; i++) if (matched[i]! > matched[best]!) best = i;
    const fraction = request.promptTokens > 0 ? matched[best]! / request.promptTokens : 0;
    return decide(request, fraction > this.cache ? instances[best]!.name : leastLoaded, prefix);
  }
}
