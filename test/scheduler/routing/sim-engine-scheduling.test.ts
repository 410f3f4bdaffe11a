import { describe, expect, it } from 'vitest';
import { blockHashes } from '../../../scheduler/routing/block-hash.js';
import { PRESETS, SimInstance, type SimRequest, type TurnSpec } from '../../../scheduler/simulator/index.js';

function request(id: number, spec: TurnSpec): SimRequest {
  return { id, episode: id, turn: 0, spec, released: 0, instance: 0, cachedTokens: 0, expectedCachedTokens: 0, prefillLeft: spec.promptTokens, generated: 0, alloc: null, finished: -1 };
}

/** A 1,000-token task prompt, then 24 tokens of the sample's own. */
function sibling(sample: number): TurnSpec {
  const ids = [...Array.from({ length: 1000 }, (_, i) => i), ...Array.from({ length: 24 }, (_, i) => 100_000 * (sample + 1) + i)];
  const seq = blockHashes([...ids, ...Array.from({ length: 32 }, (_, i) => 900_000 + sample * 100 + i)], 128);
  return { promptTokens: 1024, outputTokens: 32, seq, promptBlocks: 8, kvBlocks: 8, sharedTokens: 896 };
}

describe('simulated engine scheduling', () => {
  it('lets a request hit the blocks another is computing in the same step, as vLLM caches blocks when it allocates them', () => {
    const engine = new SimInstance(0, 'i0', 64 * 128, 128, PRESETS['8b']);
    const first = request(0, sibling(0));
    const second = request(1, sibling(1));
    engine.enqueue(first);
    engine.enqueue(second);
    engine.advance(0);
    expect(first.cachedTokens).toBe(0);
    // The 7 full blocks of the shared 1,000 tokens: scheduled for the first request, so hits for the second.
    expect(second.cachedTokens).toBe(7 * 128);
    expect(second.prefillLeft).toBe(1024 - 7 * 128);
  });

  it('makes a long prompt hittable chunk by chunk, only as far as it was scheduled', () => {
    const engine = new SimInstance(0, 'i0', 64 * 128, 128, PRESETS['8b'], { tokenBudget: 256 });
    const first = request(0, sibling(0));
    engine.enqueue(first);
    engine.advance(0);
    const second = request(1, sibling(1));
    engine.enqueue(second);
    // Two steps of 256 tokens scheduled for the first prompt (the second's admission comes after
    // the running request's chunk, as in vLLM): its first 4 blocks, no more, are cached.
    const { next } = engine.advance(1);
    expect(next).not.toBeNull();
    expect(second.cachedTokens).toBe(4 * 128);
  });
});
