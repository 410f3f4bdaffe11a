import { InvalidRequestError } from './errors.js';

/** What the rollout recorded of one trajectory, as its Arrow row has it. */
export interface RecordedTrajectory {
  trajectoryId: string;
  promptLength: number;
  /** 1 where the policy sampled the token; only those tokens carry a rollout log-prob. */
  sampledMask: ArrayLike<number>;
  logprobs: ArrayLike<number>;
}

/** The trainer's recomputed log-probs of one trajectory. */
export interface TrainerLogprobs {
  trajectory_id: string;
  logprobs: number[];
  /** `response`: one per token of input_ids[prompt_length:]; `sequence`: one per token of input_ids. */
  layout: 'response' | 'sequence';
}

export interface TrajectoryDiff {
  trajectory_id: string;
  tokens: number;
  mean_abs_prob_diff: number;
  max_abs_prob_diff: number;
}

/** The figures verl reports for training-inference mismatch, over every sampled token given. */
export interface ConsistencyFigures {
  trajectories: number;
  tokens: number;
  pearson: number | null;
  mean_abs_prob_diff: number;
  max_abs_prob_diff: number;
  std_abs_prob_diff: number;
  worst: TrajectoryDiff[];
}

/** Pearson correlation; null when it is undefined (under two points, or a constant series). */
export function pearson(x: readonly number[], y: readonly number[]): number | null {
  const n = x.length;
  if (n < 2) return null;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += x[i]!;
    my += y[i]!;
  }
  mx /= n;
  my /= n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = x[i]! - mx;
    const dy = y[i]! - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return sxx === 0 || syy === 0 ? null : sxy / Math.sqrt(sxx * syy);
}

/**
 * Compares rollout and trainer token probabilities (exp of the log-probs) on the sampled tokens, as
 * verl's rollout/actor debug metrics do: Pearson correlation of the probabilities, and the mean,
 * max and (sample) standard deviation of their absolute difference, token-weighted over the
 * batch; plus the `topK` trajectories with the largest mean absolute difference.
 */
export function consistencyFigures(recorded: ReadonlyMap<string, RecordedTrajectory>, given: readonly TrainerLogprobs[], topK: number): ConsistencyFigures {
  const rollout: number[] = [];
  const trainer: number[] = [];
  const perTrajectory: TrajectoryDiff[] = [];
  const seen = new Set<string>();
  for (const entry of given) {
    if (seen.has(entry.trajectory_id)) throw new InvalidRequestError(`trajectory ${entry.trajectory_id} is given twice`);
    seen.add(entry.trajectory_id);
    const row = recorded.get(entry.trajectory_id);
    if (!row) throw new InvalidRequestError(`trajectory ${entry.trajectory_id} is not a row of the batch`);
    const length = row.sampledMask.length;
    const offset = entry.layout === 'response' ? row.promptLength : 0;
    if (entry.logprobs.length !== length - offset) {
      throw new InvalidRequestError(`trajectory ${entry.trajectory_id}: ${entry.layout} layout needs ${length - offset} log-probs, got ${entry.logprobs.length}`);
    }
    let sum = 0;
    let max = 0;
    let tokens = 0;
    for (let position = offset; position < length; position++) {
      if (row.sampledMask[position] !== 1) continue;
      const p = Math.exp(row.logprobs[position]!);
      const q = Math.exp(entry.logprobs[position - offset]!);
      const diff = Math.abs(p - q);
      rollout.push(p);
      trainer.push(q);
      sum += diff;
      max = Math.max(max, diff);
      tokens += 1;
    }
    perTrajectory.push({ trajectory_id: entry.trajectory_id, tokens, mean_abs_prob_diff: tokens ? sum / tokens : 0, max_abs_prob_diff: max });
  }
  const diffs = rollout.map((p, i) => Math.abs(p - trainer[i]!));
  const mean = diffs.length ? diffs.reduce((a, b) => a + b, 0) / diffs.length : 0;
  const variance = diffs.length > 1 ? diffs.reduce((a, d) => a + (d - mean) ** 2, 0) / (diffs.length - 1) : 0;
  const worst = [...perTrajectory].sort((a, b) => b.mean_abs_prob_diff - a.mean_abs_prob_diff || a.trajectory_id.localeCompare(b.trajectory_id)).slice(0, topK);
  return {
    trajectories: given.length,
    tokens: diffs.length,
    pearson: pearson(rollout, trainer),
    mean_abs_prob_diff: mean,
    max_abs_prob_diff: diffs.reduce((a, b) => Math.max(a, b), 0),
    std_abs_prob_diff: Math.sqrt(variance),
    worst,
  };
}
