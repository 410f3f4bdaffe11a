/**
 * One simulated engine instance: a block prefix cache with LRU eviction where running requests pin
 * their blocks (engine-sim's `PrefixCache`, the same cache the simulated HTTP engine uses),
 * continuous batching under a token budget per step, and the spec's step time. A request reserves
 * KV for its prompt and output when admitted (no preemption), admitted first come first served.
 */
import { PrefixCache, type KvAllocation } from '../../engine-sim/prefix-cache.js';
import type { KvEvent } from '../routing/kv-event-index.js';
import type { TurnSpec } from './workload.js';
import type { ModelPreset } from './presets.js';

/** A request inside the simulation. */
export interface SimRequest {
  id: number;
  episode: number;
  turn: number;
  spec: TurnSpec;
  /** When the call was released (routed), seconds. */
  released: number;
  instance: number;
  /** Prompt tokens served from the engine's cache (known at admission). */
  cachedTokens: number;
  /** Prompt tokens the router expected to be cached. */
  expectedCachedTokens: number;
  /** Prompt tokens still to prefill. */
  prefillLeft: number;
  /** Output tokens generated so far (the first comes with the last prefill chunk). */
  generated: number;
  alloc: KvAllocation | null;
  finished: number;
}

export interface EngineOptions {
  /** Tokens one step may process (decode tokens + prefill chunk), like vLLM's max_num_batched_tokens. Default 8,192. */
  tokenBudget?: number;
  /** Requests running at once, like vLLM's max_num_seqs. Default 256. */
  maxRunning?: number;
}

/** What the last planned step does, to apply it when it ends (or cut it short). */
interface Step {
  start: number;
  /** Decode-only steps fused into one event (nothing changes between them but the contexts). */
  count: number;
  /** Context tokens of the batch at the first fused step. */
  context: number;
  decoders: SimRequest[];
  chunks: { req: SimRequest; tokens: number }[];
  end: number;
}

export class SimInstance {
  readonly cache: PrefixCache;
  readonly waiting: SimRequest[] = [];
  readonly running: SimRequest[] = [];
  /** Bumped whenever the pending step is replanned, so stale end events are ignored. */
  version = 0;
  private step: Step | null = null;
  private readonly budget: number;
  private readonly maxRunning: number;
  /** The cache's stores and evictions since `takeKvEvents`, once `publishKvEvents` was called. */
  private kvEvents: KvEvent[] | undefined;

  constructor(
    readonly index: number,
    readonly name: string,
    readonly kvCapacityTokens: number,
    readonly blockSize: number,
    private readonly preset: ModelPreset,
    options: EngineOptions = {},
  ) {
    this.cache = new PrefixCache(Math.floor(kvCapacityTokens / blockSize), blockSize);
    this.budget = options.tokenBudget ?? 8192;
    this.maxRunning = options.maxRunning ?? 256;
  }

  /**
   * From now on, the cache's stores and evictions are kept as KV events (in the form of
   * routing/kv-event-index.ts; the blocks' hashes are the workload's, which the router uses too).
   */
  publishKvEvents(): void {
    this.kvEvents = [];
    this.cache.onBlockEvent = (kind, hash) => {
      const events = this.kvEvents!;
      const last = events[events.length - 1];
      // Consecutive blocks of one kind go in one event, as an engine's step reports them.
      if (kind === 'stored') {
        if (last?.type === 'BlockStored') (last.blockHashes as number[]).push(hash);
        else events.push({ type: 'BlockStored', blockHashes: [hash], parentBlockHash: null, tokenIds: [], blockSize: this.blockSize });
      } else if (last?.type === 'BlockRemoved') (last.blockHashes as number[]).push(hash);
      else events.push({ type: 'BlockRemoved', blockHashes: [hash] });
    };
  }

  /** The KV events since the last call (empty unless `publishKvEvents` was called). */
  takeKvEvents(): KvEvent[] {
    const events = this.kvEvents ?? [];
    if (this.kvEvents) this.kvEvents = [];
    return events;
  }

  get busy(): boolean {
    return this.step !== null;
  }

  /** KV tokens held by running requests (vLLM's usage metric). */
  usedTokens(): number {
    return this.cache.usedBlocks() * this.blockSize;
  }

  /** Blocks the request needs in all (prompt + output). */
  totalBlocks(spec: TurnSpec): number {
    return Math.ceil((spec.promptTokens + spec.outputTokens) / this.blockSize);
  }

  /** Prompt blocks the engine would serve from its cache now (at least one token is always computed). */
  cachedBlocks(spec: TurnSpec): number {
    return this.cache.matchPrefix(spec.seq.slice(0, usableBlocks(spec, this.blockSize)));
  }

  enqueue(req: SimRequest): void {
    this.waiting.push(req);
  }

  /**
   * A request was routed here while a fused decode step runs: cut it after the step in progress
   * so the newcomer can be admitted at the next step boundary. Returns the new end, or null.
   */
  interrupt(now: number): number | null {
    const s = this.step;
    if (!s || s.count <= 1) return null;
    let done = 0;
    while (done < s.count && s.start + this.fusedTime(s, done + 1) <= now) done++;
    const keep = Math.min(s.count, done + 1);
    if (keep === s.count) return null;
    s.count = keep;
    s.end = s.start + this.fusedTime(s, keep);
    this.version++;
    return s.end;
  }

  /**
   * Applies the step that just ended (finished requests are returned) and plans the next one;
   * `next` is its end time, or null when the instance goes idle.
   */
  advance(now: number): { finished: SimRequest[]; next: number | null } {
    const finished = this.step ? this.apply(this.step, now) : [];
    this.step = null;
    this.step = this.plan(now);
    this.version++;
    return { finished, next: this.step?.end ?? null };
  }

  private apply(s: Step, now: number): SimRequest[] {
    const done: SimRequest[] = [];
    for (const r of s.decoders) {
      r.generated += s.count;
      if (r.generated >= r.spec.outputTokens) done.push(r);
    }
    for (const { req, tokens } of s.chunks) {
      req.prefillLeft -= tokens;
      if (req.prefillLeft > 0) continue;
      req.generated = 1;
      if (req.generated >= req.spec.outputTokens) done.push(req);
    }
    for (const r of done) {
      const alloc = r.alloc!;
      // The output's full blocks are cached too (the next turn's prompt starts with them).
      for (let b = alloc.pinned.length; b < r.spec.kvBlocks && alloc.reserved > 0; b++) this.cache.commit(alloc, r.spec.seq[b]!);
      this.cache.release(alloc);
      r.alloc = null;
      r.finished = now;
      this.running.splice(this.running.indexOf(r), 1);
    }
    return done;
  }

  /** Admits the first waiting request if it fits (first come first served): whether it did. */
  private admitNext(): boolean {
    const r = this.waiting[0];
    if (!r || this.running.length >= this.maxRunning) return false;
    const prompt = r.spec.seq.slice(0, usableBlocks(r.spec, this.blockSize));
    const hits = this.cache.matchPrefix(prompt);
    const alloc = this.cache.allocate(prompt, hits, this.totalBlocks(r.spec));
    if (!alloc) return false;
    this.waiting.shift();
    r.alloc = alloc;
    r.cachedTokens = hits * this.blockSize;
    r.prefillLeft = r.spec.promptTokens - r.cachedTokens;
    this.running.push(r);
    return true;
  }

  /**
   * Commits the prompt's full blocks that a chunk of `tokens` completes, when the chunk is
   * scheduled: vLLM caches a block's hash as it allocates it for a step (before it is computed),
   * so a request scheduled after it, in the same step or later, already hits it.
   */
  private scheduled(r: SimRequest, tokens: number): void {
    const alloc = r.alloc!;
    const full = Math.min(r.spec.promptBlocks, Math.floor((r.spec.promptTokens - r.prefillLeft + tokens) / this.blockSize));
    for (let b = alloc.pinned.length; b < full; b++) this.cache.commit(alloc, r.spec.seq[b]!);
  }

  /** The next step: decodes, chunks of running prefills, then admissions, each seeing the blocks scheduled before it. */
  private plan(now: number): Step | null {
    const decoders: SimRequest[] = [];
    const chunks: { req: SimRequest; tokens: number }[] = [];
    let context = 0;
    for (const r of this.running) {
      if (r.prefillLeft === 0) {
        decoders.push(r);
        context += r.spec.promptTokens + r.generated;
      }
    }
    let budget = this.budget - decoders.length;
    let prefill = 0;
    const chunk = (r: SimRequest): void => {
      if (budget <= 0) return;
      const tokens = Math.min(budget, r.prefillLeft);
      this.scheduled(r, tokens);
      chunks.push({ req: r, tokens });
      budget -= tokens;
      prefill += tokens;
      context += r.spec.promptTokens - r.prefillLeft + tokens;
    };
    for (const r of this.running) if (r.prefillLeft > 0) chunk(r);
    // Admitted with or without budget left (a request admitted now holds its KV and waits for a chunk).
    while (this.admitNext()) chunk(this.running[this.running.length - 1]!);
    if (decoders.length === 0 && chunks.length === 0) return null;
    // With no prefill to do and nobody admissible, the next steps differ only by growing contexts:
    // fuse them up to the first completion (an arrival cuts the fused step short, see interrupt).
    let count = 1;
    if (chunks.length === 0) {
      count = Infinity;
      for (const r of decoders) count = Math.min(count, r.spec.outputTokens - r.generated);
    }
    const s: Step = { start: now, count, context, decoders, chunks, end: 0 };
    s.end = now + this.fusedTime(s, count) + this.preset.a * prefill;
    return s;
  }

  /** Time of the first `k` steps of `s`, prefill excluded: every decoder's context grows by one per step. */
  private fusedTime(s: Step, k: number): number {
    const n = s.decoders.length;
    return k * this.preset.c0 + this.preset.b * (k * s.context + (n * k * (k - 1)) / 2);
  }
}

/** Prompt blocks that may come from cache: full blocks, leaving at least one token to compute. */
export function usableBlocks(spec: TurnSpec, blockSize: number): number {
  return Math.min(spec.promptBlocks, Math.floor((spec.promptTokens - 1) / blockSize));
}
