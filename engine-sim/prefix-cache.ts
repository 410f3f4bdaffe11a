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
  /** The blocks of `pinned`, in the same order: releasing them needs no lookups. */
  readonly blocks: Block[];
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

/** A resident block: how many running requests pin it, and when it was last released. */
export interface Block {
  refs: number;
  /** The release that queued it for eviction (its number in release order); -1 while never released or once evicted. */
  releasedAt: number;
}

export class PrefixCache {
  /** hash → resident block. */
  private readonly blocks = new Map<number, Block>();
  /**
   * Eviction order: blocks as they were released, oldest first, each with the release's number. An
   * entry is live while its block is unpinned and not released since; a re-pinned block's entry goes
   * stale and is skipped, instead of being deleted from the middle of a set (on a 2k-block prompt
   * that bookkeeping was most of the simulator's CPU).
   */
  private queue: { hash: number; block: Block; releasedAt: number }[] = [];
  private queueHead = 0;
  private releases = 0;
  /** Resident blocks no running request pins. */
  private evictableCount = 0;
  private reservedTotal = 0;
  private evictionCount = 0;
  /**
   * Told of every block that enters the cache (`stored`) or is evicted from it, in order, as an
   * engine's KV events tell (the routing simulator publishes them). Default none.
   */
  onBlockEvent: ((kind: 'stored' | 'removed', hash: number) => void) | undefined = undefined;

  constructor(
    readonly capacityBlocks: number,
    readonly blockSize: number,
  ) {}

  /** Number of leading hashes, of the first `limit` (default all), whose blocks are resident. */
  matchPrefix(hashes: readonly number[], limit = hashes.length): number {
    let n = 0;
    while (n < limit && this.blocks.has(hashes[n]!)) n++;
    return n;
  }

  /**
   * Admits a request whose first `hits` prompt blocks are resident (from `matchPrefix`) and that
   * needs `totalBlocks` blocks in all. Pins the hits and reserves the rest, evicting unpinned
   * blocks as needed; returns null, changing nothing, when the rest does not fit.
   */
  allocate(hashes: readonly number[], hits: number, totalBlocks: number): KvAllocation | null {
    const needed = totalBlocks - hits;
    const hit: Block[] = new Array(hits);
    let hitsEvictable = 0;
    for (let i = 0; i < hits; i++) {
      const block = this.blocks.get(hashes[i]!)!;
      hit[i] = block;
      if (block.refs === 0) hitsEvictable++;
    }
    if (needed > this.freeBlocks() + this.evictableCount - hitsEvictable) return null;
    for (const block of hit) this.pinBlock(block);
    let shortfall = needed - this.freeBlocks();
    while (shortfall > 0) {
      const entry = this.queue[this.queueHead++]!;
      if (!isLive(entry)) continue;
      entry.block.releasedAt = -1;
      this.blocks.delete(entry.hash);
      this.evictableCount--;
      this.evictionCount++;
      this.onBlockEvent?.('removed', entry.hash);
      shortfall--;
    }
    this.compactQueue();
    this.reservedTotal += needed;
    return { pinned: hashes.slice(0, hits), blocks: hit, reserved: needed };
  }

  /** Turns one reserved block of `alloc` into the resident block `hash`, now that it is full. */
  commit(alloc: KvAllocation, hash: number): void {
    if (alloc.reserved === 0) throw new Error('commit without a reserved block');
    alloc.reserved--;
    this.reservedTotal--;
    // Another request may have computed the same block meanwhile: share it, like vLLM's dedup.
    let block = this.blocks.get(hash);
    if (block) this.pinBlock(block);
    else {
      this.blocks.set(hash, (block = { refs: 1, releasedAt: -1 }));
      this.onBlockEvent?.('stored', hash);
    }
    alloc.pinned.push(hash);
    alloc.blocks.push(block);
  }

  /** Frees a finished or aborted request's reservation and unpins its blocks. */
  release(alloc: KvAllocation): void {
    this.reservedTotal -= alloc.reserved;
    alloc.reserved = 0;
    // Last block first, so a prefix outlives its own tail when space runs short (as vLLM frees).
    for (let i = alloc.blocks.length - 1; i >= 0; i--) {
      const block = alloc.blocks[i]!;
      if (--block.refs === 0) {
        block.releasedAt = this.releases++;
        this.queue.push({ hash: alloc.pinned[i]!, block, releasedAt: block.releasedAt });
        this.evictableCount++;
      }
    }
    alloc.pinned.length = 0;
    alloc.blocks.length = 0;
    this.compactQueue();
  }

  /** Blocks holding no data and reserved by nobody. */
  freeBlocks(): number {
    return this.capacityBlocks - this.blocks.size - this.reservedTotal;
  }

  /** Blocks in use by running requests (pinned or reserved); vLLM's `kv_cache_usage_perc` basis. */
  usedBlocks(): number {
    return this.blocks.size - this.evictableCount + this.reservedTotal;
  }

  /** Blocks holding cached data, pinned or not. */
  residentBlocks(): number {
    return this.blocks.size;
  }

  evictions(): number {
    return this.evictionCount;
  }

  private pinBlock(block: Block): void {
    if (block.refs++ === 0) this.evictableCount--;
  }

  /** Drops stale entries once they outnumber the live ones, and consumed ones once they are most of the array: O(resident blocks). */
  private compactQueue(): void {
    const entries = this.queue.length - this.queueHead;
    if (entries > 2 * this.evictableCount + 1024) {
      this.queue = this.queue.slice(this.queueHead).filter(isLive);
      this.queueHead = 0;
    } else if (this.queueHead > 1024 && 2 * this.queueHead > this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
  }
}

/** Whether a queue entry still stands for its block: unpinned, not evicted, and not released again since. */
function isLive(entry: { block: Block; releasedAt: number }): boolean {
  return entry.block.refs === 0 && entry.block.releasedAt === entry.releasedAt;
}
