/**
 * Workloads of the routing benchmark: the Mooncake trace format (open loop) and closed-loop agent
 * batches generated from a seed. Both reduce to episodes of turns whose prompts are given as
 * chained block hashes, which is all the router and the simulated engines look at.
 */
import { readFileSync } from 'node:fs';
import { createRng, type Rng } from '../../engine-sim/prng.js';
import { hashBlock } from '../routing/block-hash.js';
import type { BlockHash } from '../routing/types.js';

/** One model call of an episode. */
export interface TurnSpec {
  promptTokens: number;
  outputTokens: number;
  /**
   * The chain's block hashes: the first `promptBlocks` are the prompt's full blocks, the first
   * `kvBlocks` the full blocks of prompt + output (what the engine caches once the call is done).
   * Shared between the turns of an episode (an append-only sequence), hence the counts.
   */
  seq: readonly BlockHash[];
  promptBlocks: number;
  kvBlocks: number;
  /** Leading tokens this call may share with other chains (a task prompt), for the work bound. */
  sharedTokens: number;
}

export interface Episode {
  /** The chain the router binds on. */
  chainId: string;
  /** Release time of the first turn, seconds. */
  start: number;
  turns: TurnSpec[];
  /** Tool delay after each turn but the last, seconds. Empty for an open-loop request. */
  delays: number[];
}

export interface Workload {
  name: string;
  /** `closed`: a turn is released when the previous one finished plus its delay; `open`: each episode is one request at its timestamp. */
  kind: 'closed' | 'open';
  blockSize: number;
  episodes: Episode[];
  /** Human-readable size, printed with the results. */
  description: string;
}

export interface AgentBatchOptions {
  /** Default 1. */
  seed?: number;
  /** Distinct tasks. Default 64. */
  tasks?: number;
  /** Samples per task; siblings share the task prompt. Default 8. */
  samplesPerTask?: number;
  /** Tokens per block of the hashes. Default 64. */
  blockSize?: number;
  /** Median task prompt, tokens (log-normal, σ 0.5, clamped to [1k, 8k]). Default 3,000. */
  taskPromptTokens?: number;
  /** Fewest turns of an episode. Default 10. */
  minTurns?: number;
  /** Most turns of an episode. Default 100. */
  maxTurns?: number;
  /** Shape of the turn-count tail: turns = min + (max − min)·u^k; larger k, rarer long episodes. Default 3. */
  turnTailExponent?: number;
  /** Final context range, tokens: longer episodes end longer (log-scale, with noise). Default [32k, 128k]. */
  finalContextTokens?: [number, number];
  /** Median output per turn, tokens (log-normal σ 0.8, clamped to [16, 2048]). Default 200. */
  outputTokens?: number;
  /** Median tool delay between turns, seconds (log-normal). Default 2. */
  toolDelayMedianS?: number;
  /** σ of the tool delay's log-normal. Default 1. */
  toolDelaySigma?: number;
}

/** A standard normal draw (Box–Muller). */
function normal(rng: Rng): number {
  return Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
}

function logNormal(rng: Rng, median: number, sigma: number): number {
  return median * Math.exp(sigma * normal(rng));
}

const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

/**
 * B = tasks × samples agent episodes released at t = 0. Each prompt is the previous prompt + its
 * output + a new observation, growing to 32k–128k tokens over up to 100 turns with a long tail;
 * siblings share the task prompt's blocks. Token contents are never materialised: each block is a
 * chained hash of a (task or episode, block index) id, which is what hashing real tokens yields.
 */
export function agentBatch(options: AgentBatchOptions = {}): Workload {
  const seed = options.seed ?? 1;
  const tasks = options.tasks ?? 64;
  const samples = options.samplesPerTask ?? 8;
  const bs = options.blockSize ?? 64;
  const minTurns = options.minTurns ?? 10;
  const maxTurns = options.maxTurns ?? 100;
  const tail = options.turnTailExponent ?? 3;
  const [ctxLo, ctxHi] = options.finalContextTokens ?? [32_000, 128_000];
  const outMedian = options.outputTokens ?? 200;
  const delayMedian = options.toolDelayMedianS ?? 2;
  const delaySigma = options.toolDelaySigma ?? 1;
  const rng = createRng(seed);
  const episodes: Episode[] = [];
  let turnsTotal = 0;
  for (let t = 0; t < tasks; t++) {
    const taskPrompt = Math.round(clamp(logNormal(rng, options.taskPromptTokens ?? 3000, 0.5), 1000, 8000));
    const taskBlocks = Math.floor(taskPrompt / bs);
    for (let s = 0; s < samples; s++) {
      const u = rng();
      const nTurns = minTurns + Math.floor((maxTurns - minTurns + 1) * Math.pow(u, tail));
      const longness = maxTurns > minTurns ? (nTurns - minTurns) / (maxTurns - minTurns) : 0;
      const final = ctxLo * Math.pow(ctxHi / ctxLo, clamp(0.6 * longness + 0.4 * rng(), 0, 1));
      const outputs = Array.from({ length: nTurns }, () => Math.round(clamp(logNormal(rng, outMedian, 0.8), 16, 2048)));
      const outSum = outputs.reduce((x, y) => x + y, 0);
      // Observations fill the rest of the growth, shared unevenly across turns.
      const weights = Array.from({ length: nTurns - 1 }, () => Math.exp(0.7 * normal(rng)));
      const wSum = weights.reduce((x, y) => x + y, 0) || 1;
      const growth = Math.max(0, final - taskPrompt - outSum);
      const turns: TurnSpec[] = [];
      const delays: number[] = [];
      let prompt = taskPrompt;
      const lengths: { p: number; o: number }[] = [];
      for (let k = 0; k < nTurns; k++) {
        lengths.push({ p: prompt, o: outputs[k]! });
        if (k < nTurns - 1) {
          prompt += outputs[k]! + Math.max(32, Math.round((growth * weights[k]!) / wSum));
          delays.push(logNormal(rng, delayMedian, delaySigma));
        }
      }
      const last = lengths[lengths.length - 1]!;
      const seq = chainSeq(t, episodes.length, taskBlocks, Math.floor((last.p + last.o) / bs), seed);
      for (const { p, o } of lengths) {
        turns.push({ promptTokens: p, outputTokens: o, seq, promptBlocks: Math.floor(p / bs), kvBlocks: Math.floor((p + o) / bs), sharedTokens: taskBlocks * bs });
      }
      turnsTotal += nTurns;
      episodes.push({ chainId: `t${t}s${s}`, start: 0, turns, delays });
    }
  }
  return {
    name: 'agent-batch',
    kind: 'closed',
    blockSize: bs,
    episodes,
    description: `closed-loop agent batch: ${tasks} tasks × ${samples} samples = ${episodes.length} episodes, ${turnsTotal} turns, ${minTurns}–${maxTurns} turns (tail u^${tail}), final contexts ${ctxLo / 1000}k–${ctxHi / 1000}k, tool delay median ${delayMedian} s, seed ${seed}`,
  };
}

/** Chained hashes of an episode's blocks: the task's blocks first (shared by siblings), then its own. */
function chainSeq(task: number, episode: number, taskBlocks: number, total: number, seed: number): BlockHash[] {
  const seq: BlockHash[] = [];
  const id = [0, 0, 0];
  for (let b = 0; b < total; b++) {
    // A block's "tokens": who wrote it and where; the task's prompt is the same for every sample.
    id[0] = b < taskBlocks ? task : 1_000_000 + episode;
    id[1] = b;
    id[2] = seed;
    seq.push(hashBlock(seq[b - 1] ?? 0, id, 0, 3));
  }
  return seq;
}

export interface MooncakeOptions {
  /** Tokens per hash id of the trace. Default 512 (Mooncake's). */
  blockSize?: number;
  /** Multiplies every timestamp: below 1 replays the trace faster (more load). Default 1. */
  timeScale?: number;
  /** Keep only the first this many requests. Default all. */
  limit?: number;
}

interface MooncakeRow {
  timestamp: number;
  input_length: number;
  output_length: number;
  hash_ids: number[];
}

/**
 * A Mooncake-format trace (JSONL rows `timestamp` ms, `input_length`, `output_length`,
 * `hash_ids` of 512-token blocks, chained) as an open-loop workload. The ids are already chained,
 * so they serve as block hashes directly; only the prompt's full blocks are matchable (the last id
 * usually covers a partial block). Sessions are recovered as the trace's README describes: a
 * request continues the most recent earlier request whose full-block ids are a prefix of its own.
 */
export function loadMooncake(path: string, options: MooncakeOptions = {}): Workload {
  const bs = options.blockSize ?? 512;
  const scale = options.timeScale ?? 1;
  const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '');
  const rows = lines.slice(0, options.limit ?? lines.length).map((l, i): MooncakeRow => {
    const r = JSON.parse(l) as Partial<MooncakeRow>;
    if (typeof r.timestamp !== 'number' || typeof r.input_length !== 'number' || typeof r.output_length !== 'number' || !Array.isArray(r.hash_ids)) {
      throw new Error(`${path}:${i + 1}: not a Mooncake row (timestamp, input_length, output_length, hash_ids)`);
    }
    return r as MooncakeRow;
  });
  /** Last full-block id of a request → its session, so a later prompt extending it joins it. */
  const sessionByTail = new Map<number, string>();
  const episodes: Episode[] = [];
  let sessions = 0;
  const t0 = rows[0]?.timestamp ?? 0;
  for (const r of rows) {
    const full = Math.min(r.hash_ids.length, Math.floor(r.input_length / bs));
    let chainId: string | undefined;
    for (let j = full - 1; j >= 0 && chainId === undefined; j--) chainId = sessionByTail.get(r.hash_ids[j]!);
    chainId ??= `s${sessions++}`;
    if (full > 0) sessionByTail.set(r.hash_ids[full - 1]!, chainId);
    const output = Math.max(1, r.output_length);
    episodes.push({
      chainId,
      start: ((r.timestamp - t0) / 1000) * scale,
      turns: [{ promptTokens: Math.max(1, r.input_length), outputTokens: output, seq: r.hash_ids, promptBlocks: full, kvBlocks: full, sharedTokens: full * bs }],
      delays: [],
    });
  }
  return {
    name: 'mooncake',
    kind: 'open',
    blockSize: bs,
    episodes,
    description: `Mooncake trace ${path.split('/').pop()}: ${rows.length} requests in ${sessions} sessions, time ×${scale}`,
  };
}
