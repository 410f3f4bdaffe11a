/**
 * The router's estimate of each instance's prefix cache: per instance, the chained block hashes
 * each chain placed there, bounded by the instance's KV capacity, so the index forgets roughly
 * what the engine would have evicted. It is fed by routing decisions and finished calls, not by
 * the engine, so it is an approximation (the simulator measures how good).
 *
 * Per-turn cost is O(new blocks): a chain's entry remembers the prefix it holds, so a prompt that
 * extends it (checked at its last block in O(1): the hashes are chained) adds only its new blocks,
 * and a rewrite is found by binary search. Recency is kept per chain (touching a chain refreshes
 * all its blocks at once); a block shared by several chains (a task prompt) is counted once and
 * kept while any of them holds it.
 */
import { commonPrefix, heldPrefix } from './block-hash.js';
import type { BlockHash, BlockHashes, PrefixLookup } from './types.js';

export interface PrefixIndexOptions {
  /** Chains remembered per instance; the least recently used is dropped beyond it. Default 4096. */
  maxChains?: number;
}

/** What one chain holds on one instance: the leading `hashes` of its sequence. */
interface ChainEntry {
  readonly hashes: BlockHash[];
}

interface InstanceCache {
  /** Resident block → chains holding it. */
  readonly refs: Map<BlockHash, number>;
  /** Chain → its entry; Map insertion order is recency (oldest first). */
  readonly chains: Map<string, ChainEntry>;
}

export class PrefixIndex implements PrefixLookup {
  private readonly caches = new Map<string, InstanceCache>();
  private readonly capacity = new Map<string, number>();
  private readonly maxChains: number;
  private changes = 0;

  /** @param blockSize tokens per block of the hashes inserted (capacity is converted with it). */
  constructor(
    readonly blockSize: number,
    options: PrefixIndexOptions = {},
  ) {
    this.maxChains = options.maxChains ?? 4096;
  }

  /**
   * Declares (or resizes) an instance; its index holds `floor(kvCapacityTokens / blockSize)` blocks.
   * An instance never declared is unbounded in blocks.
   */
  setCapacity(instance: string, kvCapacityTokens: number): void {
    this.capacity.set(instance, Math.max(1, Math.floor(kvCapacityTokens / this.blockSize)));
    this.evict(instance);
  }

  /**
   * Records that `instance` holds `blocks` of `chainId` (a prompt routed there, or prompt + output
   * once the call finished) and makes the chain the most recent there. Blocks the chain held
   * beyond where `blocks` diverges from them are released (the chain moved on); a shorter
   * `blocks` that is a prefix of what it holds keeps the rest (the engine still has it).
   */
  insert(instance: string, blocks: BlockHashes, chainId: string): void {
    const cache = this.cacheOf(instance);
    let entry = cache.chains.get(chainId);
    if (!entry && blocks.length === 0) return;
    if (entry) cache.chains.delete(chainId);
    else entry = { hashes: [] };
    cache.chains.set(chainId, entry);
    const held = entry.hashes;
    const common = commonPrefix(held, blocks);
    if (common < blocks.length) {
      this.release(cache, held, common);
      for (let i = common; i < blocks.length; i++) {
        const h = blocks[i]!;
        held.push(h);
        cache.refs.set(h, (cache.refs.get(h) ?? 0) + 1);
      }
      this.changes += blocks.length - common;
    }
    this.evict(instance);
  }

  /**
   * Leading blocks of `blocks` the index believes `instance` holds. Every chain's entry is a
   * prefix, so what is resident is closed under prefixes and the answer is found by binary search.
   * A lookup does not touch: every instance is looked up for every request, and only the chosen
   * one will really be used (its `insert` touches it).
   */
  matchedBlocks(instance: string, blocks: BlockHashes): number {
    const refs = this.caches.get(instance)?.refs;
    return refs ? heldPrefix(blocks, refs) : 0;
  }

  /** Block insertions and removals so far (a block entering or leaving a chain's entry): the index's work. */
  get operations(): number {
    return this.changes;
  }

  /** Blocks the index currently holds for `instance` (shared blocks once). */
  size(instance: string): number {
    return this.caches.get(instance)?.refs.size ?? 0;
  }

  /** The instance died or restarted: its cache is gone. */
  dropInstance(instance: string): void {
    this.caches.delete(instance);
  }

  private cacheOf(instance: string): InstanceCache {
    let cache = this.caches.get(instance);
    if (!cache) {
      cache = { refs: new Map(), chains: new Map() };
      this.caches.set(instance, cache);
    }
    return cache;
  }

  /** Drops `held[from, end)` from a chain's entry, last first. */
  private release(cache: InstanceCache, held: BlockHash[], from: number): void {
    for (let i = held.length - 1; i >= from; i--) {
      const h = held[i]!;
      const n = cache.refs.get(h)!;
      if (n > 1) cache.refs.set(h, n - 1);
      else cache.refs.delete(h);
    }
    this.changes += held.length - from;
    held.length = from;
  }

  /**
   * Over capacity, the least recently used chain loses its tail first, as engines free; a shared
   * block leaves only with its last holder. Over `maxChains`, the least recently used chain goes.
   */
  private evict(instance: string): void {
    const cache = this.caches.get(instance);
    if (!cache) return;
    const cap = this.capacity.get(instance) ?? Infinity;
    while (cache.refs.size > cap || cache.chains.size > this.maxChains) {
      const [chainId, entry] = cache.chains.entries().next().value!;
      const held = entry.hashes;
      if (cache.chains.size > this.maxChains) this.release(cache, held, 0);
      else while (held.length > 0 && cache.refs.size > cap) this.release(cache, held, held.length - 1);
      if (held.length === 0) cache.chains.delete(chainId);
    }
  }
}
