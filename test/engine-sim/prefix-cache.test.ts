import { describe, expect, it } from 'vitest';
import { PrefixCache, extendBlockHashes, hashBlock } from '../../engine-sim/prefix-cache.js';

const tokens = (base: number, n: number) => Array.from({ length: n }, (_, i) => base + i);
const hashes = (ids: number[]) => extendBlockHashes([], ids, 4);

describe('PrefixCache', () => {
  it('chains block hashes: equal blocks after different prefixes differ', () => {
    const a = hashes([1, 2, 3, 4, 9, 9, 9, 9]);
    const b = hashes([5, 6, 7, 8, 9, 9, 9, 9]);
    expect(a).toHaveLength(2);
    expect(a[1]).not.toBe(b[1]);
    expect(hashes([1, 2, 3, 4, 9, 9, 9, 9, 1])).toEqual(a); // a partial block is not hashed
    expect(hashBlock(0, [1, 2, 3, 4], 0, 4)).toBe(a[0]);
    expect(Number.isSafeInteger(a[0])).toBe(true);
  });

  it('shares pinned blocks, keeps released ones resident, evicts least recently released first', () => {
    const cache = new PrefixCache(6, 4);
    const run = (ids: number[], extraBlocks: number) => {
      const h = hashes(ids);
      const hits = cache.matchPrefix(h);
      const alloc = cache.allocate(h, hits, h.length + extraBlocks);
      if (!alloc) return null;
      for (const hash of h.slice(hits)) cache.commit(alloc, hash);
      return { alloc, hits };
    };
    const a = run(tokens(100, 8), 1)!; // 2 blocks + 1 reserved
    expect(a.hits).toBe(0);
    expect(cache.usedBlocks()).toBe(3);
    const a2 = run(tokens(100, 8), 0)!; // same prefix while A runs: shared, no new blocks
    expect(a2.hits).toBe(2);
    expect(cache.usedBlocks()).toBe(3);
    cache.release(a2.alloc);
    cache.release(a.alloc);
    expect(cache.usedBlocks()).toBe(0);
    expect(cache.residentBlocks()).toBe(2);

    const b = run(tokens(200, 8), 0)!;
    cache.release(b.alloc); // resident now: A0 A1 B0 B1 (A released earlier)
    // C needs 4 blocks, 2 are free: the two least recently released go, A's tail block first.
    const c = run(tokens(300, 16), 0)!;
    expect(cache.evictions()).toBe(2);
    expect(cache.matchPrefix(hashes(tokens(100, 8)))).toBe(0);
    expect(cache.matchPrefix(hashes(tokens(200, 8)))).toBe(2);
    // Nothing fits beyond capacity while C holds its blocks.
    expect(run(tokens(400, 12), 0)).toBeNull();
    expect(cache.residentBlocks()).toBe(6);
    cache.release(c.alloc);
    expect(run(tokens(400, 12), 0)).not.toBeNull();
  });

  it('does not evict blocks that the admitted request itself hits', () => {
    const cache = new PrefixCache(3, 4);
    const h = hashes(tokens(1, 8));
    const first = cache.allocate(h, 0, 2)!;
    h.forEach((x) => cache.commit(first, x));
    cache.release(first);
    // 2 resident hits + 1 new block fits exactly; counting the hits as evictable would overbook.
    expect(cache.allocate(h, 2, 4)).toBeNull();
    expect(cache.allocate(h, 2, 3)).not.toBeNull();
    expect(cache.evictions()).toBe(0);
  });
});
