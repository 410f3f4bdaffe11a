/**
 * Chained block hashes of token ids, as the prefix index keys them: a block's hash covers its own
 * tokens and, through its predecessor's hash, every token before it, so equal hashes mean equal
 * prefixes and the reusable prefix on an instance is the longest leading run it holds.
 */
import type { BlockHash } from './types.js';

/** Tokens per block unless configured otherwise. */
export const DEFAULT_BLOCK_SIZE = 64;

/** The parent of a chain's first block. */
const ROOT: BlockHash = 0;

/**
 * Hash of `ids[start, end)` chained to `parent`: two 32-bit multiplicative lanes (cheap, not
 * cryptographic) mixed and combined into a 53-bit safe integer, so it is an exact Map key.
 * Collisions are negligible at the scale of one router's index (millions of blocks).
 */
export function hashBlock(parent: BlockHash, ids: ArrayLike<number>, start: number, end: number): BlockHash {
  let h1 = (parent >>> 0) ^ 0x9e3779b9;
  let h2 = Math.floor(parent / 4294967296) ^ 0x85ebca6b;
  for (let i = start; i < end; i++) {
    const t = ids[i]!;
    h1 = Math.imul(h1 ^ t, 0xcc9e2d51);
    h1 = (h1 << 15) | (h1 >>> 17);
    h2 = Math.imul(h2 ^ t, 0x1b873593);
    h2 = (h2 << 13) | (h2 >>> 19);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 0x85ebca6b) ^ Math.imul(h2 ^ (h2 >>> 13), 0xc2b2ae35);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 0x85ebca6b) ^ Math.imul(h1 ^ (h1 >>> 13), 0xc2b2ae35);
  return 4294967296 * (h2 & 0x1fffff) + (h1 >>> 0);
}

/** Chained hashes of the full blocks of `ids` (a trailing partial block is not hashed). */
export function blockHashes(ids: ArrayLike<number>, blockSize: number = DEFAULT_BLOCK_SIZE): BlockHash[] {
  const out: BlockHash[] = [];
  for (let b = 0; (b + 1) * blockSize <= ids.length; b++) {
    out.push(hashBlock(out[b - 1] ?? ROOT, ids, b * blockSize, (b + 1) * blockSize));
  }
  return out;
}

export interface IncrementalHasherOptions {
  /** Tokens per block. Default `DEFAULT_BLOCK_SIZE` (64). */
  blockSize?: number;
  /** Chains whose hashes are kept; the least recently used is forgotten beyond it. Default 4096. */
  maxChains?: number;
}

interface ChainState {
  hashes: BlockHash[];
  /** The last hashed block's token ids, to detect a prompt that is not an extension. */
  lastBlock: number[];
}

/**
 * Hashes each chain's prompts incrementally: an agent's turn k+1 prompt extends turn k's, so only
 * its new full blocks are hashed, and a 100k-token context costs a few new blocks per turn rather
 * than the whole prompt. A prompt whose last previously hashed block changed (history rewritten,
 * e.g. context truncation) is rehashed from scratch; earlier edits with an unchanged last block
 * are not detected — chains are append-only by construction in the gateway.
 */
export class IncrementalHasher {
  readonly blockSize: number;
  private readonly maxChains: number;
  /** Insertion order is recency order (re-inserted on use). */
  private readonly chains = new Map<string, ChainState>();

  constructor(options: IncrementalHasherOptions = {}) {
    this.blockSize = options.blockSize ?? DEFAULT_BLOCK_SIZE;
    this.maxChains = options.maxChains ?? 4096;
  }

  /**
   * Chained hashes of the full blocks of `ids` for `chainId`. The returned array is the chain's
   * cache: valid until the next call for the same chain; copy it to keep it.
   */
  hashes(chainId: string, ids: ArrayLike<number>): readonly BlockHash[] {
    const bs = this.blockSize;
    let state = this.chains.get(chainId);
    if (state) this.chains.delete(chainId);
    if (state && !this.extends(state, ids)) state = undefined;
    state ??= { hashes: [], lastBlock: [] };
    const full = Math.floor(ids.length / bs);
    const h = state.hashes;
    for (let b = h.length; b < full; b++) h.push(hashBlock(h[b - 1] ?? ROOT, ids, b * bs, (b + 1) * bs));
    state.lastBlock = full > 0 ? Array.prototype.slice.call(ids, (full - 1) * bs, full * bs) as number[] : [];
    this.chains.set(chainId, state);
    if (this.chains.size > this.maxChains) this.chains.delete(this.chains.keys().next().value!);
    return h;
  }

  /** The chain finished: drop its cached hashes. */
  forget(chainId: string): void {
    this.chains.delete(chainId);
  }

  /** Whether `ids` still holds the chain's last hashed block at the same place. */
  private extends(state: ChainState, ids: ArrayLike<number>): boolean {
    const n = state.hashes.length;
    if (n === 0) return true;
    const start = (n - 1) * this.blockSize;
    if (ids.length < start + this.blockSize) return false;
    for (let i = 0; i < this.blockSize; i++) if (ids[start + i] !== state.lastBlock[i]) return false;
    return true;
  }
}
