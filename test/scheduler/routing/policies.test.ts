import { describe, expect, it } from 'vitest';
import { createPolicy, isPolicyName, POLICY_NAMES } from '../../../scheduler/routing/policies/index.js';
import type { InstanceView, PrefixLookup, RouteRequest } from '../../../scheduler/routing/types.js';

const BS = 64;

/** An instance view with defaults: 100k capacity, idle. */
function view(name: string, over: Partial<InstanceView> = {}): InstanceView {
  return { name, kvCapacityTokens: 100_000, kvUsedTokens: 0, inFlightRequests: 0, inFlightTokens: 0, queuedRequests: 0, healthy: true, ...over };
}

/** A prompt of `blocks` full blocks (hashes 1..n) for `chainId`. */
function request(blocks: number, over: Partial<RouteRequest> = {}): RouteRequest {
  return { chainId: 'c', blocks: Array.from({ length: blocks }, (_, i) => i + 1), blockSize: BS, promptTokens: blocks * BS, expectedOutputTokens: 100, ...over };
}

/** A prefix lookup where instance `name` holds the first `held[name]` blocks. */
function holding(held: Record<string, number>): PrefixLookup {
  return { matchedBlocks: (instance, blocks) => Math.min(blocks.length, held[instance] ?? 0) };
}

const none = holding({});

describe('policy registry', () => {
  it('creates every named policy and rejects unknown names', () => {
    for (const name of POLICY_NAMES) expect(createPolicy(name).name).toBe(name);
    expect(isPolicyName('ours')).toBe(true);
    expect(isPolicyName('random')).toBe(false);
  });
});

describe('round-robin and least-requests', () => {
  it('round-robin cycles whatever the load', () => {
    const p = createPolicy('round-robin');
    const vs = [view('a', { inFlightRequests: 9 }), view('b'), view('c')];
    expect([0, 1, 2, 3].map(() => p.route(request(1), vs, none).instance)).toEqual(['a', 'b', 'c', 'a']);
  });

  it('least-requests takes the fewest in flight', () => {
    const p = createPolicy('least-requests');
    const vs = [view('a', { inFlightRequests: 3 }), view('b', { inFlightRequests: 1 }), view('c', { inFlightRequests: 2 })];
    expect(p.route(request(1), vs, holding({ a: 1 })).instance).toBe('b');
  });
});

describe('verl-sticky', () => {
  it('binds a trajectory to its first instance forever, new ones to the fewest in flight', () => {
    const p = createPolicy('verl-sticky');
    const first = p.route(request(1, { chainId: 'x' }), [view('a', { inFlightRequests: 2 }), view('b')], none);
    expect(first.instance).toBe('b');
    // b is now overloaded and out of memory: the binding holds.
    const loaded = [view('a'), view('b', { inFlightRequests: 50, kvUsedTokens: 100_000 })];
    expect(p.route(request(1, { chainId: 'x' }), loaded, none).instance).toBe('b');
    expect(p.route(request(1, { chainId: 'y' }), loaded, none).instance).toBe('a');
  });

  it('rebinds when the instance goes down', () => {
    const p = createPolicy('verl-sticky');
    p.route(request(1, { chainId: 'x' }), [view('a'), view('b', { inFlightRequests: 1 })], none);
    p.onInstanceDown!('a');
    expect(p.route(request(1, { chainId: 'x' }), [view('a', { inFlightRequests: 5 }), view('b', { inFlightRequests: 1 })], none).instance).toBe('b');
  });
});

describe('sglang-cache-aware (thresholds 32, 1.1, 0.5)', () => {
  const p = createPolicy('sglang-cache-aware');
  const prefix = holding({ a: 10 });

  it('takes the best match above half the prompt when balanced', () => {
    const vs = [view('a', { inFlightRequests: 40 }), view('b', { inFlightRequests: 10 })]; // gap 30 ≤ 32
    expect(p.route(request(10), vs, prefix)).toEqual({ instance: 'a', expectedCachedTokens: 640 });
  });

  it('goes least loaded when both imbalance thresholds are exceeded', () => {
    const vs = [view('a', { inFlightRequests: 43 }), view('b', { inFlightRequests: 10 })]; // gap 33 > 32, 4.3 > 1.1
    expect(p.route(request(10), vs, prefix).instance).toBe('b');
    // A large gap that is within 1.1× is still balanced.
    const close = [view('a', { inFlightRequests: 340 }), view('b', { inFlightRequests: 320 })];
    expect(p.route(request(10), close, prefix).instance).toBe('a');
  });

  it('goes least loaded when the match is at most half the prompt', () => {
    const vs = [view('a', { inFlightRequests: 5 }), view('b', { inFlightRequests: 1 })];
    expect(p.route(request(20), vs, prefix).instance).toBe('b'); // 10/20 = 0.5, not > 0.5
    expect(p.route(request(19), vs, prefix).instance).toBe('a'); // 10/19 > 0.5
  });
});

describe('llmd-weighted (3·prefix + 2·queue + 2·KV)', () => {
  const p = createPolicy('llmd-weighted');

  it('trades a full prefix (weight 3) against queue and KV scores (weight 2 each)', () => {
    const vs = [view('a', { queuedRequests: 2, kvUsedTokens: 50_000 }), view('b', { queuedRequests: 0, kvUsedTokens: 0 })];
    // a: 3·1 + 2·0 + 2·0.5 = 4; b: 0 + 2·1 + 2·1 = 4: a tie goes to the first instance.
    expect(p.route(request(4), vs, holding({ a: 4 })).instance).toBe('a');
    const fuller = [view('a', { queuedRequests: 2, kvUsedTokens: 60_000 }), vs[1]!];
    // a: 3 + 0 + 0.8 = 3.8 < b: 4.
    expect(p.route(request(4), fuller, holding({ a: 4 })).instance).toBe('b');
  });

  it('scores queues relative to the min and max (all 1 when equal)', () => {
    const vs = [view('a', { queuedRequests: 3, kvUsedTokens: 10_000 }), view('b', { queuedRequests: 3, kvUsedTokens: 20_000 })];
    expect(p.route(request(4), vs, none).instance).toBe('a');
    const q = [view('a', { queuedRequests: 4 }), view('b', { queuedRequests: 2 }), view('c', { queuedRequests: 3, kvUsedTokens: 40_000 })];
    // b: 2·1 + 2·1 = 4; c: 2·0.5 + 2·0.6 = 2.2 + prefix 3·0.5 = 3.7.
    expect(p.route(request(4), q, holding({ c: 2 })).instance).toBe('b');
  });
});

describe('dynamo-cost (uncached prefill blocks + decode blocks)', () => {
  it('trades cached blocks against active blocks one for one', () => {
    const p = createPolicy('dynamo-cost');
    // a: 10 prompt blocks cached of 10 → prefill 0, decode (1280 + 640)/64 = 30; b: prefill 10, decode 10 + 10 = 20 → 30 → tie → a.
    const vs = [view('a', { inFlightTokens: 1280 }), view('b', { inFlightTokens: 640 })];
    expect(p.route(request(10), vs, holding({ a: 10, b: 0 })).instance).toBe('a');
    // One more active block on a tips it to b.
    const busier = [view('a', { inFlightTokens: 1344 }), vs[1]!];
    expect(p.route(request(10), busier, holding({ a: 10, b: 0 })).instance).toBe('b');
  });

  it('weights the prefill blocks by overlap_score_weight', () => {
    const p = createPolicy('dynamo-cost', { overlapScoreWeight: 2 });
    const busier = [view('a', { inFlightTokens: 1344 }), view('b', { inFlightTokens: 640 })];
    expect(p.route(request(10), busier, holding({ a: 10 })).instance).toBe('a');
  });
});

describe('ours', () => {
  it('keeps a chain on the instance with its longest prefix while memory is free there', () => {
    const p = createPolicy('ours');
    // a holds the prefix and is busier in tokens; it still has well over 10% free after the request.
    const vs = [view('a', { inFlightTokens: 40_000, kvUsedTokens: 40_000 }), view('b')];
    expect(p.route(request(100), vs, holding({ a: 100 }))).toEqual({ instance: 'a', expectedCachedTokens: 6400 });
  });

  it('unbinds under memory pressure and places by cost', () => {
    const p = createPolicy('ours');
    // a would be left with 100k − 92k − 100 new tokens < 10% free.
    const vs = [view('a', { inFlightTokens: 92_000, kvUsedTokens: 60_000 }), view('b', { inFlightTokens: 10_000 })];
    expect(p.route(request(100), vs, holding({ a: 100 })).instance).toBe('b');
    // With the threshold at 0 the binding holds.
    const lax = createPolicy('ours', { minFreeFraction: 0 });
    expect(lax.route(request(100), vs, holding({ a: 100 })).instance).toBe('a');
  });

  it('otherwise places at the lowest recompute + queued tokens, among instances that can hold it', () => {
    const p = createPolicy('ours', { prefillWeight: 1 });
    // c holds half the prompt but would drop below 10% free (12k − 3.3k); a has no room (5k < 6.5k).
    const vs = [view('a', { inFlightTokens: 3000, kvUsedTokens: 95_000 }), view('b', { inFlightTokens: 5000 }), view('c', { inFlightTokens: 9000, kvUsedTokens: 88_000 })];
    // b costs 6400 + 5000 = 11400; c costs 3200 + 9000 = 12200; a (cheapest, 6400 + 3000) cannot hold it.
    expect(p.route(request(100), vs, holding({ c: 50 })).instance).toBe('b');
    // Weighting recompute double flips it to c (12800 + 5000 vs 6400 + 9000).
    const heavy = createPolicy('ours', { prefillWeight: 2 });
    expect(heavy.route(request(100), vs, holding({ c: 50 })).instance).toBe('c');
  });

  it('falls back to the cheapest instance when none has room', () => {
    const p = createPolicy('ours');
    const vs = [view('a', { inFlightTokens: 120_000 }), view('b', { inFlightTokens: 110_000 })];
    expect(p.route(request(100), vs, none).instance).toBe('b');
  });

  it("behind the router's admission: stays on the prefix holder it is offered, whatever its own memory check says", () => {
    const p = createPolicy('ours');
    // Without admission a would be left below 10% free (as in 'unbinds under memory pressure').
    const vs = [view('a', { inFlightTokens: 92_000, kvUsedTokens: 60_000, kvReservedTokens: 80_000 }), view('b', { kvReservedTokens: 0 })];
    expect(p.route(request(100), vs, holding({ a: 100 })).instance).toBe('a');
  });

  it('behind admission, places a chain without a reusable prefix where other chains claim the least memory', () => {
    const p = createPolicy('ours');
    const vs = [view('a', { inFlightTokens: 5_000, kvReservedTokens: 60_000 }), view('b', { inFlightTokens: 20_000, kvReservedTokens: 10_000 })];
    // a: 2·6400 + 5000 + 60000; b: 2·6400 + 20000 + 10000.
    expect(p.route(request(100), vs, none).instance).toBe('b');
    expect(createPolicy('ours', { reservedWeight: 0 }).route(request(100), vs, none).instance).toBe('a');
  });

  describe('the idle-engine move (idleMoveLoadRatio 2, idleMoveMinCalls 20)', () => {
    const held = holding({ a: 100 });
    // a holds the chain's 6,400 prefix tokens under 10k in flight + 5k reserved by others (≥ 2 × 6,400);
    // b is idle; c has nothing in flight but a chain's reservation (one on a tool call).
    const vs = [view('a', { inFlightRequests: 3, inFlightTokens: 10_000, kvReservedTokens: 5_000 }), view('b', { kvReservedTokens: 0 }), view('c', { kvReservedTokens: 1_000 })];
    /** The instances of the chain's first `n` calls. */
    const route = (p: ReturnType<typeof createPolicy>, views: InstanceView[], n: number, chainId = 'c') =>
      Array.from({ length: n }, () => p.route(request(100, { chainId }), views, held).instance);

    it('moves a chain that has made 20 calls off a crowded prefix holder to an idle engine', () => {
      const p = createPolicy('ours');
      const placed = route(p, vs, 21);
      expect(placed.slice(0, 20)).toEqual(Array(20).fill('a'));
      expect(placed[20]).toBe('b');
      // Other chains keep their own count.
      expect(p.route(request(100, { chainId: 'other' }), vs, held).instance).toBe('a');
    });

    it('stays when the others load the holder less than twice its prefix, or no engine is idle', () => {
      const light = [view('a', { inFlightRequests: 2, inFlightTokens: 8_000, kvReservedTokens: 4_000 }), ...vs.slice(1)];
      expect(route(createPolicy('ours'), light, 21)[20]).toBe('a');
      // c has nothing in flight, but a chain on its tool call will be back there: not idle.
      expect(route(createPolicy('ours'), [vs[0]!, vs[2]!], 21)[20]).toBe('a');
      expect(route(createPolicy('ours', { idleMoveLoadRatio: 1.5 }), light, 21)[20]).toBe('b');
      expect(route(createPolicy('ours', { idleMoveMinCalls: 5 }), vs, 6)[5]).toBe('b');
      // Without admission (no reservations known) an engine with nothing in flight may be waiting for tool calls.
      const ungated = vs.map(({ kvReservedTokens: _, ...v }) => v);
      expect(route(createPolicy('ours'), ungated, 21)[20]).toBe('a');
    });

    it('counts calls afresh once the chain closes', () => {
      const p = createPolicy('ours');
      route(p, vs, 20);
      p.onChainsClosed!((chainId) => chainId === 'c');
      expect(p.route(request(100), vs, held).instance).toBe('a');
    });
  });
});
