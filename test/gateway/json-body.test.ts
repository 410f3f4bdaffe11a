import { describe, expect, it } from 'vitest';
import { jsonBodyWithIds } from '../../gateway/backends/json-body.js';

/** A deterministic generator, so a failure reproduces. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');

describe('jsonBodyWithIds', () => {
  it('writes exactly what JSON.stringify writes, for random ids including 0 and the largest', () => {
    const next = lcg(7);
    const edges = [0, 1, 9, 10, 99, 100, 151_642, 151_643, 999_999, 1_000_000, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1];
    for (let round = 0; round < 50; round++) {
      const ids = Array.from({ length: 1 + (next() % 2000) }, () => {
        const r = next();
        // Every digit count: small ids, vocabulary-sized ids and full 32-bit ones.
        return r % 3 === 0 ? r % 10 : r % 3 === 1 ? r % 151_936 : r;
      });
      ids.push(...edges);
      const before = { model: `Qwen/Qwen3-8B-${round}`, rid: 'ünïcode ✓' };
      const after = { max_tokens: round + 1, temperature: 0.7, logprobs: 0, stream: true, stream_options: { include_usage: true } };
      for (const prompt of [ids, Uint32Array.from(ids)]) {
        expect(text(jsonBodyWithIds(before, 'prompt', prompt, after))).toBe(JSON.stringify({ ...before, prompt: ids, ...after }));
      }
    }
  });

  it('writes vocabulary-sized ids up to the longest of six digits as JSON.stringify does', () => {
    const next = lcg(11);
    const ids = [0, 9, 10, 99, 100, 99_999, 100_000, 999_999, ...Array.from({ length: 5000 }, () => next() % 1_000_000)];
    expect(text(jsonBodyWithIds({}, 'prompt', Uint32Array.from(ids), {}))).toBe(JSON.stringify({ prompt: ids }));
    // A longer id anywhere, the last one included, is still written exactly.
    for (const long of [1_000_000, 2 ** 32 - 1]) {
      const withLong = [...ids, long];
      expect(text(jsonBodyWithIds({}, 'prompt', Uint32Array.from(withLong), {}))).toBe(JSON.stringify({ prompt: withLong }));
    }
  });

  it('writes a view into a larger chain buffer as its own ids only', () => {
    const chain = Uint32Array.from({ length: 300 }, (_, i) => (i * 7919) % 151_936);
    for (const [from, to] of [[0, 0], [0, 1], [17, 300], [100, 101], [250, 260]] as const) {
      const view = chain.subarray(from, to);
      expect(text(jsonBodyWithIds({ rid: 'r' }, 'input_ids', view, { stream: true }))).toBe(
        JSON.stringify({ rid: 'r', input_ids: Array.from(view), stream: true }),
      );
    }
  });

  it('writes empty prompts and empty objects around them as JSON.stringify does', () => {
    expect(text(jsonBodyWithIds({}, 'input_ids', [], {}))).toBe(JSON.stringify({ input_ids: [] }));
    expect(text(jsonBodyWithIds({ a: 1 }, 'ids', [0], {}))).toBe(JSON.stringify({ a: 1, ids: [0] }));
    expect(text(jsonBodyWithIds({}, 'ids', [3, 0], { b: undefined, c: null }))).toBe(JSON.stringify({ ids: [3, 0], b: undefined, c: null }));
  });

  it('writes what is not a 32-bit id as JSON does, not as digits', () => {
    const odd = [1.5, -3, 2 ** 32, NaN, -0, 1.2345678901234567e300, -Number.MIN_VALUE];
    expect(text(jsonBodyWithIds({}, 'ids', odd, {}))).toBe(JSON.stringify({ ids: odd }));
  });
});
