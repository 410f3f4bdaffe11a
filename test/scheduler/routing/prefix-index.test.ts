import { describe, expect, it } from 'vitest';
import { blockHashes, IncrementalHasher } from '../../../scheduler/routing/block-hash.js';
import { PrefixIndex } from '../../../scheduler/routing/prefix-index.js';
import { createRng } from '../../../engine-sim/prng.js';

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

  it('hashes incrementally: turn k+1 adds its new blocks; an answer is a snapshot that never changes', () => {
    const hasher = new IncrementalHasher({ blockSize: 4 });
    const turn1 = ids(10);
    const first = hasher.hashes('c', turn1);
    expect(Array.from(first)).toEqual(blockHashes(turn1, 4));
    const turn2 = [...turn1, ...ids(9, 50)];
    expect(Array.from(hasher.hashes('c', turn2))).toEqual(blockHashes(turn2, 4));
    hasher.hashes('c', [...ids(6), 1, 1, 1, 1]); // a rewrite
    expect(Array.from(first)).toEqual(blockHashes(turn1, 4));
  });

  it('hashes a prompt and its sampled ids in place as their concatenation', () => {
    const hasher = new IncrementalHasher({ blockSize: 4 });
    const prompt = Uint32Array.from(ids(10));
    hasher.hashes('c', prompt);
    const sampled = ids(7, 90);
    expect(Array.from(hasher.hashes('c', prompt, sampled))).toEqual(blockHashes([...prompt, ...sampled], 4));
    // The next prompt extends prompt + output: only its new blocks are hashed, equal to a full hash.
    const next = [...prompt, ...sampled, ...ids(5, 300)];
    expect(Array.from(hasher.hashes('c', next))).toEqual(blockHashes(next, 4));
    expect(Array.from(new IncrementalHasher({ blockSize: 4 }).hashes('d', [], next))).toEqual(blockHashes(next, 4));
  });

  it('rehashes a chain whose last hashed block changed, and keeps chains apart', () => {
    const hasher = new IncrementalHasher({ blockSize: 4 });
    hasher.hashes('c', ids(8));
    const rewritten = [...ids(6), 77, 78, 79, 80];
    expect(Array.from(hasher.hashes('c', rewritten))).toEqual(blockHashes(rewritten, 4));
    expect(Array.from(hasher.hashes('d', ids(8, 5)))).toEqual(blockHashes(ids(8, 5), 4));
  });

  it('forgets the least recently used chain beyond maxChains', () => {
    const hasher = new IncrementalHasher({ blockSize: 4, maxChains: 1 });
    // A remembered chain answers from the same buffer; a forgotten one starts a new one.
    const buffer = (chain: string) => (hasher.hashes(chain, ids(8)) as Float64Array).buffer;
    const a = buffer('a');
    expect(buffer('a')).toBe(a);
    buffer('b');
    expect(buffer('a')).not.toBe(a);
  });
});


/** Whether block `i` of `blocks` is resident: a lookup of the prefix ending there matches all of it. */
const resident = (index: PrefixIndex, instance: string, blocks: number[], i: number): boolean =>
  index.matchedBlocks(instance, blocks.slice(0, i + 1)) === i + 1;

describe('PrefixIndex', () => {
  it('matches the longest leading run an instance holds', () => {
    const index = new PrefixIndex(64);
    index.setCapacity('a', 64 * 10);
    index.insert('a', [1, 2, 3], 'x');
    expect(index.matchedBlocks('a', [1, 2, 3, 4])).toBe(3);
    expect(index.matchedBlocks('a', [1, 2])).toBe(2);
    expect(index.matchedBlocks('a', [5, 6])).toBe(0);
    expect(index.matchedBlocks('a', [])).toBe(0);
    expect(index.matchedBlocks('b', [1])).toBe(0);
  });

  it('inserts only the new blocks of a chain that extends what it holds', () => {
    const index = new PrefixIndex(4);
    const turn1 = blockHashes(ids(400), 4);
    index.insert('a', turn1, 'x');
    expect(index.operations).toBe(100);
    const turn2 = blockHashes(ids(408), 4);
    index.insert('a', new Float64Array(turn2), 'x');
    expect(index.operations).toBe(102);
    index.insert('a', turn2, 'x'); // touched again: nothing new
    index.insert('a', turn1, 'x'); // a prefix of what it holds: the rest stays
    expect(index.operations).toBe(102);
    expect(index.size('a')).toBe(102);
    expect(index.matchedBlocks('a', turn2)).toBe(102);
  });

  it('releases what a chain held past a rewrite, found by binary search', () => {
    const index = new PrefixIndex(4);
    const before = blockHashes(ids(40), 4);
    index.insert('a', before, 'x');
    const rewritten = blockHashes([...ids(23), 7, ...ids(20, 500)], 4); // diverges in block 5
    index.insert('a', rewritten, 'x');
    expect(index.operations).toBe(10 + 5 + 6);
    expect(index.size('a')).toBe(11);
    expect(index.matchedBlocks('a', before)).toBe(5);
    expect(index.matchedBlocks('a', rewritten)).toBe(11);
  });

  it('is bounded by capacity in blocks: the least recently used chain loses its tail first', () => {
    const index = new PrefixIndex(64);
    index.setCapacity('a', 64 * 4);
    index.insert('a', [1, 2, 3], 'x');
    index.insert('a', [10, 11], 'y'); // 5 blocks > 4: x's tail, 3, goes
    expect(index.size('a')).toBe(4);
    expect(index.matchedBlocks('a', [1, 2, 3])).toBe(2);
    expect(index.matchedBlocks('a', [10, 11])).toBe(2);
  });

  it('keeps recency per chain: an active chain keeps its early blocks over an idle chain', () => {
    const index = new PrefixIndex(64);
    index.setCapacity('a', 64 * 10);
    index.insert('a', [1, 2, 3, 4], 'active');
    index.insert('a', [10, 11, 12, 13], 'idle');
    index.insert('a', [1, 2, 3, 4, 5], 'active'); // the active chain's next turn touches all its blocks
    index.insert('a', [20, 21, 22], 'new'); // 12 > 10: the idle chain's tail goes, not the active chain's head
    expect(index.matchedBlocks('a', [1, 2, 3, 4, 5])).toBe(5);
    expect(index.matchedBlocks('a', [10, 11, 12, 13])).toBe(2);
    expect(index.matchedBlocks('a', [20, 21, 22])).toBe(3);
  });

  it('counts a shared prefix once and keeps it while any chain holds it', () => {
    const index = new PrefixIndex(64);
    index.setCapacity('a', 64 * 7);
    index.insert('a', [1, 2, 3, 100], 'x'); // a task prompt 1, 2, 3, then each sample's own
    index.insert('a', [1, 2, 3, 200], 'y');
    expect(index.size('a')).toBe(5);
    index.insert('a', [50, 51, 52], 'z'); // 8 > 7: x, the oldest, loses its own tail
    expect(index.size('a')).toBe(7);
    expect(index.matchedBlocks('a', [1, 2, 3, 100])).toBe(3);
    expect(index.matchedBlocks('a', [1, 2, 3, 200])).toBe(4);
    // 9 > 7: x gives up the shared head, which frees nothing while y holds it; then y loses its tail.
    index.insert('a', [60, 61], 'w');
    expect(index.size('a')).toBe(7);
    expect(index.matchedBlocks('a', [1, 2, 3, 200])).toBe(2);
    expect(index.matchedBlocks('a', [50, 51, 52])).toBe(3);
    expect(index.matchedBlocks('a', [60, 61])).toBe(2);
  });

  it('forgets the least recently used chain beyond maxChains', () => {
    const index = new PrefixIndex(64, { maxChains: 2 });
    index.insert('a', [1, 2], 'x');
    index.insert('a', [3], 'y');
    index.insert('a', [1, 2], 'x');
    index.insert('a', [4], 'z');
    expect(index.matchedBlocks('a', [3])).toBe(0);
    expect(index.matchedBlocks('a', [1, 2])).toBe(2);
    expect(index.size('a')).toBe(3);
  });

  it('shrinks with its capacity and forgets a dropped instance', () => {
    const index = new PrefixIndex(64);
    index.setCapacity('a', 64 * 4);
    index.insert('a', [1, 2, 3, 4], 'x');
    index.setCapacity('a', 64 * 2);
    expect(index.matchedBlocks('a', [1, 2, 3, 4])).toBe(2);
    index.dropInstance('a');
    expect(index.matchedBlocks('a', [1])).toBe(0);
  });

  it('answers as the linear scan does on random forking, growing and rewritten chains under eviction', () => {
    let partial = 0;
    let full = 0;
    for (const seed of [1, 2, 3, 4, 5]) {
      const random = createRng(seed);
      const index = new PrefixIndex(4, { maxChains: 12 });
      index.setCapacity('a', 4 * 150);
      index.setCapacity('b', 4 * 60);
      // Token sequences per chain; new chains fork an existing one (siblings sharing a prefix).
      const chains: number[][] = [ids(40)];
      for (let step = 0; step < 400; step++) {
        const c = Math.floor(random() * chains.length);
        const r = random();
        if (r < 0.15 && chains.length < 20) chains.push(chains[c]!.slice(0, Math.floor(random() * chains[c]!.length)));
        else if (r < 0.25) chains[c] = [...chains[c]!.slice(0, Math.floor(random() * chains[c]!.length)), Math.floor(random() * 1000)];
        else chains[c]!.push(...Array.from({ length: 1 + Math.floor(random() * 12) }, () => Math.floor(random() * 1000)));
        const instance = random() < 0.5 ? 'a' : 'b';
        index.insert(instance, blockHashes(chains[c]!, 4), `c${c}`);
        expect(index.size('a')).toBeLessThanOrEqual(150);
        expect(index.size('b')).toBeLessThanOrEqual(60);
        const probe = blockHashes(chains[Math.floor(random() * chains.length)]!, 4);
        full = Math.max(full, index.size('b'));
        for (const i of ['a', 'b']) {
          let linear = 0;
          while (linear < probe.length && resident(index, i, probe, linear)) linear++;
          if (linear > 0 && linear < probe.length) partial++;
          expect(index.matchedBlocks(i, probe)).toBe(linear);
          // Resident blocks are closed under prefixes: nothing past the run is resident.
          for (let j = linear; j < probe.length; j++) expect(resident(index, i, probe, j)).toBe(false);
        }
      }
    }
    // The cases that matter occurred: partial matches, and an instance at its capacity.
    expect(partial).toBeGreaterThan(50);
    expect(full).toBe(60);
  });
});
