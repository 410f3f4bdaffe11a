import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from '../types.js';
import { decide } from './util.js';

/** Cycles through the instances offered, ignoring every signal. */
export class RoundRobinPolicy implements RoutingPolicy {
  readonly name = 'round-robin';
  private next = 0;

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const pick = instances[this.next++ % instances.length]!;
    return decide(request, pick.name, prefix);
  }
}
