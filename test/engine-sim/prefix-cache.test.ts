import { describe, expect, it } from 'vitest';
import { createRng } from '../../engine-sim/prng.js';
import { PrefixCache, extendBlockHashes, hashBlock, type KvAllocation } from '../../engine-sim/prefix-cache.js';

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

/**
 * The cache's semantics written the plain way (a refcount map and an insertion-ordered set of
 * unpinned blocks), as an oracle for the queue-based implementation.
 */
class ReferenceCache {
  private readonly refs = new Map<number, number>();
  private readonly evictable = new Set<number>();
  private reserved = 0;
  evicted = 0;
  constructor(private readonly capacity: number) {}
  match(hashes: readonly number[]): number {
    let n = 0;
    while (n < hashes.length && this.refs.has(hashes[n]!)) n++;
    return n;
  }
  allocate(hashes: readonly number[], hits: number, total: number): { pinned: number[]; reserved: number } | null {
    const needed = total - hits;
    const hitsEvictable = hashes.slice(0, hits).filter((h) => this.evictable.has(h)).length;
    if (needed > this.free() + this.evictable.size - hitsEvictable) return null;
    for (const h of hashes.slice(0, hits)) this.pin(h);
    let shortfall = needed - this.free();
    for (const h of this.evictable) {
      if (shortfall-- <= 0) break;
      this.evictable.delete(h);
      this.refs.delete(h);
      this.evicted++;
    }
    this.reserved += needed;
    return { pinned: hashes.slice(0, hits), reserved: needed };
  }
  commit(alloc: { pinned: number[]; reserved: number }, hash: number): void {
    alloc.reserved--;
    this.reserved--;
    if (this.refs.has(hash)) this.pin(hash);
    else this.refs.set(hash, 1);
    alloc.pinned.push(hash);
  }
  release(alloc: { pinned: number[]; reserved: number }): void {
    this.reserved -= alloc.reserved;
    alloc.reserved = 0;
    for (const h of [...alloc.pinned].reverse()) {
      const n = this.refs.get(h)! - 1;
      this.refs.set(h, n);
      if (n === 0) this.evictable.add(h);
    }
    alloc.pinned.length = 0;
  }
  free(): number {
    return this.capacity - this.refs.size - this.reserved;
  }
  used(): number {
    return this.refs.size - this.evictable.size + this.reserved;
  }
  resident(): number {
    return this.refs.size;
  }
  private pin(h: number): void {
    const n = this.refs.get(h)!;
    if (n === 0) this.evictable.delete(h);
    this.refs.set(h, n + 1);
  }
}

describe('PrefixCache against the plain reference', () => {
  it('admits, hits, evicts and counts exactly as the reference over a long random workload', () => {
    const rng = createRng(12345);
    const random = (n: number) => Math.floor(rng() * n);
    const cache = new PrefixCache(400, 4);
    const reference = new ReferenceCache(400);
    // Conversations that grow and share prefixes: enough traffic to cycle the queue's compaction many times.
    const conversations = Array.from({ length: 40 }, (_, c) => tokens(1000 * c, 4 * (1 + random(8))));
    const running: { alloc: KvAllocation; ref: { pinned: number[]; reserved: number } }[] = [];
    for (let step = 0; step < 20_000; step++) {
      if (running.length > 0 && (random(3) === 0 || running.length > 12)) {
        const [done] = running.splice(random(running.length), 1);
        cache.release(done!.alloc);
        reference.release(done!.ref);
      } else {
        const c = random(conversations.length);
        const ids = conversations[c]!;
        if (random(4) === 0) ids.push(...tokens(50_000 + step * 8, 4 * (1 + random(3))));
        if (ids.length > 120) conversations[c] = tokens(1000 * c + step, 8);
        const h = hashes(ids);
        const hits = cache.matchPrefix(h);
        expect(hits).toBe(reference.match(h));
        const extra = random(3);
        const alloc = cache.allocate(h, hits, h.length + extra);
        const ref = reference.allocate(h, hits, h.length + extra);
        expect(alloc === null).toBe(ref === null);
        if (alloc && ref) {
          for (const hash of h.slice(hits)) {
            cache.commit(alloc, hash);
            reference.commit(ref, hash);
          }
          running.push({ alloc, ref });
        }
      }
      expect([cache.usedBlocks(), cache.residentBlocks(), cache.freeBlocks(), cache.evictions()]).toEqual([reference.used(), reference.resident(), reference.free(), reference.evicted]);
    }
    expect(cache.evictions()).toBeGreaterThan(1000);
  });
});
