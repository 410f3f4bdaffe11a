import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from '../types.js';
import { argmin, decide } from './util.js';

export interface DynamoCostOptions {
  /** Dynamo's `overlap_score_weight`: weight of the prefill blocks against the decode blocks. Default 1. */
  overlapScoreWeight?: number;
}

/**
 * Dynamo's KV router: argmin of `overlap_score_weight · prefill blocks + decode blocks`, where
 * prefill blocks are the request's prompt blocks the instance does not hold and decode blocks are
 * the instance's active blocks (tracked by the router from its own decisions: tokens in flight)
 * plus the request's own.
 */
export class DynamoCostPolicy implements RoutingPolicy {
  readonly name = 'dynamo-cost';
  private readonly weight: number;

  constructor(options: DynamoCostOptions = {}) {
    this.weight = options.overlapScoreWeight ?? 1;
  }

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const bs = request.blockSize;
    const i = argmin(instances, (v) => {
      const cached = prefix.matchedBlocks(v.name, request.blocks) * bs;
      const prefill = Math.max(0, request.promptTokens - cached) / bs;
      const decode = (v.inFlightTokens + request.promptTokens) / bs;
      return this.weight * prefill + decode;
    });
    return decide(request, instances[i]!.name, prefix);
  }
}
