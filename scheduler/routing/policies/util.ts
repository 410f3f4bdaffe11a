/** Helpers shared by the policies. */
import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest } from '../types.js';

/** Index of the smallest `score`; ties go to the earliest instance, so decisions are reproducible. */
export function argmin(instances: readonly InstanceView[], score: (view: InstanceView, index: number) => number): number {
  let best = 0;
  let bestScore = Infinity;
  for (let i = 0; i < instances.length; i++) {
    const s = score(instances[i]!, i);
    if (s < bestScore) {
      best = i;
      bestScore = s;
    }
  }
  return best;
}

/** A decision for `instance`, with the prompt tokens the index expects it to hold. */
export function decide(request: RouteRequest, instance: string, prefix: PrefixLookup): RouteDecision {
  const cached = prefix.matchedBlocks(instance, request.blocks) * request.blockSize;
  return { instance, expectedCachedTokens: Math.min(cached, request.promptTokens) };
}

/** Matched prompt tokens per instance (same order as `instances`). */
export function matchedTokens(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): number[] {
  return instances.map((v) => Math.min(request.promptTokens, prefix.matchedBlocks(v.name, request.blocks) * request.blockSize));
}
