/**
 * The KV cache of one simulated engine, in blocks of `blockSize` tokens, with automatic prefix
 * caching as vLLM does it: a full block is identified by a hash of its tokens chained with its
 * predecessor's hash, running requests pin the blocks they use, and unpinned blocks stay resident
 * until the space is needed, least recently released first.
 */

/** The blocks one admitted request holds. */
export interface KvAllocation {
  /** Hashes of the request's full, computed blocks, in sequence order; each one is pinned. */
  readonly pinned: number[];
  /** Blocks reserved for tokens not yet computed (or a partial last block); not shareable. */
  reserved: number;
}

const ROOT_HASH = 0;

/**
 * Hash of tokens[start, end) chained to `parent`: two 32-bit lanes combined into a 53-bit number
 * (a safe integer, so a cheap Map key). Collisions are negligible at simulator scale.
 */
export function hashBlock(
  parent: number,
  tokens: readonly number[],
  start: number,
  end: number,
): number {
  let h1 = (parent >>> 0) ^ 0xdeadbeef;
  let h2 = Math.floor(parent / 4294967296) ^ 0x41c6ce57;
  for (let i = start; i < end; i++) {
    const t = tokens[i]!;
    h1 = Math.imul(h1 ^ t, 2654435761);
    h2 = Math.imul(h2 ^ t, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (h2 & 0x1fffff) + (h1 >>> 0);
}

/** Chained hashes of the full blocks of `tokens`, continuing from `previous` (already hashed). */
export function extendBlockHashes(
  previous: number[],
  tokens: readonly number[],
  blockSize: number,
  upToTokens = tokens.length,
): number[] {
  for (let b = previous.length; (b + 1) * blockSize <= upToTokens; b++) {
    previous.push(
      hashBlock(previous[b - 1] ?? ROOT_HASH, tokens, b * blockSize, (b + 1) * blockSize),
    );
  }
  return previous;
}

export class PrefixCache {
  /** hash → number of running requests pinning the block. */
  private readonly refs = new Map<number, number>();
  /** Resident, unpinned blocks; iteration order is eviction order (oldest release first). */
  private readonly evictable = new Set<number>();
  private reservedTotal = 0;
  private evictionCount = 0;

  constructor(
    readonly capacityBlocks: number,
    readonly blockSize: number,
  ) {}

  /** Number of leading hashes whose blocks are resident. */
  matchPrefix(hashes: readonly number[]): number {
    let n = 0;
    while (n < hashes.length && this.refs.has(hashes[n]!)) n++;
    return n;
  }

  /**
   * Admits a request whose first `hits` prompt blocks are resident (from `matchPrefix`) and that
   * needs `totalBlocks` blocks in all. Pins the hits and reserves the rest, evicting unpinned
   * blocks as needed; returns null, changing nothing, when the rest does not fit.
   */
  allocate(hashes: readonly number[], hits: number, totalBlocks: number): KvAllocation | null {
    const needed = totalBlocks - hits;
    let hitsEvictable = 0;
    for (let i = 0; i < hits; i++) if (this.evictable.has(hashes[i]!)) hitsEvictable++;
    if (needed > this.freeBlocks() + this.evictable.size - hitsEvictable) return null;
    const pinned = hashes.slice(0, hits);
    for (const h of pinned) this.pin(h);
    let shortfall = needed - this.freeBlocks();
    for (const h of this.evictable) {
      if (shortfall <= 0) break;
      this.evictable.delete(h);
      this.refs.delete(h);
      this.evictionCount++;
      shortfall--;
    }
    this.reservedTotal += needed;
    return { pinned, reserved: needed };
  }

  /** Turns one reserved block of `alloc` into the resident block `hash`, now that it is full. */
  commit(alloc: KvAllocation, hash: number): void {
    if (alloc.reserved === 0) throw new Error('commit without a reserved block');
    alloc.reserved--;
    this.reservedTotal--;
    // Another request may have computed the same block meanwhile: share it, like vLLM's dedup.
    if (this.refs.has(hash)) this.pin(hash);
    else this.refs.set(hash, 1);
    alloc.pinned.push(hash);
  }

  /** Frees a finished or aborted request's reservation and unpins its blocks. */
  release(alloc: KvAllocation): void {
    this.reservedTotal -= alloc.reserved;
    alloc.reserved = 0;
    // Last block first, so a prefix outlives its own tail when space runs short (as vLLM frees).
    for (let i = alloc.pinned.length - 1; i >= 0; i--) {
      const h = alloc.pinned[i]!;
      const n = this.refs.get(h)! - 1;
      this.refs.set(h, n);
      if (n === 0) this.evictable.add(h);
    }
    alloc.pinned.length = 0;
  }

  /** Blocks holding no data and reserved by nobody. */
  freeBlocks(): number {
    return this.capacityBlocks - this.refs.size - this.reservedTotal;
  }

  /** Blocks in use by running requests (pinned or reserved); vLLM's `kv_cache_usage_perc` basis. */
  usedBlocks(): number {
    return this.refs.size - this.evictable.size + this.reservedTotal;
  }

  /** Blocks holding cached data, pinned or not. */
  residentBlocks(): number {
    return this.refs.size;
  }

  evictions(): number {
    return this.evictionCount;
  }

  private pin(hash: number): void {
    const n = this.refs.get(hash)!;
    if (n === 0) this.evictable.delete(hash);
    this.refs.set(hash, n + 1);
  }
}
