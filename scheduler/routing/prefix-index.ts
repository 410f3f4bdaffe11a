/**
 * The router's estimate of each instance's prefix cache: per instance, an LRU set of chained
 * block hashes bounded by the instance's KV capacity, so the index forgets roughly what the engine
 * would have evicted. It is fed by routing decisions and finished calls, not by the engine, so it
 * is an approximation (the simulator measures how good).
 */
import type { BlockHash, PrefixLookup } from './types.js';

export class PrefixIndex implements PrefixLookup {
  /** Per instance: resident hashes; Map insertion order is recency (oldest first). */
  private readonly lru = new Map<string, Map<BlockHash, true>>();
  private readonly capacity = new Map<string, number>();

  /** @param blockSize tokens per block of the hashes inserted (capacity is converted with it). */
  constructor(readonly blockSize: number) {}

  /**
   * Declares (or resizes) an instance; its index holds `floor(kvCapacityTokens / blockSize)` blocks.
   * An instance never declared is unbounded.
   */
  setCapacity(instance: string, kvCapacityTokens: number): void {
    this.capacity.set(instance, Math.max(1, Math.floor(kvCapacityTokens / this.blockSize)));
    this.evict(instance);
  }

  /**
   * Records that `instance` holds `blocks` (a prompt routed there, or prompt + output once the
   * call finished). Blocks already present are touched. The chain is inserted last block first so
   * its head is the most recent: on overflow a prefix loses its tail before its head, as engines
   * free, and what remains stays matchable.
   */
  insert(instance: string, blocks: readonly BlockHash[]): void {
    const set = this.setOf(instance);
    for (let i = blocks.length - 1; i >= 0; i--) {
      const h = blocks[i]!;
      set.delete(h);
      set.set(h, true);
    }
    this.evict(instance);
  }

  /**
   * Leading blocks of `blocks` the index believes `instance` holds. A lookup does not touch: every
   * instance is looked up for every request, and only the chosen one will really be used (its
   * `insert` touches the hit).
   */
  matchedBlocks(instance: string, blocks: readonly BlockHash[]): number {
    const set = this.lru.get(instance);
    if (!set) return 0;
    let n = 0;
    while (n < blocks.length && set.has(blocks[n]!)) n++;
    return n;
  }

  /** Blocks the index currently holds for `instance`. */
  size(instance: string): number {
    return this.lru.get(instance)?.size ?? 0;
  }

  /** The instance died or restarted: its cache is gone. */
  dropInstance(instance: string): void {
    this.lru.delete(instance);
  }

  private setOf(instance: string): Map<BlockHash, true> {
    let set = this.lru.get(instance);
    if (!set) {
      set = new Map();
      this.lru.set(instance, set);
    }
    return set;
  }

  private evict(instance: string): void {
    const set = this.lru.get(instance);
    const cap = this.capacity.get(instance);
    if (!set || cap === undefined) return;
    for (const h of set.keys()) {
      if (set.size <= cap) break;
      set.delete(h);
    }
  }
}
