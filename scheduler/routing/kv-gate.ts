/**
 * Token-level admission in the router: which instances may take a call now, so that the chains
 * admitted to an instance keep their working sets (prompt + output of their latest call) within its
 * KV memory, and calls that fit nowhere wait in the router instead of thrashing the engines' caches.
 *
 * Why: a closed-loop batch releases every episode at once, far more context than KV holds; engines
 * admitting first come first served then evict each other's prefixes and recompute every prompt
 * (hit rates of a few percent). Between two calls of a chain (its tool call, seconds) its prefix
 * stays reserved here, so nothing admitted later evicts it.
 *
 * Chains are ranked by first sight (older first), and a chain whose idle reservation lapsed goes
 * behind every chain seen so far. A call may go to an instance when its chain's
 * need plus the reservations there of chains ranked above it fit `fillFraction` of the capacity
 * (less `arrivalHeadroom` for a chain not admitted there yet):
 * an older chain always keeps its place, and a younger one that no longer fits (contexts grow)
 * moves to an instance with room or waits, losing only its cache. An engine with nothing in flight
 * takes any call. Waiting calls are released oldest chain first as room appears (a call ends, an
 * idle chain's reservation lapses), or placed anyway after `maxWaitMs`. An idle reservation lasts
 * as long as most chains' tool calls do (`returnQuantile` of the gaps seen, at most `idleTtlMs`);
 * once it lapsed, the chains that took its memory outrank the chain's return (kept ahead, it
 * would push them out again and both would recompute their contexts). Idle reservations are kept
 * only while chains mostly come back in time (agent traffic, not one-off calls). The same code
 * runs in the gateway (Router.acquire) and in the simulator.
 */
import type { InstanceView, RouteRequest } from './types.js';

/** Thresholds of the gate; defaults measured with the simulator (bench/routing.ts). */
export interface KvGateOptions {
  /** Share of an instance's KV capacity the working sets of its admitted chains may fill. Default 1. */
  fillFraction?: number;
  /**
   * Longest a chain with no call in flight keeps its reservation after its last call ended, ms:
   * long enough to cover an agent's tool call, short enough to release a finished episode's
   * memory soon (a chain back after it lapsed ranks behind every chain seen before); also the
   * reservation's length until enough tool gaps are seen for `returnQuantile`. Default 20,000.
   */
  idleTtlMs?: number;
  /**
   * Quantile of the tool gaps the gate has seen (a chain's call ended → its next call arrived) for
   * which an idle reservation is kept, capped by `idleTtlMs`: a chain still away after most chains
   * came back is likely on a long tool call, and its memory serves the chains running now better
   * than its return. 1 keeps every reservation for `idleTtlMs`. Default 0.8, measured with
   * bench:routing's agent batches (512 episodes on 8 instances, tool gaps log-normal with median
   * 2 s), ours, with a lapsed chain sent behind the others: against 0.6, +4% output tokens/s at
   * scarce KV and +15% at preset (seeds 1–3); 0.7 and 0.9 trade scarce against preset (0.9:
   * −4% / +8% against 0.8). On a batch of 128 episodes, +3% at scarce and −1% at preset.
   */
  returnQuantile?: number;
  /**
   * Share of an instance's KV capacity a chain not admitted there yet (new, moving, or back after
   * waiting) must leave free beyond its need: the contexts admitted there grow every turn, and
   * without it a newcomer is soon the one that must move again. Default 0.1.
   */
  arrivalHeadroom?: number;
  /**
   * A waiting call is placed anyway (on any instance) after this long, ms. Default 240,000: below
   * the 300 s headers timeout of Node's fetch and the usual SDK timeouts, so a non-streaming agent
   * never gives up on a held call (streamed answers get keep-alives while they wait). Measured
   * against 600,000: 2–4% less throughput on the scarce and preset batches of bench:routing.
   */
  maxWaitMs?: number;
  /** Chains whose rank is remembered; the least recently seen beyond it are forgotten. Default 100,000. */
  maxChains?: number;
}

export const KV_GATE_DEFAULTS = {
  fillFraction: 1,
  arrivalHeadroom: 0.1,
  idleTtlMs: 20_000,
  returnQuantile: 0.8,
  maxWaitMs: 240_000,
  maxChains: 100_000,
} as const satisfies Required<KvGateOptions>;

/** A chain's claim on an instance's memory. */
interface Reservation {
  readonly chainId: string;
  rank: number;
  instance: string;
  /** Its working set: prompt + output of its latest call. */
  tokens: number;
  inFlight: number;
  /** When its reservation lapses (ms) if no call comes first; meaningful when `inFlight` is 0. */
  lapseAt: number;
}

/** Tool gaps remembered for `returnQuantile`, and how many must be seen before it applies. */
const GAP_SAMPLES = 512;
const MIN_GAP_SAMPLES = 32;

/** A call waiting for room, with whatever its owner needs to resume it. */
export interface HeldCall<T> {
  readonly request: RouteRequest;
  readonly rank: number;
  /** When it started waiting, ms. */
  readonly since: number;
  readonly payload: T;
}

export class KvGate<T = unknown> {
  private readonly options: Required<KvGateOptions>;
  /** chain → rank; insertion order is recency of sight. */
  private readonly ranks = new Map<string, number>();
  private nextRank = 0;
  private readonly reservations = new Map<string, Reservation>();
  private readonly byInstance = new Map<string, Set<Reservation>>();
  /** Waiting calls, best rank first (then oldest). */
  private readonly held: HeldCall<T>[] = [];
  /** No idle reservation lapses before this time (ms), so most calls skip the scan. */
  private expiresAt = Infinity;
  /** Idle reservations their chain came back to, and those that lapsed first. */
  private returned = 0;
  private lapsed = 0;
  /** chain → when its last call ended (ms), until its next call: its tool gap. Oldest first. */
  private readonly lastEnded = new Map<string, number>();
  /** The last `GAP_SAMPLES` tool gaps (ms), a ring. */
  private readonly gaps = new Float64Array(GAP_SAMPLES);
  private gapCount = 0;
  /** How long an idle reservation is kept now (ms): refreshed as gaps are seen. */
  private ttl: number;

  constructor(options: KvGateOptions = {}) {
    this.options = { ...KV_GATE_DEFAULTS, ...options };
    this.ttl = this.options.idleTtlMs;
  }

  /** How long an idle reservation is kept now, ms: the `returnQuantile` of the tool gaps seen, at most `idleTtlMs`. */
  get idleTtl(): number {
    return this.ttl;
  }

  /** Calls waiting for room. */
  get waiting(): number {
    return this.held.length;
  }

  /** Tokens reserved on `instance` by its admitted chains. */
  reservedTokens(instance: string): number {
    let sum = 0;
    for (const r of this.byInstance.get(instance) ?? []) sum += r.tokens;
    return sum;
  }

  /** Chains admitted to `instance` (a call in flight, or idle within `idleTtlMs`). */
  admittedChains(instance: string): number {
    return this.byInstance.get(instance)?.size ?? 0;
  }

  /** The views (of `views`) the call may be placed on now; empty when it must wait. */
  admissible(request: RouteRequest, views: readonly InstanceView[], now: number): InstanceView[] {
    this.expire(now);
    this.sawGap(request.chainId, now);
    const rank = this.rankOf(request.chainId);
    const need = request.promptTokens + request.expectedOutputTokens;
    const out: InstanceView[] = [];
    const own = this.reservations.get(request.chainId);
    for (const v of views) {
      // A chain arriving on an instance (new, moving, or back after waiting) leaves room for the growth of those there.
      const headroom = own?.instance === v.name ? 0 : this.options.arrivalHeadroom * v.kvCapacityTokens;
      let above = 0;
      let load = 0;
      let reserved = 0;
      for (const r of this.byInstance.get(v.name) ?? []) {
        if (r.chainId === request.chainId) continue;
        reserved += r.tokens;
        if (r.rank > rank) continue;
        above++;
        load += r.tokens;
      }
      // A chain alone on an instance always fits: nothing it could evict is worth more. An engine
      // with nothing in flight takes any call: idle compute costs more than an evicted prefix.
      if (above === 0 || v.inFlightRequests === 0 || load + need + headroom <= this.options.fillFraction * v.kvCapacityTokens) out.push({ ...v, kvReservedTokens: reserved });
    }
    return out;
  }

  /** The call was sent to `instance`: its chain's reservation moves (or is taken) there. */
  placed(request: RouteRequest, instance: string): void {
    const rank = this.rankOf(request.chainId);
    let r = this.reservations.get(request.chainId);
    if (!r) {
      r = { chainId: request.chainId, rank, instance, tokens: 0, inFlight: 0, lapseAt: Infinity };
      this.reservations.set(request.chainId, r);
      this.setOf(instance).add(r);
    } else if (r.inFlight === 0) this.returned++;
    if (r.instance !== instance) {
      this.byInstance.get(r.instance)?.delete(r);
      r.instance = instance;
      this.setOf(instance).add(r);
    }
    r.tokens = Math.max(r.inFlight > 0 ? r.tokens : 0, request.promptTokens + request.expectedOutputTokens);
    r.inFlight++;
  }

  /**
   * A call of the chain ended on `instance`; `tokens` is what the engine now caches for it
   * (prompt + sampled), or 0 when nothing useful stayed there (the call failed).
   */
  ended(request: RouteRequest, instance: string, now: number, tokens: number): void {
    this.lastEnded.delete(request.chainId);
    this.lastEnded.set(request.chainId, now);
    if (this.lastEnded.size > this.options.maxChains) this.lastEnded.delete(this.lastEnded.keys().next().value!);
    const r = this.reservations.get(request.chainId);
    if (!r || r.instance !== instance) return;
    r.inFlight = Math.max(0, r.inFlight - 1);
    if (r.inFlight > 0) return;
    // A chain is expected back only while most chains come back (agent batches): under one-off
    // calls (open-loop traffic) a reservation would hold memory nobody reuses.
    if (tokens <= 0 || this.lapsed > this.returned) return this.drop(r);
    r.tokens = tokens;
    r.lapseAt = now + this.ttl;
    this.expiresAt = Math.min(this.expiresAt, r.lapseAt);
  }

  /** Parks a call that fits nowhere; `pump` hands it back once it does. */
  hold(request: RouteRequest, now: number, payload: T): HeldCall<T> {
    // A waiting chain claims no memory: what it cached is left to the engine to evict.
    const r = this.reservations.get(request.chainId);
    if (r && r.inFlight === 0) this.drop(r);
    const call: HeldCall<T> = { request, rank: this.rankOf(request.chainId), since: now, payload };
    let i = this.held.length;
    while (i > 0 && this.held[i - 1]!.rank > call.rank) i--;
    this.held.splice(i, 0, call);
    return call;
  }

  /** Removes a waiting call (its client went away); false when it was no longer waiting. */
  cancel(call: HeldCall<T>): boolean {
    const i = this.held.indexOf(call);
    if (i < 0) return false;
    this.held.splice(i, 1);
    return true;
  }

  /**
   * Hands waiting calls that fit somewhere now (or waited `maxWaitMs`: then with every view
   * offered, which may be none) to `dispatch`, best rank first, with the views they may go to. `dispatch` must place the call (calling `placed`) before
   * returning, so the next call sees its reservation; `views` is read afresh for each call.
   */
  pump(now: number, views: () => readonly InstanceView[], dispatch: (call: HeldCall<T>, candidates: InstanceView[]) => void): void {
    // A call that fits nowhere bounds the ones after it: they rank lower, so they see at least the
    // same reservations, and one needing as much cannot fit either.
    let failedNeed = Infinity;
    for (let i = 0; i < this.held.length; ) {
      const call = this.held[i]!;
      const need = call.request.promptTokens + call.request.expectedOutputTokens;
      const expired = now >= call.since + this.options.maxWaitMs;
      if (need >= failedNeed && !expired) {
        i++;
        continue;
      }
      const offered = views();
      const fits = this.admissible(call.request, offered, now);
      if (fits.length === 0 && !expired) {
        failedNeed = need;
        i++;
        continue;
      }
      this.held.splice(i, 1);
      // Out of time: anywhere (possibly nowhere, when no instance is offered at all).
      dispatch(call, fits.length > 0 ? fits : [...offered]);
    }
  }

  /** The next time something changes without a call ending (a reservation lapses, a wait runs out), ms. */
  nextDeadline(): number | undefined {
    // `expiresAt` may be early (the chain became busy again): a spurious wake-up costs one pump.
    let next = this.expiresAt;
    for (const c of this.held) next = Math.min(next, c.since + this.options.maxWaitMs);
    return next === Infinity ? undefined : next;
  }

  /** Waiting calls, in the order `pump` considers them. */
  waitingCalls(): readonly HeldCall<T>[] {
    return this.held;
  }

  /**
   * The chains whose ids start with `prefix` are over (their session closed): their idle
   * reservations free their memory now instead of after `idleTtlMs`. A call still in flight keeps
   * its reservation until it ends.
   */
  forgetChains(prefix: string): void {
    for (const r of [...this.reservations.values()]) {
      if (r.inFlight === 0 && r.chainId.startsWith(prefix)) this.drop(r);
    }
    for (const chainId of [...this.lastEnded.keys()]) if (chainId.startsWith(prefix)) this.lastEnded.delete(chainId);
  }

  /** The instance went down: its reservations are void (its chains start over elsewhere). */
  dropInstance(instance: string): void {
    for (const r of this.byInstance.get(instance) ?? []) this.reservations.delete(r.chainId);
    this.byInstance.delete(instance);
  }

  private expire(now: number): void {
    if (now < this.expiresAt) return;
    this.expiresAt = Infinity;
    for (const r of this.reservations.values()) {
      if (r.inFlight > 0) continue;
      const at = r.lapseAt;
      if (now >= at) {
        this.lapsed++;
        this.drop(r);
        this.sendBack(r.chainId);
      } else this.expiresAt = Math.min(this.expiresAt, at);
    }
  }

  /** A call of `chainId` arrived: the time since its previous call ended is one tool gap. */
  private sawGap(chainId: string, now: number): void {
    const since = this.lastEnded.get(chainId);
    if (since === undefined) return;
    this.lastEnded.delete(chainId);
    this.gaps[this.gapCount++ % GAP_SAMPLES] = Math.max(0, now - since);
    // Re-sorting the sample on every gap would cost more than it changes: every 16th.
    if (this.options.returnQuantile >= 1 || this.gapCount < MIN_GAP_SAMPLES || this.gapCount % 16 !== 0) return;
    // A typed array sorts numerically, natively: no comparator called per comparison.
    const sorted = this.gaps.slice(0, Math.min(this.gapCount, GAP_SAMPLES)).sort();
    const q = sorted[Math.min(sorted.length - 1, Math.floor(this.options.returnQuantile * sorted.length))]!;
    this.ttl = Math.min(this.options.idleTtlMs, q);
  }

  private drop(r: Reservation): void {
    this.reservations.delete(r.chainId);
    this.byInstance.get(r.instance)?.delete(r);
  }

  /** The chain ranks behind every chain seen so far, as if first seen now. */
  private sendBack(chainId: string): void {
    this.ranks.delete(chainId);
    this.ranks.set(chainId, this.nextRank++);
  }

  private rankOf(chainId: string): number {
    let rank = this.ranks.get(chainId);
    if (rank === undefined) {
      rank = this.nextRank++;
      if (this.ranks.size >= this.options.maxChains) this.ranks.delete(this.ranks.keys().next().value!);
    } else {
      this.ranks.delete(chainId);
    }
    this.ranks.set(chainId, rank);
    return rank;
  }

  private setOf(instance: string): Set<Reservation> {
    let set = this.byInstance.get(instance);
    if (!set) {
      set = new Set();
      this.byInstance.set(instance, set);
    }
    return set;
  }
}
