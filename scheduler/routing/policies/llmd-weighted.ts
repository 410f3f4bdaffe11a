import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from '../types.js';
import { argmin, decide } from './util.js';

/** Weights of llm-d's default scoring profile. */
export interface LlmdWeightedOptions {
  /** Weight of the prefix-cache scorer. Default 3. */
  prefixWeight?: number;
  /** Weight of the queue scorer. Default 2. */
  queueWeight?: number;
  /** Weight of the KV-cache-utilisation scorer. Default 2. */
  kvWeight?: number;
}

/**
 * llm-d's inference scheduler with its default profile: argmax of the weighted sum of
 * - prefix-cache scorer: matched blocks / prompt blocks;
 * - queue scorer: (maxQueue − queue) / (maxQueue − minQueue) over waiting requests, 1 for all
 *   when every queue is equal;
 * - KV-cache-utilisation scorer: 1 − used / capacity.
 */
export class LlmdWeightedPolicy implements RoutingPolicy {
  readonly name = 'llmd-weighted';
  private readonly wPrefix: number;
  private readonly wQueue: number;
  private readonly wKv: number;

  constructor(options: LlmdWeightedOptions = {}) {
    this.wPrefix = options.prefixWeight ?? 3;
    this.wQueue = options.queueWeight ?? 2;
    this.wKv = options.kvWeight ?? 2;
  }

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const queues = instances.map((v) => v.queuedRequests);
    const maxQ = Math.max(...queues);
    const minQ = Math.min(...queues);
    // The highest score; ties go to the earliest instance.
    const best = argmin(instances, (v) => {
      const p = request.blocks.length > 0 ? prefix.matchedBlocks(v.name, request.blocks) / request.blocks.length : 0;
      const q = maxQ === minQ ? 1 : (maxQ - v.queuedRequests) / (maxQ - minQ);
      const kv = 1 - Math.min(1, v.kvUsedTokens / v.kvCapacityTokens);
      return -(this.wPrefix * p + this.wQueue * q + this.wKv * kv);
    });
    return decide(request, instances[best]!.name, prefix);
  }
}
