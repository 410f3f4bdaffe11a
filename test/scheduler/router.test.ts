import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../telemetry/metrics.js';
import { parseExposition, total } from '../helpers/metrics-scrape.js';
import { InstanceRegistry } from '../../scheduler/registry.js';
import { createRouter, Router, type RouteCall, type RouterPrefixIndex } from '../../scheduler/router.js';
import type { BlockHash, BlockHashes, InstanceView, RouteRequest, RoutingPolicy } from '../../scheduler/routing/types.js';

/** Nothing listens there: health checks fail at once. */
const DEAD = 'http://127.0.0.1:1';
const instances = ['a', 'b', 'c'].map((name) => ({ name, kind: 'vllm' as const, url: DEAD, kvCapacityTokens: 10_000 }));

/** Test policy: the call's home if offered, else the first instance offered; records what it saw. */
class RecordingPolicy implements RoutingPolicy {
  readonly name = 'recording';
  offered: string[][] = [];
  finished: string[] = [];
  down: string[] = [];
  route(request: RouteRequest, views: readonly InstanceView[]) {
    this.offered.push(views.map((v) => v.name));
    const pick = views.find((v) => v.name === request.home) ?? views[0]!;
    return { instance: pick.name, expectedCachedTokens: 0 };
  }
  onFinished(_request: RouteRequest, instance: string): void {
    this.finished.push(instance);
  }
  onInstanceDown(instance: string): void {
    this.down.push(instance);
  }
}

/** Test index recording what the router feeds it. */
class RecordingIndex implements RouterPrefixIndex {
  inserted: [string, BlockHash[], string][] = [];
  dropped: string[] = [];
  matchedBlocks(): number {
    return 0;
  }
  insert(instance: string, blocks: BlockHashes, chainId: string): void {
    this.inserted.push([instance, Array.from(blocks), chainId]);
  }
  dropInstance(instance: string): void {
    this.dropped.push(instance);
  }
}

function setup() {
  const registry = new InstanceRegistry(instances);
  const policy = new RecordingPolicy();
  const index = new RecordingIndex();
  // One "block" per 2 tokens, hashed as their sum: easy to read back.
  const blockHashes = (_chain: string, head: ArrayLike<number>, tail: ArrayLike<number> = []) => {
    const ids = [...Array.from(head), ...Array.from(tail)];
    return Array.from({ length: Math.floor(ids.length / 2) }, (_, i) => ids[2 * i]! + ids[2 * i + 1]!);
  };
  const router = new Router(registry, policy, index, { blockSize: 2, blockHashes, maxAttempts: 2 });
  return { registry, policy, index, router };
}

const call = (home?: string): RouteCall => ({ chainId: 's/0', promptIds: [1, 2, 3, 4, 5], expectedOutputTokens: 10, home });

describe('router', () => {
  it('counts a placed call in flight on its instance until it finishes, and feeds the prefix index', () => {
    const { registry, policy, index, router } = setup();
    const placement = router.place(call('b'))!;
    expect(placement).toMatchObject({ instance: 'b', request: { chainId: 's/0', blocks: [3, 7], blockSize: 2, promptTokens: 5, expectedOutputTokens: 10, home: 'b' } });
    expect(registry.views().find((v) => v.name === 'b')).toMatchObject({ inFlightRequests: 1, inFlightTokens: 15 });
    router.finished(placement, [6, 7]);
    expect(registry.views().every((v) => v.inFlightRequests === 0 && v.inFlightTokens === 0)).toBe(true);
    expect(policy.finished).toEqual(['b']);
    // The prompt when routed, then prompt + output once generated.
    expect(index.inserted).toEqual([
      ['b', [3, 7], 's/0'],
      ['b', [3, 7, 11], 's/0'],
    ]);
  });

  it('offers healthy instances the call has not failed on, and takes out an engine that did not answer', () => {
    const { registry, policy, index, router } = setup();
    registry.markDown('c');
    expect(policy.down).toEqual(['c']);
    expect(index.dropped).toEqual(['c']);
    const first = router.place(call('a'))!;
    router.failed(first, true);
    expect(registry.isHealthy('a')).toBe(false);
    expect(policy.down).toEqual(['c', 'a']);
    const retry = router.place(call('a'), new Set(['a']))!;
    expect(retry.instance).toBe('b');
    expect(policy.offered).toEqual([['a', 'b'], ['b']]);
    expect(router.place(call('a'), new Set(['b']))).toBeUndefined();
    router.finished(retry, []);
    expect(policy.finished).toEqual(['a', 'b']);
  });

  it('counts placements, moves off home, failovers and engines taken out on its metrics', async () => {
    const metrics = createMetrics(new Registry(), { processMetrics: false });
    const registry = new InstanceRegistry(instances);
    const router = new Router(registry, new RecordingPolicy(), new RecordingIndex(), { maxAttempts: 2, metrics: metrics.router });
    const home = router.place(call('a'))!;
    router.failed(home, true);
    const elsewhere = router.place(call('a'), new Set(['a']))!;
    router.finished(elsewhere, []);
    const samples = parseExposition(await metrics.registry.metrics());
    expect(total(samples, 'rollout_router_decisions_total', { instance: 'a' })).toBe(1);
    expect(total(samples, 'rollout_router_decisions_total', { instance: 'b' })).toBe(1);
    expect(total(samples, 'rollout_router_migrations_total')).toBe(1);
    expect(total(samples, 'rollout_router_migrations_total', { instance: 'b' })).toBe(1);
    expect(total(samples, 'rollout_router_failovers_total')).toBe(1);
    expect(total(samples, 'rollout_router_prompt_tokens_total')).toBe(2 * call().promptIds.length);
    expect(total(samples, 'rollout_engine_taken_out_total', { instance: 'a' })).toBe(1);
    expect(total(samples, 'rollout_engine_healthy', { instance: 'a' })).toBe(0);
    expect(total(samples, 'rollout_engine_healthy', { instance: 'b' })).toBe(1);
  });

  it('keeps an instance in when a call failed for another reason', () => {
    const { registry, router } = setup();
    const placement = router.place(call('a'))!;
    router.failed(placement, false);
    expect(registry.isHealthy('a')).toBe(true);
    expect(registry.views()[0]).toMatchObject({ inFlightRequests: 0 });
  });

  it('refuses a policy decision outside the instances offered', () => {
    const registry = new InstanceRegistry(instances);
    const rogue: RoutingPolicy = { name: 'rogue', route: () => ({ instance: 'z', expectedCachedTokens: 0 }) };
    expect(() => new Router(registry, rogue, { matchedBlocks: () => 0 }).place(call())).toThrow(/rogue chose z/);
  });

  it('wires the configured policy with a prefix index: a chain stays where its prefix is', () => {
    const router = createRouter(instances, { policy: 'ours', blockSize: 4 });
    const prompt = Array.from({ length: 40 }, (_, i) => i + 1);
    const first = router.place({ chainId: 'x/0', promptIds: prompt, expectedOutputTokens: 8 })!;
    // Another chain arriving meanwhile goes where no load is.
    const other = router.place({ chainId: 'y/0', promptIds: prompt.map((t) => t + 1000), expectedOutputTokens: 8 })!;
    expect(other.instance).not.toBe(first.instance);
    router.finished(other, [7, 7, 7, 7]);
    router.finished(first, [9, 9, 9, 9]);
    const next = router.place({ chainId: 'x/0', promptIds: [...prompt, 9, 9, 9, 9, 5, 5, 5, 5], expectedOutputTokens: 8 })!;
    expect(next).toMatchObject({ instance: first.instance, expectedCachedTokens: 44 });
    expect(next.request.blocks).toHaveLength(12);
  });

  it("routes by the episode's home with the `home` policy, and by least in-flight tokens without one", () => {
    const router = createRouter(instances, { policy: 'home' });
    const busy = router.place({ chainId: 'h/0', promptIds: [1, 2, 3], expectedOutputTokens: 5, home: 'b' })!;
    expect(busy.instance).toBe('b');
    router.registry.markDown('b');
    const moved = router.place({ chainId: 'h/0', promptIds: [1, 2, 3], expectedOutputTokens: 5, home: 'b' })!;
    expect(moved.instance).toBe('a');
    expect(router.place({ chainId: 'k/0', promptIds: [1], expectedOutputTokens: 1 })!.instance).toBe('c');
  });

  describe('with token-level admission', () => {
    /** One instance of 10,000 KV tokens; calls of 5 prompt tokens and `output` expected. */
    function gated(maxWaitMs = 600_000) {
      const registry = new InstanceRegistry([instances[0]!]);
      const router = new Router(registry, new RecordingPolicy(), new RecordingIndex(), { gate: { maxWaitMs, idleTtlMs: 600_000 } });
      const big = (chainId: string): RouteCall => ({ chainId, promptIds: [1, 2, 3, 4, 5], expectedOutputTokens: 6_000 });
      return { router, big };
    }

    it('holds a call that fits no instance until the call filling it ends', async () => {
      const { router, big } = gated();
      const first = (await router.acquire(big('s/0')))!;
      expect(first.instance).toBe('a');
      let second: unknown;
      const waiting = router.acquire(big('t/0')).then((p) => (second = p));
      await Promise.resolve();
      expect(router.waiting).toBe(1);
      expect(second).toBeUndefined();
      // Failed: nothing stays cached for s/0, so its memory is free at once.
      router.failed(first, false);
      expect(router.waiting).toBe(0);
      expect(await waiting).toMatchObject({ instance: 'a', request: { chainId: 't/0' } });
    });

    it("lets a held call through when the session whose idle chain holds the memory closes", async () => {
      const { router, big } = gated();
      const first = (await router.acquire(big('s/0')))!;
      router.finished(first, new Array<number>(5_000).fill(7));
      await router.acquire({ chainId: 'u/0', promptIds: [1, 2, 3, 4, 5], expectedOutputTokens: 10 });
      const waiting = router.acquire(big('t/0'));
      await Promise.resolve();
      expect(router.waiting).toBe(1);
      router.forgetSession('s');
      expect(router.waiting).toBe(0);
      expect(await waiting).toMatchObject({ instance: 'a', request: { chainId: 't/0' } });
    });

    it('gives a held call up when its client aborts, and when the router closes', async () => {
      const { router, big } = gated();
      await router.acquire(big('s/0'));
      const abort = new AbortController();
      const aborted = router.acquire(big('t/0'), abort.signal);
      const closed = router.acquire(big('u/0'));
      expect(router.waiting).toBe(2);
      abort.abort();
      expect(await aborted).toBeUndefined();
      expect(router.waiting).toBe(1);
      await router.close();
      expect(await closed).toBeUndefined();
      expect(router.waiting).toBe(0);
    });

    it('sends a held call anyway once it waited maxWaitMs', async () => {
      const { router, big } = gated(20);
      await router.acquire(big('s/0'));
      const late = await router.acquire(big('t/0'));
      expect(late).toMatchObject({ instance: 'a' });
      expect(router.waiting).toBe(0);
    });

    it('places a failover at once, admitted or not', async () => {
      const { router, big } = gated();
      await router.acquire(big('s/0'));
      expect(router.place(big('t/0'))).toMatchObject({ instance: 'a' });
    });
  });
});
