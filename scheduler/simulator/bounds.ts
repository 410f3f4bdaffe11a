/**
 * Bounds computed from the workload alone (no policy): the hit-rate ceiling (the workload replayed
 * on one LRU cache of the pooled capacity), the work bound (all uncached prefill and decode work of
 * that replay spread evenly over the instances) and the critical path (the longest episode run
 * alone with every reusable prefix cached). A result is quoted as a fraction of these.
 */
import { PrefixIndex } from '../routing/prefix-index.js';
import { usableBlocks, type EngineOptions } from './engine.js';
import type { ModelPreset } from './presets.js';
import type { Workload } from './workload.js';

export interface Bounds {
  /** Token-weighted prompt hit rate of the pooled-cache replay. */
  hitRateCeiling: number;
  /** Seconds: total work / instances. */
  workBound: number;
  /** Seconds: the longest episode's own sequential time (open loop: arrival + own service). */
  criticalPath: number;
  /** max(work bound, critical path): no makespan can be shorter. */
  makespanBound: number;
}

export function computeBounds(workload: Workload, preset: ModelPreset, instances: number, kvCapacityTokens: number, engine: EngineOptions = {}): Bounds {
  const bs = workload.blockSize;
  const budget = engine.tokenBudget ?? 8192;
  const maxRunning = engine.maxRunning ?? 256;
  const { c0, a, b } = preset;

  // Blocks appearing in more than one episode may have been computed by another one first.
  const owner = new Map<number, number>();
  workload.episodes.forEach((ep, e) => {
    const n = Math.max(...ep.turns.map((t) => t.kvBlocks));
    for (let i = 0; i < n; i++) {
      const h = ep.turns[0]!.seq[i]!;
      const o = owner.get(h);
      if (o === undefined) owner.set(h, e);
      else if (o !== e) owner.set(h, -1);
    }
  });

  // Solo service time of every turn (lower bound) and each turn's start on an idle system.
  const starts: { e: number; k: number; t: number }[] = [];
  let criticalPath = 0;
  const t0 = Math.min(...workload.episodes.map((ep) => ep.start));
  workload.episodes.forEach((ep, e) => {
    let t = ep.start - t0;
    ep.turns.forEach((turn, k) => {
      const prevKv = k > 0 ? ep.turns[k - 1]!.kvBlocks : 0;
      const usable = usableBlocks(turn, bs);
      let hit = 0;
      while (hit < usable && (hit < prevKv || owner.get(turn.seq[hit]!) === -1)) hit++;
      const uncached = turn.promptTokens - hit * bs;
      const o = turn.outputTokens;
      const solo = c0 * Math.max(1, Math.ceil(uncached / budget)) + a * uncached + (o - 1) * c0 + b * ((o - 1) * turn.promptTokens + ((o - 1) * o) / 2);
      starts.push({ e, k, t });
      t += solo + (ep.delays[k] ?? 0);
    });
    criticalPath = Math.max(criticalPath, t - (ep.delays[ep.turns.length - 1] ?? 0));
  });

  // Pooled-cache replay in that idle-system order.
  starts.sort((x, y) => x.t - y.t);
  const pool = new PrefixIndex(bs);
  pool.setCapacity('pool', instances * kvCapacityTokens);
  let prompt = 0;
  let hitTokens = 0;
  let uncachedTotal = 0;
  let decodeContext = 0;
  let outputs = 0;
  let decodeSteps = 0;
  let privateSteps = 0;
  for (const { e, k } of starts) {
    const turn = workload.episodes[e]!.turns[k]!;
    const seq = turn.seq;
    const hit = pool.matchedBlocks('pool', seq.slice(0, usableBlocks(turn, bs)));
    pool.insert('pool', seq.slice(0, turn.kvBlocks), workload.episodes[e]!.chainId);
    const o = turn.outputTokens;
    prompt += turn.promptTokens;
    hitTokens += hit * bs;
    uncachedTotal += turn.promptTokens - hit * bs;
    outputs += o;
    decodeSteps += o - 1;
    decodeContext += (o - 1) * turn.promptTokens + ((o - 1) * o) / 2;
    // KV a decoding request holds that no other request can share: it bounds the batch.
    privateSteps += (o - 1) * Math.max(o, turn.promptTokens + o - turn.sharedTokens);
  }
  // Every step costs c0; a step carries at most `budget` tokens, `maxRunning` decoders and
  // `kvCapacityTokens` of unshared KV.
  const steps = Math.max(privateSteps / kvCapacityTokens, decodeSteps / maxRunning, (outputs + uncachedTotal) / budget);
  const workBound = (a * uncachedTotal + b * decodeContext + c0 * steps) / instances;
  return {
    hitRateCeiling: prompt > 0 ? hitTokens / prompt : 0,
    workBound,
    criticalPath,
    makespanBound: Math.max(workBound, criticalPath),
  };
}
