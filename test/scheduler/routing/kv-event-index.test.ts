import { describe, expect, it } from 'vitest';
import { hashBlock as engineHash } from '../../../engine-sim/prefix-cache.js';
import { createRng } from '../../../engine-sim/prng.js';
import { beginBlock, blockHashes, endBlock, feedBlock, hashBlock } from '../../../scheduler/routing/block-hash.js';
import { EventsOrEstimate, KvEventIndex, type KvEvent, type KvEventBatch } from '../../../scheduler/routing/kv-event-index.js';
import { PrefixIndex } from '../../../scheduler/routing/prefix-index.js';

const B = 64;

/**
 * A vLLM-like engine cache for the tests: blocks of `size` tokens keyed by its own chained hash
 * (not the router's), evicted leaf first (a block's tail before its prefix, as engines free), and
 * publishing what it stores and removes.
 */
class FakeEngine {
  /** Engine hash → its parent hash and whether a held block has it as parent. */
  readonly blocks = new Map<number, { parent: number | null; children: number; lastUse: number }>();
  evictions = 0;
  private clock = 0;
  private pending: KvEvent[] = [];
  private seq = 0;

  constructor(
    readonly size: number,
    readonly capacity: number,
  ) {}

  hashes(tokens: number[]): number[] {
    const out: number[] = [];
    for (let b = 0; (b + 1) * this.size <= tokens.length; b++) out.push(engineHash(out[b - 1] ?? 7, tokens, b * this.size, (b + 1) * this.size));
    return out;
  }

  /** Tokens the engine would serve `tokens` from its cache. */
  cachedTokens(tokens: number[]): number {
    let n = 0;
    for (const h of this.hashes(tokens)) {
      if (!this.blocks.has(h)) break;
      n++;
    }
    return n * this.size;
  }

  /** Runs a prompt: its uncached blocks are stored (one event, as vLLM's per step), evicting leaves as needed. */
  run(tokens: number[]): void {
    const hs = this.hashes(tokens);
    let hit = 0;
    while (hit < hs.length && this.blocks.has(hs[hit]!)) this.blocks.get(hs[hit++]!)!.lastUse = ++this.clock;
    if (hit === hs.length) return;
    for (let i = 0; i < hit; i++) this.blocks.get(hs[i]!)!.lastUse = ++this.clock;
    const pinned = new Set(hs.slice(0, hit));
    const stored: number[] = [];
    for (let i = hit; i < hs.length; i++) {
      while (this.blocks.size >= this.capacity) {
        if (!this.evictOne(pinned)) break;
      }
      if (this.blocks.size >= this.capacity) break;
      const parent = i > 0 ? hs[i - 1]! : null;
      this.blocks.set(hs[i]!, { parent, children: 0, lastUse: ++this.clock });
      if (parent !== null) this.blocks.get(parent)!.children++;
      pinned.add(hs[i]!);
      stored.push(hs[i]!);
    }
    if (stored.length > 0) {
      this.pending.push({
        type: 'BlockStored',
        blockHashes: stored,
        parentBlockHash: hit > 0 ? hs[hit - 1]! : null,
        tokenIds: tokens.slice(hit * this.size, (hit + stored.length) * this.size),
        blockSize: this.size,
        medium: 'GPU',
      });
    }
  }

  clear(): void {
    this.blocks.clear();
    this.pending.push({ type: 'AllBlocksCleared' });
  }

  /** The events since the last batch, as one batch. */
  batch(): KvEventBatch {
    const events = this.pending;
    this.pending = [];
    return { seq: this.seq++, ts: this.clock, events };
  }

  private evictOne(pinned: Set<number>): boolean {
    let victim: number | undefined;
    let oldest = Infinity;
    for (const [h, b] of this.blocks) {
      if (b.children === 0 && !pinned.has(h) && b.lastUse < oldest) {
        oldest = b.lastUse;
        victim = h;
      }
    }
    if (victim === undefined) return false;
    const b = this.blocks.get(victim)!;
    this.blocks.delete(victim);
    this.evictions++;
    if (b.parent !== null && this.blocks.has(b.parent)) this.blocks.get(b.parent)!.children--;
    this.pending.push({ type: 'BlockRemoved', blockHashes: [victim], medium: 'GPU' });
    return true;
  }
}

/** Chains of an agent batch in tokens: a shared system prompt, task prompts, growing turns. */
function workload(seed: number): number[][] {
  const rng = createRng(seed);
  const system = Array.from({ length: 300 }, (_, i) => i + 1);
  const chains = Array.from({ length: 6 }, (_, c) => [...system, ...Array.from({ length: 100 + c * 37 }, () => 1000 + Math.floor(rng() * 5000))]);
  const prompts: number[][] = [];
  for (let turn = 0; turn < 8; turn++) {
    for (const chain of chains) {
      if (rng() < 0.3) continue;
      chain.push(...Array.from({ length: 20 + Math.floor(rng() * 200) }, () => 1000 + Math.floor(rng() * 5000)));
      prompts.push(chain.slice());
    }
  }
  return prompts;
}

describe('streamed block hash', () => {
  it('equals hashBlock over the same tokens, fed in pieces', () => {
    const ids = Array.from({ length: 64 }, (_, i) => (i * 7919) % 1000);
    let s = beginBlock(12345);
    s = feedBlock(s, ids, 0, 16);
    s = feedBlock(s, ids, 16, 17);
    s = feedBlock(s, ids, 17, 64);
    expect(endBlock(s)).toBe(hashBlock(12345, ids, 0, 64));
  });
});

describe('KvEventIndex, engine blocks mapped by token ids', () => {
  // 16: vLLM's default; 1: SGLang's default page; 128: larger than ours; 48: neither divides the other.
  for (const size of [16, 1, 128, 48]) {
    it(`matches floor(engine's cached tokens / 64) on every prompt (${size}-token engine blocks, evicting)`, () => {
      const capacityTokens = 2400;
      const engine = new FakeEngine(size, Math.floor(capacityTokens / size));
      const index = new KvEventIndex(B);
      let checked = 0;
      let hits = 0;
      for (const prompt of workload(size)) {
        const ours = blockHashes(prompt, B);
        const before = index.matchedBlocks('e', ours);
        expect(before).toBe(Math.min(ours.length, Math.floor(engine.cachedTokens(prompt) / B)));
        if (before > 0) hits++;
        engine.run(prompt);
        index.apply('e', engine.batch(), 0);
        expect(index.matchedBlocks('e', ours)).toBe(Math.min(ours.length, Math.floor(engine.cachedTokens(prompt) / B)));
        checked++;
      }
      expect(checked).toBeGreaterThan(20);
      expect(hits).toBeGreaterThan(10);
      expect(engine.evictions).toBeGreaterThan(50);
      const stats = index.stats('e')!;
      expect(stats.synced).toBe(true);
      // Records stay bounded by the engine's blocks plus ancestors kept for them.
      expect(stats.engineRecords).toBeLessThanOrEqual(engine.blocks.size * 2 + 64);
    });
  }

  it('a block whose parent it never saw is not mapped (never a wrong match); AllBlocksCleared rebuilds', () => {
    const engine = new FakeEngine(16, 1000);
    const prompt = Array.from({ length: 256 }, (_, i) => i);
    engine.run(prompt.slice(0, 128));
    engine.batch(); // lost before the subscription
    engine.run(prompt);
    const index = new KvEventIndex(B);
    index.apply('e', engine.batch(), 0);
    expect(index.matchedBlocks('e', blockHashes(prompt, B))).toBe(0);
    // The first batch seen was not the publisher's first: the feed is incomplete.
    expect(index.isLive('e', 0)).toBe(false);
    engine.clear();
    engine.run(prompt);
    index.apply('e', engine.batch(), 0);
    expect(index.isLive('e', 0)).toBe(true);
    expect(index.matchedBlocks('e', blockHashes(prompt, B))).toBe(4);
  });

  it('ignores blocks of other media and KV groups', () => {
    const index = new KvEventIndex(B);
    const tokens = Array.from({ length: 64 }, (_, i) => i);
    index.apply('e', { seq: 0, events: [{ type: 'BlockStored', blockHashes: [1], parentBlockHash: null, tokenIds: tokens, blockSize: 64, medium: 'CPU' }] }, 0);
    index.apply('e', { seq: 1, events: [{ type: 'BlockStored', blockHashes: [2], parentBlockHash: null, tokenIds: tokens, blockSize: 64, groupIdx: 1 }] }, 0);
    expect(index.matchedBlocks('e', blockHashes(tokens, B))).toBe(0);
    index.apply('e', { seq: 2, events: [{ type: 'BlockStored', blockHashes: [3n], parentBlockHash: null, tokenIds: tokens, blockSize: 64 }] }, 0);
    expect(index.matchedBlocks('e', blockHashes(tokens, B))).toBe(1);
    index.apply('e', { seq: 3, events: [{ type: 'BlockRemoved', blockHashes: [3n] }] }, 0);
    expect(index.matchedBlocks('e', blockHashes(tokens, B))).toBe(0);
  });
});

describe('KvEventIndex feed state', () => {
  const stored = (h: number): KvEvent => ({ type: 'BlockStored', blockHashes: [h], parentBlockHash: null, tokenIds: [], blockSize: 64 });

  it('buffers past a gap, reports it for replay, and is live again once it is filled', () => {
    const index = new KvEventIndex(B, { mapping: 'same-hashes' });
    expect(index.isLive('e', 0)).toBe(false);
    expect(index.apply('e', { seq: 0, events: [stored(10)] }, 0).status).toBe('applied');
    expect(index.isLive('e', 0)).toBe(true);
    expect(index.apply('e', { seq: 2, events: [stored(30)] }, 0)).toEqual({ status: 'buffered', gap: { from: 1, to: 1 } });
    expect(index.isLive('e', 0)).toBe(false);
    expect(index.matchedBlocks('e', [10, 20, 30])).toBe(1);
    expect(index.apply('e', { seq: 1, events: [stored(20)] }, 0).status).toBe('applied');
    expect(index.isLive('e', 0)).toBe(true);
    expect(index.matchedBlocks('e', [10, 20, 30])).toBe(3);
    expect(index.apply('e', { seq: 1, events: [stored(99)] }, 0).status).toBe('duplicate');
    expect(index.stats('e')).toMatchObject({ gaps: 1, buffered: 0, synced: true });
  });

  it('a gap beyond the buffer is lost: the feed waits for a rebuild; a restart at sequence 0 clears it', () => {
    const index = new KvEventIndex(B, { mapping: 'same-hashes', maxBufferedBatches: 2 });
    index.apply('e', { seq: 0, events: [stored(10)] }, 0);
    for (const seq of [2, 3, 4]) index.apply('e', { seq, events: [stored(seq)] }, 0);
    expect(index.stats('e')).toMatchObject({ synced: false, buffered: 0 });
    expect(index.isLive('e', 0)).toBe(false);
    expect(index.apply('e', { seq: 5, events: [{ type: 'AllBlocksCleared' }, stored(50)] }, 0).status).toBe('applied');
    expect(index.isLive('e', 0)).toBe(true);
    expect(index.matchedBlocks('e', [10])).toBe(0);
    expect(index.matchedBlocks('e', [50])).toBe(1);
    expect(index.apply('e', { seq: 0, events: [stored(60)] }, 0).status).toBe('restart');
    expect(index.matchedBlocks('e', [50])).toBe(0);
    expect(index.matchedBlocks('e', [60])).toBe(1);
    expect(index.isLive('e', 0)).toBe(true);
  });

  it('attach declares an engine starting empty: live before its first batch, expecting sequence 0', () => {
    const index = new KvEventIndex(B, { mapping: 'same-hashes' });
    index.attach('e');
    expect(index.isLive('e', 0)).toBe(true);
    expect(index.apply('e', { seq: 1, events: [stored(1)] }, 0)).toEqual({ status: 'buffered', gap: { from: 0, to: 0 } });
    expect(index.isLive('e', 0)).toBe(false);
    index.apply('e', { seq: 0, events: [stored(0)] }, 0);
    expect(index.matchedBlocks('e', [0, 1])).toBe(2);
  });

  it('a feed the router expects events from and that stays silent past staleAfterMs is stale', () => {
    const index = new KvEventIndex(B, { mapping: 'same-hashes', staleAfterMs: 100 });
    index.apply('e', { seq: 0, events: [] }, 0);
    // Silence with nothing expected is fine: the cache did not change.
    expect(index.isLive('e', 1e6)).toBe(true);
    index.expect('e', 1e6);
    expect(index.isLive('e', 1e6 + 100)).toBe(true);
    expect(index.isLive('e', 1e6 + 101)).toBe(false);
    index.apply('e', { seq: 1, events: [] }, 1e6 + 150);
    expect(index.isLive('e', 1e6 + 150)).toBe(true);
  });

  it('EventsOrEstimate answers from events where live, from the estimate elsewhere, and says which', () => {
    let now = 0;
    const estimate = new PrefixIndex(B);
    const events = new KvEventIndex(B, { mapping: 'same-hashes', staleAfterMs: 50 });
    const lookup = new EventsOrEstimate(events, estimate, () => now);
    lookup.insert('a', [1, 2, 3], 'c');
    lookup.insert('b', [1, 2, 3], 'c');
    events.apply('a', { seq: 0, events: [stored(1)] }, now);
    expect(lookup.source('a')).toBe('events');
    expect(lookup.source('b')).toBe('estimate');
    expect(lookup.matchedBlocks('a', [1, 2, 3])).toBe(1);
    expect(lookup.matchedBlocks('b', [1, 2, 3])).toBe(3);
    expect([lookup.fromEvents, lookup.fromEstimate]).toEqual([1, 1]);
    // A call placed on `a`: its prompt counts as held there until it ends (the engine computes it).
    lookup.placed('a', [1, 2, 3, 4], 'c');
    expect(lookup.matchedBlocks('a', [1, 2, 3, 4, 5])).toBe(4);
    lookup.ended('a', 'c');
    expect(lookup.matchedBlocks('a', [1, 2, 3, 4, 5])).toBe(1);
    // The placement expects events; none come: stale, the estimate answers.
    lookup.insert('a', [1, 2, 3, 4], 'c');
    now = 51;
    expect(lookup.source('a')).toBe('estimate');
    expect(lookup.matchedBlocks('a', [1, 2, 3, 4])).toBe(4);
  });
});
