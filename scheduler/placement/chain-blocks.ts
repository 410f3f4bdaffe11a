/**
 * The block hashes the placement service last heard per chain, so a caller sends only a call's new
 * blocks: a call names the prefix it continues (`base`: its length and last hash, which by
 * chaining stands for every block before it) and carries the rest. The blocks are kept in
 * append-only buffers and handed out as views, as the hasher does, so nothing is copied per call.
 */
import type { BlockHash, BlockHashes } from '../routing/types.js';

/** The prefix a call's blocks continue. */
export interface ChainBase {
  /** Leading blocks of the chain the service already has. */
  blocks: number;
  /** Hash of the last of them. */
  hash: BlockHash;
}

interface Chain {
  /** Entries below `length` are never overwritten: views of them are handed out. */
  buffer: Float64Array;
  length: number;
}

export class ChainBlocks {
  /** Insertion order is recency (re-inserted on use). */
  private readonly chains = new Map<string, Chain>();

  /** @param maxChains chains remembered; the least recently used is forgotten beyond it (its caller then sends all its blocks again). */
  constructor(private readonly maxChains: number) {}

  /**
   * The chain's whole block list: `base`'s prefix of what was heard before, then `blocks`; it is
   * remembered as the chain's latest. Undefined when the service does not hold `base` (forgotten,
   * or a message that arrived out of order): the caller must send every block.
   */
  resolve(chainId: string, base: ChainBase | undefined, blocks: readonly BlockHash[]): BlockHashes | undefined {
    const known = this.chains.get(chainId);
    const from = base?.blocks ?? 0;
    if (from > 0 && (!known || known.length < from || known.buffer[from - 1] !== base!.hash)) return undefined;
    this.chains.delete(chainId);
    const length = from + blocks.length;
    // Appending past the known length keeps the buffer; a rewrite (or growth) starts a new one.
    let chain = known && known.length === from && length <= known.buffer.length ? known : undefined;
    if (!chain) {
      const buffer = new Float64Array(Math.max(16, 2 * length));
      if (known && from > 0) buffer.set(known.buffer.subarray(0, from));
      chain = { buffer, length: from };
    }
    chain.buffer.set(blocks, from);
    chain.length = length;
    this.chains.set(chainId, chain);
    if (this.chains.size > this.maxChains) this.chains.delete(this.chains.keys().next().value!);
    return chain.buffer.subarray(0, length);
  }
}
