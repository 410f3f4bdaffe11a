/**
 * The engines' own KV state (../shared/specs/routing.md, "the prefix index": where the engine
 * publishes its real cache state, use it): an exact per-instance block index fed by the KV events
 * an engine publishes, in an engine-neutral form modelled on vLLM's (`vllm/distributed/kv_events.py`:
 * `BlockStored`, `BlockRemoved`, `AllBlocksCleared`, in batches with a timestamp and a sequence
 * number per publisher; SGLang publishes the same shapes with its page size as the block size).
 * Whoever subscribes (ZMQ for vLLM) converts the engine's messages to `KvEventBatch` and feeds them
 * with `apply`; `EventsOrEstimate` answers lookups from it while an instance's feed is live and
 * from the router's estimated `PrefixIndex` otherwise.
 *
 * Block mapping. The engine's blocks are its own size (vLLM 16 tokens by default, SGLang's page
 * size) and its own hashes; the router keys blocks by its chained hash of `blockSize` tokens
 * (block-hash.ts). Each engine block's record keeps where it ends in its sequence (its parent's
 * end + its size) and our hash in progress at that point, so a stored block is mapped from its
 * parent's record and its own token ids alone, whatever the sizes (one may divide the other or
 * not). The rule: our block k (tokens [kB, kB + B)) is held while the engine holds EVERY engine
 * block overlapping those tokens. The engine serves a prompt up to the first engine block it
 * misses, so the leading run of our blocks held is exactly floor(engine's cached tokens / B) —
 * also when the engine's cache is not closed under prefixes (a middle block evicted first).
 * `matchedBlocks` finds that run by binary search, so it is exact when the cache is closed under
 * prefixes, as engines make it by freeing a sequence's tail first (and the simulator's does).
 *
 * A stored block whose parent the index never saw (stored before the subscription, or in a lost
 * batch) cannot be mapped: it and its descendants count for nothing, never for a wrong block.
 * Records of removed blocks are kept while a held descendant needs them for its mapping, so the
 * records are bounded by the engine's blocks plus their ancestors. Per-event cost: O(blocks in the
 * event × (1 + B/E + E/B)).
 *
 * Feed state per instance (`isLive`): batches are applied in sequence order; a duplicate (already
 * applied) is ignored; a batch past a gap is buffered (up to `maxBufferedBatches`) and the gap
 * reported so the subscriber can ask the publisher to replay it (vLLM's replay socket); the
 * instance answers from the estimate until the gap is filled. A sequence restarting at 0 is an
 * engine restart (its cache is empty): the index is cleared. The feed is complete ("synced") when
 * the first batch seen is sequence 0 (the publisher's first), or once an `AllBlocksCleared` was
 * applied; a buffer overflow loses the gap for good, and the instance stays on the estimate until
 * one of those rebuilds it. Staleness: an engine publishes only when its cache changes, so silence
 * is stale only when the router expects events — it placed a call there (`expect`) and no batch
 * came within `staleAfterMs`.
 */
import { beginBlock, commonPrefix, endBlock, feedBlock, heldPrefix, type PartialBlockHash } from './block-hash.js';
import type { BlockHash, BlockHashes, PrefixLookup } from './types.js';

/** An engine's own block hash (vLLM: an int or bytes, converted by the subscriber). */
export type EngineBlockHash = number | bigint | string;

/** Blocks the engine computed and cached, in sequence order: each one's parent is the one before. */
export interface BlockStoredEvent {
  type: 'BlockStored';
  blockHashes: readonly EngineBlockHash[];
  /** The block before the first of `blockHashes`; null for a sequence's first block. */
  parentBlockHash: EngineBlockHash | null;
  /** Token ids of all the blocks, `blockSize` each, in order. */
  tokenIds: ArrayLike<number>;
  /** Tokens per engine block. */
  blockSize: number;
  /** Where the blocks live; only the GPU cache (or unspecified) counts. */
  medium?: string | null;
  /** KV cache group (hybrid models); only group 0 (or unspecified) counts. */
  groupIdx?: number | null;
}

/** Blocks evicted from the engine's cache. */
export interface BlockRemovedEvent {
  type: 'BlockRemoved';
  blockHashes: readonly EngineBlockHash[];
  medium?: string | null;
  groupIdx?: number | null;
}

/** The engine's prefix cache was reset: nothing is cached. */
export interface AllBlocksClearedEvent {
  type: 'AllBlocksCleared';
}

export type KvEvent = BlockStoredEvent | BlockRemovedEvent | AllBlocksClearedEvent;

/** One publisher's batch: its sequence number (0, 1, 2, … from the publisher's start), its timestamp, its events in order. */
export interface KvEventBatch {
  seq: number;
  /** Publisher's timestamp, seconds (informative: staleness is measured on the router's clock). */
  ts?: number;
  events: readonly KvEvent[];
}

export interface KvEventIndexOptions {
  /**
   * `tokens` (default): map engine blocks onto the router's by the token ids the events carry.
   * `same-hashes`: the engine keys its blocks by the router's own hashes, of the router's block
   * size (the simulator's engines); token ids are not read.
   */
  mapping?: 'tokens' | 'same-hashes';
  /** A feed the router expects events from (a call placed there) and that is silent this long is stale, ms. Default 10,000. */
  staleAfterMs?: number;
  /** Batches kept past a sequence gap while waiting for its replay; beyond, the gap is lost for good. Default 1,024. */
  maxBufferedBatches?: number;
}

export const KV_EVENT_DEFAULTS = { staleAfterMs: 10_000, maxBufferedBatches: 1024 } as const;

/** What `apply` did with a batch. */
export interface KvBatchResult {
  /** `applied` (with any buffered batches it unblocked), `duplicate` (ignored), `buffered` (past a gap), `restart` (sequence 0 again: cleared, then applied). */
  status: 'applied' | 'duplicate' | 'buffered' | 'restart';
  /** Sequence numbers missing before the buffered batches, [from, to] inclusive: ask the publisher to replay them. */
  gap?: { from: number; to: number };
}

/** One of our blocks and how many of the engine blocks overlapping it the engine holds. */
interface OurBlock {
  readonly hash: BlockHash;
  /** First token of the block. */
  readonly start: number;
  need: number;
  have: number;
}

/** One engine block as the index knows it. */
interface EngineBlock {
  readonly hash: EngineBlockHash;
  readonly parent: EngineBlock | undefined;
  /** Token position where the block ends in its sequence; -1 when unmapped (its ancestry unknown). */
  readonly end: number;
  /** Our hash of the last of our blocks ending at or before `end` (0 before the first). */
  prevOur: BlockHash;
  /** Our hash in progress over the tokens from the last of our block boundaries to `end`. */
  partial: PartialBlockHash;
  held: boolean;
  /** Records whose parent this is. */
  children: number;
  /** Our blocks this engine block overlaps (completed so far). */
  readonly covers: OurBlock[];
  /** Our blocks whose last token lies in this engine block (owned by it). */
  readonly completes: OurBlock[];
}

interface Feed {
  readonly engine: Map<EngineBlockHash, EngineBlock>;
  /** Our block → engine chains holding it entirely. */
  readonly held: Map<BlockHash, number>;
  /** Next sequence number expected; undefined before the first batch. */
  expected: number | undefined;
  /** The index holds the engine's whole state (see the file's comment). */
  synced: boolean;
  readonly buffered: Map<number, KvEventBatch>;
  /** When the router first expected events that have not come yet (ms), if it does. */
  awaitingSince: number | undefined;
  lastBatchAtMs: number | undefined;
  batches: number;
  gaps: number;
}

export interface KvFeedStats {
  batches: number;
  /** When the last batch came, on the router's clock (ms). */
  lastBatchAtMs: number | undefined;
  /** Sequence gaps seen (each buffered until replayed or lost). */
  gaps: number;
  buffered: number;
  synced: boolean;
  /** Our blocks the engine holds entirely. */
  blocks: number;
  /** Engine blocks with a record (held, or kept for a held descendant's mapping). */
  engineRecords: number;
}

const ROOT: BlockHash = 0;
const ROOT_STATE = beginBlock(ROOT);

export class KvEventIndex implements PrefixLookup {
  readonly mapping: 'tokens' | 'same-hashes';
  readonly staleAfterMs: number;
  private readonly maxBuffered: number;
  private readonly feeds = new Map<string, Feed>();

  /** @param blockSize tokens per block of the router's hashes (what `matchedBlocks` is asked about). */
  constructor(
    readonly blockSize: number,
    options: KvEventIndexOptions = {},
  ) {
    this.mapping = options.mapping ?? 'tokens';
    this.staleAfterMs = options.staleAfterMs ?? KV_EVENT_DEFAULTS.staleAfterMs;
    this.maxBuffered = options.maxBufferedBatches ?? KV_EVENT_DEFAULTS.maxBufferedBatches;
  }

  /** Feeds one batch of `instance`'s publisher, received at `nowMs` on the router's clock. */
  apply(instance: string, batch: KvEventBatch, nowMs: number): KvBatchResult {
    const feed = this.feedOf(instance);
    feed.awaitingSince = undefined;
    feed.lastBatchAtMs = nowMs;
    feed.batches++;
    if (feed.expected === undefined) {
      // The first batch seen: complete if it is the publisher's first.
      feed.synced = batch.seq === 0;
      this.run(feed, batch);
      return { status: 'applied' };
    }
    if (batch.seq === feed.expected) {
      this.run(feed, batch);
      this.drain(feed);
      return { status: 'applied' };
    }
    if (batch.seq < feed.expected) {
      if (batch.seq !== 0) return { status: 'duplicate' };
      // The publisher started over: the engine restarted, its cache is empty.
      this.clear(feed);
      feed.buffered.clear();
      feed.synced = true;
      this.run(feed, batch);
      return { status: 'restart' };
    }
    if (!feed.buffered.has(batch.seq)) {
      if (feed.buffered.size === 0) feed.gaps++;
      feed.buffered.set(batch.seq, batch);
    }
    if (feed.buffered.size > this.maxBuffered) {
      // The gap is lost for good: go on from the buffered batches, incomplete until rebuilt.
      feed.synced = false;
      feed.expected = Math.min(...feed.buffered.keys());
      this.drain(feed);
      return { status: 'applied' };
    }
    return { status: 'buffered', gap: { from: feed.expected, to: Math.min(...feed.buffered.keys()) - 1 } };
  }

  /**
   * Declares a feed whose engine starts now with an empty cache and a publisher that will start at
   * sequence 0 (an engine the router saw start, as the simulator's): live before its first batch.
   */
  attach(instance: string): void {
    const feed = this.feedOf(instance);
    this.clear(feed);
    feed.buffered.clear();
    feed.expected = 0;
    feed.synced = true;
  }

  /** The router placed a call on `instance` (or it finished there): events should follow. */
  expect(instance: string, nowMs: number): void {
    const feed = this.feeds.get(instance);
    if (feed && feed.awaitingSince === undefined) feed.awaitingSince = nowMs;
  }

  /** Whether `instance`'s answers come from its events: a complete feed, no gap pending, not stale. */
  isLive(instance: string, nowMs: number): boolean {
    const feed = this.feeds.get(instance);
    return (
      feed !== undefined &&
      feed.synced &&
      feed.buffered.size === 0 &&
      (feed.awaitingSince === undefined || nowMs - feed.awaitingSince <= this.staleAfterMs)
    );
  }

  /** Leading blocks of `blocks` the engine holds, as its events tell (see the file's comment). */
  matchedBlocks(instance: string, blocks: BlockHashes): number {
    const held = this.feeds.get(instance)?.held;
    return held ? heldPrefix(blocks, held) : 0;
  }

  /** Forgets `instance`'s feed (resubscribing): it is not live until a complete state is rebuilt. */
  reset(instance: string): void {
    this.feeds.delete(instance);
  }

  stats(instance: string): KvFeedStats | undefined {
    const f = this.feeds.get(instance);
    return f && { batches: f.batches, lastBatchAtMs: f.lastBatchAtMs, gaps: f.gaps, buffered: f.buffered.size, synced: f.synced, blocks: f.held.size, engineRecords: f.engine.size };
  }

  private feedOf(instance: string): Feed {
    let feed = this.feeds.get(instance);
    if (!feed) {
      feed = { engine: new Map(), held: new Map(), expected: undefined, synced: false, buffered: new Map(), awaitingSince: undefined, lastBatchAtMs: undefined, batches: 0, gaps: 0 };
      this.feeds.set(instance, feed);
    }
    return feed;
  }

  /** Applies buffered batches that now follow in sequence. */
  private drain(feed: Feed): void {
    for (let next = feed.buffered.get(feed.expected!); next; next = feed.buffered.get(feed.expected!)) {
      feed.buffered.delete(next.seq);
      this.run(feed, next);
    }
  }

  private run(feed: Feed, batch: KvEventBatch): void {
    feed.expected = batch.seq + 1;
    for (const ev of batch.events) {
      if (ev.type === 'AllBlocksCleared') {
        this.clear(feed);
        feed.synced = true;
        continue;
      }
      if ((ev.medium != null && ev.medium !== 'GPU') || (ev.groupIdx != null && ev.groupIdx !== 0)) continue;
      if (ev.type === 'BlockStored') this.store(feed, ev);
      else for (const h of ev.blockHashes) this.remove(feed, h);
    }
  }

  private clear(feed: Feed): void {
    feed.engine.clear();
    feed.held.clear();
  }

  private store(feed: Feed, ev: BlockStoredEvent): void {
    if (this.mapping === 'same-hashes') {
      // The engine's hashes are ours: a block is held while stored.
      for (const h of ev.blockHashes) feed.held.set(h as BlockHash, 1);
      return;
    }
    const e = ev.blockSize;
    const tokens = ev.tokenIds;
    let parent = ev.parentBlockHash === null ? undefined : feed.engine.get(ev.parentBlockHash);
    // Unmappable: a parent never seen, or token ids that do not cover the blocks.
    let mapped = (ev.parentBlockHash === null || (parent !== undefined && parent.end >= 0)) && tokens.length === e * ev.blockHashes.length && e > 0;
    for (let i = 0; i < ev.blockHashes.length; i++) {
      const hash = ev.blockHashes[i]!;
      const known = feed.engine.get(hash);
      if (known) {
        if (!known.held) this.hold(feed, known);
        parent = known;
        mapped = known.end >= 0;
        continue;
      }
      const rec = mapped ? this.mappedRecord(hash, parent, tokens, i * e, e) : unmappedRecord(hash, parent);
      if (parent) parent.children++;
      feed.engine.set(hash, rec);
      for (const ob of rec.completes) if (ob.have === ob.need) feed.held.set(ob.hash, (feed.held.get(ob.hash) ?? 0) + 1);
      parent = rec;
    }
  }

  /** A new, held engine block of `size` tokens `tokens[from, from + size)` after `parent` (none: a sequence's first). */
  private mappedRecord(hash: EngineBlockHash, parent: EngineBlock | undefined, tokens: ArrayLike<number>, from: number, size: number): EngineBlock {
    const bs = this.blockSize;
    const start = parent?.end ?? 0;
    const end = start + size;
    let prevOur = parent?.prevOur ?? ROOT;
    let partial = parent?.partial ?? ROOT_STATE;
    const completes: OurBlock[] = [];
    const rec: EngineBlock = { hash, parent, end, prevOur, partial, held: true, children: 0, covers: [], completes };
    for (let pos = start; pos < end; ) {
      const boundary = (Math.floor(pos / bs) + 1) * bs;
      const segEnd = Math.min(end, boundary);
      partial = feedBlock(partial, tokens, from + pos - start, from + segEnd - start);
      pos = segEnd;
      if (pos !== boundary) continue;
      const ob: OurBlock = { hash: endBlock(partial), start: boundary - bs, need: 0, have: 0 };
      // Every engine block overlapping [start, boundary): this one and its ancestors ending past `start`.
      for (let r: EngineBlock | undefined = rec; r && r.end > ob.start; r = r.parent) {
        ob.need++;
        if (r.held) ob.have++;
        r.covers.push(ob);
      }
      completes.push(ob);
      prevOur = ob.hash;
      partial = beginBlock(prevOur);
    }
    rec.prevOur = prevOur;
    rec.partial = partial;
    return rec;
  }

  private hold(feed: Feed, rec: EngineBlock): void {
    rec.held = true;
    for (const ob of rec.covers) if (++ob.have === ob.need) feed.held.set(ob.hash, (feed.held.get(ob.hash) ?? 0) + 1);
  }

  private remove(feed: Feed, hash: EngineBlockHash): void {
    if (this.mapping === 'same-hashes') {
      feed.held.delete(hash as BlockHash);
      return;
    }
    const rec = feed.engine.get(hash);
    if (!rec || !rec.held) return;
    rec.held = false;
    for (const ob of rec.covers) {
      if (ob.have-- !== ob.need) continue;
      const n = feed.held.get(ob.hash)!;
      if (n > 1) feed.held.set(ob.hash, n - 1);
      else feed.held.delete(ob.hash);
    }
    // Drop records no held block needs any more, up the ancestry.
    for (let r: EngineBlock | undefined = rec; r && !r.held && r.children === 0; r = r.parent) {
      feed.engine.delete(r.hash);
      for (const ob of r.completes) {
        for (let a = r.parent; a && a.end > ob.start; a = a.parent) {
          const at = a.covers.indexOf(ob);
          if (at >= 0) {
            a.covers[at] = a.covers[a.covers.length - 1]!;
            a.covers.pop();
          }
        }
      }
      if (r.parent) r.parent.children--;
    }
  }
}

function unmappedRecord(hash: EngineBlockHash, parent: EngineBlock | undefined): EngineBlock {
  return { hash, parent, end: -1, prevOur: ROOT, partial: ROOT_STATE, held: true, children: 0, covers: [], completes: [] };
}

/** The prefix index a router reads and feeds: what `EventsOrEstimate` wraps. */
export interface EstimatedIndex extends PrefixLookup {
  insert?(instance: string, blocks: BlockHashes, chainId: string): void;
  dropInstance?(instance: string): void;
}

/**
 * Lookups from the engines' events where an instance's feed is live (`KvEventIndex.isLive`), from
 * the estimated index otherwise. The estimate is always fed (placements and finished calls), so it
 * is warm whenever a feed fails. On a live feed, the prompts of calls in flight on the instance
 * (`placed` until `ended`) count as held too: the engine is computing them, and its events tell
 * only once it has (the estimate counts them at once, and a policy placing siblings of a task by
 * it packed them better: measured in bench:routing). Counts the lookups each source answered.
 */
export class EventsOrEstimate implements EstimatedIndex {
  /** Lookups answered from events / from the estimate. */
  fromEvents = 0;
  fromEstimate = 0;
  /** Per instance: the prompts of calls placed there and not finished, by chain. */
  private readonly inFlight = new Map<string, Map<string, BlockHashes>>();

  constructor(
    readonly events: KvEventIndex,
    readonly estimate: EstimatedIndex,
    /** The router's clock, ms. */
    private readonly now: () => number,
    /** Whether prompts in flight count as held on a live feed. Default true. */
    private readonly countInFlight = true,
  ) {}

  matchedBlocks(instance: string, blocks: BlockHashes): number {
    if (this.events.isLive(instance, this.now())) {
      this.fromEvents++;
      let matched = this.events.matchedBlocks(instance, blocks);
      const calls = this.countInFlight ? this.inFlight.get(instance) : undefined;
      if (calls) for (const prompt of calls.values()) matched = Math.max(matched, commonPrefix(prompt, blocks));
      return matched;
    }
    this.fromEstimate++;
    return this.estimate.matchedBlocks(instance, blocks);
  }

  /** Which source answers for `instance` now. */
  source(instance: string): 'events' | 'estimate' {
    return this.events.isLive(instance, this.now()) ? 'events' : 'estimate';
  }

  insert(instance: string, blocks: BlockHashes, chainId: string): void {
    this.estimate.insert?.(instance, blocks, chainId);
  }

  /**
   * A call of `chainId` with prompt `blocks` was placed on `instance`: events should follow, and
   * until it ends its prompt counts as held there (the engine is computing it; a sibling placed
   * meanwhile will find it cached).
   */
  placed(instance: string, blocks: BlockHashes, chainId: string): void {
    this.events.expect(instance, this.now());
    let calls = this.inFlight.get(instance);
    if (!calls) this.inFlight.set(instance, (calls = new Map()));
    calls.set(chainId, blocks);
  }

  /** The call `placed` ended (its blocks are the engine's to report now). */
  ended(instance: string, chainId: string): void {
    this.inFlight.get(instance)?.delete(chainId);
  }

  /**
   * The instance went down: the estimate forgets it. The event feed tells for itself: a restarted
   * engine's publisher starts over at sequence 0, which clears it; one that was only unreachable
   * goes on where it was.
   */
  dropInstance(instance: string): void {
    this.estimate.dropInstance?.(instance);
  }
}
