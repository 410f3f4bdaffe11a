import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from './routing/types.js';

/**
 * Routing by admission alone: a call goes to its episode's home instance (where admission placed
 * the episode, so its prefix stays cached there) while that instance is healthy, else to the
 * instance with the fewest in-flight tokens. The gateway's behaviour before the router, kept for
 * gateways built without a routing configuration.
 */
export class HomePolicy implements RoutingPolicy {
  readonly name = 'home';

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const pick =
      instances.find((v) => v.name === request.home) ??
      instances.reduce((best, v) => (v.inFlightTokens < best.inFlightTokens ? v : best));
    const cached = prefix.matchedBlocks(pick.name, request.blocks) * request.blockSize;
    return { instance: pick.name, expectedCachedTokens: Math.min(cached, request.promptTokens) };
  }
}
