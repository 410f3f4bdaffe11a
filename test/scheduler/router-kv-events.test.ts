import { describe, expect, it } from 'vitest';
import { createRouter } from '../../scheduler/router.js';

/** Nothing listens there; the router is never started, so no health check runs. */
const DEAD = 'http://127.0.0.1:1';
const engines = ['a', 'b', 'c'].map((name) => ({ name, kind: 'vllm' as const, url: DEAD, kvCapacityTokens: 100_000 }));
const prompt = Array.from({ length: 4096 }, (_, i) => (i * 31) % 50_000);

/** vLLM-like stores of `tokens` on one engine: 16-token blocks, hashed by the engine its own way. */
function stored(tokens: number[], seq: number) {
  const n = Math.floor(tokens.length / 16);
  return { seq, ts: 0, events: [{ type: 'BlockStored' as const, blockHashes: Array.from({ length: n }, (_, i) => `b${i}`), parentBlockHash: null, tokenIds: tokens.slice(0, n * 16), blockSize: 16 }] };
}

describe('Router on the engines\' KV events', () => {
  it('is off by default: feeding events needs the option', () => {
    const router = createRouter(engines, { policy: 'ours', admission: { enabled: false } });
    expect(router.kvLookup).toBeUndefined();
    expect(() => router.applyKvEvents('a', stored(prompt, 0))).toThrow(/kvEvents/);
  });

  it('places a call where the events say its prefix is cached, and falls back to the estimate where no feed is live', () => {
    const router = createRouter(engines, { policy: 'ours', admission: { enabled: false }, kvEvents: {} });
    expect(router.applyKvEvents('b', stored(prompt, 0))).toEqual({ status: 'applied' });
    const placement = router.place({ chainId: 's/0', promptIds: prompt.concat([1, 2, 3]), expectedOutputTokens: 100 })!;
    expect(placement.instance).toBe('b');
    expect(placement.expectedCachedTokens).toBe(4096);
    expect(router.kvLookup!.source('b')).toBe('events');
    expect(router.kvLookup!.source('a')).toBe('estimate');
    expect(router.kvLookup!.fromEvents).toBeGreaterThan(0);
    // A gap on b: buffered, reported for replay, and b answers from the estimate meanwhile.
    expect(router.applyKvEvents('b', { seq: 2, events: [{ type: 'AllBlocksCleared' }] })).toEqual({ status: 'buffered', gap: { from: 1, to: 1 } });
    expect(router.kvLookup!.source('b')).toBe('estimate');
  });
});
