import { describe, expect, it } from 'vitest';
import { InstanceRegistry } from '../../../scheduler/registry.js';
import { Router } from '../../../scheduler/router.js';
import { PrefixIndex } from '../../../scheduler/routing/prefix-index.js';
import { createPolicy, SkyrlStickyLeastLoadedPolicy } from '../../../scheduler/routing/policies/index.js';
import type { InstanceView, PrefixLookup, RouteRequest } from '../../../scheduler/routing/types.js';
import { agentBatch, PRESETS, simulate } from '../../../scheduler/simulator/index.js';

/** The routing baselines of three rollout frameworks: Uni-Agent, SkyRL, prime-rl. */

const BS = 64;

/** An instance view with defaults: 100k capacity, idle. */
function view(name: string, over: Partial<InstanceView> = {}): InstanceView {
  return { name, kvCapacityTokens: 100_000, kvUsedTokens: 0, inFlightRequests: 0, inFlightTokens: 0, queuedRequests: 0, healthy: true, ...over };
}

/** A prompt of `blocks` full blocks (hashes 1..n, 64 tokens each) for `chainId`. */
function request(blocks: number, chainId = 'c'): RouteRequest {
  return { chainId, blocks: Array.from({ length: blocks }, (_, i) => i + 1), blockSize: BS, promptTokens: blocks * BS, expectedOutputTokens: 100 };
}

/** A prefix lookup where instance `name` holds the first `held[name]` blocks. */
function holding(held: Record<string, number>): PrefixLookup {
  return { matchedBlocks: (instance, blocks) => Math.min(blocks.length, held[instance] ?? 0) };
}

const none = holding({});

describe('uni-agent-kv-aware (load threshold 0.9)', () => {
  it("sends a session's first call to the fewest tokens in flight, whatever the prefix; ties to the first instance", () => {
    const p = createPolicy('uni-agent-kv-aware');
    const vs = [view('a', { inFlightTokens: 5000 }), view('b', { inFlightTokens: 1000, kvUsedTokens: 80_000 }), view('c', { inFlightTokens: 3000 })];
    expect(p.route(request(10, 'x'), vs, holding({ a: 10 })).instance).toBe('b');
    const tied = [view('a', { inFlightTokens: 2000 }), view('b', { inFlightTokens: 2000 })];
    expect(p.route(request(10, 'y'), tied, none).instance).toBe('a');
  });

  it('keeps a session on its replica while KV usage is at most the threshold, whatever else is free', () => {
    const p = createPolicy('uni-agent-kv-aware');
    p.route(request(10, 'x'), [view('a', { inFlightTokens: 10 }), view('b')], none);
    // b is bound; at exactly 90% usage and far busier in tokens it still keeps the session.
    const busy = [view('a'), view('b', { inFlightTokens: 90_000, kvUsedTokens: 90_000 })];
    expect(p.route(request(10, 'x'), busy, none)).toEqual({ instance: 'b', expectedCachedTokens: 0 });
  });

  it('moves a session above the threshold to the most KV left after its uncached prompt, and rebinds it there', () => {
    const p = createPolicy('uni-agent-kv-aware');
    p.route(request(100, 'x'), [view('a', { inFlightTokens: 10 }), view('b'), view('c', { inFlightTokens: 10 })], none);
    const over = [view('a', { kvUsedTokens: 30_000 }), view('b', { kvUsedTokens: 90_001 }), view('c', { kvUsedTokens: 25_000 })];
    // a: 70,000 free − 0 uncached = 70,000; c: 75,000 − 6,400 = 68,600; b is overloaded.
    expect(p.route(request(100, 'x'), over, holding({ a: 100 })).instance).toBe('a');
    // Bound to a now: it stays there although c is emptier.
    expect(p.route(request(100, 'x'), [view('a', { kvUsedTokens: 60_000 }), view('b'), view('c')], none).instance).toBe('a');
  });

  it('places only on replicas with at least 1 − threshold of KV free, on the most room of all when none has', () => {
    const p = createPolicy('uni-agent-kv-aware');
    p.route(request(100, 'x'), [view('a', { inFlightTokens: 10 }), view('b')], none);
    // a would keep the most after the prompt (8,000) but has only 8% free; c has 11% free: c.
    const vs = [view('a', { kvUsedTokens: 92_000 }), view('b', { kvUsedTokens: 95_000 }), view('c', { kvUsedTokens: 89_000 })];
    expect(p.route(request(100, 'x'), vs, holding({ a: 100 })).instance).toBe('c');
    // Now c (bound) is over 90% too and nobody is eligible: the most room after the prompt wins.
    const full = [view('a', { kvUsedTokens: 92_000 }), view('b', { kvUsedTokens: 95_000 }), view('c', { kvUsedTokens: 91_000 })];
    expect(p.route(request(100, 'x'), full, holding({ a: 100 })).instance).toBe('a');
  });

  it('places a bound session whose replica is not offered by room, and a session of a replica that died as new', () => {
    const p = createPolicy('uni-agent-kv-aware');
    p.route(request(10, 'x'), [view('a'), view('b', { inFlightTokens: 10 })], none);
    // Not offered (admission found no room there): by room, not by tokens in flight.
    const vs = [view('b', { inFlightTokens: 0, kvUsedTokens: 50_000 }), view('c', { inFlightTokens: 9000, kvUsedTokens: 10_000 })];
    expect(p.route(request(10, 'x'), vs, none).instance).toBe('c');
    p.onInstanceDown!('c');
    expect(p.route(request(10, 'x'), vs, none).instance).toBe('b');
  });

  it('takes its threshold from options and rejects one outside (0, 1)', () => {
    const p = createPolicy('uni-agent-kv-aware', { loadThreshold: 0.5 });
    p.route(request(10, 'x'), [view('a')], none);
    const vs = [view('a', { kvUsedTokens: 60_000 }), view('b', { kvUsedTokens: 20_000 })];
    expect(p.route(request(10, 'x'), vs, none).instance).toBe('b');
    expect(() => createPolicy('uni-agent-kv-aware', { loadThreshold: 1 })).toThrow(/loadThreshold/);
  });
});

describe('skyrl-sticky-least-loaded', () => {
  it('spreads new sessions by live sessions per replica and keeps each session on its replica whatever the load', () => {
    const p = createPolicy('skyrl-sticky-least-loaded') as SkyrlStickyLeastLoadedPolicy;
    const vs = [view('a'), view('b'), view('c')];
    const picks = ['s1', 's2', 's3'].map((s) => p.route(request(4, s), vs, none).instance);
    expect([...picks].sort()).toEqual(['a', 'b', 'c']);
    const overloaded = vs.map((v) => view(v.name, v.name === picks[0] ? { inFlightRequests: 99, kvUsedTokens: 100_000 } : {}));
    expect(p.route(request(4, 's1'), overloaded, holding({ [picks[1]!]: 4 })).instance).toBe(picks[0]);
    expect(['a', 'b', 'c'].map((n) => p.activeSessions(n))).toEqual([1, 1, 1]);
  });

  it('breaks ties among equally loaded replicas by rendezvous hash: reproducible, and spread over sessions', () => {
    const run = (): string[] => {
      const p = createPolicy('skyrl-sticky-least-loaded');
      return Array.from({ length: 24 }, (_, i) => {
        const pick = p.route(request(1, `t${i}`), [view('a'), view('b'), view('c')], none).instance;
        p.onChainsClosed!((chain) => chain === `t${i}`);
        return pick;
      });
    };
    const first = run();
    expect(run()).toEqual(first);
    expect(new Set(first)).toEqual(new Set(['a', 'b', 'c']));
  });

  it('frees a replica when its session closes, and reassigns a session whose replica is not offered', () => {
    const p = createPolicy('skyrl-sticky-least-loaded') as SkyrlStickyLeastLoadedPolicy;
    const vs = [view('a'), view('b')];
    const x = p.route(request(1, 'x'), vs, none).instance;
    const y = p.route(request(1, 'y'), vs, none).instance;
    expect(x).not.toBe(y);
    p.onChainsClosed!((chain) => chain === 'x');
    expect(p.activeSessions(x)).toBe(0);
    expect(p.route(request(1, 'z'), vs, none).instance).toBe(x);
    // y's replica is not offered: y is released there and placed on the least loaded offered one.
    const other = view('c');
    expect(p.route(request(1, 'y'), [view(x), other], none).instance).toBe('c');
    expect(p.activeSessions(y)).toBe(0);
    expect(p.activeSessions('c')).toBe(1);
  });

  it("is released by the router's session close and by the simulator's episode ends", () => {
    const policy = new SkyrlStickyLeastLoadedPolicy();
    const engines = ['a', 'b'].map((name) => ({ name, kind: 'vllm' as const, url: 'http://127.0.0.1:1', kvCapacityTokens: 10_000 }));
    const router = new Router(new InstanceRegistry(engines), policy, new PrefixIndex(BS), { blockSize: BS, blockHashes: () => [] });
    const placement = router.place({ chainId: 's/0', promptIds: [1, 2, 3], expectedOutputTokens: 10 })!;
    router.place({ chainId: 'su/0', promptIds: [1, 2, 3], expectedOutputTokens: 10 });
    router.finished(placement, [4]);
    expect(policy.activeSessions('a') + policy.activeSessions('b')).toBe(2);
    router.forgetSession('s');
    expect(policy.activeSessions('a') + policy.activeSessions('b')).toBe(1);

    const batch = agentBatch({ seed: 3, tasks: 2, samplesPerTask: 3, minTurns: 2, maxTurns: 4, taskPromptTokens: 500, finalContextTokens: [2000, 4000], outputTokens: 20 });
    const sim = new SkyrlStickyLeastLoadedPolicy();
    simulate({ workload: batch, preset: PRESETS['8b'], policy: sim, instances: 3, kvCapacityTokens: 40_000 });
    expect(['i0', 'i1', 'i2'].map((n) => sim.activeSessions(n))).toEqual([0, 0, 0]);
  });
});

describe('prime-rl-cache-aware (thresholds 0.3, 64, 1.5)', () => {
  const p = createPolicy('prime-rl-cache-aware');

  it('takes the best match above 30% of the prompt while balanced, the least loaded at or below it', () => {
    const vs = [view('a', { inFlightRequests: 70 }), view('b', { inFlightRequests: 10 })]; // gap 60 ≤ 64
    expect(p.route(request(10), vs, holding({ a: 4 }))).toEqual({ instance: 'a', expectedCachedTokens: 256 }); // 0.4 > 0.3
    expect(p.route(request(10), vs, holding({ a: 3 })).instance).toBe('b'); // 0.3, not > 0.3
  });

  it('goes least loaded only when both the gap exceeds 64 and the ratio 1.5', () => {
    const imbalanced = [view('a', { inFlightRequests: 75 }), view('b', { inFlightRequests: 10 })]; // 65 > 64, 7.5 > 1.5
    expect(p.route(request(10), imbalanced, holding({ a: 10 })).instance).toBe('b');
    const close = [view('a', { inFlightRequests: 200 }), view('b', { inFlightRequests: 135 })]; // 65 > 64, 1.48 ≤ 1.5
    expect(p.route(request(10), close, holding({ a: 10 })).instance).toBe('a');
  });

  it('breaks ties to the first instance and takes its thresholds from options', () => {
    const vs = [view('a', { inFlightRequests: 2 }), view('b', { inFlightRequests: 2 })];
    expect(p.route(request(10), vs, none).instance).toBe('a');
    expect(p.route(request(10), vs, holding({ a: 5, b: 5 })).instance).toBe('a');
    const strict = createPolicy('prime-rl-cache-aware', { cacheThreshold: 0.6, balanceAbsThreshold: 1, balanceRelThreshold: 1 });
    expect(strict.route(request(10), [view('a', { inFlightRequests: 3 }), view('b', { inFlightRequests: 1 })], holding({ a: 10 })).instance).toBe('b');
    expect(strict.route(request(10), [view('a'), view('b')], holding({ b: 5 })).instance).toBe('a');
  });
});
