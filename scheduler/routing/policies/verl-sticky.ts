import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from '../types.js';
import { argmin, decide } from './util.js';

export interface VerlStickyOptions {
  /** Bindings remembered; the least recently used is forgotten beyond it (verl's LRU size). Default 10,000. */
  maxBindings?: number;
}

/**
 * verl's default (AsyncLLMServerManager): a trajectory stays on the server it first went to for
 * its whole life, whatever that server's load or memory; a new trajectory goes to the server with
 * the fewest requests in flight (the spec's rule; verl itself counts trajectories ever assigned,
 * which balances the same way at the start of a batch).
 */
export class VerlStickyPolicy implements RoutingPolicy {
  readonly name = 'verl-sticky';
  private readonly maxBindings: number;
  /** chain → instance; insertion order is recency. */
  private readonly binding = new Map<string, string>();

  constructor(options: VerlStickyOptions = {}) {
    this.maxBindings = options.maxBindings ?? 10_000;
  }

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const bound = this.binding.get(request.chainId);
    let pick: string;
    if (bound !== undefined && instances.some((v) => v.name === bound)) {
      pick = bound;
      this.binding.delete(request.chainId);
    } else {
      pick = instances[argmin(instances, (v) => v.inFlightRequests)]!.name;
    }
    this.binding.set(request.chainId, pick);
    if (this.binding.size > this.maxBindings) this.binding.delete(this.binding.keys().next().value!);
    return decide(request, pick, prefix);
  }

  onInstanceDown(instance: string): void {
    for (const [chain, bound] of this.binding) if (bound === instance) this.binding.delete(chain);
  }
}
