import { describe, expect, it } from 'vitest';
import { ChainBlocks } from '../../scheduler/placement/chain-blocks.js';
import { blockHashes } from '../../scheduler/routing/block-hash.js';

const hashes = (n: number, base = 0): number[] => blockHashes(Array.from({ length: 4 * n }, (_, i) => base + i), 4);

describe('ChainBlocks', () => {
  it('rebuilds a chain from its base and its new blocks, turn after turn', () => {
    const chains = new ChainBlocks(8);
    const turn1 = hashes(3);
    const turn2 = hashes(7);
    const first = chains.resolve('c', undefined, turn1)!;
    expect(Array.from(first)).toEqual(turn1);
    expect(Array.from(chains.resolve('c', { blocks: 3, hash: turn1[2]! }, turn2.slice(3))!)).toEqual(turn2);
    expect(Array.from(chains.resolve('c', { blocks: 7, hash: turn2[6]! }, [])!)).toEqual(turn2);
    expect(Array.from(first)).toEqual(turn1);
  });

  it('refuses a base it does not hold: unknown chain, too long, or another history', () => {
    const chains = new ChainBlocks(8);
    const turn = hashes(4);
    expect(chains.resolve('c', { blocks: 1, hash: turn[0]! }, [])).toBeUndefined();
    chains.resolve('c', undefined, turn);
    expect(chains.resolve('c', { blocks: 5, hash: turn[3]! }, [])).toBeUndefined();
    expect(chains.resolve('c', { blocks: 4, hash: turn[3]! + 1 }, [])).toBeUndefined();
    expect(chains.resolve('d', { blocks: 4, hash: turn[3]! }, [])).toBeUndefined();
  });

  it('rewrites a chain past a shorter base without changing what it handed out before', () => {
    const chains = new ChainBlocks(8);
    const before = hashes(6);
    const kept = chains.resolve('c', undefined, before)!;
    const rewritten = blockHashes([...Array.from({ length: 8 }, (_, i) => i), ...Array.from({ length: 12 }, (_, i) => 900 + i)], 4);
    expect(rewritten.slice(0, 2)).toEqual(before.slice(0, 2));
    expect(Array.from(chains.resolve('c', { blocks: 2, hash: before[1]! }, rewritten.slice(2))!)).toEqual(rewritten);
    expect(Array.from(kept)).toEqual(before);
  });

  it('forgets the least recently used chain beyond its bound', () => {
    const chains = new ChainBlocks(2);
    const a = hashes(2, 0);
    const b = hashes(2, 100);
    chains.resolve('a', undefined, a);
    chains.resolve('b', undefined, b);
    chains.resolve('a', { blocks: 2, hash: a[1]! }, []);
    chains.resolve('c', undefined, hashes(2, 200));
    expect(chains.resolve('b', { blocks: 2, hash: b[1]! }, [])).toBeUndefined();
    expect(chains.resolve('a', { blocks: 2, hash: a[1]! }, [])).toBeDefined();
  });
});
