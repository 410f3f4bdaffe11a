import { describe, expect, it } from 'vitest';
import { blockHashes, IncrementalHasher } from '../../../scheduler/routing/block-hash.js';
import { PrefixIndex } from '../../../scheduler/routing/prefix-index.js';

const ids = (n: number, base = 0): number[] => Array.from({ length: n }, (_, i) => base + i);

describe('block hashes', () => {
  it('chains blocks: an equal block after a different prefix hashes differently; partial blocks are skipped', () => {
    const a = blockHashes([...ids(4, 100), 9, 9, 9, 9], 4);
    const b = blockHashes([...ids(4, 200), 9, 9, 9, 9], 4);
    expect(a).toHaveLength(2);
    expect(a[1]).not.toBe(b[1]);
    expect(blockHashes([...ids(4, 100), 9, 9, 9, 9, 1], 4)).toEqual(a);
    expect(a.every((h) => Number.isSafeInteger(h))).toBe(true);
  });

  it('hashes incrementally: turn k+1 extends turn k’s cached array with its new blocks only', () => {
    const hasher = new IncrementalHasher({ blockSize: 4 });
    const turn1 = ids(10);
    const first = hasher.hashes('c', turn1);
    expect([...first]).toEqual(blockHashes(turn1, 4));
    const turn2 = [...turn1, ...ids(9, 50)];
    const second = hasher.hashes('c', turn2);
    expect(second).toBe(first); // the same cached array, extended in place
    expect([...second]).toEqual(blockHashes(turn2, 4));
  });

  it('rehashes a chain whose last hashed block changed, and keeps chains apart', () => {
    const hasher = new IncrementalHasher({ blockSize: 4 });
    hasher.hashes('c', ids(8));
    const rewritten = [...ids(6), 77, 78, 79, 80];
    expect([...hasher.hashes('c', rewritten)]).toEqual(blockHashes(rewritten, 4));
    expect([...hasher.hashes('d', ids(8, 5))]).toEqual(blockHashes(ids(8, 5), 4));
  });

  it('forgets the least recently used chain beyond maxChains', () => {
    const hasher = new IncrementalHasher({ blockSize: 4, maxChains: 1 });
    const a = hasher.hashes('a', ids(8));
    hasher.hashes('b', ids(8));
    expect(hasher.hashes('a', ids(8))).not.toBe(a);
  });
});

describe('PrefixIndex', () => {
  it('matches the longest leading run an instance holds', () => {
    const index = new PrefixIndex(64);
    index.setCapacity('a', 64 * 10);
    index.insert('a', [1, 2, 3]);
    expect(index.matchedBlocks('a', [1, 2, 3, 4])).toBe(3);
    expect(index.matchedBlocks('a', [5, 2])).toBe(0);
    expect(index.matchedBlocks('b', [1])).toBe(0);
  });

  it('is bounded by capacity in blocks, evicting least recently used, a chain’s tail before its head', () => {
    const index = new PrefixIndex(64);
    index.setCapacity('a', 64 * 4);
    index.insert('a', [1, 2, 3]);
    index.insert('a', [10, 11]); // 5 blocks > 4: the oldest, 3 (the first chain's tail), goes
    expect(index.size('a')).toBe(4);
    expect(index.matchedBlocks('a', [1, 2, 3])).toBe(2);
    expect(index.matchedBlocks('a', [10, 11])).toBe(2);
  });

  it('touches blocks already present when inserted again', () => {
    const index = new PrefixIndex(64);
    index.setCapacity('a', 64 * 4);
    index.insert('a', [1, 2]);
    index.insert('a', [10, 11]);
    index.insert('a', [1, 2]); // now the most recent
    index.insert('a', [20, 21]); // evicts 10, 11
    expect(index.matchedBlocks('a', [1, 2])).toBe(2);
    expect(index.matchedBlocks('a', [10, 11])).toBe(0);
  });

  it('shrinks with its capacity and forgets a dropped instance', () => {
    const index = new PrefixIndex(64);
    index.setCapacity('a', 64 * 4);
    index.insert('a', [1, 2, 3, 4]);
    index.setCapacity('a', 64 * 2);
    expect(index.matchedBlocks('a', [1, 2, 3, 4])).toBe(2);
    index.dropInstance('a');
    expect(index.matchedBlocks('a', [1])).toBe(0);
  });
});
