/**
 * The workload of the real-engine comparison (bench/routing/real-engine.ts), in both forms: an
 * `agentBatch` of the simulator materialised as chat text the gateway can be sent, and the token
 * ids the engines actually saw turned back into a simulator workload, so both sides run the same
 * episodes and tokenization differences do not count.
 */
import { createRng, mixSeed, type Rng } from '../../engine-sim/prng.js';
import { blockHashes } from '../../scheduler/routing/block-hash.js';
import type { Episode, TurnSpec, Workload } from '../../scheduler/simulator/workload.js';

/**
 * Words that are one Qwen3 token each with their leading space, so `n` of them are `n` tokens
 * (test/bench/real-engine-workload.test.ts checks it). None is "Quiet", the tiny model's
 * end-of-answer trigger (test/helpers/tiny-qwen3.py).
 */
export const WORDS = [
  'the', 'of', 'and', 'to', 'in', 'is', 'that', 'for', 'it', 'with', 'as', 'was', 'on', 'be', 'at', 'by',
  'this', 'had', 'not', 'are', 'but', 'from', 'or', 'have', 'an', 'they', 'which', 'one', 'you', 'were',
  'all', 'we', 'her', 'she', 'there', 'would', 'their', 'will', 'when', 'who', 'him', 'been', 'has', 'more',
  'if', 'no', 'out', 'do', 'so', 'can', 'what', 'up', 'said', 'about', 'other', 'into', 'than', 'its', 'time',
  'only', 'could', 'new', 'them', 'man', 'some', 'these', 'then', 'two', 'first', 'may', 'any', 'like', 'now',
  'my', 'such', 'make', 'over', 'our', 'even', 'most', 'me', 'state', 'after', 'also', 'made', 'many', 'did',
  'must', 'before', 'back', 'see', 'through', 'way', 'where', 'get', 'much', 'go', 'well', 'your', 'know',
  'should', 'down', 'work', 'year', 'because', 'come', 'people', 'just', 'say', 'each', 'those', 'take', 'day',
  'good', 'how', 'long', 'own', 'very', 'world', 'here', 'life', 'both', 'between', 'file', 'test', 'code',
];

/** `n` words drawn from `rng`, each with its leading space: `n` tokens. */
export function words(rng: Rng, n: number): string {
  let text = '';
  for (let i = 0; i < n; i++) text += ` ${WORDS[Math.floor(rng() * WORDS.length)]!}`;
  return text;
}

/** One episode as the client plays it through the gateway. */
export interface ScriptedEpisode {
  chainId: string;
  /** The first user message, the same for every sample of a task. */
  taskText: string;
  /** The observation sent after each turn but the last, as a user message. */
  observations: string[];
  /** `max_tokens` of each turn: the workload's output length. */
  maxTokens: number[];
  /** Tool gap after each turn but the last, seconds. */
  delays: number[];
}

/**
 * The episodes of an `agentBatch` workload as text: task `t`'s prompt is `turns[0].promptTokens`
 * words seeded by (seed, t), shared by its samples (ids `t<task>s<sample>`); each observation has
 * the words the workload's prompt grows by beyond the turn's output, seeded by (seed, episode,
 * turn). The chat template adds a few tokens per message on top.
 */
export function materialise(workload: Workload, seed: number): ScriptedEpisode[] {
  return workload.episodes.map((ep, e) => {
    const task = /^t(\d+)s\d+$/.exec(ep.chainId);
    if (!task) throw new Error(`episode ${ep.chainId} is not an agentBatch episode (t<task>s<sample>)`);
    const turns = ep.turns;
    return {
      chainId: ep.chainId,
      taskText: words(createRng(mixSeed(seed, Number(task[1]))), turns[0]!.promptTokens),
      observations: turns.slice(0, -1).map((t, k) => words(createRng(mixSeed(seed, 1_000_000 + e, k)), turns[k + 1]!.promptTokens - t.promptTokens - t.outputTokens)),
      maxTokens: turns.map((t) => t.outputTokens),
      delays: [...ep.delays],
    };
  });
}

/** One episode as the engines saw it: every turn's prompt and sampled token ids, and the tool gaps slept. */
export interface RecordedEpisode {
  chainId: string;
  turns: { prompt: readonly number[]; output: readonly number[] }[];
  delays: number[];
}

/**
 * The recorded episodes as a closed-loop simulator workload at the engines' block size: each
 * turn's blocks are the chained hashes of its real prompt + output tokens, so two calls share
 * simulated blocks exactly where the engines could share KV. `sharedTokens` (the work bound's
 * input) is the longest full-block prefix a turn shares with another episode's first prompt.
 */
export function simulatorWorkload(episodes: RecordedEpisode[], blockSize: number, description: string): Workload {
  const firsts = episodes.map((ep) => blockHashes(ep.turns[0]!.prompt, blockSize));
  const out: Episode[] = episodes.map((ep, e) => ({
    chainId: ep.chainId,
    start: 0,
    delays: [...ep.delays],
    turns: ep.turns.map(({ prompt, output }): TurnSpec => {
      const seq = blockHashes([...prompt, ...output], blockSize);
      const promptBlocks = Math.floor(prompt.length / blockSize);
      let shared = 0;
      firsts.forEach((first, o) => {
        if (o === e) return;
        let b = 0;
        while (b < promptBlocks && b < first.length && first[b] === seq[b]) b++;
        shared = Math.max(shared, b);
      });
      return {
        promptTokens: prompt.length,
        outputTokens: output.length,
        seq,
        promptBlocks,
        kvBlocks: Math.floor((prompt.length + output.length) / blockSize),
        sharedTokens: shared * blockSize,
      };
    }),
  }));
  return { name: 'real-engine', kind: 'closed', blockSize, episodes: out, description };
}
