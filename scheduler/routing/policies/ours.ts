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
  /**
   * The idle-engine move, behind the router's admission only: a chain staying where its prefix is
   * goes instead to an engine offered idle (nothing in flight, nothing reserved) when the other chains' load where it is (tokens in
   * flight + reserved there) is at least this many times its cached prefix there. Such an engine
   * appears in a closed batch's tail, when the long episodes still running share engines while
   * others have emptied; recomputing the prefix there costs compute nobody else wanted, and every
   * later turn decodes without the others' contexts. Default 2, measured with bench:routing's agent
   * batches behind the router's admission (with `idleMoveMinCalls` 20), output tokens/s against
   * the policy without the move, chosen on seeds 1–6 and checked on seeds 7–18: +0.9% (se 0.4%) at
   * preset KV, +1.7% (se 0.7%) at ample, +0.1% at 300k, −0.3% (se 0.2%) at scarce (1 and 3: within
   * 1% of 2); the Mooncake trace unchanged (its sessions make few calls). Without admission an
   * engine with nothing in flight may only be waiting for its chains' tool calls: there the move
   * measured −2% at scarce KV (seeds 1–3), so it is not made.
   */
  idleMoveLoadRatio?: number;
  /**
   * Calls a chain must have made (this policy counts them) before it may make the idle-engine
   * move: a chain this long is likely in the batch's long tail, with turns enough left to repay the
   * recompute; a young one would only move off engines that are idle for a tool call. Default 20
   * (without it: −1.2% at 300k KV; 10 and 30 within 0.3% of 20).
   */
  idleMoveMinCalls?: number;
}

/**
 * Ours (spec "ours"): keep a chain on the instance holding its longest reusable prefix (when it is a
 * real share of the prompt) while that instance has free KV memory above a threshold — or, behind
 * the router's admission (kv-gate.ts), while admission offers it, since admission has checked the
 * memory; otherwise, or for a new chain, the instance of lowest cost — prompt tokens to recompute
 * there plus the token load in flight plus the memory other admitted chains claim — among
 * instances with room for the request (all of them if none has). Load and memory are counted in
 * tokens, not requests, because agent contexts differ by 100×. One exception to staying: a chain
 * that has made many calls leaves a crowded instance for an idle one (`idleMoveLoadRatio`).
 */
export class OursPolicy implements RoutingPolicy {
  readonly name = 'ours';
  private readonly minFree: number;
  private readonly prefillWeight: number;
  private readonly minReuse: number;
  private readonly reservedWeight: number;
  private readonly idleMoveLoadRatio: number;
  private readonly idleMoveMinCalls: number;
  /** chain → calls routed, until its session closes; insertion order is recency (at most `MAX_CHAINS`). */
  private readonly calls = new Map<string, number>();

  constructor(options: OursOptions = {}) {
    this.minFree = options.minFreeFraction ?? 0.1;
    this.prefillWeight = options.prefillWeight ?? 2;
    this.minReuse = options.minReuseFraction ?? 0.5;
    this.reservedWeight = options.reservedWeight ?? 1;
    this.idleMoveLoadRatio = options.idleMoveLoadRatio ?? 2;
    this.idleMoveMinCalls = options.idleMoveMinCalls ?? 20;
  }

  onChainsClosed(closed: (chainId: string) => boolean): void {
    for (const chainId of [...this.calls.keys()]) if (closed(chainId)) this.calls.delete(chainId);
  }

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const matched = matchedTokens(request, instances, prefix);
    const calls = this.calls.get(request.chainId) ?? 0;
    this.calls.delete(request.chainId);
    this.calls.set(request.chainId, calls + 1);
    if (this.calls.size > MAX_CHAINS) this.calls.delete(this.calls.keys().next().value!);
    const need = request.promptTokens + request.expectedOutputTokens;
    let holder = -1;
    for (let i = 0; i < instances.length; i++) if (matched[i]! > 0 && (holder < 0 || matched[i]! > matched[holder]!)) holder = i;
    if (holder >= 0 && matched[holder]! >= this.minReuse * request.promptTokens) {
      const v = instances[holder]!;
      if (calls >= this.idleMoveMinCalls && v.inFlightTokens + (v.kvReservedTokens ?? 0) >= this.idleMoveLoadRatio * matched[holder]!) {
        // Without the router's admission nothing tells an idle engine from one whose chains are on tool calls.
        const idle = instances.findIndex((u) => u.inFlightRequests === 0 && u.kvReservedTokens === 0 && u.kvCapacityTokens >= need);
        if (idle >= 0) return this.decision(instances, idle, matched);
      }
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

/** Chains whose calls are counted; the least recently routed beyond it are forgotten (a session never closed). */
const MAX_CHAINS = 100_000;

/**
 * KV tokens still free: the engine's usage misses requests queued but not yet admitted, the
 * router's in-flight count misses nothing it sent, so the larger of the two is the better estimate.
 */
function free(v: InstanceView): number {
  return v.kvCapacityTokens - Math.max(v.kvUsedTokens, v.inFlightTokens);
}
