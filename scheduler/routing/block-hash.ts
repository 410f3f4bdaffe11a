/**
 * Chained block hashes of token ids, as the prefix index keys them: a block's hash covers its own
 * tokens and, through its predecessor's hash, every token before it, so equal hashes mean equal
 * prefixes and the reusable prefix on an instance is the longest leading run it holds.
 */
import type { BlockHash, BlockHashes } from './types.js';

/** Tokens per block unless configured otherwise. */
export const DEFAULT_BLOCK_SIZE = 64;

/** The parent of a chain's first block. */
const ROOT: BlockHash = 0;

/** Token ids read as one sequence: `head` then `tail`, never concatenated. */
export interface TokenSpan {
  head: ArrayLike<number>;
  tail: ArrayLike<number>;
}

const NONE: ArrayLike<number> = [];

/**
 * Hash of `ids[start, end)` chained to `parent`: two 32-bit multiplicative lanes (cheap, not
 * cryptographic) mixed and combined into a 53-bit safe integer, so it is an exact Map key.
 * Collisions are negligible at the scale of one router's index (millions of blocks).
 */
export function hashBlock(parent: BlockHash, ids: ArrayLike<number>, start: number, end: number): BlockHash {
  return hashSpan(parent, ids, NONE, start, end);
}

/** `hashBlock` of positions `[start, end)` of `head` followed by `tail`. */
function hashSpan(parent: BlockHash, head: ArrayLike<number>, tail: ArrayLike<number>, start: number, end: number): BlockHash {
  const split = Math.max(start, Math.min(end, head.length));
  const fed = feedBlock(beginBlock(parent), head, start, split);
  return endBlock(split < end ? feedBlock(fed, tail, split - head.length, end - head.length) : fed);
}

/** Chained hashes of the full blocks of `ids` (a trailing partial block is not hashed). */
export function blockHashes(ids: ArrayLike<number>, blockSize: number = DEFAULT_BLOCK_SIZE): BlockHash[] {
  const out: BlockHash[] = [];
  for (let b = 0; (b + 1) * blockSize <= ids.length; b++) {
    out.push(hashBlock(out[b - 1] ?? ROOT, ids, b * blockSize, (b + 1) * blockSize));
  }
  return out;
}

/**
 * Leading entries `a` and `b` share, given that they are chained hashes (equal at `i` means equal
 * up to `i`): O(1) when `b` extends `a`, else a binary search.
 */
export function commonPrefix(a: BlockHashes, b: BlockHashes): number {
  const n = Math.min(a.length, b.length);
  if (n === 0 || a[n - 1] === b[n - 1]) return n;
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (a[mid - 1] === b[mid - 1]) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Leading entries of `blocks` that `held` holds, given that they are chained hashes (holding one
 * stands for holding every block before it): O(1) when it holds the last, else a binary search.
 */
export function heldPrefix(blocks: BlockHashes, held: { has(hash: BlockHash): boolean }): number {
  if (blocks.length === 0) return 0;
  if (held.has(blocks[blocks.length - 1]!)) return blocks.length;
  let lo = 0;
  let hi = blocks.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (held.has(blocks[mid - 1]!)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export interface IncrementalHasherOptions {
  /** Tokens per block. Default `DEFAULT_BLOCK_SIZE` (64). */
  blockSize?: number;
  /** Chains whose hashes are kept; the least recently used is forgotten beyond it. Default 4096. */
  maxChains?: number;
}

interface ChainState {
  /** The chain's hashes in `[0, length)`; entries below `length` are never overwritten (views of them are handed out). */
  buffer: Float64Array;
  length: number;
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
   * Chained hashes of the full blocks of `ids` followed by `tail` (a call's prompt and its sampled
   * ids, read in place) for `chainId`. The answer is a view of the chain's append-only buffer: it
   * never changes afterwards, so it may be kept without a copy.
   */
  hashes(chainId: string, ids: ArrayLike<number>, tail: ArrayLike<number> = NONE): BlockHashes {
    const bs = this.blockSize;
    const span: TokenSpan = { head: ids, tail };
    const total = ids.length + tail.length;
    let state = this.chains.get(chainId);
    if (state) this.chains.delete(chainId);
    // A rewrite starts a new buffer: views of the old one stay valid.
    if (!state || !this.extends(state, span, total)) state = { buffer: new Float64Array(16), length: 0, lastBlock: [] };
    const full = Math.floor(total / bs);
    if (full > state.buffer.length) {
      const grown = new Float64Array(Math.max(full, 2 * state.buffer.length));
      grown.set(state.buffer.subarray(0, state.length));
      state.buffer = grown;
    }
    const h = state.buffer;
    for (let b = state.length; b < full; b++) h[b] = hashSpan(b > 0 ? h[b - 1]! : ROOT, ids, tail, b * bs, (b + 1) * bs);
    if (full > state.length) {
      state.length = full;
      state.lastBlock = Array.from({ length: bs }, (_, i) => at(span, (full - 1) * bs + i));
    }
    this.chains.set(chainId, state);
    if (this.chains.size > this.maxChains) this.chains.delete(this.chains.keys().next().value!);
    return h.subarray(0, full);
  }

  /** The chain finished: drop its cached hashes. */
  forget(chainId: string): void {
    this.chains.delete(chainId);
  }

  /** Whether the tokens still hold the chain's last hashed block at the same place. */
  private extends(state: ChainState, span: TokenSpan, total: number): boolean {
    const n = state.length;
    if (n === 0) return true;
    const start = (n - 1) * this.blockSize;
    if (total < start + this.blockSize) return false;
    for (let i = 0; i < this.blockSize; i++) if (at(span, start + i) !== state.lastBlock[i]) return false;
    return true;
  }
}

function at(span: TokenSpan, i: number): number {
  return i < span.head.length ? span.head[i]! : span.tail[i - span.head.length]!;
}

/**
 * A block hash in progress, for callers that receive a block's tokens in pieces (engine KV events
 * carry the engine's smaller blocks): `beginBlock`, then `feedBlock` per piece, then `endBlock`
 * equals `hashBlock(parent, all the pieces' tokens, …)`. Two lanes, as `hashSpan` keeps them.
 */
export interface PartialBlockHash {
  readonly h1: number;
  readonly h2: number;
}

export function beginBlock(parent: BlockHash): PartialBlockHash {
  return { h1: (parent >>> 0) ^ 0x9e3779b9, h2: Math.floor(parent / 4294967296) ^ 0x85ebca6b };
}

/** The hash in progress after `ids[start, end)` more tokens. */
export function feedBlock(state: PartialBlockHash, ids: ArrayLike<number>, start: number, end: number): PartialBlockHash {
  let { h1, h2 } = state;
  for (let i = start; i < end; i++) {
    const t = ids[i]!;
    h1 = Math.imul(h1 ^ t, 0xcc9e2d51);
    h1 = (h1 << 15) | (h1 >>> 17);
    h2 = Math.imul(h2 ^ t, 0x1b873593);
    h2 = (h2 << 13) | (h2 >>> 19);
  }
  return { h1, h2 };
}

export function endBlock(state: PartialBlockHash): BlockHash {
  let { h1, h2 } = state;
  h1 = Math.imul(h1 ^ (h1 >>> 16), 0x85ebca6b) ^ Math.imul(h2 ^ (h2 >>> 13), 0xc2b2ae35);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 0x85ebca6b) ^ Math.imul(h1 ^ (h1 >>> 13), 0xc2b2ae35);
  return 4294967296 * (h2 & 0x1fffff) + (h1 >>> 0);
}
