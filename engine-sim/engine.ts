import { PrefixCache, extendBlockHashes, type KvAllocation } from './prefix-cache.js';

/** Step duration = `c0Ms + prefillMsPerToken·(prefilled tokens) + decodeNsPerContextToken·(context tokens)`. */
export interface TimeModel {
  /** Fixed cost of one engine step, in ms. */
  c0Ms: number;
  /** Cost per uncached prompt token computed in a step, in ms. */
  prefillMsPerToken: number;
  /** Cost per token of context attended to by the requests in a step, in ns. */
  decodeNsPerContextToken: number;
}

export interface EngineConfig {
  kvCapacityTokens: number;
  blockSize: number;
  maxBatchTokens: number;
  timeModel: TimeModel;
  timeScale: number;
}

/** The output a request will produce, decided when it arrives. */
export interface GenerationPlan {
  tokenIds: readonly number[];
  /** Upper bound used to reserve KV blocks at admission (the request's `max_tokens`). */
  maxTokens: number;
}

export interface RequestEvents {
  /** The first prompt block lookup is done: the request is running and its prefix hit is known. */
  onAdmitted?(cachedTokens: number): void;
  /** `total` output tokens of the plan have now been produced (at least one more than before). */
  onTokens(total: number): void;
  /**
   * The request left the engine: every planned token was produced, or it was aborted by its client
   * (`aborted`) or by the engine itself (`preempted`: a pause in abort mode, or the engine closing).
   */
  onEnd(outcome: RequestOutcome): void;
}

/** How a request left the engine. */
export type RequestOutcome = 'finished' | 'aborted' | 'preempted';

/**
 * What a pause does with the requests already in the engine (vLLM's `/pause?mode=`): `abort` ends
 * them now, `wait` lets them finish, `keep` freezes them where they are until the engine resumes.
 * Requests that arrive while paused wait in every mode.
 */
export type PauseMode = 'abort' | 'wait' | 'keep';

export interface EngineStats {
  /** Requests accepted by `submit`. */
  requestsReceived: number;
  /** Requests that produced all their tokens. */
  requestsFinished: number;
  /** Requests aborted (client gone, a pause in abort mode, or the engine closed) before finishing. */
  requestsAborted: number;
  /** Prompt tokens of admitted requests. */
  promptTokens: number;
  /** Of those, tokens served from the prefix cache. */
  cachedTokens: number;
  /** Output tokens produced. */
  generatedTokens: number;
  running: number;
  waiting: number;
  /** Tokens of KV held by running requests (pinned or reserved blocks). */
  kvUsedTokens: number;
  /** Tokens of KV holding cached prefixes, pinned or not. */
  kvResidentTokens: number;
  kvCapacityTokens: number;
  /** Cached blocks evicted to make room. */
  evictedBlocks: number;
  steps: number;
  /** Paused for a weight update: new requests wait (and, in `keep` mode, running ones are frozen). */
  paused: boolean;
}

/**
 * How far the virtual clock may trail real time. Timers fire late (Node rounds them up to whole
 * milliseconds), and the following steps catch up; a longer stall (a blocked event loop) is
 * forgiven beyond this, so it cannot turn into a long burst of instant steps.
 */
const MAX_LAG_MS = 50;

interface Sequence {
  readonly prompt: readonly number[];
  readonly plan: GenerationPlan;
  readonly events: RequestEvents;
  /** Prompt and output tokens so far, for hashing the blocks as they fill. */
  readonly tokens: number[];
  readonly hashes: number[];
  alloc: KvAllocation | null;
  /** Prompt tokens whose KV exists (cached or computed). */
  prefilled: number;
  generated: number;
}

/** One request's share of a step. */
interface Work {
  seq: Sequence;
  prefill: number;
}

/**
 * The continuous-batching loop. Waiting requests are admitted first come, first served while the
 * KV cache can hold their prompt plus `maxTokens`; each step decodes one token for every request
 * past its prefill and spends the rest of the `maxBatchTokens` budget on prompt chunks. A step's
 * effects land when its modelled duration has elapsed on a timer; an idle engine holds no timer.
 */
export class Engine {
  private readonly cache: PrefixCache;
  private readonly waiting: Sequence[] = [];
  private readonly running = new Set<Sequence>();
  private timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  /** A step is under way or about to start; false only while the engine is idle. */
  private busy = false;
  private closed = false;
  /** Set by `pause`: arrivals are held; `frozen` also stops the steps of running requests. */
  private paused = false;
  private frozen = false;
  /** Requests that arrived while paused, admitted on `resume`. */
  private readonly held: Sequence[] = [];
  /** Resolves `pause('wait')` calls once the last request in the engine is done. */
  private drained: (() => void)[] = [];
  private readonly counters = {
    requestsReceived: 0,
    requestsFinished: 0,
    requestsAborted: 0,
    promptTokens: 0,
    cachedTokens: 0,
    generatedTokens: 0,
    steps: 0,
  };

  constructor(private readonly config: EngineConfig) {
    this.cache = new PrefixCache(
      Math.floor(config.kvCapacityTokens / config.blockSize),
      config.blockSize,
    );
  }

  /** Tokens a single request may occupy at most (prompt plus `maxTokens`). */
  get maxRequestTokens(): number {
    return this.cache.capacityBlocks * this.config.blockSize;
  }

  /** Queues a request; returns a function that aborts it. Throws if it could never fit in KV. */
  submit(prompt: readonly number[], plan: GenerationPlan, events: RequestEvents): () => void {
    if (this.closed) throw new Error('engine is closed');
    if (prompt.length + plan.maxTokens > this.maxRequestTokens) {
      throw new RangeError(
        `prompt (${prompt.length} tokens) plus max_tokens (${plan.maxTokens}) exceeds the KV capacity of ${this.maxRequestTokens} tokens`,
      );
    }
    const seq: Sequence = {
      prompt,
      plan,
      events,
      tokens: [...prompt],
      hashes: extendBlockHashes([], prompt, this.config.blockSize),
      alloc: null,
      prefilled: 0,
      generated: 0,
    };
    this.counters.requestsReceived++;
    if (this.paused) this.held.push(seq);
    else {
      this.waiting.push(seq);
      this.wake();
    }
    return () => this.abort(seq, 'aborted');
  }

  /**
   * Pauses generation for a weight update. Resolves once the pause holds: at once for `abort` (the
   * requests are gone) and `keep` (they are frozen), when the last of them finished for `wait`.
   */
  pause(mode: PauseMode): Promise<void> {
    this.paused = true;
    this.frozen = mode === 'keep';
    if (mode === 'keep') return Promise.resolve();
    if (mode === 'abort') for (const seq of [...this.waiting, ...this.running]) this.abort(seq, 'preempted');
    if (this.waiting.length + this.running.size === 0) return Promise.resolve();
    // Requests frozen by an earlier `keep` pause must run again to finish.
    this.wake();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  /** Aborts every request in the engine, held ones included (SGLang's `abort_all`). */
  abortAll(): void {
    for (const seq of [...this.held, ...this.waiting, ...this.running]) this.abort(seq, 'preempted');
  }

  /** Ends a pause: frozen requests go on, held ones are admitted. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.frozen = false;
    this.waiting.push(...this.held.splice(0));
    this.wake();
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** Aborts everything and stops the loop. */
  close(): void {
    this.closed = true;
    this.abortAll();
    this.clearTimer();
  }

  stats(): EngineStats {
    const bs = this.config.blockSize;
    return {
      ...this.counters,
      running: this.running.size,
      waiting: this.waiting.length,
      kvUsedTokens: this.cache.usedBlocks() * bs,
      kvResidentTokens: this.cache.residentBlocks() * bs,
      kvCapacityTokens: this.cache.capacityBlocks * bs,
      evictedBlocks: this.cache.evictions(),
      paused: this.paused,
    };
  }

  /** Block size and block count, as vLLM reports its cache config. */
  cacheConfig(): { blockSize: number; numBlocks: number } {
    return { blockSize: this.config.blockSize, numBlocks: this.cache.capacityBlocks };
  }

  private abort(seq: Sequence, outcome: 'aborted' | 'preempted'): void {
    const queued = this.waiting.indexOf(seq);
    const held = this.held.indexOf(seq);
    if (queued !== -1) this.waiting.splice(queued, 1);
    else if (held !== -1) this.held.splice(held, 1);
    else if (!this.running.delete(seq)) return;
    if (seq.alloc) this.cache.release(seq.alloc);
    this.counters.requestsAborted++;
    seq.events.onEnd(outcome);
    this.notifyDrained();
    // No wake-up needed: a request can only be waiting while others run, and the step under way
    // admits from the queue when it ends.
  }

  /** Resolves pending `pause('wait')` calls when no request is left in the engine. */
  private notifyDrained(): void {
    if (this.drained.length === 0 || this.waiting.length + this.running.size > 0) return;
    for (const resolve of this.drained.splice(0)) resolve();
  }

  private wake(): void {
    if (this.busy || this.closed || this.frozen) return;
    this.busy = true;
    // Start at the end of this tick, so requests arriving together share the first step.
    const now = performance.now();
    queueMicrotask(() => {
      if (!this.closed) this.startStep(now);
    });
  }

  private admit(): void {
    const bs = this.config.blockSize;
    while (this.waiting.length > 0) {
      const seq = this.waiting[0]!;
      // Like vLLM, never count the whole prompt as a hit: the last token is always computed, so
      // the hit covers the full blocks of the first `prompt.length - 1` tokens at most.
      const hashable = Math.floor((seq.prompt.length - 1) / bs);
      const hits = this.cache.matchPrefix(seq.hashes, Math.min(hashable, seq.hashes.length));
      const total = Math.ceil((seq.prompt.length + seq.plan.maxTokens) / bs);
      const alloc = this.cache.allocate(seq.hashes, hits, total);
      if (!alloc) return; // head-of-line: later requests wait too, as in vLLM's FCFS scheduler
      this.waiting.shift();
      seq.alloc = alloc;
      seq.prefilled = hits * bs;
      this.running.add(seq);
      this.counters.promptTokens += seq.prompt.length;
      this.counters.cachedTokens += seq.prefilled;
      seq.events.onAdmitted?.(seq.prefilled);
    }
  }

  private startStep(virtualStart: number): void {
    if (this.frozen) {
      this.busy = false;
      return;
    }
    this.admit();
    if (this.running.size === 0) {
      this.busy = false;
      return;
    }
    const work: Work[] = [];
    let budget = this.config.maxBatchTokens;
    let context = 0;
    let prefillTokens = 0;
    for (const seq of this.running) {
      if (seq.prefilled === seq.prompt.length) {
        work.push({ seq, prefill: 0 });
        budget--;
        context += seq.prompt.length + seq.generated;
      }
    }
    for (const seq of this.running) {
      const left = seq.prompt.length - seq.prefilled;
      if (left === 0 || budget <= 0) continue;
      const chunk = Math.min(left, budget);
      work.push({ seq, prefill: chunk });
      budget -= chunk;
      prefillTokens += chunk;
      context += seq.prefilled + chunk;
    }
    const tm = this.config.timeModel;
    const durationMs =
      (tm.c0Ms +
        tm.prefillMsPerToken * prefillTokens +
        (tm.decodeNsPerContextToken * context) / 1e6) *
      this.config.timeScale;
    // Steps are chained on a virtual clock so timer lateness is caught up instead of accumulating.
    const endsAt = virtualStart + durationMs;
    const delay = endsAt - performance.now();
    const finish = () => this.finishStep(work, endsAt);
    this.timer = delay > 0 ? setTimeout(finish, delay) : setImmediate(finish);
  }

  private finishStep(work: Work[], endedAt: number): void {
    this.timer = null;
    this.counters.steps++;
    for (const { seq, prefill } of work) {
      if (!this.running.has(seq)) continue; // aborted during the step
      seq.prefilled += prefill;
      if (seq.prefilled < seq.prompt.length) {
        this.commitBlocks(seq);
        continue;
      }
      // A step that completes the prompt also samples the first token, like a decode step.
      seq.tokens.push(seq.plan.tokenIds[seq.generated]!);
      seq.generated++;
      this.counters.generatedTokens++;
      this.commitBlocks(seq);
      const done = seq.generated === seq.plan.tokenIds.length;
      if (done) {
        this.running.delete(seq);
        this.cache.release(seq.alloc!);
        this.counters.requestsFinished++;
      }
      seq.events.onTokens(seq.generated);
      if (done) seq.events.onEnd('finished');
    }
    this.notifyDrained();
    if (this.closed) return;
    this.startStep(Math.max(endedAt, performance.now() - MAX_LAG_MS));
  }

  /** Registers blocks filled by computed tokens (the newest sampled token has no KV yet). */
  private commitBlocks(seq: Sequence): void {
    const bs = this.config.blockSize;
    const computed = seq.prefilled + Math.max(0, seq.generated - 1);
    extendBlockHashes(seq.hashes, seq.tokens, bs, computed);
    const alloc = seq.alloc!;
    while ((alloc.pinned.length + 1) * bs <= computed)
      this.cache.commit(alloc, seq.hashes[alloc.pinned.length]!);
  }

  private clearTimer(): void {
    if (this.timer) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
    }
    this.timer = null;
    this.busy = false;
  }
}
