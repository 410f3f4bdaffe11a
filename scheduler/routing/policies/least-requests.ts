import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from '../types.js';
import { argmin, decide } from './util.js';

/** The instance with the fewest requests in flight. */
export class LeastRequestsPolicy implements RoutingPolicy {
  readonly name = 'least-requests';

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    return decide(request, instances[argmin(instances, (v) => v.inFlightRequests)]!.name, prefix);
  }
}
